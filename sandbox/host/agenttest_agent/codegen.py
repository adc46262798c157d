"""Writes the strategy file of an iteration: a self-contained
TechFeaturizer/TechPredictor with the fitted model as a JSON literal and the
agent's own feature and prediction source pasted in (features.BAR_SOURCE,
predict.PREDICT_SOURCE), so that what the trusted evaluator scores is what
the agent validated, and the file runs with numpy and the SDK only. The
text depends only on the model and the iteration that found it: an
iteration that keeps the best set writes the same bytes again, whose
scores the trusted side then reuses (evaluator/runner/agentloop/iteration.py)."""
import json

from .features import BAR_SOURCE, WARMUP
from .predict import PREDICT_SOURCE

TEMPLATE = '''"""Agent {agent} on {challenge} (built-in research agent): the set found at iteration {n}.

Hypothesis: {hypothesis}
Features: {features}
"""
import json

import numpy as np

from agenttest import Featurizer, Predictor

MODEL = json.loads({model!r})
{bar}
{pred}

class TechFeaturizer(Featurizer):
    warmup = {warmup}
    compute_interval = {ci}

    def compute(self, view):
        assets = MODEL["assets"]
        closes = {{a: view.prices(a) for a in assets}}
        every = [closes[a] for a in assets]
        out = {{}}
        for a in assets:
            vol = view.ohlcv(a)[:, 4]
            row = []
            for name in MODEL["features"]:
                kind, _, w = name.rpartition("_")
                row.append(_bar_feature(kind, int(w), closes[a], vol, every))
            out[a] = np.array([row])
        return out


def _as_arrays(m):
    """MODEL with its weight lists as float64 arrays, converted once (the
    same numbers _predict would convert on every call)."""
    out = dict(m)
    for k in ("mu", "sd", "w"):
        if isinstance(m.get(k), dict):
            out[k] = {{a: np.asarray(v, dtype=np.float64) for a, v in m[k].items()}}
        elif k in m:
            out[k] = np.asarray(m[k], dtype=np.float64)
    for k in ("W", "prior", "directional"):
        if k in m:
            out[k] = np.asarray(m[k], dtype=np.float64)
    return out


class TechPredictor(Predictor):
    """Between two computes (compute_interval bars) the evaluation loop
    passes the same features object again: the same row is returned
    without recomputing it (predict is a pure function of the features)."""

    def __init__(self):
        self._model = _as_arrays(MODEL)
        self._seen = None
        self._row = None

    def predict(self, features):
        seen = self._seen
        if seen is not None and features is seen[0] and all(features.get(a) is x for a, x in seen[1]):
            return self._row
        row = _predict(self._model, features)[0]
        row.flags.writeable = False
        self._seen = (features, [(a, features.get(a)) for a in MODEL["assets"]])
        self._row = row
        return row
'''


def strategy_source(n, agent, challenge, model, ci, hypothesis):
    """The text of iteration_N.py for a fitted model; n: the iteration
    that found its configuration."""
    return TEMPLATE.format(n=n, agent=agent, challenge=challenge,
                           hypothesis=hypothesis.replace('"""', "'''"),
                           features=", ".join(model["features"]),
                           model=json.dumps(model, sort_keys=True, separators=(",", ":")),
                           bar=BAR_SOURCE, pred=PREDICT_SOURCE, warmup=WARMUP, ci=ci)
