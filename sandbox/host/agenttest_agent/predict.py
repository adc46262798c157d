"""The model evaluation shared by the agent's research and the generated
strategy files: PREDICT_SOURCE is executed here and pasted verbatim into
every iteration_N.py, so the trusted evaluator scores exactly the function
the agent validated.

A model is a JSON-able dict: type (binary, hitfirst, lbfgs, xsec_rank,
breakout), assets (challenge column order), features (names), mu/sd per
asset, and the fitted weights (see each branch; xsec_rank and breakout
carry one weight vector per asset, all zero for an asset left out).
"""
import numpy as np

PREDICT_SOURCE = '''
def _predict(model, X):
    """Embedding rows (n x dim) from raw feature rows X[asset] (n x d)."""
    kind = model["type"]
    assets = model["assets"]

    def z(a):
        m = np.asarray(model["mu"][a])
        s = np.asarray(model["sd"][a])
        return np.nan_to_num((np.asarray(X[a], dtype=np.float64) - m) / s)

    if kind == "binary":
        w = np.asarray(model["w"])
        zz = z(assets[0])
        p = 1.0 / (1.0 + np.exp(-np.clip(w[0] + zz @ w[1:], -30, 30)))
        return np.column_stack([p, 1.0 - p])
    if kind in ("hitfirst", "lbfgs"):
        W = np.asarray(model["W"])
        zz = z(assets[0])
        S = np.column_stack([np.ones(len(zz)), zz]) @ W
        S = S - S.max(axis=1, keepdims=True)
        P = np.exp(S)
        P = P / P.sum(axis=1, keepdims=True)
        if kind == "hitfirst":
            a = float(model["shrink"])
            P = (1.0 - a) * P + a * np.asarray(model["prior"])[None, :]
            return P
        return np.column_stack([P, np.zeros((len(P), 12))])
    if kind == "xsec_rank":
        cols = []
        for a in assets:
            w = np.asarray(model["w"][a])
            cols.append(w[0] + z(a) @ w[1:])
        return np.column_stack(cols)
    if kind == "breakout":
        di = model["features"].index("dir_240")
        sign = np.asarray(model["directional"], dtype=np.float64)
        cols = []
        for a in assets:
            w = np.asarray(model["w"][a])   # per asset; all zero: no opinion (0.5)
            zz = z(a)
            d = np.nan_to_num(np.asarray(X[a], dtype=np.float64)[:, di])
            adj = zz * np.where(sign[None, :] > 0, d[:, None], 1.0)
            p = 1.0 / (1.0 + np.exp(-np.clip(w[0] + adj @ w[1:], -30, 30)))
            cols.append(p)
            cols.append(1.0 - p)
        return np.column_stack(cols)
    raise ValueError(kind)
'''

_ns = {"np": np}
exec(compile(PREDICT_SOURCE, "<agenttest_agent.predict>", "exec"), _ns)  # noqa: S102 (our own constant)
predict = _ns["_predict"]
