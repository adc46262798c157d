"""The built-in research agent (sandbox/host/agenttest_agent): offline,
deterministic for a seed, no API key."""
from .. import sandbox_profile


def program(agent, workspace, n):
    """argv of one turn of the built-in agent (the workspace as the box
    sees it: never the server's path)."""
    return ["/usr/bin/python3", "-m", "agenttest_agent", "--workspace", sandbox_profile.WORKSPACE,
            "--iteration", str(n), "--challenge", agent["challenge"], "--seed", str(agent.get("seed", 1)),
            "--min-iterations", str(agent["min_iterations"]), "--agent-id", agent["id"]]
