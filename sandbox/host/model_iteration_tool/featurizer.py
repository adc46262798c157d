"""Alias of agenttest.featurizer (the original's module name)."""
from agenttest.featurizer import Featurizer, Predictor  # noqa: F401

__all__ = ["Featurizer", "Predictor"]
