"""The multilabel report: per-label confusion plus example-based sums (ISO/IEC TS 4213:2022, 6.5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import polars as pl

from metrics_core import _validate as v
from metrics_core import formulas as f
from metrics_core.compute import as_floats
from metrics_core.errors import InputError, bad_rows
from metrics_core.stats import MultilabelStats
from metrics_core.undefined import warn_undefined

SAMPLE_METRICS = ("jaccard", "precision", "recall", "f1")


def _as_binary_matrix(Y, name: str) -> np.ndarray:
    """An N x L bool array from 0/1 or bool indicators; a bad-rows error for any other value."""
    arr = v.to_numpy(Y, name, ndim=2)
    if arr.shape[1] == 0:
        raise InputError(f"{name}: the indicator matrix has no label columns (shape {arr.shape}). Pass N x L "
                         "0/1 indicators with at least one label column.")
    if arr.dtype.kind == "b":
        return arr
    bad = ~np.isin(arr, (0, 1))
    if bad.any():
        first_bad = arr[np.arange(arr.shape[0]), bad.argmax(axis=1)]  # the offending value of each row
        raise bad_rows(name, "value other than 0/1", bad, first_bad,
                       "Multilabel targets are N x L indicator arrays of 0 and 1.")
    return arr.astype(bool)


def multilabel_stats(Y_true, Y_pred, labels=None) -> MultilabelStats:
    """Validate N x L indicator arrays and compute their :class:`MultilabelStats` (the 'update' step).

    Per label: the 2 x 2 confusion ``[[tn, fp], [fn, tp]]``. Per row, with T and P the true and
    predicted label sets: Jaccard |T & P| / |T | P|, precision |T & P| / |P|, recall
    |T & P| / |T|, F1 2 |T & P| / (|T| + |P|) and exact match T == P, summed over the rows
    where they are defined (Godbole and Sarawagi, 2004; Tsoumakas and Katakis, 2007).

    Parameters
    ----------
    Y_true, Y_pred : array_like, shape (N, L)
        0/1 or bool indicator arrays (numpy, lists, polars or pyarrow tables of 0/1 columns).
    labels : sequence, optional
        Names of the L label columns (default 0..L-1).

    Returns
    -------
    MultilabelStats
        Mergeable by addition (:meth:`MultilabelStats.merge`).

    Raises
    ------
    InputError
        A value other than 0/1, no rows or no label columns (N x 0), or different shapes.

    Examples
    --------
    >>> s = multilabel_stats([[1, 0], [1, 1]], [[1, 1], [0, 1]])
    >>> s.label_confusion.tolist(), s.sample_sums["recall"]
    ([[[0, 0], [1, 1]], [[0, 1], [0, 1]]], (1.5, 1.25, 2.0))
    """
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
    """The 'compute' step of :func:`multilabel_report`: a report from (merged) statistics.

    Ends with one :class:`~metrics_core.undefined.UndefinedMetricWarning` when a metric is
    undefined or an average skipped labels or rows.

    Parameters
    ----------
    stats : MultilabelStats
        Statistics of all rows (e.g. merged from partitions).
    level : float
        Confidence level of the lazy intervals.
    n_boot : int
        Bootstrap replicates for the intervals that need them.
    seed : int
        Seed of the bootstrap.

    Returns
    -------
    Report
        Task "multilabel"; keys and undefined values as in :func:`multilabel_report`.

    Examples
    --------
    >>> r = multilabel_from_stats(multilabel_stats([[1, 0]], [[1, 0]]).merge(multilabel_stats([[0, 1]], [[0, 1]])))
    >>> r.metrics["exact_match_ratio"], r.metrics["hamming_loss"]
    (1.0, 0.0)
    """
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
    import polars as pl  # (only here: a binary report does not load polars)

    per_class = pl.DataFrame({"class": stats.labels.tolist(), "support": tp + fn, "prevalence": (tp + fn) / n,
                              **{k: np.asarray(val, float) for k, val in per_label.items()},
                              "specificity": np.asarray(f.ratio(tn, tn + fp), float)})
    return warn_undefined(Report("multilabel", as_floats(out), stats, per_class,
                                 {"level": level, "n_boot": n_boot, "seed": seed}))


def multilabel_report(Y_true, Y_pred, *, labels=None, level=0.95, n_boot=1000, seed=0):
    """Every multilabel metric of the catalogue, with the per-label table and lazy intervals and baselines.

    - ``hamming_loss`` = (fp + fn) summed over labels / (N L) (ISO/IEC TS 4213:2022, 6.5.2;
      Schapire and Singer, 2000); ``exact_match_ratio`` = share of rows whose predicted label
      set equals the true one (6.5.3);
    - ``{jaccard,precision,recall,f1}_samples``: example-based means over rows (6.5.4 for
      Jaccard; Godbole and Sarawagi, 2004), skipping the rows where they are undefined (an empty
      predicted set for precision, an empty true set for recall, both empty for Jaccard and F1)
      and counting them in ``n_undefined_samples_<metric>``;
    - ``{precision,recall,f1}_micro`` from the pooled per-label counts, ``*_macro`` the mean over
      labels skipping undefined ones (``n_undefined_<metric>``) (6.4.3).

    Parameters
    ----------
    Y_true, Y_pred : array_like, shape (N, L)
        0/1 or bool indicator arrays.
    labels : sequence, optional
        Names of the L label columns.
    level, n_boot, seed
        Confidence level, bootstrap replicates and seed of the lazy intervals.

    Returns
    -------
    Report
        nan where a metric is undefined: micro precision with no predicted label at all, a
        ``*_samples`` mean when every row is undefined, a macro average when every label is; one
        :class:`~metrics_core.undefined.UndefinedMetricWarning` then names them with the reason.

    Examples
    --------
    >>> r = multilabel_report([[0, 1, 1], [1, 0, 1], [1, 1, 1], [1, 0, 1]],
    ...                       [[0, 0, 1], [1, 0, 1], [1, 1, 0], [1, 1, 0]])
    >>> round(r.metrics["f1_samples"], 4)
    0.7417
    """
    return multilabel_from_stats(multilabel_stats(Y_true, Y_pred, labels), level, n_boot, seed)
