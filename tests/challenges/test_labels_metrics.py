"""C labels and metrics (through ctypes) against the independent numpy /
scikit-learn / scipy reference, mantis mode.

How the comparisons are bounded (the reference is computed at test time on
this machine, so it must not be compared bitwise where its result depends on
what the CPU dispatches):
- log prices: the reference's default log is glibc's scalar log (reference.
  glibc_log), the function the C code calls, so sigma series and labels are
  compared bitwise; the same against numpy's dispatched np.log (AVX-512F code
  on CPUs that have it) is compared within the bound that path justifies.
- arithmetic-only steps (prefix sums, pairwise sums, comparisons) are
  bitwise: numpy runs them in a fixed order on every CPU.
- metrics going through sklearn/scipy (AUC, log loss, Spearman via corrcoef
  and BLAS) are compared within 1e-12 absolute: a metric in [0, 1] (or a
  mean of O(1) logs) summed over <= 4000 terms in a different order or BLAS
  kernel moves by at most n·eps·|value| ≈ 1e-12.
Our own C results are pinned bit for bit in test_golden.py."""
import numpy as np
import pytest

import chlib
import reference as ref
from conftest import walk


def test_rolling_std_bitwise(seed):
    x = np.random.default_rng(seed).normal(0, 1e-3, 5000)
    for w in (1, 2, 60, 3600):
        assert np.array_equal(chlib.rolling_std(x, w), ref.rolling_std(x, w))
    assert len(chlib.rolling_std(x[:10], 20)) == 0


def test_sigma_series_bitwise(seed):
    # bitwise against the reference on glibc's log (what the C code calls)
    p = walk(8000, seed)[:, 0]
    a, b = chlib.sigma_series(p, 60, 3600), ref.sigma_series(p, 60, 3600)
    assert np.array_equal(np.isnan(a), np.isnan(b))
    assert np.array_equal(a[~np.isnan(a)], b[~np.isnan(b)])
    assert np.isnan(a[:60 + 3599]).all() and np.isfinite(a[60 + 3599:]).all()


def test_sigma_series_within_bound_of_numpy_log(seed):
    # numpy's np.log (AVX-512F path where the CPU has it) is within a few ulp
    # of ln: each log price (~4.6) moves by <= 4 ulp ≈ 4e-15 absolute, each
    # 60-bar return (std ~1.5e-2) by <= 8e-15, i.e. ~5e-13 relative; the
    # sample std is 1-Lipschitz in the returns and its prefix-sum rounding
    # does not amplify by more than the window count's digits. Bound 1e-11
    # relative (measured: 3e-15).
    p = walk(8000, seed)[:, 0]
    a, b = chlib.sigma_series(p, 60, 3600), ref.sigma_series(p, 60, 3600, log=np.log)
    m = ~np.isnan(a)
    assert np.array_equal(m, ~np.isnan(b))
    assert np.max(np.abs(a[m] - b[m]) / a[m]) <= 1e-11


def _near_barrier(p, h, vw, t, tol=1e-11):
    """Whether the hitfirst path of label t touches a barrier within tol
    (relative to sigma) anywhere: only such labels may change when the log
    prices move by a few ulp."""
    lp = ref.glibc_log(p + ref.EPS)
    sig = ref.sigma_series(p, h, vw)[t + h]
    path = lp[t + 1:t + h + 1] - lp[t]
    return bool(np.min(np.abs(np.abs(path) - sig)) <= tol * sig)


def test_hitfirst_labels_numpy_log_differ_only_at_ties(seed):
    # np.log moves log prices by a few ulp (see above), i.e. path and sigma by
    # ~1e-13 relative: a label may flip only where the path is that close to
    # a barrier (1e-11 keeps two orders of margin).
    p = walk(20000, seed, vol=0.003)[:, 0]
    c, r = chlib.hitfirst_labels(p, 100, 7200), ref.hitfirst_labels(p, 100, 7200, log=np.log)
    for t in np.nonzero(c != r)[0]:
        assert _near_barrier(p, 100, 7200, int(t)), t


