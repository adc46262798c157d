"""Writes the strategy file of an iteration: a self-contained
TechFeaturizer/TechPredictor with the fitted model as a JSON literal and the
agent's own feature and prediction source pasted in (features.BAR_SOURCE,
predict.PREDICT_SOURCE), so that what the trusted evaluator scores is what
the agent validated, and the file runs with numpy and the SDK only."""
import json

from .features import BAR_SOURCE, WARMUP
from .predict import PREDICT_SOURCE

TEMPLATE = '''"""Iteration {n} of agent {agent} on {challenge} (built-in research agent).

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


class TechPredictor(Predictor):
    def predict(self, features):
        return _predict(MODEL, features)[0]
'''


def strategy_source(n, agent, challenge, model, ci, hypothesis):
    """The text of iteration_N.py for a fitted model."""
    return TEMPLATE.format(n=n, agent=agent, challenge=challenge,
                           hypothesis=hypothesis.replace('"""', "'''"),
                           features=", ".join(model["features"]),
                           model=json.dumps(model, sort_keys=True, separators=(",", ":")),
                           bar=BAR_SOURCE, pred=PREDICT_SOURCE, warmup=WARMUP, ci=ci)
