#!/usr/bin/env bash
# GPU evidence at production scale, on one CUDA GPU with torch and pytest (run from the repository
# root; revertbot need not be installed, PYTHONPATH is set to the checkout):
#   0. the environment manifest (environment.json, environment.txt);
#   1. the graph-capture suite's scale mode: hidden 4096 and 8192, bf16, 60 capture sizes 1..8192,
#      the three output-buffer strategies measured 3 times interleaved (scale_results.json,
#      strategies.md, scale.log, scale.junit.xml, scale.metrics.jsonl);
#   2. the demo revert through the GPU job runner with the engine's measurement at serving scale
#      (MINISGL_SCALE=production: 4096 wide, bf16, 14 capture sizes 1..8192), 3 runs per side
#      interleaved, thresholds from the demo's .revertbot.yml (demo/, demo_run.log,
#      demo_gpu_summary.json, demo_gpu_section.md, demo_gpu_section.zh.md);
#   3. the full revertbot report of the demo revert with those GPU results, when click and pyyaml
#      are installed (demo_report.md, demo_report.zh.md);
#   4. summary.md, printed from those files.
# Every step's exit status and time go to steps.tsv; the whole output to run.log.
# Expected: about 4 minutes on an H200. Every step has a time limit, cut to what is left of BUDGET
# (default 450 s) so the whole stays under 8 minutes even when a step hangs.
# Knobs: RESULTS (default gpu_jobs/results/h200-scale), WORK, PYTHON, REPEATS (demo runs per side, 3),
# GC_REPEATS (suite repeats, 3), GC_HIDDEN (e.g. 4096 to measure one width only).
# SMOKE=1 runs the same flow at CI size on any machine, CPU included, into $WORK/smoke-results (never
# into gpu_jobs/results): a check of the script, not evidence.
# Nothing here is simulated: without SMOKE=1 and without a visible CUDA GPU the script stops before
# removing or writing any result.
set -uo pipefail
SMOKE=${SMOKE:-0}
WORK=${WORK:-/tmp/revertbot-h200-scale}
PY=${PYTHON:-python3}
REPEATS=${REPEATS:-3}
GC_REPEATS=${GC_REPEATS:-3}
if [[ "$SMOKE" == 1 ]]; then
    RESULTS=${RESULTS:-$WORK/smoke-results}
    GC_SCALE=ci
    DEMO_SCALE=small
    case "$RESULTS" in
        *gpu_jobs/results*) echo "SMOKE=1 never writes into gpu_jobs/results" >&2; exit 2 ;;
    esac
else
    RESULTS=${RESULTS:-gpu_jobs/results/h200-scale}
    GC_SCALE=production
    DEMO_SCALE=production
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1

if [[ ! -f gpu_jobs/h200_scale.sh ]]; then
    echo "run from the repository root: bash gpu_jobs/h200_scale.sh" >&2
    exit 2
fi
if [[ "$SMOKE" != 1 ]] && ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "no CUDA GPU visible: nothing recorded (SMOKE=1 checks the flow without one)" >&2
    exit 1
fi
if ! "$PY" -c 'import pytest' 2> /dev/null; then
    echo "pytest is not installed for $PY: nothing recorded" >&2
    exit 1
fi

rm -rf "$RESULTS" "$WORK"
mkdir -p "$RESULTS" "$WORK"
exec > >(tee -a "$RESULTS/run.log") 2>&1

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
T0=$(now)
DEADLINE=$(( $(date +%s) + ${BUDGET:-450} ))
WORST=0
limit() {  # a step's time limit: $1 seconds, or what is left of the budget (at least 10)
    local left=$(( DEADLINE - $(date +%s) ))
    if (( left < 10 )); then left=10; fi
    if (( left < $1 )); then echo "$left"; else echo "$1"; fi
}
record() {  # step name, exit status, seconds
    printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$RESULTS/steps.tsv"
    echo "== $1: exit $2 in $3 s (script at $(since "$T0") s)"
    if [[ "$2" != 0 ]]; then WORST=1; fi
}

