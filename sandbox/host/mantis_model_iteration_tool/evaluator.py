"""Alias of model_iteration_tool.evaluator (the agent workspace package name)."""
from model_iteration_tool.evaluator import *  # noqa: F401,F403
from model_iteration_tool.evaluator import __all__  # noqa: F401
