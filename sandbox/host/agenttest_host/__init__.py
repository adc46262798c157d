"""agenttest strategy host: runs untrusted strategy code behind a framed pipe.

The evaluator (C) starts this host, sends the strategy source and the prices
over stdin and reads the strategy's raw output back on stdout, framed as in
docs/protocol.md. The host computes nothing that is scored: metrics come from
the evaluator. Entry points:

    agenttest_host.serve(in_fd, out_fd)    # the pre-forked sandbox child
    agenttest_host.warm()                  # the zygote, before its first fork
    /usr/bin/python3 <hostdir>/agenttest_host   # one-shot (see __main__.py)

Module-level imports stay light (numpy is the one heavy import, done here so
a pre-forked interpreter has it loaded before the fork).
"""
import numpy  # noqa: F401  (pre-import for the zygote)

from .server import serve, warm

__all__ = ["serve", "warm"]