@pytest.mark.parametrize("h", [60, 360])
def test_lbfgs_labels_numpy_log_differ_only_at_bucket_edges(seed, h):
    # z = r/sigma moves by ~1e-13 relative under np.log (see above): a bucket
    # may change only where z is within 1e-11 of an edge (±1, ±2).
    p = walk(15000, seed)[:, 0]
    cb, ct = chlib.lbfgs_labels(p, h, 3600)
    rb, rt = ref.lbfgs_labels(p, h, 3600, log=np.log)
    assert np.array_equal(ct, rt)
    lp = ref.glibc_log(p + ref.EPS)
    sig = ref.sigma_series(p, h, 3600)
    for i in np.nonzero(cb != rb)[0]:
        t = int(ct[i])
        z = (lp[t + h] - lp[t]) / (sig[t] + ref.EPS)
        assert np.min(np.abs(np.abs(z) - np.array([1.0, 2.0]))) <= 1e-11, (t, z)


@pytest.mark.parametrize("h", [1, 2, 60])
def test_binary_labels_identical(seed, h):
    p = walk(5000, seed)[:, 0]
    p[100:110] = p[99]  # flat stretch: equal prices are label 0
    assert np.array_equal(chlib.binary_labels(p, h), ref.binary_labels(p, h))


def test_hitfirst_labels_identical(seed):
    p = walk(20000, seed, vol=0.003)[:, 0]
    c, r = chlib.hitfirst_labels(p, 100, 7200), ref.hitfirst_labels(p, 100, 7200)
    assert len(c) == 19900 and np.array_equal(c, r)
    assert set(np.unique(c)) <= {-1, 0, 1, 2} and (c[:7199] == -1).all() and (c[7199:] >= 0).all()


def test_hitfirst_labels_small_window(seed):
    p = walk(6000, seed)[:, 0]
    assert np.array_equal(chlib.hitfirst_labels(p, 100, 500), ref.hitfirst_labels(p, 100, 500))


@pytest.mark.parametrize("h", [60, 360])
def test_lbfgs_labels_identical(seed, h):
    p = walk(15000, seed)[:, 0]
    cb, ct = chlib.lbfgs_labels(p, h, 3600)
    rb, rt = ref.lbfgs_labels(p, h, 3600)
    assert np.array_equal(ct, rt) and np.array_equal(cb, rb)
    assert ct[0] == h + 3599 and ct[-1] == 15000 - h - 1


def test_xsec_returns_and_labels_identical(seed):
    m = walk(3000, seed, A=7)
    m[50, 3] = np.nan
    m[70, 1] = 0.0
    cr, cv = chlib.xsec_returns(m, 240)
    rr, rv = ref.xsec_returns(m, 240)
    assert np.array_equal(np.isnan(cr), np.isnan(rr))
    assert np.array_equal(cr[~np.isnan(cr)], rr[~np.isnan(rr)]) and np.array_equal(cv, rv)
    cl, clv = chlib.xsec_labels(m, 240)
    rl, rlv = ref.xsec_labels(m, 240)
    assert np.array_equal(cl, rl) and np.array_equal(clv, rlv)


def test_diff_returns_identical(seed):
    f = np.random.default_rng(seed).normal(0, 1e-4, (2000, 5))
    cr, cv = chlib.xsec_returns(f, 480, diff=True)
    rr, rv = ref.diff_returns(f, 480)
    assert np.array_equal(cr, rr) and np.array_equal(cv, rv)


def test_breakout_events_identical(seed):
    m = walk(20000, seed, vol=0.006, A=8)
    c = chlib.breakout_detect(m)
    r = ref.detect_breakouts(m)
    assert len(c) >= 20 and c == r


def test_breakout_events_small_lookback(seed):
    m = walk(6000, seed, vol=0.004, A=5)
    c = chlib.breakout_detect(m, L=400, max_pending=700)
    r = ref.detect_breakouts(m, L=400, max_pending=700, method="sliding")
    assert len(c) > 20 and c == r
    assert r == ref.detect_breakouts(m, L=400, max_pending=700, method="rolling")


def test_breakout_nan_in_range_mantis(seed):
    m = walk(4000, seed, vol=0.004, A=5)
    m[1000:1003, 2] = np.nan
    c = chlib.breakout_detect(m, L=400)
    r = ref.detect_breakouts(m, L=400, method="sliding")
    assert c == r and r == ref.detect_breakouts(m, L=400)


# ---- metrics --------------------------------------------------------------

