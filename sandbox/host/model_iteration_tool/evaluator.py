"""The original's evaluator module: CHALLENGES, the label and event
functions (C core, mantis arithmetic), _generate_embeddings and evaluate()
with the original's default mode ("mantis")."""
from agenttest.evaluator import challenges, score_embeddings, EvaluationError  # noqa: F401
from agenttest.loop import generate_embeddings
from agenttest.catalog import ChallengeConfig, challenge_table
from agenttest.labels import (EPS, BreakoutEvent, detect_breakouts,  # noqa: F401
                              make_binary_labels, make_hitfirst_labels, make_lbfgs_labels,
                              make_xsec_labels, rolling_std, sigma_series)

from . import evaluate  # noqa: F401

__all__ = ["evaluate", "CHALLENGES", "ChallengeConfig", "EPS", "BreakoutEvent",
           "make_binary_labels", "make_hitfirst_labels", "make_lbfgs_labels", "make_xsec_labels",
           "detect_breakouts", "challenges", "score_embeddings", "EvaluationError",
           "generate_embeddings", "_generate_embeddings", "_rolling_std", "_sigma_series"]

CHALLENGES = challenge_table()


def _generate_embeddings(featurizer, predictor, provider, warmup=None):
    """The original's private name for the embedding loop: (float32 rows, warmup)."""
    return generate_embeddings(featurizer, predictor, provider, warmup)


def _rolling_std(x, window):
    """The original's rolling sample std (C core, mantis arithmetic)."""
    return rolling_std(x, window, mode="mantis")


def _sigma_series(prices, horizon, vol_window):
    """The original's causal sigma series (C core, mantis arithmetic)."""
    return sigma_series(prices, horizon, vol_window, mode="mantis")
