"""Alias of model_iteration_tool.coinglass (the agent workspace package name)."""
from model_iteration_tool.coinglass import *  # noqa: F401,F403
from model_iteration_tool.coinglass import __all__  # noqa: F401
