"""The original's momentum example: DO NOT COPY, it peeks at the bar it trades.

It is long over the move from bar i-1 to bar i when p[i] > p[i-window], but
p[i] is the price at the END of that move: the position is decided with the
very price it profits from (same-bar look-ahead). `agenttest backtest
--audit` flags it as lookahead_detected; sma_positions.py shows the causal way.
"""


def simulate(prices, params):
    window = int(params.get("window", 2))
    if window < 1:
        raise ValueError("window must be >= 1")
    equity = [1.0]
    for i in range(1, len(prices)):
        ret = prices[i] / prices[i - 1] - 1.0
        long = i >= window and prices[i] > prices[i - window]
        equity.append(equity[-1] * (1.0 + ret if long else 1.0))
    return equity[: len(prices)] if prices else [1.0]
