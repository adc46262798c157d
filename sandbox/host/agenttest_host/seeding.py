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

numpy may not be loaded yet when a call is seeded: a host forked from the
plain zygote (code that names no module beyond a few standard ones) has
none, and a strategy can still import it, by a name the zygote routing does
not see. Its global generator is then seeded the moment `numpy.random` is
imported, with the seed of the call in progress (_SeedOnImport): the very
state a host that had numpy preloaded would have given that call, since
nothing could draw from it before it existed.
"""
import json
import random
import sys

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


# the seed of the call in progress, for a numpy imported during it
_current = [None]


def _seed_numpy(mod, seed):
    """Seed numpy.random's global RandomState (module `mod`)."""
    mod.seed(seed & 0xFFFFFFFF)


def seed_all(seed):
    """Seed `random` and numpy's global RandomState from seed (numpy's now
    if it is loaded, else as soon as it is)."""
    random.seed(seed)
    _current[0] = seed
    mod = sys.modules.get("numpy.random")
    if mod is not None and hasattr(mod, "seed"):
        _seed_numpy(mod, seed)


class _SeedOnImport:
    """A meta path finder that finds nothing itself: for `numpy.random` it
    takes the spec the other finders give and has its module seeded right
    after it executes."""

    def find_spec(self, name, path=None, target=None):
        if name != "numpy.random" or _current[0] is None:
            return None
        from importlib.machinery import PathFinder
        spec = PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_and_seed(module):
            run(module)
            if _current[0] is not None and hasattr(module, "seed"):
                _seed_numpy(module, _current[0])

        spec.loader.exec_module = exec_and_seed
        return spec


if "numpy.random" not in sys.modules:
    sys.meta_path.insert(0, _SeedOnImport())
