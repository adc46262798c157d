"""Agent drivers: what runs an agent's turn inside the agent sandbox.

A driver is one module in this package with one function,

    program(agent, workspace, n) -> argv

the command line of the agent's turn for iteration n (run in the agent
sandbox by iteration.run_turn, workspace as its working directory; its
output is the agent's stdout.log). The C side lists the driver names in
common/agent_driver.c (the API refuses drivers whose `available` flag is
off); issue 16 adds claude-code and command here.
"""
import importlib

NAMES = ("builtin",)


def get(name):
    """The driver module called name; ValueError when there is none."""
    if name not in NAMES:
        raise ValueError("driver %r is not available" % name)
    return importlib.import_module("%s.%s" % (__name__, name))
