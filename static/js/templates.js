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

// Per challenge type: what the template's featurizer computes and how its
// predictor turns that into the embedding. Each one is a small, causal and
// honest signal that beats its challenge's baseline on the default
// synthetic market (docs/datasets.md: 1-hour momentum planted in ETH only,
// volatility clustering in every asset); tests/challenges/test_templates.py
// evaluates every one of them. ${A} is the challenge's (first) asset.
const KINDS = {
  binary: {
    doc: "momentum of ${A}'s last 100 closes: up is likelier after a rise",
    compute: `        closes = view.prices("\${A}")[-101:]
        return {"momentum": float(np.log(closes[-1] / closes[0]))}`,
    predict: `        p_up = 1.0 / (1.0 + np.exp(-40.0 * features["momentum"]))
        return np.array([p_up, 1.0 - p_up])`,
  },
  hitfirst: {
    doc: "volatility clustering (a barrier is hit likelier when the last 100 minutes\nwere wilder than the last 5 days) and 1-hour momentum for the side",
    compute: `        closes = view.prices("\${A}")[-7201:]
        rets = np.diff(np.log(closes))
        recent, usual = rets[-100:].std(), rets.std()
        return {"momentum": float(np.log(closes[-1] / closes[-61])) if closes.size > 60 else 0.0,
                "vol_ratio": float(recent / usual) if usual > 0 else 1.0}`,
    predict: `        hit = min(max(0.6 * features["vol_ratio"], 0.2), 0.9)   # P(either barrier first)
        tilt = 0.1 * np.tanh(100.0 * features["momentum"])
        return np.array([hit / 2 * (1 + 2 * tilt), hit / 2 * (1 - 2 * tilt), 1.0 - hit])`,
  },
  lbfgs: {
    doc: "volatility clustering: after a wild stretch the next return is likelier to be\nan extreme bucket (|z| >= 2), else the middle one; momentum picks the side",
    compute: `        closes = view.prices("\${A}")[-3601:]
        rets = np.diff(np.log(closes))
        h = \${H}                                  # the challenge's horizon in minutes
        recent, usual = rets[-h:].std(), rets.std()
        return {"momentum": float(np.log(closes[-1] / closes[-h - 1])) if closes.size > h else 0.0,
                "vol_ratio": float(recent / usual) if usual > 0 else 1.0}`,
    predict: `        out = np.full(17, 0.5)                   # columns 5..16 (q-path) are not scored
        out[:5] = 0.1                            # buckets: z <= -2, (-2,-1), [-1,1], (1,2), >= 2
        if features["vol_ratio"] > 1.5:
            out[0 if features["momentum"] < 0 else 4] = 0.6
        else:
            out[2] = 0.6
        return out`,
  },
  breakout: {
    doc: "1-hour momentum in the direction of the break, for ETH only (the one asset\nwith a planted effect on the default market); every other asset scores 0.5",
    compute: `        closes = view.prices("ETH")
        side = 1.0 if closes[-1] > closes[-5760:].mean() else -1.0   # above the range: a high break
        return {"momentum": float(np.log(closes[-1] / closes[-61])) * side if closes.size > 60 else 0.0}`,
    predict: `        out = np.full(2 * len(ASSETS), 0.5)      # [continuation, reversal] per asset
        if "ETH" in ASSETS:
            p = 1.0 / (1.0 + np.exp(-40.0 * features["momentum"]))
            i = ASSETS.index("ETH")
            out[2 * i], out[2 * i + 1] = p, 1.0 - p
        return out`,
  },
  xsec_rank: {
    doc: "ETH's 1-hour momentum ranks ETH against the rest (the one asset with a\nplanted effect on the default market); the others tie at 0",
    compute: `        closes = view.prices("ETH")[-61:]
        return {"momentum": float(np.log(closes[-1] / closes[0]))}`,
    predict: `        scores = np.zeros(len(ASSETS))           # one score per asset, in ASSETS order
        if "ETH" in ASSETS:
            scores[ASSETS.index("ETH")] = features["momentum"]
        return scores`,
  },
  funding_xsec: {
    doc: "each asset's own 8-hour price momentum, so every row ranks the assets",
    compute: `        return {"momentum": [float(np.log(view.prices(a)[-1] / view.prices(a)[-481]))
                             if view.prices(a).size > 480 else 0.0 for a in ASSETS]}`,
    predict: `        return np.array(features["momentum"])    # one score per asset, in ASSETS order`,
  },
};

/** signalTemplate(challenge): signal code for a challenge object (name,
 * type, asset, assets, horizon, embedding_dim) that runs and beats the
 * challenge's baseline on the default market. */
export function signalTemplate(ch) {
  const type = KINDS[ch.type] ? ch.type : 'binary';
  const asset = ch.asset || ch.primary_asset || (Array.isArray(ch.assets) && ch.assets[0]) || 'ETH';
  const dim = ch.embedding_dim || ch.dim || DIMS[type] || 2;
  const k = KINDS[type];
  const fill = (t) => t.replaceAll('${A}', asset).replaceAll('${H}', String(Number(ch.horizon) || 60));
  const assets = Array.isArray(ch.assets) && ch.assets.length ? ch.assets : [asset];
  const list = type === 'breakout' || type === 'xsec_rank' || type === 'funding_xsec'
    ? `\n# The challenge's assets, in embedding column order.\nASSETS = ${JSON.stringify(assets)}\n`
    : '';
  return `"""Signal for ${ch.name || 'a challenge'}: ${fill(k.doc)}.

The featurizer sees only the past: view.prices(asset) ends at the current
bar. The predictor returns the embedding (${dim} numbers) for this step.
"""
import numpy as np
from agenttest import Featurizer, Predictor
${list}

class TechFeaturizer(Featurizer):
    warmup = 200
    compute_interval = 1

    def compute(self, view):
${fill(k.compute)}


class TechPredictor(Predictor):
    def predict(self, features):
${fill(k.predict)}
`;
}
