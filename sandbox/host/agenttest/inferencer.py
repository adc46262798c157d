"""Live inference with the original's API (inferencer.py): load a trained
TechFeaturizer/TechPredictor, run it on the newest bars with exactly the
evaluation's schedule, format the embedding per challenge.

Parity (spec/mantis.md §3.4): run_inference_single(slot, provider) computes
once at the evaluation's last compute-grid point g and predicts for g..T-1,
so for a strategy without state across steps its output is bit-identical to
the last row evaluate() produced on the same provider. run_dataset_inference
does this on the newest bars of a dataset (agenttest.datasource), with the
provider evaluate() would build for the same days_back.

Differences from the original: market data comes from datasets, not from
Binance (fetch_live_data reads the newest dataset version); breakout and
cross-sectional embeddings are keyed by the challenge's own asset order
(the original used the subnet's 33-asset list, misaligned from index 10).
"""
import importlib.util
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .data import DataProvider
from .loop import run_inference

__all__ = ["ModelSlot", "load_strategy", "load_model_slot", "run_inference_single",
           "format_embedding_for_subnet", "run_all_inference", "fetch_live_data",
           "run_dataset_inference", "WARMUP_MINUTES"]

logger = logging.getLogger(__name__)
WARMUP_MINUTES = 5000


@dataclass
class ModelSlot:
    """One loaded model assigned to a challenge (the original's fields)."""
    agent_id: str
    iteration: int
    challenge_name: str
    strategy_path: str
    featurizer: Any = None
    predictor: Any = None
    loaded: bool = False
    error: str = ""


def load_strategy(strategy_path):
    """(TechFeaturizer(), TechPredictor()) of a strategy file, imported as a
    module named "strat" (so its `if __name__ == "__main__":` block does not
    run). FileNotFoundError / AttributeError as the original."""
    path = Path(strategy_path)
    if not path.exists():
        raise FileNotFoundError("Strategy file not found: %s" % strategy_path)
    spec = importlib.util.spec_from_file_location("strat", str(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    f = getattr(mod, "TechFeaturizer", None)
    p = getattr(mod, "TechPredictor", None)
    if f is None or p is None:
        raise AttributeError("Strategy %s must define TechFeaturizer and TechPredictor classes"
                             % path.name)
    return f(), p()


def load_model_slot(slot):
    """Load slot.strategy_path into the slot; on failure loaded=False and
    error holds the message. Returns the slot."""
    try:
        slot.featurizer, slot.predictor = load_strategy(slot.strategy_path)
        slot.loaded, slot.error = True, ""
    except Exception as exc:  # noqa: BLE001 - the original records any failure
        slot.loaded, slot.error = False, str(exc)
        logger.error("Failed to load strategy %s: %s", slot.strategy_path, exc)
    return slot


def run_inference_single(slot, provider):
    """The embedding (flat float32) for the provider's latest bar, by the
    evaluation's schedule. RuntimeError when the slot is not loaded or the
    provider has fewer than warmup + 1 bars."""
    if not slot.loaded:
        raise RuntimeError("Model slot not loaded: %s" % slot.error)
    return run_inference(slot.featurizer, slot.predictor, provider)


def _clip_norm(v, lo, hi):
    v = np.clip(np.asarray(v, dtype=np.float64), lo, hi)
    s = v.sum()
    return (v / s if s > 0 else np.full(len(v), 1.0 / len(v))).tolist()


def format_embedding_for_subnet(challenge_name, emb):
    """(ticker, value) in the subnet's format: binary [2p-1, 2q-1]; hitfirst
    clipped to [1e-6, 1-1e-6] and renormalised; lbfgs padded to 17, buckets
    renormalised, q-path clipped; breakout {asset: [p_cont, p_rev]};
    xsec/funding {asset: clip(score, -1, 1)}. ValueError for an unknown challenge."""
    from .catalog import challenge_table
    cfg = challenge_table().get(challenge_name)
    if cfg is None:
        raise ValueError("Unknown challenge: %s" % challenge_name)
    e = np.asarray(emb, dtype=np.float64).ravel()
    ticker = challenge_name.split("-")[0] if cfg.challenge_type == "binary" else \
        challenge_name.replace("-", "")
    kind = cfg.challenge_type
    if kind == "binary":
        e = np.resize(e, 2) if len(e) < 2 else e
        return ticker, [float(2 * np.clip(e[0], 0, 1) - 1), float(2 * np.clip(e[1], 0, 1) - 1)]
    if kind == "hitfirst":
        return ticker, _clip_norm(np.pad(e[:3], (0, max(0, 3 - len(e))), constant_values=1 / 3),
                                  1e-6, 1 - 1e-6)
    if kind == "lbfgs":
        v = np.pad(e[:17], (0, max(0, 17 - len(e))), constant_values=0.5)
        return ticker, _clip_norm(v[:5], 1e-6, 1.0) + np.clip(v[5:], 1e-6, 1 - 1e-6).tolist()
    if kind == "breakout":
        out = {}
        for i, a in enumerate(cfg.assets):
            pair = e[2 * i:2 * i + 2] if len(e) >= 2 * i + 2 else np.array([0.5, 0.5])
            out[a] = np.clip(pair, 0.0, 1.0).tolist()
        return ticker, out
    return ticker, {a: float(np.clip(e[i], -1, 1)) if i < len(e) else 0.0
                    for i, a in enumerate(cfg.assets)}


def run_all_inference(slots, provider):
    """{ticker: formatted embedding} of every loaded slot; unloaded or
    failing slots are logged and skipped."""
    out = {}
    for slot in slots:
        if not slot.loaded:
            logger.warning("Skipping unloaded slot %s/%s: %s", slot.agent_id,
                           slot.challenge_name, slot.error)
            continue
        try:
            ticker, val = format_embedding_for_subnet(slot.challenge_name,
                                                      run_inference_single(slot, provider))
            out[ticker] = val
        except Exception as exc:  # noqa: BLE001 - the original logs and goes on
            logger.error("Inference failed for %s: %s", slot.challenge_name, exc)
    return out


def fetch_live_data(assets, lookback_minutes=WARMUP_MINUTES, coinglass_key=""):
    """A DataProvider over the last `lookback_minutes` bars of the newest
    dataset holding `assets` (agenttest.datasource; a notice names it).
    coinglass_key is accepted for the original's signature: derivatives
    fields come with the dataset."""
    from .datasource import announce, select_dataset
    path, notice = select_dataset(list(assets))
    announce(notice)
    return DataProvider.from_dataset(path, list(assets), lookback_minutes / 1440.0)


def run_dataset_inference(slot, days_back=90, dataset=None):
    """Inference of `slot` on the newest bars of a dataset: the provider is
    the one evaluate(slot.challenge_name, ..., days_back=days_back) builds,
    so the result equals evaluate's last embedding row for stateless
    strategies. Returns (embedding, t, provider) with t the bar index."""
    from .catalog import challenge_table
    from .datasource import announce, select_dataset
    cfg = challenge_table()[slot.challenge_name]
    if dataset is None:
        dataset, notice = select_dataset(cfg.assets)
        announce(notice)
    provider = DataProvider.from_dataset(dataset, cfg.assets, days_back)
    return run_inference_single(slot, provider), provider.length - 1, provider
