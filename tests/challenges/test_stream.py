"""Walk-forward evaluation through the real path: `agenttest evaluate` →
lockstep shared-memory streaming → the sandboxed strategy host → scoring in
C (stage 28). Every challenge end to end (and equal to the in-process SDK on
the same data), the compute/predict schedule, the leak tests, NaN and shape
handling, the sealed dev-only mode and the planted ETH momentum."""
import json
import os
import struct

import numpy as np
import pytest

import streamlib as sl
from streamlib import evaluate

pytestmark = [sl.stage_only, sl.needs_root]

CHALLENGES = {  # name -> (assets the strategy scores, embedding dim)
    "ETH-1H-BINARY": (["ETH"], 2),
    "ETH-HITFIRST-100M": (["ETH"], 3),
    "ETH-LBFGS": (["ETH"], 17),
    "BTC-LBFGS-6H": (["BTC"], 17),
    "MULTI-BREAKOUT": (None, 58),
    "XSEC-RANK": (None, 29),
}
BREAKOUT = ["BTC", "ETH", "XRP", "SOL", "TRX", "DOGE", "ADA", "BCH", "XMR", "LINK", "XLM", "ZEC", "SUI",
            "LTC", "AVAX", "HBAR", "SHIB", "TON", "CRO", "DOT", "UNI", "MNT", "TAO", "AAVE", "PEPE",
            "NEAR", "ICP", "ETC", "ONDO"]
VOLATILE = ("mode", "dev_length", "eval_holdout_minutes", "dev_only", "dataset_version", "dataset_hash", "timing")


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("stream-data")


@pytest.fixture(scope="session")
def ds12(data_dir):
    return sl.synth(str(data_dir / "synth12"), 12)


@pytest.fixture(scope="session")
def ds2(data_dir):
    return sl.synth(str(data_dir / "synth2"), 2, assets=["ETH", "BTC"])


@pytest.fixture(scope="session")
def ds60(data_dir):
    return sl.synth(str(data_dir / "synth60"), 60, assets=["ETH", "BTC"])


def generic(name, ci=1):
    assets, dim = CHALLENGES[name]
    return sl.GENERIC % {"assets": assets or BREAKOUT, "dim": dim, "ci": ci}


def normalise(x):
    """NaN -> None and drop the envelope keys, for comparing results."""
    if isinstance(x, dict):
        return {k: normalise(v) for k, v in x.items() if k not in VOLATILE}
    if isinstance(x, list):
        return [normalise(v) for v in x]
    if isinstance(x, float) and x != x:
        return None
    return x


def sdk_result(dataset, name, code, mode, holdout_days):
    """The same evaluation in-process with the SDK (same C scoring)."""
    from agenttest.data import DataProvider
    from agenttest.evaluator import challenges, evaluate as sdk_evaluate
    from agenttest.featurizer import find_signal_classes
    env = {"__name__": "strategy_sdk"}
    exec(compile(code, "strategy.py", "exec"), env)
    f, p = find_signal_classes(env)
    prov = DataProvider.from_dataset(dataset, challenges()[name]["assets"])
    hs = max(0, prov.length - int(holdout_days * 1440)) if holdout_days else 0
    return sdk_evaluate(name, f(), p(), provider=prov, holdout_start=hs, mode=mode)


@pytest.mark.parametrize("name", sorted(CHALLENGES))
def test_each_challenge_end_to_end_equals_sdk(ds12, tmp_path, name):
    code = generic(name)
    rc, res = evaluate(ds12, name, code, tmp_path, mode="mantis", holdout_days=4)
    assert rc == 0, res
    assert res["challenge"] == name and res["mode"] == "mantis"
    assert res["windows"] and any(w["in_holdout"] for w in res["windows"])
    assert res["dev_length"] == 12 * 1440 - 4 * 1440 and res["eval_holdout_minutes"] == 4 * 1440
    t = res["timing"]
    assert t["steps"] == 12 * 1440 - 120 and t["compute_calls"] == t["steps"] and t["warmup"] == 120
    # the streamed embeddings score exactly like the in-process SDK's
    assert normalise(res) == normalise(sdk_result(ds12, name, code, "mantis", 4))


