"""MANTIS_* agent settings this side implements, from the environment
(docs/configuration.md). Out-of-range values raise ValueError naming the key
(the CLI turns it into invalid_config)."""
import os

DEFAULTS = {
    "MANTIS_ITER_WALL_TIMEOUT": (1800, 60, 86400),     # seconds per iteration (agent turn)
    "MANTIS_CLAUDE_TIMEOUT": (600, 10, 86400),         # seconds without agent output
    "MANTIS_CONTAINER_MEM_PCT": (15, 1, 100),          # % of RAM, clamped to [4, 64] GiB
    "MANTIS_HOLDOUT_FACTOR": (3, 1, 100),              # holdout scoring time per bar / the dev part's
    "MANTIS_HOLDOUT_FLOOR": (10, 1, 3600),             # seconds the holdout scoring may always take
}


def get(key):
    """The integer value of a key, its default when unset."""
    d, lo, hi = DEFAULTS[key]
    raw = os.environ.get(key)
    if raw is None or raw == "":
        return d
    try:
        v = int(raw)
    except ValueError:
        raise ValueError("%s must be an integer, got %r" % (key, raw)) from None
    if not lo <= v <= hi:
        raise ValueError("%s must be in [%d, %d], got %d" % (key, lo, hi, v))
    return v


def agent_memory_bytes():
    """The original's rule: total RAM x MANTIS_CONTAINER_MEM_PCT / 100 in
    whole GiB, clamped to [4, 64] GiB (8 GiB when /proc/meminfo is unreadable)."""
    pct = get("MANTIS_CONTAINER_MEM_PCT")
    try:
        with open("/proc/meminfo") as f:
            kb = next(int(l.split()[1]) for l in f if l.startswith("MemTotal:"))
        g = int(min(64, max(4, kb / 1048576 * pct / 100)))
    except (OSError, StopIteration, ValueError):
        g = 8
    return g << 30
