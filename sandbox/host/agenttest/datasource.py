"""Which market data the SDK uses when the caller passes no provider.

`select_dataset(assets)` answers (path, notice), in this order:
1. $DATASET_DIR when set (one agenttest dataset directory);
2. the newest fetched (not synthetic) dataset version under the datasets
   directory ($AGENTTEST_DATASETS_DIR, else ~/.local/share/agenttest/datasets,
   else /var/lib/agenttest/datasets) holding every asset asked for: each
   version is a subdirectory with a manifest.json (docs/datasets.md), newest
   by last_timestamp_ms;
3. the embedded synthetic market (agenttest.data.default_dataset_dir).
The notice says which one and why; `announce` prints it once per path on
stderr, so a user always knows whether numbers come from real data.
"""
import json
import os
import sys

__all__ = ["datasets_roots", "fetched_versions", "select_dataset", "announce"]

_announced = set()


def datasets_roots():
    """Directories searched for fetched dataset versions, in order."""
    env = os.environ.get("AGENTTEST_DATASETS_DIR")
    if env:
        return [env]
    home = os.path.join(os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"),
                        "agenttest", "datasets")
    return [home, "/var/lib/agenttest/datasets"]


def _manifest(d):
    try:
        with open(os.path.join(d, "manifest.json"), "rb") as f:
            return json.loads(f.read(4 << 20))
    except (OSError, ValueError):
        return None


def _synthetic(man):
    src = man.get("source")
    return isinstance(src, dict) and str(src.get("generator", "")).startswith("agenttest synth")


def fetched_versions(root, assets=()):
    """[(last_timestamp_ms, path, manifest)] of the non-synthetic dataset
    versions directly under root that hold every asset in `assets`, newest first."""
    out = []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return out
    for n in names:
        d = os.path.join(root, n)
        man = _manifest(d)
        if not isinstance(man, dict) or _synthetic(man):
            continue
        if not set(assets) <= set(man.get("assets") or ()):
            continue
        out.append((int(man.get("last_timestamp_ms") or 0), d, man))
    out.sort(key=lambda x: (x[0], x[1]), reverse=True)
    return out


def select_dataset(assets=()):
    """(dataset directory, notice) per the module comment."""
    d = os.environ.get("DATASET_DIR")
    if d:
        return d, "agenttest: using the dataset in $DATASET_DIR (%s)" % d
    for root in datasets_roots():
        found = fetched_versions(root, assets)
        if found:
            _, path, man = found[0]
            return path, ("agenttest: using fetched market data %s (version %s, up to %s ms)"
                          % (path, man.get("version", "?"), man.get("last_timestamp_ms", "?")))
    from .data import default_dataset_dir
    path = default_dataset_dir()
    return path, ("agenttest: NOTICE: no fetched dataset with %s under %s; using the SYNTHETIC "
                  "market (60 days, seed 1, %s): results say nothing about real markets. Fetch "
                  "data (docs/datasets.md) or set DATASET_DIR."
                  % ("+".join(assets) or "any asset", " or ".join(datasets_roots()), path))


def announce(notice):
    """Print a data-source notice once per distinct text (stderr)."""
    if notice not in _announced:
        _announced.add(notice)
        print(notice, file=sys.stderr)
