"""Strategy template: copy this file and change simulate().

Contract (enforced by the evaluator, see docs/strategies.md):
  * define simulate(prices: list[float], params: dict) -> list[float]
  * return exactly one value per price: the portfolio value relative to the
    starting capital, so the first value is 1.0; every value finite and > 0
  * be pure and deterministic: no files, network, clock or global state;
    the value at bar t may only use prices[0..t] (the causality audit
    re-runs you on shortened and perturbed series and compares)
  * empty prices -> [1.0]; all-zero prices -> all 1.0
  * bad params: fall back to defaults or raise ValueError
  * performance: well under the time limit for 1,000,000 prices; avoid O(n^2)

Limits in the sandbox: CPU time, memory, no network, no writable files, no
subprocesses (see docs/strategies.md for the numbers).

The helpers default_params(), validate_params() and strategy_name() are
conventions for your own use; the platform does not call them.
"""
from typing import Dict, List


def default_params() -> Dict:
    """Parameters and their defaults (none for this template)."""
    return {}


def validate_params(params: Dict) -> Dict:
    """Keep only known keys whose type matches the default's."""
    defaults = default_params()
    out = dict(defaults)
    for key, value in (params or {}).items():
        if key in defaults and isinstance(value, type(defaults[key])):
            out[key] = value
    return out


def strategy_name() -> str:
    return "strategy_template"


def simulate(prices: List[float], params: Dict) -> List[float]:
    """Buy and hold, as a starting point."""
    import numpy as np

    if not prices:
        return [1.0]
    p = np.asarray(prices, dtype=float)
    p0 = p[0] if p[0] != 0 else 1.0
    return (p / p0).tolist()
