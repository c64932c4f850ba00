#!/usr/bin/env bash
# Earned green, on a real GPU (run from the repository root, as root, on a machine with a CUDA GPU,
# torch and pytest):
#   1. a small repository whose suite uses CUDA and skips itself without it (the common pattern);
#      `revertbot gpu run` on its revert, (a) as usual and (b) with CUDA_VISIBLE_DEVICES= (the runner
#      misconfiguration: nvidia-smi sees the GPU, torch sees none), then `gpu report` and `check
#      --gpu-summary` on each: (a) must be validated, (b) must say "not validated", never green;
#   2. the demo revert's suite, (a) as the runner's own user and (b) as a suite user of its own
#      (`--suite-user`, runuser), alternated 3 times each: the same verdicts, the GPU visible to the
#      suite user, and the time the isolation costs, as a ratio to the same-user run.
# Everything lands in $RESULTS (default gpu_jobs/results/h100-earned-green). Nothing is simulated:
# without a visible GPU the script stops before recording anything.
set -uo pipefail
RESULTS=${RESULTS:-gpu_jobs/results/h100-earned-green}
WORK=${WORK:-/tmp/revertbot-earned-green}
PY=${PYTHON:-python3}
export GIT_CONFIG_NOSYSTEM=1
# shellcheck source=gpu_jobs/proof_common.sh
. "$(dirname "$0")/proof_common.sh"
chmod 755 "$WORK"

# A python the suite user can run, with this interpreter's packages (torch, pytest).
SITE=$("$PY" -c 'import site, sys; print(":".join(p for p in site.getsitepackages() if "site-packages" in p or "dist-packages" in p))')
REAL_PY=$("$PY" -c 'import sys, os; print(os.path.realpath(sys.executable))')
mkdir -p "$WORK/bin"
printf '#!/bin/sh\nPYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}%s" exec %s "$@"\n' "$SITE" "$REAL_PY" > "$WORK/bin/python3"
chmod 755 "$WORK/bin" "$WORK/bin/python3"
SUITE_USER=rbsuite$$
useradd --system --no-create-home --shell /usr/sbin/nologin "$SUITE_USER" || { echo "useradd failed" >&2; exit 1; }
trap 'userdel "$SUITE_USER" 2>/dev/null' EXIT
echo "suite user: $SUITE_USER ($(id "$SUITE_USER"))"
runuser -u "$SUITE_USER" -- "$WORK/bin/python3" -c 'import torch; print("torch as the suite user sees", torch.cuda.device_count(), "GPU(s):", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-")' \
    | tee "$RESULTS/suite_user_sees.txt"

echo "== 1. a suite that skips itself without CUDA, on its revert"
R="$WORK/cudakit"
mkdir -p "$R/tests" && cd "$R" && git init -q -b main
cat > tests/test_kernels.py <<'EOF'
import pytest
import torch

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def scale(x):
    return x * 2


def test_scale_on_gpu():
    x = torch.arange(1024, device="cuda", dtype=torch.float32)
    assert torch.equal(scale(x), x * 2)


def test_graph_replay_on_gpu():
    x = torch.ones(256, device="cuda")
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        y = scale(x)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        y = scale(x)
    x.fill_(3.0)
    g.replay()
    torch.cuda.synchronize()
    assert float(y[0]) == 6.0


def test_matmul_on_gpu():
    a = torch.randn(64, 64, device="cuda")
    assert torch.allclose(a @ torch.eye(64, device="cuda"), a)
