#!/usr/bin/env bash
# Both propose evidence runs in one call on a GPU machine (from the repository root): the search and
# proof on the incident repository (gpu_jobs/h200_propose.sh), then the whole GitHub flow against the
# loopback server (gpu_jobs/h200_propose_pr.py) while time is left, packed into one archive.
#   OUT=<dir> bash gpu_jobs/propose_evidence.sh [seconds for the whole call, default 560]
# Wheels the machine lacks (PyGithub and its dependencies, tree-sitter) may be carried in .whl/.
set -uo pipefail
OUT=${OUT:?set OUT to the folder the results go to}
LIMIT=${1:-560}
start=$(date +%s)
if compgen -G ".whl/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH=$PWD
fi
mkdir -p "$OUT/search" "$OUT/pr"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$OUT/search/gpu.txt" 2>&1
RESULTS="$OUT/search" WORK=/tmp/revertbot-propose bash gpu_jobs/h200_propose.sh > "$OUT/search/script.log" 2>&1
echo "search script: $(( $(date +%s) - start )) s" >> "$OUT/search/script.log"
left=$(( LIMIT - ($(date +%s) - start) - 20 ))
if [ "$left" -gt 150 ]; then
    timeout "$left" python3 gpu_jobs/h200_propose_pr.py "$OUT/pr" /tmp/revertbot-propose-pr > "$OUT/pr/script.log" 2>&1
    echo "pr script: exit $?, $(( $(date +%s) - start )) s in all" >> "$OUT/pr/script.log"
else
    echo "pr script: not run, $left s left" > "$OUT/pr/script.log"
fi
# shellcheck disable=SC2016
sed -i 's#/tmp/revertbot-propose[-a-z]*#$WORK#g' "$OUT"/search/*.log "$OUT"/pr/*.log 2>/dev/null
tar czf "$OUT/results.tgz" -C "$OUT" search pr && rm -rf "$OUT/search" "$OUT/pr"
