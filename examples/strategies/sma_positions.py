"""Moving-average trend follower as a `positions` strategy.

positions(prices, params) returns the target exposure decided at the close
of each bar (1 = fully long, 0 = flat, -1 = fully short). The evaluator's
engine holds position[t] over the NEXT bar (t -> t+1) and charges the fee on
every change, so using prices[t] to decide position[t] is fine: no
look-ahead is possible by construction.

params: fast (default 10), slow (default 50), short (default false: flat
instead of short when the trend is down).
"""
import numpy as np


def positions(prices, params):
    fast = int(params.get("fast", 10))
    slow = int(params.get("slow", 50))
    allow_short = bool(params.get("short", False))
    if not 1 <= fast < slow:
        raise ValueError("need 1 <= fast < slow")
    p = np.asarray(prices, dtype=float)
    n = p.size
    out = np.zeros(n)
    if n < slow:
        return out
    c = np.cumsum(np.insert(p, 0, 0.0))
    sma_fast = (c[fast:] - c[:-fast]) / fast   # sma_fast[k] ends at bar k+fast-1
    sma_slow = (c[slow:] - c[:-slow]) / slow
    f = sma_fast[slow - fast:]                # aligned: both end at bars slow-1..n-1
    up = f > sma_slow
    out[slow - 1:] = np.where(up, 1.0, -1.0 if allow_short else 0.0)
    return out
