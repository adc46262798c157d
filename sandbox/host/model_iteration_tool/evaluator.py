"""Alias of agenttest.evaluator with the original's default mode ("mantis")."""
from agenttest.evaluator import challenges, score_embeddings, EvaluationError  # noqa: F401
from agenttest.loop import generate_embeddings  # noqa: F401

from . import evaluate  # noqa: F401

__all__ = ["evaluate", "challenges", "score_embeddings", "EvaluationError", "generate_embeddings", "_generate_embeddings"]


def _generate_embeddings(featurizer, predictor, provider, warmup=None):
    """The original's private name for the embedding loop."""
    return generate_embeddings(featurizer, predictor, provider, warmup)
