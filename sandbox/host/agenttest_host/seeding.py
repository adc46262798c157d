"""Deterministic random number generators for every strategy call.

A run forked from a zygote inherits the zygote's RNG state, so an unseeded
strategy would draw the same numbers in every run forked from one zygote
and different ones on another zygote: reruns and verifications could
disagree. Before the strategy's code is executed, and again before every
call (so the causality audit's prefix calls start where the full call
started), the host seeds Python's `random` and numpy's global RNG
(`np.random.seed`, which `np.random.rand`, `np.random.normal`, ... use) from
the run's identity: the SHA-256 of a fixed tag, the strategy source and the
canonical JSON of its params. The same code with the same params draws the
same numbers in every run; changing either changes them. Generators the
strategy makes itself (`np.random.default_rng()` without a seed) take
entropy from the kernel and stay non-deterministic: pass a seed
(docs/strategies.md).
"""
import json
import random

import numpy as np

try:
    # CPython's own SHA-256 (built into the interpreter): the same digest as
    # hashlib's OpenSSL one, without OpenSSL's provider lookup, which in a
    # forked run touches (and so copies) about a dozen more pages of
    # libcrypto and its state per process (issue 19).
    from _sha256 import sha256 as _sha256
except ImportError:  # another CPython (3.12 renamed it _sha2)
    from hashlib import sha256 as _sha256

_TAG = b"agenttest-rng-v1\0"


def seed_for(source, params=None):
    """The 64-bit seed of (source, params): SHA-256 of the tag, the source
    bytes, a NUL and the params as canonical JSON (sorted keys, no spaces)."""
    h = _sha256(_TAG)
    h.update(bytes(source))
    h.update(b"\0")
    # no params is "{}", what the encoder would write, without the encoder
    # (its first use copies a few dozen pages in a forked run)
    h.update(json.dumps(params, sort_keys=True, separators=(",", ":")).encode("utf-8") if params else b"{}")
    return int.from_bytes(h.digest()[:8], "little")


def seed_all(seed):
    """Seed `random` and numpy's global RandomState from seed."""
    random.seed(seed)
    np.random.seed(seed & 0xFFFFFFFF)
