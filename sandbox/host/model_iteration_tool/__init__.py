"""The original MANTIS tool's import names, as thin aliases of agenttest.

Existing research scripts run unchanged: `from model_iteration_tool import
Featurizer, Predictor, evaluate` (and the featurizer/data/evaluator
modules). evaluate() here defaults to mode="mantis", which reproduces the
original's numbers; pass mode="strict" for agenttest's fixed rules.
"""
from agenttest.featurizer import Featurizer, Predictor
from agenttest.view import CausalView


def evaluate(challenge, featurizer, predictor, provider=None, days_back=90, interval="1m",
             holdout_start=0, mode="mantis", **kw):
    """agenttest.evaluator.evaluate with the original's default mode."""
    from agenttest.evaluator import evaluate as _evaluate
    return _evaluate(challenge, featurizer, predictor, provider=provider, days_back=days_back,
                     interval=interval, holdout_start=holdout_start, mode=mode, **kw)


def __getattr__(name):
    if name == "DataProvider":
        from agenttest.data import DataProvider
        return DataProvider
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


__all__ = ["Featurizer", "Predictor", "CausalView", "DataProvider", "evaluate"]
