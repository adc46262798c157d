"""One-shot entry: `/usr/bin/python3 <hostdir>/agenttest_host`.

Python runs a directory's __main__.py as a script with the directory itself
on sys.path, so replace that entry with the parent and import the package
properly (the strategy must not see the host's modules as top-level names).
"""
import os
import sys

_pkg_dir = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _pkg_dir]
sys.path.insert(0, os.path.dirname(_pkg_dir))

import agenttest_host  # noqa: E402

agenttest_host.serve(0, 1)
