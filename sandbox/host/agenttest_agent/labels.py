"""Training targets the built-in agent fits on, computed from dev prices.

These are the agent's own numpy versions of the challenge labels
(docs/challenges.md) used only to fit models; every number that is
recorded comes from the C scorer (agenttest.evaluator.score_embeddings on
the dev part inside the sandbox, the trusted evaluator afterwards). Each
function returns (y, valid) arrays of length T indexed by bar t.
"""
import numpy as np

EPS = 1e-12


def binary(c, h):
    """1 if close[t+h] > close[t]."""
    T = len(c)
    y = np.zeros(T)
    ok = np.zeros(T, bool)
    y[:T - h] = c[h:] > c[:T - h]
    ok[:T - h] = True
    return y, ok


def _rolling_std_ddof1(x, w):
    s = np.full(len(x), np.nan)
    cs = np.concatenate(([0.0], np.cumsum(x)))
    cs2 = np.concatenate(([0.0], np.cumsum(x * x)))
    n = w
    sm = cs[w:] - cs[:-w]
    sm2 = cs2[w:] - cs2[:-w]
    s[w - 1:] = np.sqrt(np.maximum((sm2 - sm * sm / n) / (n - 1), 0.0))
    return s


def hitfirst(c, h=100, vol_w=7200):
    """0 up first, 1 down first, 2 neither, barrier = std of the vol_w
    h-bar log returns r[t-vol_w+1 .. t] (r[s] = ln p[s+h] - ln p[s])."""
    lp = np.log(c + EPS)
    T = len(c)
    r = np.full(T, np.nan)
    r[:T - h] = lp[h:] - lp[:T - h]
    sig = _rolling_std_ddof1(np.nan_to_num(r), vol_w)
    sig[T - h:] = np.nan
    y = np.full(T, 2.0)
    done = np.zeros(T, bool)
    for k in range(1, h + 1):
        d = np.full(T, np.nan)
        d[:T - k] = lp[k:] - lp[:T - k]
        up = (~done) & (d >= sig)
        dn = (~done) & (d <= -sig)
        y[up] = 0
        y[dn] = 1
        done |= up | dn
    ok = np.isfinite(sig) & (sig > 0)
    return y, ok


def lbfgs(c, h, vol_w=3600):
    """Bucket 0..4 of z = r_h[t] / sigma_t, sigma_t the std of the vol_w
    most recent h-bar returns ending at or before t."""
    lp = np.log(c + EPS)
    T = len(c)
    fwd = np.full(T, np.nan)
    fwd[:T - h] = lp[h:] - lp[:T - h]
    back = np.full(T, np.nan)
    back[h:] = lp[h:] - lp[:T - h]
    sig = _rolling_std_ddof1(np.nan_to_num(back), vol_w)
    sig[:h + vol_w - 1] = np.nan
    z = fwd / (sig + EPS)
    y = np.select([z <= -2, z < -1, z <= 1, z < 2], [0, 1, 2, 3], 4).astype(float)
    ok = np.isfinite(z) & np.isfinite(sig) & (sig > 0)
    return y, ok


def fwd_return(c, h):
    """Simple h-bar forward return p[t+h]/p[t] - 1."""
    T = len(c)
    y = np.full(T, np.nan)
    y[:T - h] = c[h:] / c[:T - h] - 1.0
    return y, np.isfinite(y)