def test_auc_with_ties(seed):
    rng = np.random.default_rng(seed)
    for n in (3, 50, 4000):
        y = rng.integers(0, 2, n)
        y[0], y[1] = 0, 1
        for s in (rng.random(n), np.round(rng.random(n), 1), np.zeros(n),
                  rng.random(n).astype(np.float32).astype(np.float64)):
            assert abs(chlib.roc_auc(y, s) - ref.auc(y, s)) <= 1e-12
    assert np.isnan(chlib.roc_auc(np.ones(5), rng.random(5)))


def test_log_loss(seed):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet([1, 1, 1], 3000).astype(np.float32)
    p[:10, 0] = 0.0
    p[10:20, 1] = 1.0
    y = rng.integers(0, 3, 3000).astype(np.int32)
    assert abs(chlib.log_loss3(y, p) - ref.log_loss3(y, p)) <= 1e-12


def test_balanced_accuracy(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 5, 700)
    y[y == 3] = 2  # an absent class is skipped
    pr = rng.integers(0, 5, 700)
    assert abs(chlib.balanced_accuracy(y, pr) - ref.balanced_accuracy(y, pr)) <= 1e-15
    assert chlib.balanced_accuracy(np.array([], dtype=np.int32), np.array([], dtype=np.int32)) == 0.0


def test_spearman(seed):
    rng = np.random.default_rng(seed)
    for n in (5, 29, 200):
        x, y = rng.random(n), rng.random(n)
        xt = np.round(x, 1)
        for a, b in ((x, y), (xt, y), (xt, np.round(y, 1))):
            assert abs(chlib.spearman(a, b) - ref.spearman(a, b)) <= 1e-12
            assert abs(ref._spearman_fast(a, b) - ref.spearman(a, b)) <= 1e-12
        assert np.isnan(chlib.spearman(np.ones(n), y))


def _numpy_float32_log_is_simd():
    """numpy 1.24 takes its own float32 log code with AVX2+FMA3 or AVX512F,
    glibc's logf otherwise."""
    from numpy.core._multiarray_umath import __cpu_features__ as f
    return (f.get("AVX2") and f.get("FMA3")) or f.get("AVX512F")


def test_npy_logf_is_numpys_float32_log():
    # bitwise: ch_npy_logf repeats numpy's SIMD arithmetic operation by
    # operation (fmaf is correctly rounded everywhere); where this numpy runs
    # glibc's logf instead, the comparison is within 1 ulp (both are within
    # ~1 ulp of ln x: glibc's logf is correctly rounded in practice, numpy
    # documents < 4 ulp). The golden hash pins it on every machine.
    import golden
    x = golden.logf_sample()
    c = chlib.npy_logf(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.log(x)
    assert np.array_equal(np.isnan(c), np.isnan(r))
    m = ~np.isnan(r)
    if _numpy_float32_log_is_simd():
        assert np.array_equal(c[m].view(np.int32), r[m].view(np.int32))
    else:
        fin = m & np.isfinite(r)
        assert np.all(np.abs(c[fin] - r[fin]) <= 4 * np.spacing(np.abs(r[fin])))


def test_pairwise_sum_and_nanmean(seed):
    # bitwise: np.sum's pairwise summation is fixed C code (8 accumulators,
    # blocks of 128), the same order on every CPU; no transcendental.
    rng = np.random.default_rng(seed)
    for n in (0, 1, 7, 8, 9, 127, 128, 129, 1000, 4097):
        x = rng.random(n) * 10.0 ** rng.integers(-5, 5, n)
        assert chlib.np_sum(x) == np.sum(x)
        if n:
            x[::3] = np.nan
            assert chlib.nanmean(x) == ref.nanmean(x) or (np.isnan(chlib.nanmean(x)) and np.isnan(ref.nanmean(x)))


def test_slope_sign_matches_sklearn(seed):
    # sklearn's lbfgs is iterative (tol 1e-4, BLAS): only the slope's sign is
    # compared, on data whose class means differ by >= 0.05 standard
    # deviations, far beyond the fit's tolerance.
    rng = np.random.default_rng(seed)
    for shift in (-0.3, 0.3, 0.05):
        y = rng.integers(0, 2, 800)
        s = rng.normal(0, 1, 800) + shift * y
        assert chlib.slope_sign(s, y) == ref.slope_sign_sklearn(s, y)
    assert chlib.slope_sign(np.ones(10), np.r_[np.zeros(5), np.ones(5)]) == 0