EOF
printf 'x = 1\n' > kernels.py
git add -A && git -c user.name=t -c user.email=t@t commit -qm "kernels and their CUDA tests"
printf 'x = 2\n' > kernels.py && git -c user.name=t -c user.email=t@t commit -qam "Tune kernels"
ORIG=$(git rev-parse HEAD)
git -c user.name=t -c user.email=t@t revert --no-edit HEAD > /dev/null
REV=$(git rev-parse HEAD)
git checkout -q -b base "$ORIG" && git checkout -q main
cd - > /dev/null
SUITE='{"name": "cuda-kernels", "command": ["python", "-m", "pytest", "-q", "tests"], "timeout_minutes": 10}'
for mode in visible hidden; do
    devices=(); [ "$mode" = hidden ] && devices=(--devices "")
    start=$(now)
    "$PY" -m revertbot gpu run --repo "$R" --suite cuda-kernels --suite-json "$SUITE" --base "$ORIG" --revert "$REV" \
        --out "$RESULTS/cudakit-$mode" --python "$PY" "${devices[@]}" 2> "$RESULTS/cudakit-$mode.log"
    echo "gpu run ($mode) exit $? in $(since "$start") s" | tee -a "$RESULTS/cudakit-$mode.log"
    "$PY" -m revertbot gpu report --in "$RESULTS/cudakit-$mode" --summary-json "$RESULTS/cudakit-$mode.summary.json" \
        > "$RESULTS/cudakit-$mode.section.md"
    "$PY" -m revertbot check --repo "$R" "$REV" --base base --gpu-summary "$RESULTS/cudakit-$mode.summary.json" \
        > "$RESULTS/cudakit-$mode.check.md" 2>&1
    echo "-- $mode: $(grep '^| GPU validation |' "$RESULTS/cudakit-$mode.check.md")"
    grep -m1 'Recommended action' "$RESULTS/cudakit-$mode.check.md"
done

echo "== 2. the demo revert, as the runner's user and as the suite's own user (alternated)"
"$PY" -c "from pathlib import Path; from revertbot.demo.repo import build_demo_repo; print(build_demo_repo(Path('$WORK/minisgl')).revert)" \
    > "$WORK/revert.txt"
REVERT=$(cat "$WORK/revert.txt")
: > "$RESULTS/demo_times.tsv"
for round in 1 2 3; do
    for mode in same-user suite-user; do
        extra=(); [ "$mode" = suite-user ] && extra=(--suite-user "$SUITE_USER")
        out="$RESULTS/demo-$mode-$round"
        start=$(now)
        "$PY" -m revertbot gpu run --repo "$WORK/minisgl" --suite graph-capture --base main --revert "$REVERT" \
            --out "$out" --python "$WORK/bin/python3" "${extra[@]}" 2> "$out.log"
        code=$?
        t=$(since "$start")
        printf '%s\t%s\t%s\t%s\n' "$mode" "$round" "$code" "$t" >> "$RESULTS/demo_times.tsv"
        echo "$mode round $round: exit $code in $t s"
    done
done
"$PY" -m revertbot gpu report --in "$RESULTS/demo-suite-user-1" --summary-json "$RESULTS/demo-suite-user.summary.json" \
    > "$RESULTS/demo-suite-user.section.md"
"$PY" -m revertbot gpu report --in "$RESULTS/demo-same-user-1" --summary-json "$RESULTS/demo-same-user.summary.json" \
    > "$RESULTS/demo-same-user.section.md"
"$PY" - "$RESULTS" <<'EOF'
import json, statistics, sys
from pathlib import Path
res = Path(sys.argv[1])
rows = [line.split("\t") for line in (res / "demo_times.tsv").read_text().split("\n") if line]
times = {m: [float(t) for mm, _r, c, t in rows if mm == m and c == "0"] for m in ("same-user", "suite-user")}
for m, ts in times.items():
    print(f"{m}: runs {ts}, median {statistics.median(ts):.2f} s" if ts else f"{m}: no successful run")
if all(times.values()):
    print(f"suite-user / same-user (medians): {statistics.median(times['suite-user']) / statistics.median(times['same-user']):.2f}x")
for m in ("same-user", "suite-user"):
    s = json.loads((res / f"demo-{m}.summary.json").read_text())
    print(m, "fixed", [f["name"] for f in s["fixed"]], "broken", len(s["broken"]), "passed_both", s["passed_both"],
          "unvalidated", s["unvalidated"], "cpu_only", s["cpu_only"], "hardware", s["hardware"])
for mode in ("visible", "hidden"):
    s = json.loads((res / f"cudakit-{mode}.summary.json").read_text())
    print("cudakit", mode, "passed_both", s["passed_both"], "unvalidated", s["unvalidated"], "cpu_only", s["cpu_only"],
          "sentence:", s["sentence"]["en"])
job = json.loads((res / "demo-suite-user-1" / "job.json").read_text())
print("suite user record:", json.dumps(job.get("suite_user"))[:400])
EOF
# Keep only what is small: the per-run directories' logs stay; nothing of the checkouts is copied.
du -sh "$RESULTS"
