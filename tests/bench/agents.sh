#!/usr/bin/env bash
# Built-in research agent: AGENT_ITERS (10) iterations on ETH-1H-BINARY
# (60 days), time per iteration split into the agent's turn (sandboxed) and
# the trusted scoring (one --split stream: dev part, then the sealed holdout
# part waited out to its time bound), then
# AGENT_PARALLEL (5) agents at once doing one iteration each, then (unless
# AGENT_ALL=0) one real iteration on every challenge with its sealed score
# against the baseline (exit 1 when one is not beaten). Needs root
# and make build. CPU time figures are printed too (the machine is shared).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
export AGENTTEST_EVAL_LIB=${AGENTTEST_EVAL_LIB:-$PWD/build/release/libagenttest_eval.so}
tmp=$(mktemp -d /tmp/agenttest-bench-agents.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$PYTHON" - "$tmp" "${AGENT_ITERS:-10}" "${AGENT_PARALLEL:-5}" <<'PY'
import os, resource, sys, time
from concurrent.futures import ThreadPoolExecutor
sys.path[:0] = ["evaluator/runner", "sandbox/host"]
from agentloop.iteration import run_iteration
from agenttest.data import default_dataset_dir
tmp, iters, par = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
market = default_dataset_dir()
def agent(i):
    return dict(id="b%d" % i, root=os.path.join(tmp, "a%d" % i), challenge="ETH-1H-BINARY", goal="bench",
                driver="builtin", seed=1, min_iterations=iters, max_iterations=iters, days_back=60, dataset=market)
def cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)   # the sandboxes and evaluators, once reaped
    return ru.ru_utime + ru.ru_stime
ag, entries, acpu, scpu = agent(0), [], [], []
for n in range(1, iters + 1):
    c = [cpu()]
    st, e = run_iteration(ag, n, entries, "", on_scoring=lambda: c.append(cpu()))
    c.append(cpu())
    entries.append(e)
    acpu.append(c[1] - c[0])
    scpu.append(c[2] - c[1])
    # scoring wall = its dev part + the holdout part's bound (waited out whatever the holdout took)
    parts = ("reused" if e.get("score_reused") else "dev part %.2f s + bound %.2f s, holdout took %.2f s"
             % (e["dev_s"], e["holdout_bound_s"], e["holdout_s"]))
    print("iteration %2d: agent %.2f s (CPU %.2f s), scoring %.2f s (%s; CPU %.2f s), dev AUC %.4f, holdout AUC %.4f"
          % (n, e["agent_s"], acpu[-1], e["score_s"], parts, scpu[-1], e["metrics"]["mean_auc"],
             e["holdout_metrics"]["mean_auc"]), flush=True)
a = [e["agent_s"] for e in entries]
s = [e["score_s"] for e in entries]
print("mean per iteration: agent %.2f s (CPU %.2f s), scoring %.2f s (CPU %.2f s) (%d iterations)"
      % (sum(a) / len(a), sum(acpu) / len(a), sum(s) / len(s), sum(scpu) / len(s), len(a)))
best = min((-e["holdout_metrics"]["mean_auc"], e["iteration"]) for e in entries)   # ties keep the earliest
print("best holdout AUC %.4f (iteration %d)" % (-best[0], best[1]))
if par > 0:
    t0, c0 = time.monotonic(), cpu()
    with ThreadPoolExecutor(par) as ex:
        res = list(ex.map(lambda i: run_iteration(agent(i), 1, [], "")[1], range(1, par + 1)))
    wall = time.monotonic() - t0
    print("%d agents at once on %d cores, one iteration each: wall %.1f s, CPU %.1f s; per agent agent %.2f s, "
          "scoring %.2f s" % (par, os.cpu_count(), wall, cpu() - c0, sum(r["agent_s"] for r in res) / par,
                              sum(r["score_s"] for r in res) / par))
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print("children CPU: user %.1f s, sys %.1f s" % (ru.ru_utime, ru.ru_stime))
PY
[ "${AGENT_ALL:-1}" = 0 ] && exit 0
# Every challenge of the default market: one real iteration each (turn in
# the agent sandbox, trusted --split scoring), its sealed score against the
# challenge's baseline (issue 15: a baseline-beating iteration for every one).
"$PYTHON" - "$tmp" <<'PY'
import os, resource, sys
sys.path[:0] = ["evaluator/runner", "sandbox/host"]
from agentloop.iteration import run_iteration
from agenttest.data import default_dataset_dir
from agenttest.evaluator import challenges
tmp, bad = sys.argv[1], []
def cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime
for ch, info in sorted(challenges().items()):
    mi = info["metric_info"]
    ag = dict(id="all", root=os.path.join(tmp, "all-" + ch), challenge=ch, goal="bench", driver="builtin", seed=1,
              min_iterations=1, max_iterations=1, days_back=60, dataset=default_dataset_dir())
    c0 = cpu()
    st, e = run_iteration(ag, 1, [], "")
    v = (e.get("holdout_metrics") or {}).get(mi["primary"])
    ok = v is not None and (v > mi["baseline"] if mi["direction"] == "higher" else v < mi["baseline"])
    bad += [] if ok else [ch]
    print("%-18s sealed %s %s (baseline %.4f, %s) dev %s; agent %.1f s, scoring %.1f s, CPU %.1f s%s"
          % (ch, mi["primary"], "n/a" if v is None else "%.4f" % v, mi["baseline"], mi["direction"],
             "%.4f" % e["metrics"][mi["primary"]] if e.get("metrics") else "n/a", e["agent_s"], e["score_s"],
             cpu() - c0, "" if ok else "  NOT BEATEN: %s" % (e.get("error") or e.get("holdout_error") or "")),
          flush=True)
print("every challenge beaten" if not bad else "not beaten: %s" % ", ".join(bad))
sys.exit(1 if bad else 0)
PY
