"""agenttest signal SDK.

    from agenttest import Featurizer, Predictor, evaluate

Write a Featurizer (features from the causal view at bar t) and a Predictor
(an embedding from the features), evaluate them locally on a challenge; the
labels, windows and metrics are the C code the server runs
(libagenttest_eval.so), so the numbers are the server's. Inside the sandbox
the same classes are streamed bar by bar by the runner (docs/sdk.md).
"""
from .featurizer import Featurizer, Predictor
from .view import CausalView


def evaluate(*args, **kwargs):
    """See agenttest.evaluator.evaluate (imported lazily: the sandbox has no ctypes library)."""
    from .evaluator import evaluate as _evaluate
    return _evaluate(*args, **kwargs)


def __getattr__(name):
    if name == "DataProvider":
        from .data import DataProvider
        return DataProvider
    raise AttributeError("module 'agenttest' has no attribute %r" % name)


__all__ = ["Featurizer", "Predictor", "CausalView", "DataProvider", "evaluate"]