def test_days_back_is_capped_to_the_dataset(ds2, tmp_path):
    """Issue 11 item 8: days_back up to 3,650 sized the runner's buffers by
    the request; it is capped to the dataset (2 days here): 3,650 days
    stream and score exactly the whole dataset, and 1 day streams less."""
    code = generic("ETH-1H-BINARY", ci=60)
    rc1, whole = evaluate(ds2, "ETH-1H-BINARY", code, tmp_path, trusted=True)
    rc2, huge = evaluate(ds2, "ETH-1H-BINARY", code, tmp_path, trusted=True, days_back=3650)
    rc3, one = evaluate(ds2, "ETH-1H-BINARY", code, tmp_path, trusted=True, days_back=1)
    assert rc1 == rc2 == rc3 == 0, (whole, huge, one)
    assert huge["timing"]["steps"] == whole["timing"]["steps"] == 2 * 1440 - 120
    assert normalise(huge) == normalise(whole)
    assert one["timing"]["steps"] == 1440 - 120

def test_strict_is_default_and_trusted_equals_confined(ds2, tmp_path):
    code = generic("ETH-1H-BINARY", ci=3)
    rc1, confined = evaluate(ds2, "ETH-1H-BINARY", code, tmp_path, holdout_days=1)
    rc2, trusted = evaluate(ds2, "ETH-1H-BINARY", code, tmp_path, holdout_days=1, trusted=True)
    assert rc1 == rc2 == 0
    assert confined["mode"] == "strict"
    assert confined["timing"]["compute_calls"] == 1 + (2 * 1440 - 120 - 1) // 3
    assert normalise(confined) == normalise(trusted)
    assert normalise(confined) == normalise(sdk_result(ds2, "ETH-1H-BINARY", code, "strict", 1))


SCHEDULE = '''
import json
import numpy as np
from agenttest import Featurizer, Predictor

class TechFeaturizer(Featurizer):
    warmup = 50
    compute_interval = 7
    def setup(self, assets, total):
        self.log = {"setup": [list(assets), total], "computes": [], "lens": [], "predicts": 0}
    def compute(self, view):
        self.log["computes"].append(view.t)
        self.log["lens"].append(len(view.prices("ETH")) == view.t + 1 == len(view.timestamps())
                                == view.ohlcv("ETH").shape[0] == view.prices_matrix().shape[0])
        return {"log": self.log, "T": self.log["setup"][1]}

class TechPredictor(Predictor):
    def predict(self, f):
        log = f["log"]
        log["predicts"] += 1
        t = log["computes"][-1]
        if log["predicts"] == f["T"] - 50:
            c = log["computes"]
            raise RuntimeError("SCHEDULE " + json.dumps({"setup": log["setup"], "n": len(c), "first": c[:3],
                               "last": c[-1], "steps": sorted(set(np.diff(c).tolist())),
                               "lens": all(log["lens"]), "predicts": log["predicts"]}))
        return np.array([0.5, 0.5])
'''


