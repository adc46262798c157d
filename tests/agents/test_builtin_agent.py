"""The built-in research agent (sandbox/host/agenttest_agent) and the
trusted iteration side (evaluator/runner/agentloop/): the planted ETH 1h momentum effect is
found on the sealed holdout, the agent is steerable, the holdout bars are
absent from its data, files the agent writes besides its strategy change
nothing recorded. Needs root (the sandbox) and make build."""
import json
import os
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path[:0] = [os.path.join(REPO, "evaluator", "runner"), os.path.join(REPO, "sandbox", "host")]

from agentloop import devdata, iteration  # noqa: E402
from agenttest.data import DataProvider, default_dataset_dir  # noqa: E402
from agenttest.evaluator import challenges  # noqa: E402
from agenttest_agent import agent as A, features as F, steer  # noqa: E402

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root")


@pytest.fixture(scope="module")
def market():
    return default_dataset_dir()


def _agent(tmp, market, challenge="ETH-1H-BINARY"):
    return dict(id="t1", root=str(tmp / "agent"), challenge=challenge, goal="find a signal", driver="builtin",
                seed=1, min_iterations=1, max_iterations=6, days_back=60, dataset=market)


@needs_root
def test_planted_momentum_found_on_sealed_holdout(tmp_path, market):
    """Best sealed holdout AUC >= 0.55 on ETH-1H-BINARY within 6 iterations;
    the agent writes _result files and they change nothing recorded."""
    ag = _agent(tmp_path, market)
    info = challenges()["ETH-1H-BINARY"]
    entries = []
    for n in range(1, 7):
        ws = os.path.join(ag["root"], "workspace")
        if os.path.isdir(ws):   # a forged result file in the workspace is never read
            with open(os.path.join(ws, "_result_%d.json" % n), "w") as f:
                json.dump({"mean_auc": 0.99}, f)
        st, e = iteration.run_iteration(ag, n, entries, "")
        assert st == "ok" and not e["has_error"], e
        assert e["holdout_metrics"]["mean_auc"] < 0.9 and e["metrics"]["dev_only"] is True
        entries.append(e)
        best = iteration.best_iteration(info, entries)
        if best and best[1] >= 0.55:
            break
    assert best is not None and best[1] >= 0.55, entries
    hist = open(os.path.join(ag["root"], "workspace", "HISTORY.md")).read() if n > 1 else ""
    assert "%.4f" % best[1] not in hist


def test_dev_copy_has_no_holdout_bars(tmp_path, market):
    n, total = devdata.write_dev_copy(market, str(tmp_path / "dev"), 60)
    assert total - n == 20 * 1440
    full = DataProvider.from_dataset(market, ["ETH"])
    dev = DataProvider.from_dataset(str(tmp_path / "dev"), ["ETH"])
    assert dev.length == n
    assert (dev.prices("ETH") == full.prices("ETH")[total - 60 * 1440:][:n]).all()
    raw = b"".join(open(os.path.join(tmp_path / "dev", f), "rb").read() for f in os.listdir(tmp_path / "dev"))
    tail = full.prices("ETH")[-5:].tobytes()
    assert tail not in raw


def test_bar_features_equal_vectorised(market):
    prov = DataProvider.from_dataset(market, ["BTC", "ETH"], 10)
    c = {a: prov.prices(a) for a in ("BTC", "ETH")}
    v = prov.ohlcv("ETH")[:, 4]
    names = [n for fam in F.FAMILIES for n in F.candidates(fam, True)] + ["dir_240"]
    cl = dict(c)
    cl[None] = c["ETH"]
    X = F.compute_matrix(names, cl, {None: v})
    for t in (1200, 5000, prov.length - 1):
        for j, name in enumerate(names):
            kind, w = F.parse(name)
            b = F.bar_feature(kind, w, c["ETH"][:t + 1], v[:t + 1], [c["BTC"][:t + 1], c["ETH"][:t + 1]])
            assert b == pytest.approx(X[t, j], rel=1e-6, abs=1e-9), (name, t)


def test_steering_excludes_and_favours(tmp_path, market):
    devdata.write_dev_copy(market, str(tmp_path / "dev"), 60, assets=["ETH"])
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "INBOX.md").write_text("[12:00] Operator: exclude bollinger and rsi; focus on volatility")
    a = A.run(str(ws), 1, "ETH-1H-BINARY", 1, 1, "t", str(tmp_path / "dev"))
    names = [f["name"] for f in a["feature_report"]]
    assert names and not any(F.family_of(n) in ("bollinger", "rsi") for n in names)
    assert F.family_of(names[0]) == "volatility"
    assert steer.parse("no momentum. favour momentum")["favour"] == ["momentum"]
