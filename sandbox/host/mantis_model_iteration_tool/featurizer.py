"""Alias of model_iteration_tool.featurizer (the agent workspace package name)."""
from model_iteration_tool.featurizer import *  # noqa: F401,F403
from model_iteration_tool.featurizer import __all__  # noqa: F401
