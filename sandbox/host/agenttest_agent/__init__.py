"""The built-in offline research agent (driver `builtin`, docs/agents.md)."""
