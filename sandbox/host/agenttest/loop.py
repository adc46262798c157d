"""The walk-forward embedding loop of spec/mantis.md §2.1, in-process.

The strategy host's streaming mode (agenttest_host/stream.py) runs the same
schedule one bar at a time against the runner; this version serves the SDK,
where the whole history is already in memory.
"""
import numpy as np

from .view import CausalView

__all__ = ["generate_embeddings", "run_inference"]


def generate_embeddings(featurizer, predictor, provider, warmup=None):
    """Embeddings for t = warmup .. T-1 as (float32 matrix rows x dim, warmup).

    setup(assets, T) once; compute() at warmup, warmup + ci, ... (every step
    when ci <= 0); predict() every step with the same feature object between
    recomputes; each output flattened to float32. Rows of different lengths
    raise numpy's error, as the original does."""
    warmup = int(featurizer.warmup if warmup is None else warmup)
    T = provider.length
    featurizer.setup(provider.assets, T)
    ci = int(getattr(featurizer, "compute_interval", 1))
    buffers = provider.buffers
    cache = None
    cache_t = -999999
    rows = []
    compute = featurizer.compute
    predict = predictor.predict
    for t in range(max(warmup, 0), T):
        if cache is None or (t - cache_t) >= ci:
            cache = compute(CausalView(buffers, t))
            cache_t = t
        rows.append(np.asarray(predict(cache), dtype=np.float32).ravel())
    if not rows:
        return np.zeros((0, 0), dtype=np.float32), warmup
    return np.stack(rows), warmup


def run_inference(featurizer, predictor, provider):
    """Live inference with the evaluation's schedule (spec/mantis.md §3.4):
    the embedding for the latest bar T-1, computed as the walk-forward loop
    would have at that bar. setup(assets, T) once; one compute() at the last
    grid point g = warmup + floor((T-1-warmup)/ci)*ci (ci = max(1,
    compute_interval)); predict() for t = g .. T-1; returns the last output
    as flat float32. Equal to the evaluation's last row for strategies
    without state across steps. RuntimeError when T-1 < warmup."""
    T = provider.length
    warmup = int(featurizer.warmup)
    if T - 1 < warmup:
        raise RuntimeError("Not enough data for warmup: have %d candles, need %d" % (T, warmup + 1))
    featurizer.setup(provider.assets, T)
    ci = max(1, int(getattr(featurizer, "compute_interval", 1)))
    g = warmup + ((T - 1 - warmup) // ci) * ci
    cache = featurizer.compute(CausalView(provider.buffers, g))
    out = None
    for _t in range(g, T):
        out = predictor.predict(cache)
    return np.asarray(out, dtype=np.float32).ravel()
