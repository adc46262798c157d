"""FUNDING-XSEC end to end on fetched data: a prefetch job with a CoinGlass
key stores funding_1h beside the candles of the 20 FUNDING-XSEC assets
(both from the local stand-ins), and POST /api/evaluations scores a
strategy that reads it through view.cg() on the version the label points at."""
import tempfile
from pathlib import Path

from runs_helpers import Api
from test_challenges import wait_done
from test_data_cache import _cg_standin, _standin, _wait_prefetch, CG_KEY

FUNDING_ASSETS = ["BTC", "ETH", "SOL", "XRP", "DOGE", "ADA", "AVAX", "LINK", "DOT", "SUI",
                  "NEAR", "AAVE", "UNI", "LTC", "HBAR", "PEPE", "TRX", "SHIB", "TAO", "ONDO"]

FUNDING_MOMENTUM = '''
import numpy as np
from agenttest import Featurizer, Predictor
ASSETS = %r
class TechFeaturizer(Featurizer):
    warmup = 61
    def compute(self, view):
        return np.array([view.cg(a, "funding_1h")[-1] - view.cg(a, "funding_1h")[-61] for a in ASSETS])
class TechPredictor(Predictor):
    def predict(self, x):
        return np.nan_to_num(x)
''' % FUNDING_ASSETS


def test_funding_xsec_scores_on_fetched_coinglass_data(stack_factory):
    bsi, bbase = _standin("--history-days", "4")
    csi, cbase = _cg_standin("--no-missing")
    data = Path(tempfile.mkdtemp(prefix="agenttest-e2e-fx-"))
    try:
        stack = stack_factory("prefetch-fx", MANTIS_DATA_DIR=str(data), BINANCE_API_URL=bbase,
                              COINGLASS_API_URL=cbase)
        admin = Api(stack, stack.create_token(role="admin"))
        assert admin.post("/api/coinglass-key", {"key": CG_KEY}).status == 200
        r = admin.post("/api/data-cache/prefetch", {"days_back": 60, "assets": FUNDING_ASSETS})
        assert r.status == 202, r
        done = _wait_prefetch(admin, 60, timeout=400)
        assert done["status"] == "completed", done
        user = Api(stack, stack.create_token(role="user"))
        r = user.post("/api/evaluations", {"challenge": "FUNDING-XSEC", "code": FUNDING_MOMENTUM, "days_back": 3,
                                           "holdout_days": 1, "dataset_version": "binance-1m-60d"})
        assert r.status == 202, r
        e = wait_done(user, r.json()["id"], timeout=600)
        assert e["status"] == "completed", e
        assert e["dataset_hash"] == done["dataset_hash"], e
        res = e["result"]
        assert res["type"] == "funding_xsec" and res["n_assets"] == 20, res
        assert -1.0 <= res["mean_spearman"] <= 1.0 and res["windows"], res
    finally:
        for p in (bsi, csi):
            p.kill()
            p.wait()
