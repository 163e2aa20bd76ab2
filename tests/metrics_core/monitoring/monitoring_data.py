"""Helpers of the monitoring tests: periods of an eight-class classifier as arrays, statistics and tables."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from metrics_core import monitoring as mon


K = 8
LABELS = np.array([f"c{j}" for j in range(K)])
PRIOR = (1 / np.arange(1, K + 1)) / (1 / np.arange(1, K + 1)).sum()
PRICE_MEDIAN = np.linspace(1.0, 6.0, K)


def period_arrays(n: int, seed: int, *, prevalence=None, score_shift=None, price_rise=None, signal=2.4):
    """A period of a K-class classifier: labels, softmax scores, argmax prediction, lognormal prices.

    ``prevalence=(j, d)`` adds d to class j's share (others scaled down); ``score_shift=(j, d)``
    adds d to every row's class-j score (clipped to [0, 1]); ``price_rise=(j, r)`` multiplies the
    prices of rows PREDICTED as class j by 1 + r (the class as the index sees it).
    """
    rng = np.random.default_rng(seed)
    prior = PRIOR.copy()
    if prevalence:
        j, d = prevalence
        prior = prior * (1 - prior[j] - d) / (1 - prior[j])
        prior[j] = PRIOR[j] + d
    y = rng.choice(K, size=n, p=prior / prior.sum())
    logits = rng.standard_normal((n, K)) + np.log(PRIOR)
    logits[np.arange(n), y] += signal
    s = np.exp(logits - logits.max(axis=1, keepdims=True))
    s /= s.sum(axis=1, keepdims=True)
    if score_shift:
        j, d = score_shift
        s[:, j] = np.clip(s[:, j] + d, 0, 1)
    pred = s.argmax(axis=1)
    price = PRICE_MEDIAN[y] * np.exp(0.3 * rng.standard_normal(n))
    if price_rise:
        j, r = price_rise
        price = np.where(pred == j, price * (1 + r), price)
    return y, pred, s, price


def period_stats(n, seed, **shift) -> mon.PeriodStats:
    y, pred, s, price = period_arrays(n, seed, **shift)
    return mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, scores=s, price=price)


def _frame(n, seed, **shift):
    y, pred, s, price = period_arrays(n, seed, **shift)
    return pl.DataFrame({"label": LABELS[y], "prediction": LABELS[pred], "price": price,
                         **{f"score_{c}": s[:, j] for j, c in enumerate(LABELS)}}), (y, pred, s, price)


def _with_new_class(frame: pl.DataFrame, rows_label, rows_pred, name="c_new") -> pl.DataFrame:
    i = pl.int_range(pl.len())
    return frame.with_columns(label=pl.when(i.is_in(rows_label)).then(pl.lit(name)).otherwise(pl.col("label")),
                              prediction=pl.when(i.is_in(rows_pred)).then(pl.lit(name)).otherwise(pl.col("prediction")))


def _binary_percent(n=3000, seed=1, scale=100.0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int)
    s = np.clip(0.3 * y + rng.random(n) * 0.7, 0, 1) * scale
    return pa.table({"label": y, "score": s, "prediction": (s >= 50).astype(int)}), s


def broken_scoring(n_ref: int, n_cur: int, seed: int = 0):
    """A three-class reference of ``n_ref`` labelled rows with informative softmax scores, and a
    period of ``n_cur`` unlabelled rows from a broken scoring step (every score 1/3, every prediction
    the first class); also the reference's scores, for a healthy period cut from them."""
    rng = np.random.default_rng(seed)
    labels = np.array(["bread", "milk", "beer"])
    y = rng.integers(0, 3, n_ref)
    x = rng.standard_normal((n_ref, 3))
    x[np.arange(n_ref), y] += 1.5
    s = np.exp(1.5 * x)
    s /= s.sum(axis=1, keepdims=True)
    ref = mon.update("multiclass", labels, mon.Bins(), s.argmax(axis=1), label_idx=y, scores=s)
    broken = mon.update("multiclass", labels, mon.Bins(), np.zeros(n_cur, dtype=int),
                        scores=np.full((n_cur, 3), 1 / 3))
    return ref, broken, s
