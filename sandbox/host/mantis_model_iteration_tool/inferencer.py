"""Alias of model_iteration_tool.inferencer (the agent workspace package name)."""
from model_iteration_tool.inferencer import *  # noqa: F401,F403
from model_iteration_tool.inferencer import __all__  # noqa: F401
