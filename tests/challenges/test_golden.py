"""Our C numerics pinned bit for bit against tests/challenges/golden.json
(see golden.py): the same on every x86-64 CPU for the same source, whatever
numpy or BLAS the machine dispatches to, so that a change in the evaluator's
arithmetic fails loudly everywhere rather than hiding inside a tolerance."""
import pytest

import golden

WANT = golden.load()
GOT = golden.compute()


@pytest.mark.parametrize("key", sorted(WANT))
def test_golden(key):
    assert GOT.get(key) == WANT[key], f"{key}: the C result changed (golden.py explains how to regenerate)"


def test_golden_covers_every_challenge_and_mode():
    import reference as ref
    for name in ref.CHALLENGES:
        for mode in ("mantis", "strict"):
            assert f"score/{name}/{mode}" in WANT
    assert set(GOT) == set(WANT)


def test_both_libm_variants_are_pinned():
    fma, sse2 = golden.load("fma"), golden.load("sse2")
    assert set(fma) == set(sse2) == set(WANT)
