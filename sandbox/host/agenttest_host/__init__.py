"""agenttest strategy host: runs untrusted strategy code behind a framed pipe.

The evaluator (C) starts this host, sends the strategy source and the prices
over stdin and reads the strategy's raw output back on stdout, framed as in
docs/protocol.md. The host computes nothing that is scored: metrics come from
the evaluator. Entry points:

    agenttest_host.serve(in_fd, out_fd)    # the pre-forked sandbox child
    agenttest_host.warm()                  # the zygote, before its first fork
    /usr/bin/python3 <hostdir>/agenttest_host   # one-shot (see __main__.py)

Module-level imports stay light: the host itself needs only the standard
library, so a zygote that preloads nothing (the plain one) forks a small
interpreter. numpy is imported by the zygotes that preload it, by a strategy
that uses it, or by the host on first need (an output that is not a list of
floats); seeding.py seeds its generator whenever it arrives.
"""
from .server import serve, warm

__all__ = ["serve", "warm"]
