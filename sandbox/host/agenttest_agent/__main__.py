"""python3 -m agenttest_agent: one turn of the built-in research agent."""
import sys

from .agent import main

sys.exit(main())
