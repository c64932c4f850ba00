#!/usr/bin/env bash
# Reland validation on a real GPU (run from the repository root on a machine with CUDA torch):
#   1. the demo revert of #101 on main, through `revertbot gpu run`: the tests it flips;
#   2. the revert merged, then a reland of #101 with a fix (each capture size keeps its own output);
#   3. `revertbot gpu run` on the reland (its parent is the merged revert);
#   4. the reland's report: the flipped tests judged on the reland's GPU results, and whether the
#      original failure is gone.
# Everything lands in $RESULTS (default gpu_jobs/results/h200-reland). Nothing is simulated: when
# no GPU is visible the script stops before producing any result.
set -uo pipefail
RESULTS=${RESULTS:-gpu_jobs/results/h200-reland}
WORK=${WORK:-/tmp/revertbot-h200-reland}
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
rm -rf "$RESULTS" "$WORK" && mkdir -p "$RESULTS" "$WORK"

if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "no CUDA GPU visible: nothing recorded" >&2
    exit 1
fi
{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    "$PY" -c 'import sys, torch; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda)'
} > "$RESULTS/environment.txt" 2>&1
cat "$RESULTS/environment.txt"

echo "== 1. the revert's GPU run (what it flips)"
"$PY" - "$WORK" > "$WORK/shas.txt" <<'EOF'
import subprocess, sys
from pathlib import Path
from revertbot.demo.repo import RUNNER_PATH, build_demo_repo

work = Path(sys.argv[1])
demo = build_demo_repo(work / "minisgl")
root = demo.path
env = {"GIT_AUTHOR_NAME": "Lin Wei", "GIT_AUTHOR_EMAIL": "lin@example.com", "GIT_COMMITTER_NAME": "Lin Wei",
       "GIT_COMMITTER_EMAIL": "lin@example.com", "PATH": "/usr/bin:/bin"}


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True).stdout.strip()


# The revert merged on main, then the reland of #101 with the fix, on its own branch.
git("checkout", "-q", "-b", "merged", "main")
git("cherry-pick", demo.revert)
merged = git("rev-parse", "HEAD")
git("checkout", "-q", "-b", "reland-101")
git("cherry-pick", demo.original)
runner = root / RUNNER_PATH
text = runner.read_text()
shared = ("            if shared_output_buffer is None:\n"
          "                # Largest size first: its output can hold the output of every smaller size.\n"
          "                shared_output_buffer = output\n")
assert shared in text, "the demo's original changed: update this script"
runner.write_text(text.replace(shared, "            # Each size keeps its own output: a shared one let smaller "
                                       "replays overwrite rows.\n"))
git("commit", "-q", "-a", "--amend", "-m", 'Reland "Share BCG output buffers across capture sizes"\n\n'
    "Keeps the helpers; each size keeps its own output until replays can share one safely.\n")
print(demo.revert, merged, git("rev-parse", "HEAD"))
EOF
read -r REVERT MERGED RELAND < "$WORK/shas.txt" || true
[ -n "${RELAND:-}" ] || { echo "could not build the reland story" >&2; exit 1; }
echo "revert $REVERT merged-as $MERGED reland $RELAND" | tee "$RESULTS/commits.txt"
"$PY" -m revertbot gpu run --repo "$WORK/minisgl" --suite graph-capture --base main --revert "$REVERT" \
    --out "$RESULTS/revert" --repeats 2 2> "$RESULTS/revert_run.log"
echo "revert gpu run exit $?" | tee -a "$RESULTS/revert_run.log"
"$PY" -m revertbot gpu report --in "$RESULTS/revert" --summary-json "$RESULTS/revert_gpu_summary.json" \
    > "$RESULTS/revert_gpu_section.md"

echo "== 2. the reland's GPU run"
"$PY" -m revertbot gpu run --repo "$WORK/minisgl" --suite graph-capture --base merged --revert "$RELAND" \
    --out "$RESULTS/reland" --repeats 2 2> "$RESULTS/reland_run.log"
echo "reland gpu run exit $?" | tee -a "$RESULTS/reland_run.log"
"$PY" -m revertbot gpu report --in "$RESULTS/reland" --summary-json "$RESULTS/reland_gpu_summary.json" \
    > "$RESULTS/reland_gpu_section.md"

echo "== 3. the reland's report, the revert's flips judged on the reland's GPU results"
"$PY" - "$WORK/minisgl" "$RELAND" "$RESULTS" <<'EOF'
import json, sys
from pathlib import Path
from revertbot.pipeline.check import check_revert
from revertbot.cli.gpu import load_gpu_summary
from revertbot.verdict.reland import flipped_tests, with_gpu_facts
from revertbot.report import render_markdown, report_to_json

repo, reland, results = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
flips = flipped_tests(json.loads((results / "revert_gpu_summary.json").read_text()))
report = check_revert(repo, reland, base_ref="merged", repo_name="demo-org/minisgl",
                      gpu=load_gpu_summary(str(results / "reland_gpu_summary.json")))
report = with_gpu_facts(report, flips)
(results / "reland_report.md").write_text(render_markdown(report, "en"))
(results / "reland_report.zh.md").write_text(render_markdown(report, "zh"))
data = report_to_json(report)
(results / "reland_report.json").write_text(json.dumps(data, indent=2, ensure_ascii=False))
print("flipped by the revert:", flips)
print("reland:", json.dumps(data.get("reland", {}).get("tests"), ensure_ascii=False))
print("original failure gone:", data.get("reland", {}).get("failure_gone"))
EOF
echo "report exit $?"
