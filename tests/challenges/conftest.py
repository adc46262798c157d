"""Shared fixtures: seeded synthetic markets (log-normal random walks, as the
original's test suite uses) and prediction matrices."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

SEEDS = [1, 7, 42]


def walk(T, seed, vol=0.002, A=1, start=100.0):
    rng = np.random.default_rng(seed)
    steps = rng.normal(0.0, vol, size=(T, A))
    return start * np.exp(np.cumsum(steps, axis=0))


def coarse(x, q=4096):
    """Round probabilities onto a 1/q grid: exact ties, and distinct values far
    apart, so float32 logits order identically whatever libm numpy uses."""
    return (np.round(np.asarray(x) * q) / q).astype(np.float32)


@pytest.fixture(params=SEEDS)
def seed(request):
    return request.param
