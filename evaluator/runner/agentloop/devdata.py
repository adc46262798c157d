"""A dev-only copy of a dataset: the only market data an agent's sandbox
holds. The copy keeps the last `days_back` days minus the holdout (the last
`holdout_days`), so the holdout bars are not in it at all; it is a valid
agenttest dataset (docs/datasets.md: file hashes, sizes and dataset hash
recomputed), written to a temporary name and renamed into place."""
import hashlib
import json
import os
import shutil

HOLDOUT_DAYS = 20
DAY_MS = 86400000


def dataset_hash(man, col_hashes):
    """The dataset hash of docs/datasets.md from the manifest's fields and
    the SHA-256 of every column."""
    lines = ["agenttest-dataset-v1", "interval_ms=%d" % man["interval_ms"], "bars=%d" % man["bars"],
             "assets=" + ",".join(man["assets"]), "fields=" + ",".join(man["fields"]),
             "ts=" + col_hashes["ts.i64"]]
    for a in man["assets"]:
        for f in man["fields"]:
            lines.append("%s.%s=%s" % (a, f, col_hashes["%s.%s.f64" % (a, f)]))
    return hashlib.sha256(("\n".join(lines) + "\n").encode()).hexdigest()


def split(src, days_back, holdout_days=HOLDOUT_DAYS):
    """(start, dev_end, T) bar indices of the evaluation span of a dataset:
    the evaluation covers [start, T), the dev part [start, dev_end)."""
    with open(os.path.join(src, "manifest.json"), "rb") as f:
        man = json.loads(f.read(4 << 20))
    T = int(man["bars"])
    per_day = DAY_MS // int(man["interval_ms"])
    start = max(0, T - int(days_back) * per_day)
    dev_end = max(start, T - int(holdout_days) * per_day)
    return start, dev_end, T


def write_dev_copy(src, dst, days_back, holdout_days=HOLDOUT_DAYS, assets=None):
    """Write the dev part of src (optionally only `assets`) as a dataset at
    dst; returns (dev bars, full evaluation bars)."""
    with open(os.path.join(src, "manifest.json"), "rb") as f:
        man = json.loads(f.read(4 << 20))
    start, dev_end, T = split(src, days_back, holdout_days)
    n = dev_end - start
    if n < 1:
        raise ValueError("no dev bars: days_back %d, holdout %d days" % (days_back, holdout_days))
    keep = [a for a in man["assets"] if assets is None or a in assets]
    tmp = dst + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    hashes, files = {}, {}
    names = ["ts.i64"] + ["%s.%s.f64" % (a, f) for a in keep for f in man["fields"]]
    for name in names:
        with open(os.path.join(src, name), "rb") as f:
            f.seek(start * 8)
            data = f.read(n * 8)
        if len(data) != n * 8:
            raise ValueError("short column %s" % name)
        with open(os.path.join(tmp, name), "wb") as f:
            f.write(data)
        hashes[name] = hashlib.sha256(data).hexdigest()
        files[name] = {"sha256": hashes[name], "size": n * 8}
        if name == "ts.i64":
            first = int.from_bytes(data[:8], "little", signed=True)
            last = int.from_bytes(data[-8:], "little", signed=True)
    out = {"format": "agenttest-dataset", "format_version": 1,
           "version": str(man.get("version", "dataset"))[:40] + "-dev",
           "assets": keep, "fields": list(man["fields"]), "interval_ms": man["interval_ms"],
           "first_timestamp_ms": first, "last_timestamp_ms": last, "bars": n, "files": files}
    out["dataset_hash"] = dataset_hash(out, hashes)
    out["source"] = {"generator": "agenttest agent dev copy", "parent_dataset_hash": man.get("dataset_hash"),
                     "days_back": int(days_back), "holdout_days": int(holdout_days)}
    with open(os.path.join(tmp, "manifest.json"), "w") as f:
        f.write(json.dumps(out, indent=2) + "\n")
    shutil.rmtree(dst, ignore_errors=True)
    os.rename(tmp, dst)
    return n, T - start
