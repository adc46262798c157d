"""Buy and hold: the equity curve is the price relative to the first price.

The `simulate` contract (docs/strategies.md): called as simulate(prices,
params) with prices a list of floats; returns one equity value per price,
starting at 1.0, finite and > 0.
"""
import numpy as np


def simulate(prices, params):
    p = np.asarray(prices, dtype=float)
    if p.size == 0:
        return [1.0]
    p0 = p[0] if p[0] != 0 else 1.0
    return p / p0
