"""Alias of agenttest.data (the original's module name): DataProvider, CausalView."""
from agenttest.data import DataProvider, load_dataset  # noqa: F401

__all__ = ["DataProvider", "CausalView", "load_dataset"]
from agenttest.view import CausalView  # noqa: F401
