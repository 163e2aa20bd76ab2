"""Shared benchmark helpers: timing (best of N), peak traced memory, seeded data."""

from __future__ import annotations

import gc
import time
import tracemalloc

import numpy as np


def measure(fn, repeat: int = 3):
    """(best seconds, peak traced bytes of one call, result) of ``fn()``; numpy allocations are traced."""
    best = float("inf")
    result = None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    gc.collect()
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return best, peak, result


def binary_data(n: int, seed: int = 0):
    """Labels (int8, 30% positive) and float64 probability scores of a realistic, imperfect model."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(np.int8)
    logit = rng.normal(-1.0 + 2.0 * y, 1.2)
    return y, 1.0 / (1.0 + np.exp(-logit))


def multiclass_data(n: int, k: int = 10, seed: int = 0):
    """Labels (int64, unequal prevalence) and N x K softmax scores of an imperfect model."""
    rng = np.random.default_rng(seed)
    prior = np.linspace(1.0, 3.0, k)
    y = rng.choice(k, size=n, p=prior / prior.sum())
    logits = rng.normal(0.0, 1.0, (n, k))
    logits[np.arange(n), y] += 1.5
    logits -= logits.max(axis=1, keepdims=True)
    np.exp(logits, out=logits)
    logits /= logits.sum(axis=1, keepdims=True)
    return y, logits


def fmt_bytes(b: float) -> str:
    return f"{b / 2**20:,.0f} MiB"
