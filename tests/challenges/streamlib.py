"""Helpers for the streaming tests (stage 28): synthetic datasets made with
`agenttest data synth`, `agenttest evaluate` runs, the SDK on the same data.

The tests here need bin/agenttest and, for confined runs, root (the
sandbox). They run in stage 28-challenges-stream, which sets
AGENTTEST_STREAM_TESTS=1; stage 27 collects the same directory and skips them.
"""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
AGENTTEST = os.environ.get("AGENTTEST_BIN", os.path.join(ROOT, "bin", "agenttest"))
HOSTDIR = os.path.join(ROOT, "sandbox", "host")
PYTHON = "/usr/bin/python3"

if HOSTDIR not in sys.path:
    sys.path.insert(0, HOSTDIR)

stage_only = pytest.mark.skipif(os.environ.get("AGENTTEST_STREAM_TESTS") != "1",
                                reason="run by stage 28-challenges-stream (AGENTTEST_STREAM_TESTS=1)")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the confined sandbox needs root")


def synth(path, days, seed=1, kappa=None, assets=None):
    """Generate a synthetic dataset directory (once per path)."""
    if os.path.exists(os.path.join(path, "manifest.json")):
        return path
    cmd = [AGENTTEST, "data", "synth", "--out", path, "--version", os.path.basename(path),
           "--days", str(days), "--seed", str(seed)]
    if kappa is not None:
        cmd += ["--planted-kappa", str(kappa)]
    if assets:
        cmd += ["--assets", ",".join(assets)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=600)
    return path


def evaluate(dataset, challenge, code, tmp_path, *, mode="strict", days_back=0, holdout_days=0,
             trusted=False, dev_only=False, split=False, timeout=900, extra=()):
    """Run `agenttest evaluate`; returns (exit status, result or error dict)."""
    f = tmp_path / ("strategy_%d.py" % (abs(hash(code)) % 10**9))
    f.write_text(code)
    cmd = [AGENTTEST, "evaluate", "--challenge", challenge, "--strategy", str(f), "--dataset", dataset,
           "--mode", mode, "--days-back", str(days_back), "--holdout-days", str(holdout_days)]
    if trusted:
        cmd.append("--trusted")
    if dev_only:
        cmd.append("--dev-only")
    if split:
        cmd.append("--split")
    cmd += list(extra)
    env = dict(os.environ, AGENTTEST_HOST_DIR=HOSTDIR)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    text = p.stdout if p.returncode == 0 else p.stderr
    line = [ln for ln in text.splitlines() if ln.startswith("{")]
    assert line, "no JSON from agenttest evaluate (rc %d): %s" % (p.returncode, p.stderr[-2000:])
    return p.returncode, json.loads(line[-1])


# ---- strategies used by several tests ------------------------------------------

README_STYLE = '''
import numpy as np
from agenttest import Featurizer, Predictor

class TechFeaturizer(Featurizer):
    warmup = 200
    compute_interval = 1
    def compute(self, view):
        p = view.prices("%(asset)s")
        r = np.diff(np.log(p[-100:]))
        return {"momentum": np.array([r.mean()]), "vol": np.array([r.std()])}

class TechPredictor(Predictor):
    DIM = %(dim)d
    def predict(self, features):
        p_up = 0.5 + 0.5 * np.tanh(features["momentum"][0] * 500)
        out = np.full(self.DIM, 0.5)
        out[0] = p_up
        if self.DIM > 1:
            out[1] = 1.0 - p_up
        return out
'''


def readme_style(asset="ETH", dim=2):
    return README_STYLE % {"asset": asset, "dim": dim}


# a deterministic per-challenge strategy: rounded features so that float32
# embeddings are identical in every path
GENERIC = '''
import numpy as np
from model_iteration_tool.featurizer import Featurizer, Predictor

ASSETS = %(assets)r
DIM = %(dim)d

class TechFeaturizer(Featurizer):
    warmup = 120
    compute_interval = %(ci)d
    def compute(self, view):
        out = np.zeros(len(ASSETS))
        for i, a in enumerate(ASSETS):
            if a in view.assets:
                p = view.prices(a)
                out[i] = np.log(p[-1] / p[-60]) if len(p) >= 60 and p[-60] > 0 else 0.0
        return {"mom": np.round(out, 6)}

class TechPredictor(Predictor):
    def predict(self, f):
        m = f["mom"]
        s = np.round(0.5 + 0.5 * np.tanh(m * 200), 4)
        if DIM == 2:
            return np.array([s[0], 1 - s[0]])
        if DIM == 3:
            return np.array([s[0] * 0.5, (1 - s[0]) * 0.5, 0.5])
        if DIM == 17:
            b = np.full(17, 0.05)
            b[2] = 0.6
            b[3 if s[0] > 0.5 else 1] += 0.2 * abs(s[0] - 0.5) * 2
            return b
        if DIM == 2 * len(ASSETS):
            out = np.empty(DIM)
            out[0::2] = s
            out[1::2] = 1 - s
            return out
        return m
'''
