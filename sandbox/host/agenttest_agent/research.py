"""The built-in agent's research: data context, fits on the dev walk-forward,
validation through the C scorer, feature screening and the search moves.

Theory of operation. The agent only ever holds the dev part of the market
(the sandbox has nothing else). It splits that part once more: bars before
`val_start` (40 % of dev) are only ever trained on; from there on it walks
forward in folds of FOLD bars, refitting before each fold on every label
that is fully known `gap` bars before it, and predicting the fold. The
out-of-sample rows form an embedding that agenttest.evaluator.score_embeddings
(the same C scoring as the server's) scores with holdout_start = val_start,
so the agent's validation number is the challenge's own metric on data
its fits never saw. A configuration is {features, lam, ...}; the final
model of an iteration is the same configuration fitted on all of dev.
"""
import math

import numpy as np

from agenttest.evaluator import score_embeddings

from . import features as F
from . import labels as L
from . import models as M
from .predict import predict

FOLD = 4000
SUBSAMPLE = 5            # every 5th bar for fits on overlapping labels
TREND_H = 30             # multi-asset challenges: each asset's own forward return it is fitted on


class Context:
    """Dev data, labels and feature cache for one challenge."""

    def __init__(self, challenge, info, provider):
        self.challenge = challenge
        self.info = info
        self.type = info["type"]
        self.assets = list(info["assets"])
        self.h = int(info["horizon"])
        self.dim = int(info["embedding_dim"])
        mi = info["metric_info"]
        self.primary, self.higher = mi["primary"], mi["direction"] == "higher"
        self.baseline = float(mi["baseline"])
        self.provider = provider
        self.T = provider.length
        self.multi = len(self.assets) > 1
        self.ci = 10 if self.multi else 1
        self.closes = {a: provider.prices(a) for a in self.assets}
        self.volumes = {a: provider.ohlcv(a)[:, 4] for a in self.assets}
        self.val_start = max(F.WARMUP + 2000, int(0.4 * self.T))
        self._cache = {}
        self._labels()

    def _labels(self):
        t = self.type
        if t == "binary":
            self.y, self.ok = L.binary(self.closes[self.assets[0]], self.h)
            self.overlap = self.h
        elif t == "hitfirst":
            self.y, self.ok = L.hitfirst(self.closes[self.assets[0]], self.h)
            self.overlap = self.h
        elif t == "lbfgs":
            self.y, self.ok = L.lbfgs(self.closes[self.assets[0]], self.h)
            self.overlap = self.h
        elif t in ("xsec_rank", "breakout"):
            self.trend = {a: L.fwd_return(self.closes[a], TREND_H) for a in self.assets}
            self.overlap = TREND_H
        else:
            raise ValueError("the built-in agent cannot work on %s challenges" % t)

    def column(self, asset, name):
        """One feature column of one asset (cached)."""
        key = (asset, name)
        if key not in self._cache:
            cl = dict(self.closes)
            cl[None] = self.closes[asset]
            vo = {None: self.volumes[asset]}
            self._cache[key] = F.compute_matrix([name], cl, vo, self.ci)[:, 0]
        return self._cache[key]

    def matrix(self, asset, names):
        return np.column_stack([self.column(asset, n) for n in names]) if names else \
            np.zeros((self.T, 0))

    def objective(self, score):
        """Higher is better whatever the metric's direction (None: unusable)."""
        if score is None or not math.isfinite(score):
            return None
        return score if self.higher else -score


def model_names(ctx, cfg):
    names = list(cfg["features"])
    if ctx.type == "breakout" and "dir_240" not in names:
        names.append("dir_240")
    return names


def _rows(ctx, lo, hi):
    idx = np.arange(max(F.WARMUP, lo), max(F.WARMUP, hi), SUBSAMPLE)
    return idx[ctx.ok[idx]] if hasattr(ctx, "ok") else idx


def fit(ctx, cfg, train_end):
    """Fit the configuration on labels known before train_end; the model dict."""
    names = model_names(ctx, cfg)
    lam = float(cfg.get("lam", 1.0))
    model = {"type": ctx.type, "assets": ctx.assets, "features": names, "mu": {}, "sd": {}}
    t = ctx.type
    end = train_end - max(ctx.h, 1)
    if t in ("binary", "hitfirst", "lbfgs"):
        a = ctx.assets[0]
        X = ctx.matrix(a, names)
        idx = _rows(ctx, 0, end)
        mu, sd = M.standardise(X[idx])
        model["mu"][a], model["sd"][a] = mu.tolist(), sd.tolist()
        Z = np.nan_to_num((X[idx] - mu) / sd)
        y = ctx.y[idx]
        if t == "binary":
            model["w"] = M.logistic(Z, y, lam).tolist()
        elif t == "hitfirst":
            W = M.multinomial(Z, y, 3, lam)
            prior = np.bincount(y.astype(int), minlength=3) + 1.0
            model["W"] = W.tolist()
            model["prior"] = (prior / prior.sum()).tolist()
            model["shrink"] = float(cfg.get("shrink", 0.3))
        else:
            model["W"] = M.multinomial(Z, y, 5, lam, balanced=True).tolist()
        return model
    return _fit_selected(ctx, cfg, names, end, lam, model)


