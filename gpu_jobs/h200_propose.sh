#!/usr/bin/env bash
# Proposing a revert, on a real GPU (run from the repository root on a machine with a CUDA GPU,
# torch and pytest): the miniature engine's incident repository (revertbot/demo/propose_repo.py: a
# green commit, then 17 commits on main; #101 breaks a CUDA-graph test, and a sampler test fails
# about one run in five on any commit) goes through `revertbot propose --runner local`, whose probes
# are gpu_jobs/rerun.py runs on this GPU:
#   1. the sampler's real flake rate at the green commit (20 runs);
#   2. the sampler test alone: it must be called flaky, no commit blamed;
#   3. the CUDA-graph test alone: the culprit found and proven (suspect x/x, parent y/y, head with the
#      culprit reverted passes), with the evidence table and the JSON (a second search, for its Markdown);
#   4. both tests at once, as the red run reports them.
# Everything lands in $RESULTS (default gpu_jobs/results/h100-propose). Nothing is simulated: without
# a visible GPU the script stops before recording anything.
set -uo pipefail
RESULTS=${RESULTS:-gpu_jobs/results/h100-propose}
WORK=${WORK:-/tmp/revertbot-propose}
PY=${PYTHON:-python3}
export GIT_CONFIG_NOSYSTEM=1
# shellcheck source=gpu_jobs/proof_common.sh
. "$(dirname "$0")/proof_common.sh"

R="$WORK/minisgl"
"$PY" - "$R" > "$RESULTS/incident.json" <<'PYEOF'
import json, sys
from pathlib import Path
from revertbot.demo.propose_repo import FLAKY_TEST, GRAPH_TEST, build_incident_repo
i = build_incident_repo(Path(sys.argv[1]))
print(json.dumps({"green": i.green, "culprit": i.culprit, "red": i.red, "commits": list(i.commits),
                  "graph_test": GRAPH_TEST, "flaky_test": FLAKY_TEST}, indent=2))
PYEOF
GREEN=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["green"])' "$RESULTS/incident.json")
RED=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["red"])' "$RESULTS/incident.json")
GRAPH=tests/test_graph_runner.py::test_output_of_one_size_survives_replay_of_another
FLAKY=tests/test_sampler.py::test_sampler_is_stable
echo "incident: green $GREEN, red $RED"

echo "== 1. the sampler test's flake rate at the green commit (20 runs, one process)"
t=$(now)
"$PY" -m gpu_jobs.rerun --repo "$R" --commit "$GREEN" --test "$FLAKY" --test "$GRAPH" --runs 20 --per-process 20 \
    --out "$WORK/flake-rate" > "$RESULTS/1-flake-rate.log" 2>&1
"$PY" - "$WORK/flake-rate/rerun.json" "$FLAKY" "$GRAPH" > "$RESULTS/1-flake-rate.json" <<'PYEOF'
import json, sys
doc = json.load(open(sys.argv[1]))
out = {"hardware": doc["hardware"], "runs": len(doc["runs"])}
for t in sys.argv[2:]:
    o = [r["outcomes"][t] for r in doc["runs"]]
    out[t] = {o_: o.count(o_) for o_ in ("passed", "failed", "infra")}
print(json.dumps(out, indent=2))
PYEOF
echo "flake-rate probe: $(since "$t") s"; cat "$RESULTS/1-flake-rate.json"

run_propose() {  # name, extra args...
    local name=$1; shift
    local t; t=$(now)
    "$PY" -m revertbot propose --repo "$R" --range "$GREEN..$RED" --format json "$@" \
        > "$RESULTS/$name.json" 2> "$RESULTS/$name.log"
    local rc=$?
    echo "$name: exit $rc, $(since "$t") s" | tee -a "$RESULTS/timings.txt"
}

echo "== 2. the sampler test alone"
run_propose 2-flaky --test "$FLAKY" --history "$FLAKY=32:8"
echo "== 3. the CUDA-graph test alone (json, then the Markdown of a second search)"
run_propose 3-graph --test "$GRAPH" --history "$GRAPH=40:0"
t=$(now)
"$PY" -m revertbot propose --repo "$R" --range "$GREEN..$RED" --test "$GRAPH" --history "$GRAPH=40:0" \
    > "$RESULTS/3-graph.en.md" 2> "$RESULTS/3-graph.en.log"; echo "3-graph.en: exit $?, $(since "$t") s" | tee -a "$RESULTS/timings.txt"
echo "== 4. both failing tests, as the red run reports them"
run_propose 4-both --test "$GRAPH" --test "$FLAKY" --history "$GRAPH=40:0" --history "$FLAKY=32:8"

"$PY" - "$RESULTS" <<'PYEOF'
import json, sys
from pathlib import Path
res = Path(sys.argv[1])
truth = json.loads((res / "incident.json").read_text())
for name in ("2-flaky", "3-graph", "4-both"):
    try:
        d = json.loads((res / f"{name}.json").read_text())
    except ValueError as exc:
        print(f"{name}: no JSON ({exc})"); continue
    ok = d["suspect"] == truth["culprit"] if d["verdict"] == "culprit" else None
    print(f"{name}: verdict {d['verdict']} test {d['test'].rsplit('::', 1)[-1]} suspect {(d['suspect'] or '')[:12]} "
          f"(true culprit: {ok}) proven {d['proven']} proposes_revert {d['proposes_revert']} runs {d['runs']} "
          f"infra {d['infra_runs']} runner-minutes {d['runner_minutes']} on {d['hardware']}")
PYEOF
