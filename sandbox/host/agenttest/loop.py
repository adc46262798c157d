"""The walk-forward embedding loop of spec/mantis.md §2.1, in-process.

The strategy host's streaming mode (agenttest_host/stream.py) runs the same
schedule one bar at a time against the runner; this version serves the SDK,
where the whole history is already in memory.
"""
import numpy as np

from .view import CausalView

__all__ = ["generate_embeddings"]


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