def _fit_selected(ctx, cfg, names, end, lam, model):
    """The multi-asset challenges: per asset, a ridge of its own TREND_H-bar
    forward return on its standardised features (for MULTI-BREAKOUT only the
    directional ones, taken along the break's side), scaled to unit spread
    on the training bars; only the assets whose fitted score is
    significant (t of its correlation with that return >= cfg["select"],
    sample size divided by the overlap; the strongest asset when none is)
    keep their weights, the others score 0 (XSEC-RANK: tied) or 0.5
    (MULTI-BREAKOUT: no opinion). One planted effect in one asset would
    otherwise drown in 28 assets' noise."""
    thr = float(cfg.get("select", 3.0))
    use = np.array([ctx.type != "breakout" or F.parse(n)[0] in F.DIRECTIONAL for n in names])
    model["directional"] = [1.0 if F.parse(n)[0] in F.DIRECTIONAL else 0.0 for n in names]
    ws, ts = {}, {}
    for a in ctx.assets:
        X = ctx.matrix(a, names)
        y, ok = ctx.trend[a]
        idx = np.arange(F.WARMUP, max(F.WARMUP, end - TREND_H), SUBSAMPLE)
        idx = idx[ok[idx]]
        mu, sd = M.standardise(X[idx]) if len(idx) > 1 else (np.zeros(len(names)), np.ones(len(names)))
        model["mu"][a], model["sd"][a] = mu.tolist(), sd.tolist()
        w = np.zeros(len(names) + 1)
        ts[a] = 0.0
        if len(idx) > 10 and use.any():
            Z = np.nan_to_num((X[idx] - mu) / sd)[:, use]
            wu = M.ridge(Z, y[idx], lam)
            pred = Z @ wu[1:]
            s = float(np.std(pred))
            if s > 0:
                w[1:][use] = wu[1:] / s
                r, _p, n = M.predictive_power(pred, y[idx], TREND_H // SUBSAMPLE)
                ts[a] = r * math.sqrt(max(1.0, n / (TREND_H // SUBSAMPLE)))
        ws[a] = w
    keep = [a for a in ctx.assets if ts[a] >= thr] or [max(ctx.assets, key=lambda a: (ts[a], -ctx.assets.index(a)))]
    model["selected"] = keep
    model["w"] = {a: (ws[a] if a in keep else np.zeros_like(ws[a])).tolist() for a in ctx.assets}
    return model


def neutral_row(ctx):
    if ctx.type == "binary":
        return np.array([0.5, 0.5])
    if ctx.type == "hitfirst":
        return np.full(3, 1.0 / 3)
    if ctx.type == "lbfgs":
        return np.concatenate([np.full(5, 0.2), np.zeros(12)])
    if ctx.type == "breakout":
        return np.full(ctx.dim, 0.5)
    return np.zeros(ctx.dim)


def embed(ctx, model, lo=0, hi=None):
    """Embedding rows lo..hi of a fitted model on the dev bars."""
    hi = ctx.T if hi is None else hi
    X = {a: ctx.matrix(a, model["features"])[lo:hi] for a in ctx.assets}
    return predict(model, X)


def validate(ctx, cfg):
    """Walk-forward validation of a configuration on dev: (metric or None,
    result dict). Every fold is fitted on labels known before it."""
    E = np.tile(neutral_row(ctx), (ctx.T, 1))
    for s in range(ctx.val_start, ctx.T, FOLD):
        e = min(ctx.T, s + FOLD)
        E[s:e] = embed(ctx, fit(ctx, cfg, s), s, e)
    rc, res = score_embeddings(ctx.challenge, ctx.provider, E[F.WARMUP:].astype(np.float32),
                               F.WARMUP, holdout_start=ctx.val_start)
    v = res.get(ctx.primary) if rc == 0 else None
    return (float(v) if v is not None and math.isfinite(float(v)) else None), res


def target_for_power(ctx):
    """(asset, target series) pairs the screening correlates features with."""
    t = ctx.type
    if t == "binary":
        return [(ctx.assets[0], np.where(ctx.ok, ctx.y, np.nan))]
    if t == "hitfirst":
        tgt = np.where(ctx.y == 0, 1.0, np.where(ctx.y == 1, -1.0, 0.0))
        return [(ctx.assets[0], np.where(ctx.ok, tgt, np.nan))]
    if t == "lbfgs":
        return [(ctx.assets[0], np.where(ctx.ok, ctx.y - 2.0, np.nan))]
    return [(a, ctx.trend[a][0]) for a in ctx.assets]   # xsec_rank, breakout: each asset's own trend


def power(ctx, name):
    """Predictive power of one feature: the strongest asset's (corr, p, n)
    (p-values Bonferroni-corrected over the assets), with the asset."""
    best = (0.0, 1.0, 0, None)
    pairs = target_for_power(ctx)
    for a, tgt in pairs:
        x = ctx.column(a, name)
        idx = np.arange(F.WARMUP, ctx.T, SUBSAMPLE)
        r, p, n = M.predictive_power(x[idx], tgt[idx], max(1, ctx.overlap // SUBSAMPLE))
        p = min(1.0, p * len(pairs))
        if p < best[1] or best[3] is None:
            best = (r, p, n, a)
    return best
