"""Alias of model_iteration_tool.data (the agent workspace package name)."""
from model_iteration_tool.data import *  # noqa: F401,F403
from model_iteration_tool.data import __all__  # noqa: F401
