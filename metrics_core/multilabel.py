"""The multilabel report: per-label confusion plus example-based sums (lecture slides, seed 001)."""

from __future__ import annotations

import numpy as np
import polars as pl

from metrics_core import _validate as v
from metrics_core import formulas as f
from metrics_core.compute import as_floats
from metrics_core.errors import InputError, bad_rows
from metrics_core.stats import MultilabelStats

SAMPLE_METRICS = ("jaccard", "precision", "recall", "f1")


def _as_binary_matrix(Y, name: str) -> np.ndarray:
    arr = v.to_numpy(Y, name, ndim=2)
    if arr.dtype.kind == "b":
        return arr
    bad = ~np.isin(arr, (0, 1))
    if bad.any():
        first_bad = arr[np.arange(arr.shape[0]), bad.argmax(axis=1)]  # the offending value of each row
        raise bad_rows(name, "value other than 0/1", bad, first_bad,
                       "Multilabel targets are N x L indicator arrays of 0 and 1.")
    return arr.astype(bool)


def multilabel_stats(Y_true, Y_pred, labels=None) -> MultilabelStats:
    """Validate N x L indicator arrays and compute :class:`MultilabelStats`."""
    yt = _as_binary_matrix(Y_true, "Y_true")
    yp = _as_binary_matrix(Y_pred, "Y_pred")
    if yt.shape != yp.shape:
        raise InputError(f"Mismatched shapes: Y_true is {yt.shape}, Y_pred is {yp.shape}. "
                         "Both must be N x L with the same label columns.")
    n, n_labels = yt.shape
    labels = np.arange(n_labels) if labels is None else np.asarray(list(labels))
    tp = (yt & yp).sum(axis=0)
    fp = (~yt & yp).sum(axis=0)
    fn = (yt & ~yp).sum(axis=0)
    tn = n - tp - fp - fn
    conf = np.stack([np.stack([tn, fp], -1), np.stack([fn, tp], -1)], -2).astype(np.int64)
    t = yt.sum(axis=1).astype(np.float64)
    p = yp.sum(axis=1).astype(np.float64)
    inter = (yt & yp).sum(axis=1).astype(np.float64)
    per_row = {"jaccard": (inter, t + p - inter), "precision": (inter, p), "recall": (inter, t),
               "f1": (2 * inter, t + p)}
    sums = {}
    for name, (num, den) in per_row.items():
        ok = den > 0
        val = np.divide(num, den, out=np.zeros_like(num), where=ok)
        sums[name] = (float(val.sum()), float((val * val).sum()), float(ok.sum()))
    exact = (yt == yp).all(axis=1).astype(np.float64)
    sums["exact_match"] = (float(exact.sum()), float(exact.sum()), float(n))
    return MultilabelStats(conf, labels, sums, n)


def multilabel_from_stats(stats: MultilabelStats, level=0.95, n_boot=1000, seed=0):
    """The 'compute' step of :func:`multilabel_report`."""
    from metrics_core.report import Report

    m = stats.label_confusion.astype(np.float64)
    tn, fp, fn, tp = m[:, 0, 0], m[:, 0, 1], m[:, 1, 0], m[:, 1, 1]
    n, n_labels = stats.n_rows, m.shape[0]
    out = {"n": float(n), "hamming_loss": f.ratio((fp + fn).sum(), n * n_labels)}
    s, _, k = stats.sample_sums["exact_match"]
    out["exact_match_ratio"] = f.ratio(s, k)
    for name in SAMPLE_METRICS:
        total, _, defined = stats.sample_sums[name]
        out[f"{name}_samples"] = f.ratio(total, defined)
        out[f"n_undefined_samples_{name}"] = float(n - defined)
    per_label = {"precision": f.ratio(tp, tp + fp), "recall": f.ratio(tp, tp + fn), "f1": f.fbeta(tp, fp, fn, 1.0)}
    out["precision_micro"] = f.ratio(tp.sum(), (tp + fp).sum())
    out["recall_micro"] = f.ratio(tp.sum(), (tp + fn).sum())
    out["f1_micro"] = f.fbeta(tp.sum(), fp.sum(), fn.sum(), 1.0)
    for name, vals in per_label.items():
        out[f"{name}_macro"], skipped = f.nanmean_count(vals)
        out[f"n_undefined_{name}"] = float(skipped)
    per_class = pl.DataFrame({"class": stats.labels.tolist(), "support": tp + fn, "prevalence": (tp + fn) / n,
                              **{k: np.asarray(val, float) for k, val in per_label.items()},
                              "specificity": np.asarray(f.ratio(tn, tn + fp), float)})
    return Report("multilabel", as_floats(out), stats, per_class,
                  {"level": level, "n_boot": n_boot, "seed": seed})


def multilabel_report(Y_true, Y_pred, *, labels=None, level=0.95, n_boot=1000, seed=0):
    """Multilabel metrics: Hamming loss, exact match ratio, example-based (samples) Jaccard,
    precision, recall and F1 as in the lecture slides (seed 001), and micro/macro P, R, F1.

    Sample-averaged metrics skip the rows where they are undefined (an empty predicted set for
    precision, an empty true set for recall, both empty for Jaccard and F1) and report how many
    were skipped in ``n_undefined_samples_<metric>``.

    >>> r = multilabel_report([[0, 1, 1], [1, 0, 1], [1, 1, 1], [1, 0, 1]],
    ...                       [[0, 0, 1], [1, 0, 1], [1, 1, 0], [1, 1, 0]])
    >>> round(r.metrics["f1_samples"], 4)
    0.7417
    """
    return multilabel_from_stats(multilabel_stats(Y_true, Y_pred, labels), level, n_boot, seed)
