#!/usr/bin/env bash
# The GPU proof, on a machine with a CUDA GPU, torch and pytest (run from the repository root):
#   1. the graph-capture suite, with its metrics;
#   2. `revertbot gpu run` on the demo repository's revert (2 repeats per side), then `gpu report`;
#   3. the same four pytest runs started directly on the same two checkouts, to measure the
#      runner's overhead;
#   4. two infrastructure failures for real: a test that runs the GPU out of memory, and a hang
#      that the runner kills at its timeout.
# Everything lands in $RESULTS (default gpu_jobs/results/h200); STEPS="2 3" runs only some steps.
# Nothing here is simulated: when no GPU is visible the script stops before producing any result.
set -uo pipefail
RESULTS=${RESULTS:-gpu_jobs/results/h200}
WORK=${WORK:-/tmp/revertbot-h200}
PY=${PYTHON:-python3}
STEPS=" ${STEPS:-1 2 3 4} "
want() { [[ "$STEPS" == *" $1 "* ]]; }
# shellcheck source=gpu_jobs/proof_common.sh
. "$(dirname "$0")/proof_common.sh"

if want 1; then
echo "== 1. graph-capture suite"
start=$(now)
REVERTBOT_METRICS_FILE="$RESULTS/graph_capture.metrics.jsonl" "$PY" -m pytest gpu_jobs/suites/graph_capture \
    -q -rs -p no:cacheprovider --junitxml="$RESULTS/graph_capture.junit.xml" > "$RESULTS/graph_capture.log" 2>&1
echo "exit $? in $(since "$start") s" | tee -a "$RESULTS/graph_capture.log"
tail -3 "$RESULTS/graph_capture.log"

fi

if want 2 || want 3; then
echo "== 2. revertbot gpu run on the demo revert"
"$PY" -c "from pathlib import Path; from revertbot.demo.repo import build_demo_repo; print(build_demo_repo(Path('$WORK/minisgl')).revert)" \
    > "$WORK/revert.txt"
REVERT=$(cat "$WORK/revert.txt")
start=$(now)
"$PY" -m revertbot gpu run --repo "$WORK/minisgl" --suite graph-capture --base main --revert "$REVERT" \
    --out "$RESULTS/demo" --repeats 2 2> "$RESULTS/demo_run.log"
echo "gpu run exit $? in $(since "$start") s" | tee -a "$RESULTS/demo_run.log"
"$PY" -m revertbot gpu report --in "$RESULTS/demo" --summary-json "$RESULTS/demo_gpu_summary.json" \
    > "$RESULTS/demo_gpu_section.md"
cat "$RESULTS/demo_gpu_section.md"

echo "== 3. the same pytest runs started directly (overhead baseline)"
git -C "$WORK/minisgl" worktree add -q --detach "$WORK/direct-before" main
git -C "$WORK/minisgl" worktree add -q --detach "$WORK/direct-after" main
git -C "$WORK/direct-after" -c user.name=x -c user.email=x@x cherry-pick --no-commit "$REVERT" > /dev/null
for side in before after; do
    for repeat in 1 2; do
        start=$(now)
        (cd "$WORK/direct-$side" && "$PY" -m pytest -q -p no:cacheprovider tests > /dev/null 2>&1)
        took=$(since "$start")
        echo "direct $side repeat $repeat: $took s"
    done
done | tee "$RESULTS/direct_baseline.txt"
"$PY" - "$RESULTS" <<'EOF' | tee -a "$RESULTS/direct_baseline.txt"
import json, re, sys
from pathlib import Path
results = Path(sys.argv[1])
direct = sum(float(m) for m in re.findall(r": ([0-9.]+) s", (results / "direct_baseline.txt").read_text()))
comparison = json.loads((results / "demo" / "comparison.json").read_text())
total = comparison["wall_time_s"]["total"]
print(f"direct pytest total: {direct:.2f} s; revertbot gpu run total: {total:.2f} s; "
      f"overhead: {(total - direct) / direct * 100:+.1f}%")
EOF

fi

if want 4; then
echo "== 4. infrastructure failures on the GPU: out of memory, hang"
INFRA="$WORK/infra"
mkdir -p "$INFRA/tests" && git -C "$INFRA" init -q -b main
cat > "$INFRA/tests/test_gpu.py" <<'EOF'
import os
import time

import torch


def test_allocates_more_than_the_gpu_has():
    if os.environ.get("INFRA_CASE") == "oom":
        torch.empty(int(4e12), dtype=torch.uint8, device="cuda")  # 4 TB


def test_hangs_in_a_gpu_loop():
    if os.environ.get("INFRA_CASE") == "hang":
        x = torch.ones(1024, 1024, device="cuda")
        while True:
            x = x @ x / 1024
            time.sleep(0.01)
EOF
echo 1 > "$INFRA/flag.txt"
git -C "$INFRA" add -A && git -C "$INFRA" -c user.name=x -c user.email=x@x commit -qm "Add GPU tests (#1)"
echo 2 > "$INFRA/flag.txt"
git -C "$INFRA" -c user.name=x -c user.email=x@x commit -qam "Bump flag (#2)"
git -C "$INFRA" -c user.name=x -c user.email=x@x revert --no-edit HEAD > /dev/null
INFRA_REVERT=$(git -C "$INFRA" rev-parse HEAD)
for case in oom hang; do
    suite="{\"command\": [\"python\", \"-m\", \"pytest\", \"-q\", \"tests\"], \"timeout_minutes\": 0.5, \"env\": {\"INFRA_CASE\": \"$case\"}}"
    start=$(now)
    "$PY" -m revertbot gpu run --repo "$INFRA" --suite "infra-$case" --suite-json "$suite" --base main~1 \
        --revert "$INFRA_REVERT" --out "$RESULTS/infra-$case" 2> "$RESULTS/infra-$case.log"
    echo "$case: exit $? in $(since "$start") s" | tee -a "$RESULTS/infra-$case.log"
    "$PY" -c "import json,sys; c=json.load(open('$RESULTS/infra-$case/comparison.json')); print(json.dumps({'infra': c.get('infra'), 'tests_infra': c['tests'].get('infra'), 'broken': c['tests'].get('broken')}, indent=1)[:3000])"
done
fi
