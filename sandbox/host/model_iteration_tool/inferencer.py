"""The original's inferencer module (agenttest.inferencer)."""
from agenttest.inferencer import *  # noqa: F401,F403
from agenttest.inferencer import __all__  # noqa: F401
