"""Shared benchmark helpers: timing (best of N), peak extra RSS, seeded data."""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import psutil


class _RssSampler:
    """Peak resident memory of this process above its level at start, sampled every 2 ms.

    RSS (not tracemalloc) so that allocations made by polars' and Arrow's own allocators count too.
    """

    def __init__(self):
        self.proc = psutil.Process()
        self.peak = 0
        self._stop = threading.Event()

    def __enter__(self):
        self.base = self.proc.memory_info().rss
        self.peak = self.base
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(0.002)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)

    @property
    def extra(self) -> int:
        return self.peak - self.base


def measure(fn, repeat: int = 3):
    """(best seconds, peak extra RSS bytes of one call, result) of ``fn()``: :func:`race` of one
    function, with its warm-up call only when ``repeat`` > 1 (a single long call is timed cold)."""
    return race({"fn": fn}, repeat, warmup=repeat > 1)["fn"]


def race(fns: dict, repeat: int = 7, warmup: bool = True) -> dict:
    """{name: (best seconds, peak extra RSS bytes of one call, result)} of each ``fns[name]()``, interleaved.

    Each round calls every function once, in turn; the best of ``repeat`` rounds is kept, then
    one more call per function measures its memory. Interleaving spreads the shared machine's
    slow moments over all the peers, where timing one peer's calls back to back hands them to
    whichever ran then. The untimed warm-up round (``warmup``) takes the process's first large
    allocations, which pay the kernel's huge-page compaction (numpy asks for huge pages) and
    would otherwise land on whichever library is measured first.
    """
    best = {name: float("inf") for name in fns}
    first = 0 if warmup else 1
    for round_ in range(first, repeat + 1):
        for name, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            fn()
            if round_:
                best[name] = min(best[name], time.perf_counter() - t0)
    out = {}
    for name, fn in fns.items():
        gc.collect()
        with _RssSampler() as sampler:
            result = fn()
        out[name] = (best[name], sampler.extra, result)
    return out


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
