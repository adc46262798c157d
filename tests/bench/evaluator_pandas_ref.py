"""pandas reference of the original's metric formulas (spec/agenttest.md §3.6)
for tests/bench/evaluator.sh: reads the raw float64 series the C driver wrote,
times the original's computation (best of R), checks the C values to 1e-9.

usage: evaluator_pandas_ref.py SERIES.f64 R C_RESULT_JSON
"""
import json
import math
import sys
import time

import numpy as np
import pandas as pd


def original_metrics(equity, steps_per_year):
    eq = pd.Series(equity, dtype=float)
    n = len(eq)
    total_return = eq.iloc[-1] / eq.iloc[0] - 1 if n > 1 else 0.0
    max_dd = (eq / eq.cummax() - 1).min() if n > 0 else 0.0
    N = max(n - 1, 0)
    cagr = (eq.iloc[-1] / eq.iloc[0]) ** (steps_per_year / N) - 1 if N > 0 and eq.iloc[0] != 0 else 0.0
    rets = eq.pct_change().dropna()
    if len(rets) > 0:
        vol = rets.std(ddof=0) * math.sqrt(steps_per_year)
        sharpe = rets.mean() * steps_per_year / vol if vol != 0 else 0.0
    else:
        vol = sharpe = 0.0
    return {"total_return": total_return, "cagr": cagr, "max_drawdown": max_dd, "volatility": vol,
            "sharpe": sharpe, "score": cagr - 0.7 * abs(max_dd)}


def main():
    series = np.fromfile(sys.argv[1], dtype="<f8")
    reps = int(sys.argv[2])
    c = json.loads(sys.argv[3])
    best = float("inf")
    for _ in range(reps):
        t = time.process_time()
        ref = original_metrics(series, 525600.0)
        best = min(best, time.process_time() - t)
    worst = max(abs(c[k] - v) / max(abs(v), 1e-300) for k, v in ref.items() if v != 0)
    print(json.dumps({"seconds": best, "ns_per_bar": best * 1e9 / len(series),
                      "max_rel_diff_vs_c": worst}))
    if worst > 1e-9:
        sys.exit("C metrics differ from the pandas reference by %g" % worst)


main()