echo "== 0. environment (mode: $([[ "$SMOKE" == 1 ]] && echo 'SMOKE, CI size, not evidence' || echo production))"
start=$(now)
GC_ENV=(REVERTBOT_GC_SCALE="$GC_SCALE" REVERTBOT_GC_REPEATS="$GC_REPEATS")
if [[ -n "${GC_HIDDEN:-}" ]]; then GC_ENV+=(REVERTBOT_GC_HIDDEN="$GC_HIDDEN"); fi
env "${GC_ENV[@]}" MINISGL_SCALE="$DEMO_SCALE" SMOKE="$SMOKE" REPEATS="$REPEATS" \
    timeout "$(limit 60)" "$PY" - "$RESULTS" <<'EOF'
import datetime, json, os, platform, subprocess, sys
from pathlib import Path

import torch

from gpu_jobs.suites.graph_capture.scale import scale_config


def run(*argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable: {exc}"


env = {
    "mode": "smoke (CI size, not evidence)" if os.environ["SMOKE"] == "1" else "production",
    "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "commit": run("git", "rev-parse", "HEAD"),
    "uncommitted_changes": bool(run("git", "status", "--porcelain", "--untracked-files=no")),
    "python": sys.version.split()[0],
    "platform": platform.platform(),
    "torch": torch.__version__,
    "cuda_runtime": torch.version.cuda,
    "cuda_available": torch.cuda.is_available(),
}
if torch.cuda.is_available():
    props = torch.cuda.get_device_properties(0)
    env.update(gpu=torch.cuda.get_device_name(0), gpu_count=torch.cuda.device_count(),
               gpu_memory_mib=round(props.total_memory / 2**20),
               nvidia_smi=run("nvidia-smi", "--query-gpu=name,memory.total,driver_version,clocks.max.sm",
                              "--format=csv,noheader"))
env["graph_capture_scale"] = scale_config(os.environ).describe()
env["demo_scale"] = f"MINISGL_SCALE={os.environ['MINISGL_SCALE']}, {os.environ['REPEATS']} runs per side, interleaved"
out = Path(sys.argv[1])
(out / "environment.json").write_text(json.dumps(env, indent=1) + "\n")
(out / "environment.txt").write_text("".join(f"{k}: {v}\n" for k, v in env.items()))
print(open(out / "environment.txt").read(), end="")
EOF
record "0 environment" $? "$(since "$start")"

echo "== 1. graph-capture suite at scale ($GC_SCALE)"
start=$(now)
env "${GC_ENV[@]}" REVERTBOT_GC_RESULTS="$RESULTS/scale_results.json" \
    REVERTBOT_METRICS_FILE="$RESULTS/scale.metrics.jsonl" \
    timeout "$(limit 240)" "$PY" -m pytest gpu_jobs/suites/graph_capture/test_scale.py -q -rs -s -p no:cacheprovider \
    --junitxml="$RESULTS/scale.junit.xml" > "$RESULTS/scale.log" 2>&1
record "1 graph-capture suite at scale" $? "$(since "$start")"
tail -3 "$RESULTS/scale.log"
if [[ -f "$RESULTS/scale_results.json" ]]; then
    "$PY" -m gpu_jobs.suites.graph_capture.scale table "$RESULTS/scale_results.json" > "$RESULTS/strategies.md"
    cat "$RESULTS/strategies.md"
fi

echo "== 2. the demo revert through the GPU job runner (MINISGL_SCALE=$DEMO_SCALE, $REPEATS runs per side)"
start=$(now)
timeout "$(limit 60)" "$PY" -c "from gpu_jobs._click_compat import ensure_click; ensure_click()
from pathlib import Path; from revertbot.demo.repo import build_demo_repo
print(build_demo_repo(Path('$WORK/minisgl')).revert)" > "$WORK/revert.txt"
rc=$?
REVERT=$(cat "$WORK/revert.txt" 2> /dev/null)
SUITE_ARGS=()
if [[ $rc == 0 ]] && ! "$PY" -c 'import yaml' 2> /dev/null; then
    # Without pyyaml the runner cannot read .revertbot.yml: hand it the suite, with the thresholds
    # read from the demo's .revertbot.yml, and say so.
    echo "pyyaml missing: suite passed as JSON, thresholds read from the demo's .revertbot.yml"
    SUITE_JSON=$("$PY" - "$WORK/minisgl/.revertbot.yml" <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
th = {k: float(v) for k, v in re.findall(r"^\s+(memory_regression_pct|capture_time_regression_pct):\s*([0-9.]+)", text, re.M)}
print(json.dumps({"command": ["python", "-m", "pytest", "-q", "tests"], "thresholds": th}))
EOF
)
    SUITE_ARGS=(--suite-json "$SUITE_JSON")
fi
if [[ $rc == 0 && -n "$REVERT" ]]; then
    MINISGL_SCALE="$DEMO_SCALE" timeout "$(limit 240)" "$PY" -m gpu_jobs.runner --repo "$WORK/minisgl" \
        --suite graph-capture --base main --revert "$REVERT" --out "$RESULTS/demo" --repeats "$REPEATS" \
        --timeout-minutes 1.5 \
        ${SUITE_ARGS[@]+"${SUITE_ARGS[@]}"} 2> "$RESULTS/demo_run.log"
    rc=$?
    tail -2 "$RESULTS/demo_run.log"
fi
record "2 demo revert: gpu run" $rc "$(since "$start")"

start=$(now)
timeout "$(limit 60)" "$PY" - "$RESULTS" <<'EOF'
import json, sys
from pathlib import Path

from gpu_jobs._click_compat import ensure_click

ensure_click()
from gpu_jobs.summary import merge_dirs, render_gpu_markdown

results = Path(sys.argv[1])
merged = merge_dirs([results / "demo"])
(results / "demo_gpu_summary.json").write_text(json.dumps(merged.to_json(), indent=1, sort_keys=True) + "\n")
for lang, name in (("en", "demo_gpu_section.md"), ("zh", "demo_gpu_section.zh.md")):
    (results / name).write_text(render_gpu_markdown(merged.summary, lang))
print((results / "demo_gpu_section.md").read_text())
EOF
record "2 demo revert: gpu report" $? "$(since "$start")"

echo "== 3. the demo revert's full report with the GPU results"
start=$(now)
if "$PY" -c 'import click, yaml' 2> /dev/null && [[ -n "${REVERT:-}" && -f "$RESULTS/demo_gpu_summary.json" ]]; then
    rc=0
    for lang in en zh; do
        out="$RESULTS/demo_report.md"
        if [[ $lang == zh ]]; then out="$RESULTS/demo_report.zh.md"; fi
        timeout "$(limit 60)" "$PY" -m revertbot check --repo "$WORK/minisgl" --base main "$REVERT" --lang "$lang" \
            --gpu-summary "$RESULTS/demo_gpu_summary.json" --output "$out" || rc=$?
    done
    grep -F "GPU validation |" "$RESULTS/demo_report.md" || true
    record "3 demo revert: full report" $rc "$(since "$start")"
else
    echo "skipped: needs click and pyyaml for $PY, and the GPU summary of step 2"
    record "3 demo revert: full report (skipped)" 0 "$(since "$start")"
fi

echo "== 4. summary"
start=$(now)
timeout "$(limit 30)" "$PY" -m gpu_jobs.scale_summary "$RESULTS" > /dev/null
record "4 summary" $? "$(since "$start")"
cat "$RESULTS/summary.md"
echo "== done in $(since "$T0") s; results in $RESULTS"
exit "$WORST"