def test_compute_and_predict_schedule(ds2, tmp_path):
    rc, err = evaluate(ds2, "ETH-1H-BINARY", SCHEDULE, tmp_path)
    assert rc == 1 and err["code"] == "strategy_error"
    msg = err["exception"]["message"]
    info = json.loads(msg[msg.index("{"):])
    T = 2 * 1440
    assert info["setup"] == [["ETH"], T]           # the challenge's assets, sorted; setup once
    assert info["n"] == 1 + (T - 50 - 1) // 7 and info["first"] == [50, 57, 64]
    assert info["steps"] == [7] and info["last"] == 50 + 7 * ((T - 51) // 7)
    assert info["lens"] and info["predicts"] == T - 50


# A featurizer that tries to read bar t+1 at time t: through the view's
# internals (name-mangled slot, the buffers' base mapping) and by scanning
# every readable page of its own process for the bytes of future closes.
LEAK = '''
import numpy as np
from agenttest import Featurizer, Predictor

NEEDLES = %(needles)r   # (low 32 bits, high 32 bits) of future ETH closes

def scan_process():
    """Count occurrences of the 8-byte needles in readable memory, never
    building a needle contiguously in memory (halves are compared apart)."""
    lows = {lo.to_bytes(4, "little"): hi.to_bytes(4, "little") for lo, hi in NEEDLES}
    found = scanned = 0
    fd = open("/proc/self/mem", "rb", buffering=0)
    for line in open("/proc/self/maps"):
        parts = line.split()
        if parts[1][0] != "r" or (len(parts) > 5 and parts[5] in ("[vvar]", "[vsyscall]", "[vvar_vclock]")):
            continue
        a, b = (int(x, 16) for x in parts[0].split("-"))
        while a < b:
            n = min(b - a, 1 << 22)
            try:
                fd.seek(a)
                chunk = fd.read(n)
            except (OSError, OverflowError, ValueError):
                break
            scanned += len(chunk)
            for lo, hi in lows.items():
                i = chunk.find(lo)
                while i >= 0:
                    if chunk[i + 4:i + 8] == hi:
                        found += 1
                    i = chunk.find(lo, i + 1)
            a += n
    return found, scanned

class TechFeaturizer(Featurizer):
    warmup = 200
    def compute(self, view):
        t = view.t
        b = object.__getattribute__(view, "_CausalView__b")   # the original's documented bypass
        col = b.closes[:, b.index["ETH"]]
        future = col[t + 1:] if t + 1 < len(col) else col[:0]
        if np.count_nonzero(future) or np.count_nonzero(b.ts[t + 1:]) or \\
           any(np.count_nonzero(blk[t + 1:]) for blk in b.ohlcv.values()):
            raise RuntimeError("LEAK future bars visible at t=%%d" %% t)
        if t == self.warmup and %(scan)s:
            found, scanned = scan_process()
            raise RuntimeError("SCAN found=%%d scanned=%%d" %% (found, scanned))
        ahead = col[t + 60] if t + 60 < len(col) else 0.0
        return {"up": float(ahead > col[t]) if ahead else 0.5}

class TechPredictor(Predictor):
    def predict(self, f):
        return np.array([f["up"], 1 - f["up"]])
'''


def future_needles(dataset, rows):
    ts = np.fromfile(os.path.join(dataset, "ETH.close.f64"), dtype="<f8")
    out = []
    for r in rows:
        v = struct.unpack("<Q", struct.pack("<d", ts[r]))[0]
        out.append((v & 0xFFFFFFFF, v >> 32))
    return out


def test_leak_future_bars_do_not_exist_in_the_sandbox(ds2, tmp_path):
    code = LEAK % {"needles": [], "scan": "False"}
    # through the sandbox: every compute saw zeros only beyond t, and the
    # "look 60 bars ahead" cheat sees nothing (its prediction is constant)
    rc, res = evaluate(ds2, "ETH-1H-BINARY", code, tmp_path, mode="mantis")
    assert rc == 0, res
    assert res["mean_auc"] == pytest.approx(0.5)
    # control: the same cheat in-process (the original's design) is perfect
    with pytest.raises(RuntimeError, match="LEAK"):
        sdk_result(ds2, "ETH-1H-BINARY", code, "mantis", 0)


@pytest.mark.parametrize("trusted", [False, True])
def test_leak_memory_scan_finds_no_future_close(ds2, tmp_path, trusted):
    needles = future_needles(ds2, [600, 900, 1500, 2000, 2879])
    code = LEAK % {"needles": needles, "scan": "True"}
    rc, err = evaluate(ds2, "ETH-1H-BINARY", code, tmp_path, trusted=trusted)
    assert rc == 1, err
    msg = err["exception"]["message"]
    assert msg.startswith("SCAN found=0 "), msg
    assert int(msg.split("scanned=")[1]) > 10 << 20   # it really read the process (MBs)


def test_leak_memory_scan_control_finds_them_in_process(ds2):
    """The scanner works: in-process, where the whole history is loaded, it finds the needles."""
    import agenttest.view  # noqa: F401
    needles = future_needles(ds2, [600, 900, 1500, 2000, 2879])
    env = {"__name__": "scan"}
    exec(compile(LEAK % {"needles": needles, "scan": "True"}, "strategy.py", "exec"), env)
    from agenttest.data import DataProvider
    prov = DataProvider.from_dataset(ds2, ["ETH"])   # noqa: F841 (keeps the history in memory)
    found, scanned = env["scan_process"]()
    assert found >= 5 and scanned > 10 << 20


def bad(body, dim=2):
    return '''
import numpy as np
from agenttest import Featurizer, Predictor
class TechFeaturizer(Featurizer):
    warmup = 10
    def compute(self, view):
        return {"t": view.t, "view": view}
class TechPredictor(Predictor):
    def predict(self, f):
        t = f["t"]
%s
''' % "\n".join("        " + ln for ln in body.strip().splitlines())


@pytest.mark.parametrize("mode,needle", [("strict", "non-finite prediction (NaN) at embedding row 990 (t=1000)"),
                                         ("mantis", "Input contains NaN")])
def test_nan_prediction(ds2, tmp_path, mode, needle):
    code = bad("return np.array([np.nan if t == 1000 else 0.5, 0.5])")
    rc, err = evaluate(ds2, "ETH-1H-BINARY", code, tmp_path, mode=mode)
    assert rc == 1 and err["code"] == "bad_output" and needle in err["error"], err


@pytest.mark.parametrize("body,code,needle", [
    ("return np.zeros(3 if t == 500 else 2)", "bad_output", "different lengths: t=500 has 3 values"),
    ("return np.zeros(5000)", "bad_output", "more than the maximum 4096"),
    ("return 'abc'", "bad_output", "not an array of numbers"),
    ("return 1 / (t - 700)", "strategy_error", "ZeroDivisionError"),
    ("f['view'].t = 5", "strategy_error", "read-only"),
    ("return f['view'].prices('DOGE')", "strategy_error", "KeyError"),
])
def test_shape_and_error_handling(ds2, tmp_path, body, code, needle):
    rc, err = evaluate(ds2, "ETH-1H-BINARY", bad(body), tmp_path)
    assert rc == 1 and err["code"] == code, err
    assert needle in err["error"] or needle in json.dumps(err.get("exception", {})), err
    if code == "strategy_error":
        assert any("strategy.py" in ln for ln in err["exception"]["traceback"])


def test_streamed_view_arrays_are_writable_and_private(ds2, tmp_path):
    """Writes into every array a streamed view returns stay in that array:
    the same call again, the next bar and the other arrays see the data."""
    code = bad("""v = f["view"]
p = v.prices("ETH"); keep = p[-1]; p /= p[0]; p[-1] = -5.0
o = v.ohlcv("ETH"); o[:] = 0.0
m = v.prices_matrix(); m[:] = -1.0
q = v.prices("ETH")
assert q[-1] == keep and v.ohlcv("ETH")[-1, 3] == keep and v.prices_matrix()[-1, 0] == keep
return np.array([0.5 + 0.4 * np.tanh(q[-1] / q[0] - 1.0), 0.5])""")
    rc, res = evaluate(ds2, "ETH-1H-BINARY", code, tmp_path)
    assert rc == 0 and "error" not in res, res


def test_narrow_embedding_strict_vs_mantis_breakout(ds12, tmp_path):
    code = bad("return np.array([0.5, 0.5])").replace("warmup = 10", "warmup = 100")
    rc, err = evaluate(ds12, "MULTI-BREAKOUT", code, tmp_path)
    assert rc == 1 and err["code"] == "bad_output" and "needs at least 58" in err["error"]
    rc, res = evaluate(ds12, "MULTI-BREAKOUT", code, tmp_path, mode="mantis")
    assert rc == 0 and res["n_fallback"] > 0


def test_missing_classes_and_syntax(ds2, tmp_path):
    rc, err = evaluate(ds2, "ETH-1H-BINARY", "x = 1\n", tmp_path)
    assert rc == 1 and err["code"] == "strategy_error" and "TechFeaturizer" in err["error"]
    rc, err = evaluate(ds2, "ETH-1H-BINARY", "def (:\n", tmp_path)
    assert rc == 1 and err["code"] == "strategy_error" and "SyntaxError" in err["error"]


DEV_ONLY = '''
import numpy as np
from agenttest import Featurizer, Predictor
DEV = %d
class TechFeaturizer(Featurizer):
    warmup = 100
    def setup(self, assets, total):
        if total != DEV:
            raise RuntimeError("setup saw %%d bars, the dev period has %%d" %% (total, DEV))
    def compute(self, view):
        if view.t >= DEV or len(view.timestamps()) > DEV:
            raise RuntimeError("holdout bar %%d reached the strategy" %% view.t)
        p = view.prices("ETH")
        return {"m": np.log(p[-1] / p[-60])}
class TechPredictor(Predictor):
    def predict(self, f):
        s = 0.5 + 0.5 * np.tanh(f["m"] * 300)
        return np.array([s, 1 - s])
'''


def test_dev_only_never_sends_the_holdout(ds2, tmp_path):
    dev = 2 * 1440 - 720
    rc, res = evaluate(ds2, "ETH-1H-BINARY", DEV_ONLY % dev, tmp_path, holdout_days=0.5, dev_only=True)
    assert rc == 0, res
    assert res["dev_only"] is True and res["n_timesteps"] == dev and res["eval_holdout_minutes"] == 0
    assert res["timing"]["steps"] == dev - 100
    # the same code sees the holdout without --dev-only (and says so)
    rc, err = evaluate(ds2, "ETH-1H-BINARY", DEV_ONLY % dev, tmp_path, holdout_days=0.5)
    assert rc == 1 and "bars, the dev period has" in err["error"]


RAISE_AT = '''
import numpy as np
from agenttest import Featurizer, Predictor
AT = %d
class TechFeaturizer(Featurizer):
    warmup = 61
    def compute(self, view):
        if view.t >= AT:
            raise RuntimeError("stopped at bar %%d" %% view.t)
        p = view.prices("ETH")
        return p[-1] / p[-61] - 1.0
class TechPredictor(Predictor):
    def predict(self, r):
        s = 0.5 + 0.5 * np.tanh(r * 300)
        return np.array([s, 1 - s])
'''


@pytest.mark.parametrize("name", ["ETH-1H-BINARY", "XSEC-RANK"])
def test_split_equals_dev_only_and_full(ds12, tmp_path, name):
    """One --split stream gives exactly the --dev-only result and the full
    one (agent scoring streams the dev bars once instead of twice)."""
    code = generic(name)
    rc, dev = evaluate(ds12, name, code, tmp_path, holdout_days=4, dev_only=True)
    assert rc == 0, dev
    rc, full = evaluate(ds12, name, code, tmp_path, holdout_days=4)
    assert rc == 0, full
    rc, both = evaluate(ds12, name, code, tmp_path, holdout_days=4, split=True)
    assert rc == 0 and both["full_error"] is None, both
    strip = lambda r: {k: v for k, v in r.items() if k != "timing"}   # noqa: E731
    assert strip(both["dev"]) == strip(dev) and strip(both["full"]) == strip(full)
    assert both["dev"]["dev_only"] is True and both["full"]["dev_only"] is False
    # one stream: the same start; the dev timing is the dev part's (taken at the holdout start)
    td, tf = both["dev"]["timing"], both["full"]["timing"]
    assert (td["startup_s"], td["load_s"]) == (tf["startup_s"], tf["load_s"]), (td, tf)
    assert td["steps"] + td["warmup"] == both["dev"]["n_timesteps"] and td["steps"] < tf["steps"], (td, tf)
    assert td["loop_s"] <= tf["loop_s"], (td, tf)


def test_split_failure_in_holdout_is_sealed_in_dev_is_the_error(ds2, tmp_path):
    dev = 2 * 1440 - 720
    # a failure in the holdout: the dev result stands, the failure is the full part's only
    rc, both = evaluate(ds2, "ETH-1H-BINARY", RAISE_AT % (dev + 5), tmp_path, holdout_days=0.5, split=True)
    assert rc == 0 and both["full"] is None, both
    assert both["full_error"]["code"] == "strategy_error" and "stopped at bar %d" % (dev + 5) in \
        both["full_error"]["error"]
    rc, alone = evaluate(ds2, "ETH-1H-BINARY", RAISE_AT % (dev + 5), tmp_path, holdout_days=0.5, dev_only=True)
    assert rc == 0 and {k: v for k, v in alone.items() if k != "timing"} == \
        {k: v for k, v in both["dev"].items() if k != "timing"}
    # at the first holdout bar: still a holdout failure
    rc, both = evaluate(ds2, "ETH-1H-BINARY", RAISE_AT % dev, tmp_path, holdout_days=0.5, split=True)
    assert rc == 0 and both["full"] is None and both["dev"]["n_timesteps"] == dev, both
    # a failure in the dev period fails the evaluation, as --dev-only would
    rc, err = evaluate(ds2, "ETH-1H-BINARY", RAISE_AT % (dev - 1), tmp_path, holdout_days=0.5, split=True)
    assert rc == 1 and err["code"] == "strategy_error" and "stopped at bar %d" % (dev - 1) in err["error"]
    rc, err = evaluate(ds2, "ETH-1H-BINARY", MOMENTUM, tmp_path, holdout_days=0.5, split=True, dev_only=True)
    assert rc == 2 and err["code"] == "bad_request"


MOMENTUM = '''
import numpy as np
from agenttest import Featurizer, Predictor
class TechFeaturizer(Featurizer):
    warmup = 61
    def compute(self, view):
        p = view.prices("ETH")
        return p[-1] / p[-61] - 1.0
class TechPredictor(Predictor):
    def predict(self, r):
        s = 0.5 + 0.5 * np.tanh(r * 300)
        return np.array([s, 1 - s])
'''

RANDOM = '''
import numpy as np
from agenttest import Featurizer, Predictor
class TechFeaturizer(Featurizer):
    warmup = 61
    def setup(self, assets, total):
        self.rng = np.random.default_rng(12345)
    def compute(self, view):
        return self.rng.random()
class TechPredictor(Predictor):
    def predict(self, s):
        return np.array([s, 1 - s])
'''


def test_momentum_finds_the_planted_effect_and_random_does_not(ds60, tmp_path):
    rc, mom = evaluate(ds60, "ETH-1H-BINARY", MOMENTUM, tmp_path, days_back=60, holdout_days=20)
    assert rc == 0, mom
    rc, rnd = evaluate(ds60, "ETH-1H-BINARY", RANDOM, tmp_path, days_back=60, holdout_days=20)
    assert rc == 0, rnd
    assert mom["dev_length"] == 40 * 1440
    hold = [w["auc"] for w in mom["windows"] if w["in_holdout"]]
    assert len(hold) >= 6
    assert mom["mean_auc"] > 0.54, mom["mean_auc"]          # docs/datasets.md: 0.572 pooled
    assert abs(rnd["mean_auc"] - 0.5) < 0.02, rnd["mean_auc"]
    assert mom["mean_auc"] - rnd["mean_auc"] > 0.03


SUBCLASSES = '''
from model_iteration_tool import Featurizer, Predictor
import numpy as np

class MyFeaturizer(Featurizer):
    warmup = 200
    compute_interval = 1

    def compute(self, view):
        prices = view.prices("ETH")
        log_r = np.diff(np.log(prices[-100:]))
        return {"momentum": np.array([log_r.mean()]), "vol": np.array([log_r.std()])}

class MyPredictor(Predictor):
    def predict(self, features):
        p_up = 0.5 + 0.5 * np.tanh(features["momentum"][0] * 500)
        return np.array([p_up, 1.0 - p_up])
'''


def test_original_strategy_file_runs_unmodified(ds2, tmp_path):
    """Any Featurizer/Predictor subclasses (the README's names), imported
    under the original's package name, stream like the agent contract."""
    rc, res = evaluate(ds2, "ETH-1H-BINARY", SUBCLASSES, tmp_path, mode="mantis")
    assert rc == 0, res
    assert res["timing"]["warmup"] == 200 and 0 <= res["mean_auc"] <= 1
    assert normalise(res) == normalise(sdk_result(ds2, "ETH-1H-BINARY", SUBCLASSES, "mantis", 0))


# Issue 11 item 9: the host's step counter steers how long the runner naps;
# a strategy that makes time.perf_counter_ns jump 400 s a call and turns the
# host's futex wake into a no-op had the runner nap ~40 s per step without
# looking at its deadline (a 10 s wall limit took 144.6 s). The runner's own
# clock bounds every nap now.
OVERSLEEP = '''
import sys, time
import numpy as np
from agenttest import Featurizer, Predictor
_now = [0]
def _jump():
    _now[0] += 400 * 10**9
    return _now[0]
time.perf_counter_ns = _jump
sys.modules["agenttest_host.stream"]._Futex.wake = lambda self, word: None
class TechFeaturizer(Featurizer):
    warmup = 10
    def compute(self, view):
        return 0.0
class TechPredictor(Predictor):
    def predict(self, f):
        time.sleep(0.003)
        return np.array([0.5, 0.5])
'''


def test_the_host_cannot_make_the_runner_oversleep_its_deadline(ds2, tmp_path):
    import time
    t0 = time.monotonic()
    rc, err = evaluate(ds2, "ETH-1H-BINARY", OVERSLEEP, tmp_path, extra=("--cpu-seconds", "2"))
    took = time.monotonic() - t0
    assert rc == 1 and err["code"] == "timeout", err
    assert took < 25, took   # wall limit 4 s (twice the CPU limit), plus start-up on a loaded machine


# The market in the shared memory is read-only for good inside the box
# (issue 11 item 14): no new writable mapping of the memfd, no mprotect of
# a read-only one (the strategy's own or the host's), no write(2) to it.
MARKET_WRITE = '''
import ctypes, os
import numpy as np
from agenttest import Featurizer, Predictor
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
FAILED = {None, ctypes.c_void_p(-1).value}
got, host_maps = [], 0
if libc.mmap(None, 4096, 3, 1, 4, 0) not in FAILED:
    got.append("a writable shared mapping")
r = libc.mmap(None, 4096, 1, 1, 4, 0)
if r in FAILED:
    raise RuntimeError("cannot even map the market read-only")
if libc.mprotect(r, 4096, 3) == 0:
    got.append("mprotect of a new read-only mapping")
for ln in open("/proc/self/maps"):
    f = ln.split()
    if "agenttest-stream" in ln and f[1] == "r--s" and int(f[2], 16) == 0:
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        if lo != r:
            host_maps += 1
            if libc.mprotect(lo, hi - lo, 3) == 0:
                got.append("mprotect of the host's market mapping")
try:
    os.pwrite(4, b"x", 0)
    got.append("pwrite")
except OSError:
    pass
if got or host_maps != 1:
    raise RuntimeError("ESCAPED: market writable by %s (host mappings seen: %d)" % (got, host_maps))
class TechFeaturizer(Featurizer):
    warmup = 10
    def compute(self, view):
        return float(view.prices("ETH")[-1])
class TechPredictor(Predictor):
    def predict(self, f):
        return np.array([0.5, 0.5])
'''


@pytest.mark.parametrize("trusted", [False, True])
def test_the_market_memory_cannot_be_made_writable(ds2, tmp_path, trusted):
    rc, res = evaluate(ds2, "ETH-1H-BINARY", MARKET_WRITE, tmp_path, trusted=trusted)
    assert rc == 0 and "error" not in res, res
