"""The original's coinglass module: align_to_minutes and INTERVAL_MS. The
original's CoinGlass HTTP fetchers are not here (derivatives fields come
from agenttest datasets)."""
import numpy as np

__all__ = ["align_to_minutes", "INTERVAL_MS"]

INTERVAL_MS = {"1m": 60_000, "5m": 300_000, "15m": 900_000, "30m": 1_800_000, "1h": 3_600_000,
               "4h": 14_400_000, "12h": 43_200_000, "1d": 86_400_000}


def align_to_minutes(candle_times_ms, candle_values, minute_times_ms, period_ms):
    """Causal alignment of period candles (open times, values) to minute
    times: each minute gets the value of the last candle that had closed
    (open + period <= minute), NaN before the first one."""
    ct = np.asarray(candle_times_ms, dtype=np.int64)
    cv = np.asarray(candle_values, dtype=np.float64)
    mt = np.asarray(minute_times_ms, dtype=np.int64)
    order = np.argsort(ct, kind="stable")
    idx = np.searchsorted(ct[order], mt - int(period_ms), side="right") - 1
    out = np.full(len(mt), np.nan)
    ok = idx >= 0
    out[ok] = cv[order][idx[ok]]
    return out
