"""The workspace contract of an iteration (the original's files, spec
mantis.md §6.3), written by the trusted side before the agent's turn:
INSTRUCTIONS.md, GOAL.md (the agent's current goal, so a goal changed
through the API takes effect at the next iteration), API_REFERENCE.md
(once), HISTORY.md (dev metrics only: never a holdout number), INBOX.md
(the operator messages delivered to this turn) and an empty STATE.md and
notes.txt the first time. The agent writes iteration_N.py,
iteration_N_analysis.json, notes.txt and STATE.md."""
import os

from . import sandbox_profile

CHALLENGE_FORMAT = {
    "binary": "[p_up, p_down]",
    "hitfirst": "[p_up_first, p_down_first, p_neither]",
    "lbfgs": "5 bucket probabilities then 12 q-path values (not scored)",
    "breakout": "per asset in challenge order: [p_continuation, p_reversal]",
    "xsec_rank": "one score per asset in challenge order (higher = higher 4h return)",
    "funding_xsec": "one score per asset in challenge order",
}

API_REFERENCE = """# API reference

Write `iteration_N.py` defining two classes:

```python
from agenttest import Featurizer, Predictor
import numpy as np

class TechFeaturizer(Featurizer):
    warmup = 1000           # first bar with a prediction
    compute_interval = 1    # recompute features every N bars
    def compute(self, view):          # view: CausalView at bar t
        ...                           # return anything (usually dict name -> array)

class TechPredictor(Predictor):
    def predict(self, features):      # called every bar with the latest features
        return np.array([...])        # flattened to float32, the challenge's format
```

CausalView: `t`, `assets`, `prices(asset)`, `ohlcv(asset)` ((t+1) x 5: open,
high, low, close, volume), `prices_matrix()`, `timestamps()`, `cg(asset,
field)`, `cg_fields(asset)`, `has_cg()` — read-only views of bars 0..t.

Local evaluation (as often as you like, dev data only — it is all there is
here): `from agenttest import evaluate; evaluate(CHALLENGE, TechFeaturizer(),
TechPredictor(), days_back=...)` reads `$DATASET_DIR`, the dev part of the
market. `agenttest.evaluator.score_embeddings(challenge, provider, emb, warmup,
holdout_start)` scores a matrix you computed yourself. Libraries: numpy,
pandas, scipy, scikit-learn, the standard library. No network.

Files: stay in this directory. The platform scores `iteration_N.py` itself
when your turn ends; a `_result_N.json` or any other file you write is not
read. You learn your dev walk-forward metrics in HISTORY.md next turn.
"""


def _write(ws, name, text):
    p = os.path.join(ws, name)
    tmp = p + ".platform-tmp"
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, p)


def instructions(info, n, min_iterations, max_iterations):
    """INSTRUCTIONS.md of iteration n. It names the workspace as the agent's
    box sees it (sandbox_profile.WORKSPACE), never the server's path."""
    t = info["type"]
    mi = info["metric_info"]
    return """# Instructions — iteration {n}

Challenge: {name} ({t}); embedding dimension {dim}; output per bar: {fmt}.
Primary metric: {primary} ({direction} is better; baseline {baseline}).
Iterations: at least {mn}, at most {mx}.

The data here ($DATASET_DIR) is the development part of the market only; the
platform keeps a sealed holdout you never see. Report walk-forward metrics on
the dev data.

Workspace: {ws}. Memory across iterations: STATE.md. Operator messages:
INBOX.md (read it first when it is not empty, and follow it).

Workflow:
1. Read STATE.md, GOAL.md, HISTORY.md, INBOX.md.
2. Write notes.txt first: hypothesis, planned features, approach, changes.
3. Write iteration_{n}.py (TechFeaturizer / TechPredictor, see API_REFERENCE.md).
4. Evaluate locally on the dev data; append what you learn to notes.txt.
5. Write iteration_{n}_analysis.json: feature_report[name, description, signal,
   stats{{mean,std,min,max}}, predictive_power{{method,value,p_value,n_samples,
   interpretation}}, importance_rank], inference_spec{{summary, data_requirements,
   update_frequency, latency_sensitivity, output_format, dependencies}},
   hypothesis, what_changed, what_worked, what_failed, expected_outcome, log[],
   done (true only after {mn} iterations and diminishing returns).
6. Update STATE.md, then exit.
""".format(n=n, name=info.get("name", ""), t=t, dim=info["embedding_dim"],
           fmt=CHALLENGE_FORMAT.get(t, "see docs"), primary=mi["primary"], direction=mi["direction"],
           baseline=mi["baseline"], mn=min_iterations, mx=max_iterations, ws=sandbox_profile.WORKSPACE)


def _clip(s, n):
    s = "" if s is None else str(s)
    return s if len(s) <= n else s[:n] + "..."


def history(info, entries):
    """HISTORY.md from recorded iterations: dev metrics only."""
    primary = info["metric_info"]["primary"]
    keys = info["metric_info"]["all"]
    out = ["# Previous Iterations", ""]
    for e in entries:
        out.append("## Iteration %d" % e["iteration"])
        if e.get("has_error"):
            out.append("ERROR: %s" % _clip(e.get("error"), 500))
        else:
            m = e.get("metrics") or {}
            for k in keys:
                v = m.get(k)
                out.append("- %s: %s%s" % (k, "null" if v is None else "%.4f" % v,
                                           "  <-- PRIMARY" if k == primary else ""))
            out.append("- windows: %d" % len(m.get("windows") or []))
        a = e.get("analysis") or {}
        for k in ("hypothesis", "what_changed", "what_worked", "what_failed"):
            if a.get(k):
                out.append("- %s: %s" % (k, _clip(a[k], 300)))
        for fr in (a.get("feature_report") or [])[:8]:
            if isinstance(fr, dict):
                pp = fr.get("predictive_power") or {}
                out.append("  - %s: %s; %s=%s (p=%s)" % (_clip(fr.get("name"), 60), _clip(fr.get("description"), 100),
                                                        _clip(pp.get("method"), 30), pp.get("value"), pp.get("p_value")))
        out.append("")
    return "\n".join(out) + "\n"


def prepare(ws, info, n, goal, min_iterations, max_iterations, entries, inbox):
    """Write the contract files of iteration n into the workspace and remove
    any output of an earlier, interrupted attempt at the same iteration."""
    os.makedirs(ws, exist_ok=True)
    for name in ("iteration_%d.py" % n, "iteration_%d_analysis.json" % n):
        try:
            os.unlink(os.path.join(ws, name))
        except FileNotFoundError:
            pass
    _write(ws, "INSTRUCTIONS.md", instructions(info, n, min_iterations, max_iterations))
    _write(ws, "GOAL.md", "# Research Goal\n\n%s\n" % goal)
    if not os.path.exists(os.path.join(ws, "API_REFERENCE.md")):
        _write(ws, "API_REFERENCE.md", API_REFERENCE)
    _write(ws, "HISTORY.md", history(info, entries))
    _write(ws, "INBOX.md", inbox)
    for name in ("STATE.md", "notes.txt"):
        if not os.path.lexists(os.path.join(ws, name)):
            _write(ws, name, "")
