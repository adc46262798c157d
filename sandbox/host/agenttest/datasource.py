"""Which market data the SDK uses when the caller passes no provider.

`select_dataset(assets, days_back=None)` answers (path, notice), in this order:
1. $DATASET_DIR when set (one agenttest dataset directory);
2. the server's market data under $MANTIS_DATA_DIR (docs/market-data.md):
   a. with $AGENTTEST_DATASET_VERSION set, exactly that registered version
      label (e.g. binance-1m-60d-20261202T0100Z, what a run or evaluation
      pins), its hash checked against $AGENTTEST_DATASET_HASH when given; a
      pinned version that is missing or differs raises, never falls back;
   b. else the newest version of a window: the label binance-1m-<D>d (the
      moving label the prefetch job and `agenttest data fetch` keep on the
      newest version) of the smallest D in 60, 90, 120, 180, 365 with
      D >= days_back that holds every asset asked for;
3. the newest fetched (not synthetic) dataset version under the datasets
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

__all__ = ["datasets_roots", "fetched_versions", "window_version", "pinned_version", "select_dataset",
           "announce", "fetch_assets"]

WINDOWS = (60, 90, 120, 180, 365)

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


def pinned_version(data_dir, version, want_hash=None):
    """(path, manifest) of the version labelled `version` under
    data_dir/versions; raises FileNotFoundError or ValueError (other hash)."""
    vdir = os.path.join(data_dir, "versions")
    try:
        names = sorted(os.listdir(vdir))
    except OSError:
        names = []
    for n in names:
        d = os.path.join(vdir, n)
        man = _manifest(d)
        if isinstance(man, dict) and man.get("version") == version:
            if want_hash and man.get("dataset_hash") != want_hash:
                raise ValueError("dataset version %s under %s has hash %s, not the pinned %s"
                                 % (version, data_dir, man.get("dataset_hash"), want_hash))
            return d, man
    raise FileNotFoundError("the pinned dataset version %s is not under %s/versions" % (version, data_dir))


def window_version(data_dir, assets=(), days_back=None):
    """(label path, manifest) of the newest version of the smallest window
    (binance-1m-<D>d, D >= days_back) holding `assets`, or None."""
    for days in WINDOWS:
        if days_back is not None and days < days_back:
            continue
        d = os.path.join(data_dir, "binance-1m-%dd" % days)
        man = _manifest(d)
        if isinstance(man, dict) and set(assets) <= set(man.get("assets") or ()):
            return d, man
    return None


def select_dataset(assets=(), days_back=None):
    """(dataset directory, notice) per the module comment."""
    d = os.environ.get("DATASET_DIR")
    if d:
        return d, "agenttest: using the dataset in $DATASET_DIR (%s)" % d
    data_dir = os.environ.get("MANTIS_DATA_DIR")
    pinned = os.environ.get("AGENTTEST_DATASET_VERSION")
    if data_dir and pinned:
        path, man = pinned_version(data_dir, pinned, os.environ.get("AGENTTEST_DATASET_HASH") or None)
        return path, ("agenttest: using the pinned market data version %s (hash %s, up to %s ms)"
                      % (pinned, man.get("dataset_hash", "?"), man.get("last_timestamp_ms", "?")))
    if data_dir:
        got = window_version(data_dir, assets, days_back)
        if got:
            path, man = got
            return os.path.realpath(path), (
                "agenttest: using fetched market data %s: version %s (hash %s, up to %s ms)"
                % (os.path.basename(path), man.get("version", "?"), man.get("dataset_hash", "?"),
                   man.get("last_timestamp_ms", "?")))
    for root in datasets_roots():
        found = fetched_versions(root, assets)
        if found:
            _, path, man = found[0]
            return path, ("agenttest: using fetched market data %s (version %s, up to %s ms)"
                          % (path, man.get("version", "?"), man.get("last_timestamp_ms", "?")))
    from .data import default_dataset_dir
    path = default_dataset_dir()
    where = ([data_dir] if data_dir else []) + datasets_roots()
    return path, ("agenttest: NOTICE: no fetched dataset with %s under %s; using the SYNTHETIC "
                  "market (60 days, seed 1, %s): results say nothing about real markets. Fetch "
                  "data (docs/market-data.md) or set DATASET_DIR."
                  % ("+".join(assets) or "any asset", " or ".join(where), path))


def announce(notice):
    """Print a data-source notice once per distinct text (stderr)."""
    if notice not in _announced:
        _announced.add(notice)
        print(notice, file=sys.stderr)


def fetch_assets(assets=None, interval="1m", days_back=90, cache_dir=None, coinglass_api_key=None):
    """The original's fetch_assets, without the network: the last days_back
    days of `assets` (default the 29 breakout assets) from the dataset
    select_dataset(assets, days_back) picks (a fetched version, else the
    synthetic market; the notice naming it, version and hash, goes to stderr
    once). Returns (ohlcv, coinglass) as the original: {asset: DataFrame
    with timestamp (UTC, datetime64 without a zone), open, high, low, close,
    volume} and {asset: {field: array}} when the version holds CoinGlass
    fields (else {}), both on the version's one minute grid: a gap is a row
    of NaN, never filled or dropped. DataProvider(*fetch_assets(...)) is the original's idiom.
    cache_dir and coinglass_api_key are accepted for the original's
    signature (data comes from `agenttest data fetch` or the prefetch job).
    ValueError for an interval other than 1m or an asset the data lacks."""
    import numpy as np
    import pandas as pd
    from .catalog import BREAKOUT_ASSETS
    from .data import load_dataset
    if interval != "1m":
        raise ValueError("only 1-minute bars are supported")
    assets = list(BREAKOUT_ASSETS if assets is None else assets)
    path, notice = select_dataset(assets, days_back)
    announce(notice)
    names, _, ohlcv, ts, cg = load_dataset(path, assets, days_back)
    missing = [a for a in assets if a not in names]
    if missing:
        raise ValueError("%s: no such asset in %s" % (", ".join(missing), path))
    stamps = pd.to_datetime(np.asarray(ts, dtype=np.int64), unit="ms")   # UTC, naive as datetime64
    frames = {a: pd.DataFrame({"timestamp": stamps, "open": ohlcv[a][:, 0], "high": ohlcv[a][:, 1],
                               "low": ohlcv[a][:, 2], "close": ohlcv[a][:, 3], "volume": ohlcv[a][:, 4]})
              for a in assets}
    return frames, {a: dict(cg[a]) for a in assets if cg.get(a)}
