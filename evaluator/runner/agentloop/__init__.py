"""The trusted side of an agent iteration (docs/agents.md): workspace
contract, dev-only data copy, the agent sandbox profile, trusted scoring."""
