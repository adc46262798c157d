"""Small, deterministic numpy models and significance tests.

logistic / multinomial: L2-regularised, fitted by Newton steps (binary) or
a fixed number of full-batch gradient steps with backtracking (multinomial),
on standardised features; ridge: closed form. p-values: two-sided, from a
Student t on the correlation with an effective sample size that divides by
the label's overlap (h bars of one label share the same future), so
overlapping labels do not make everything look significant.
"""
import math

import numpy as np
from scipy import stats


def standardise(X):
    """(mean, std) per column with std 0 replaced by 1."""
    mu = np.nanmean(X, axis=0) if len(X) else np.zeros(X.shape[1])
    sd = np.nanstd(X, axis=0) if len(X) else np.ones(X.shape[1])
    sd = np.where(sd > 0, sd, 1.0)
    return mu, sd


def logistic(X, y, lam=1.0, iters=25):
    """Weights (bias first) of an L2 logistic regression by Newton steps."""
    n, d = X.shape
    A = np.column_stack([np.ones(n), X])
    w = np.zeros(d + 1)
    R = lam * np.eye(d + 1)
    R[0, 0] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(A @ w, -30, 30)))
        g = A.T @ (p - y) + R @ w
        H = (A * (p * (1 - p))[:, None]).T @ A + R + 1e-9 * np.eye(d + 1)
        step = np.linalg.solve(H, g)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return w


def softmax(Z):
    Z = Z - Z.max(axis=1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=1, keepdims=True)


def multinomial(X, y, k, lam=1.0, iters=200, balanced=False):
    """Weights (d+1) x k of an L2 multinomial regression, class-balanced
    sample weights when asked (balanced accuracy targets)."""
    n, d = X.shape
    A = np.column_stack([np.ones(n), X])
    Y = np.zeros((n, k))
    Y[np.arange(n), y.astype(int)] = 1.0
    if balanced:
        cnt = np.maximum(Y.sum(axis=0), 1.0)
        sw = (n / (k * cnt))[y.astype(int)]
    else:
        sw = np.ones(n)
    W = np.zeros((d + 1, k))
    prior = (Y * sw[:, None]).sum(axis=0) + 1.0
    W[0] = np.log(prior / prior.sum())
    reg = np.ones((d + 1, 1))
    reg[0] = 0.0

    def loss(W):
        P = softmax(A @ W)
        return -np.sum(sw * np.log(np.sum(P * Y, axis=1) + 1e-15)) / n + \
            0.5 * lam / n * np.sum(reg * W * W)

    lr, cur = 1.0, loss(W)
    for _ in range(iters):
        P = softmax(A @ W)
        G = A.T @ ((P - Y) * sw[:, None]) / n + lam / n * reg * W
        while lr > 1e-6:
            Wn = W - lr * G
            nl = loss(Wn)
            if nl <= cur:
                W, cur = Wn, nl
                lr *= 1.5
                break
            lr *= 0.5
        else:
            break
    return W


def ridge(X, y, lam=1.0):
    """Weights (bias first) of a ridge regression."""
    n, d = X.shape
    A = np.column_stack([np.ones(n), X])
    R = lam * np.eye(d + 1)
    R[0, 0] = 0.0
    return np.linalg.solve(A.T @ A + R, A.T @ y)


def predictive_power(x, y, overlap):
    """Correlation of a feature with the target and its two-sided p-value
    with n_eff = n / overlap. Returns (corr, p_value, n)."""
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    n = len(x)
    if n < 10 or np.std(x) == 0 or np.std(y) == 0:
        return 0.0, 1.0, n
    r = float(np.corrcoef(x, y)[0, 1])
    n_eff = max(3.0, n / max(1, overlap))
    t = r * math.sqrt((n_eff - 2) / max(1e-12, 1 - r * r))
    p = float(2 * stats.t.sf(abs(t), n_eff - 2))
    return r, p, n
