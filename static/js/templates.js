// Starting code for the editors: one small, correct, causal example per
// strategy kind, and a signal skeleton per challenge type with the right
// embedding size. Plain strings; nothing here runs in the browser.

export const STRATEGY_TEMPLATES = {
  simulate: `"""Buy and hold: the equity curve follows the price, starting at 1.0.

simulate(prices, params) gets the closing prices (oldest first) and returns
one equity value per price: same length, first value 1.0, finite, > 0.
"""
import numpy as np


def simulate(prices, params):
    p = np.asarray(prices, dtype=float)
    if p.size == 0:
        return [1.0]
    return p / p[0]
`,
  positions: `"""Trend following: long while the close is above its moving average.

positions(prices, params) returns the target exposure for each bar (1 = fully
long, 0 = flat, -1 = short). The engine trades on the next bar and charges
fees, so a position decided at bar t can only earn from t+1 on.
"""
import numpy as np


def positions(prices, params):
    p = np.asarray(prices, dtype=float)
    window = int(params.get("window", 50))
    if p.size == 0:
        return []
    c = np.cumsum(np.insert(p, 0, 0.0))
    ma = np.empty_like(p)
    n = np.arange(1, p.size + 1)
    k = np.minimum(n, window)
    ma[:] = (c[n] - c[n - k]) / k          # mean of the last <= window closes, causal
    return np.where(p > ma, 1.0, 0.0)
`,
};

const DIMS = { binary: 2, hitfirst: 3, lbfgs: 17, breakout: 58, xsec_rank: 29, funding_xsec: 20 };

const OUTPUT = {
  binary: `        p_up = 1.0 / (1.0 + np.exp(-40.0 * features["momentum"]))
        return np.array([p_up, 1.0 - p_up])`,
  hitfirst: `        p_up = 1.0 / (1.0 + np.exp(-40.0 * features["momentum"]))
        p_neither = 0.2
        return np.array([p_up * 0.8, (1.0 - p_up) * 0.8, p_neither])`,
  lbfgs: `        out = np.full(17, 0.5)
        out[:5] = 0.2                       # bucket probabilities (uniform)
        out[2] += 0.1 * np.tanh(features["momentum"] * 50)
        out[:5] /= out[:5].sum()
        return out`,
};

/** signalTemplate(challenge): signal code for a challenge object (name, type, asset, dim). */
export function signalTemplate(ch) {
  const type = ch.type || 'binary';
  const asset = ch.asset || ch.primary_asset || 'ETH';
  const dim = ch.embedding_dim || ch.dim || DIMS[type] || 2;
  const body = OUTPUT[type] || `        # ${dim} numbers in the challenge's asset order
        return np.full(${dim}, features["momentum"], dtype=float)`;
  return `"""Signal for ${ch.name || 'a challenge'}: momentum and volatility of ${asset}'s last 100 closes.

The featurizer sees only the past: view.prices(asset) ends at the current
bar. The predictor returns the embedding (${dim} numbers) for this step.
"""
import numpy as np
from agenttest import Featurizer, Predictor


class TechFeaturizer(Featurizer):
    warmup = 200
    compute_interval = 1

    def compute(self, view):
        closes = view.prices("${asset}")[-101:]
        rets = np.diff(np.log(closes))
        return {"momentum": float(rets.sum()), "volatility": float(rets.std())}


class TechPredictor(Predictor):
    def predict(self, features):
${body}
`;
}
