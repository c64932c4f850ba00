# Sourced by the GPU proof scripts (gpu_jobs/h*_*.sh) after they set RESULTS, WORK and PY: fresh
# result and work directories, timing helpers, and the environment facts. Without a visible CUDA
# GPU it stops the script before anything is recorded.
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
rm -rf "$RESULTS" "$WORK" && mkdir -p "$RESULTS" "$WORK"
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "no CUDA GPU visible: nothing recorded" >&2
    exit 1
fi
{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    "$PY" -c 'import sys, torch; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda); print("device", torch.cuda.get_device_name(0))'
} > "$RESULTS/environment.txt" 2>&1
cat "$RESULTS/environment.txt"
