"""Paired bootstrap of a metric difference between two models scored on the same rows."""

from __future__ import annotations

import math
import warnings

import numpy as np

from metrics_core._validate import check_lengths, check_scores, check_weights, to_numpy, weighted_rows
from metrics_core.contract.classes import binary_classes, check_task
from metrics_core.errors import InputError
from metrics_core.significance.base import NAN, TestResult, _check_alpha, _labels, _verdict, _warn
from metrics_core.misread import MisreadInputWarning


def _report(task: str, y, pred, kind: str, **kwargs):
    from metrics_core.report import binary_report, multiclass_report

    if task == "binary":
        return binary_report(y, **({"y_score": pred} if kind == "score" else {"y_pred": pred}), **kwargs)
    return multiclass_report(y, **({"y_score": pred} if kind == "score" else {"y_pred": pred}), **kwargs)


def _cells(task, y, a, b, kwargs) -> tuple[np.ndarray, np.ndarray, int]:
    """Per row the joint cell code (true, a, b) as ``(t k + a) k + b``, its weight, and k.

    Binary: t, a and b are 1 for the positive class, named as the reports name it
    (:func:`metrics_core.contract.classes.binary_classes` over the values of y, a and b, so ``pos_label="1"``
    is the class 1 of integer labels); an InputError when the three columns hold more than two classes.
    """
    from metrics_core._validate import check_weights, encode

    n = y.size
    w = check_weights(kwargs.get("sample_weight"), n)
    if task == "binary":
        # Match pos_label as binary_report does (by value, else by its text), over the values of all
        # three columns: each report sees only y and one model's predictions, and a raw ``x == pos``
        # would compare the string "1" with the integer 1 (never equal).
        values = np.unique(np.concatenate([np.unique(x) for x in (y, a, b)]))
        pos = binary_classes(values.tolist(), kwargs.get("pos_label", 1), where="y_true, pred_a and pred_b",
                             absent=None)[1]
        t, ia, ib = (np.asarray(x == pos, dtype=np.int64) for x in (y, a, b))
        k = 2
    else:
        t, labels = encode(y, kwargs["labels"], "y_true")
        ia, ib = encode(a, labels, "pred_a")[0], encode(b, labels, "pred_b")[0]
        k = labels.size
    return (t * k + ia) * k + ib, np.ones(n) if w is None else w, k


def _label_replicates(metric, task, y, a, b, n_boot, rng, kwargs) -> np.ndarray:
    """metric(a) - metric(b) for n_boot multinomial resamples of the joint (true, a, b, weight) cells."""
    from metrics_core.compute import binary_confusion_metrics, multiclass_confusion_metrics

    n = y.size
    code, weight, k = _cells(task, y, a, b, kwargs)
    order = np.lexsort((weight, code))
    cs, ws = code[order], weight[order]
    new = np.empty(n, dtype=bool)
    new[0] = True
    new[1:] = (cs[1:] != cs[:-1]) | (ws[1:] != ws[:-1])
    starts = np.flatnonzero(new)
    cell_code, cell_w = cs[starts], ws[starts]
    cell_n = np.diff(np.append(starts, n))
    many = cell_n.size > 4096  # e.g. distinct weights: draw rows (O(n)) instead of cells (O(cells))
    if many:
        row_cell = np.empty(n, dtype=np.int64)
        row_cell[order] = np.cumsum(new) - 1
    groups = []
    for model_idx in ((cell_code // (k * k)) * k + (cell_code // k) % k,      # (true, a)
                      (cell_code // (k * k)) * k + cell_code % k):            # (true, b)
        srt = np.argsort(model_idx, kind="stable")
        keys = model_idx[srt]
        groups.append((srt, keys, np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])))
    beta, cost = kwargs.get("beta", 1.0), kwargs.get("cost_matrix")
    out = np.empty(n_boot)
    batch = max(1, (1 << 24) // cell_n.size)  # replicates per draw, to bound memory
    for start in range(0, n_boot, batch):
        size = min(batch, n_boot - start)
        if many:
            reps = np.stack([np.bincount(row_cell[rng.integers(0, n, n)], minlength=cell_n.size)
                             for _ in range(size)]) * cell_w
        else:
            reps = rng.multinomial(n, cell_n / n, size=size) * cell_w  # (size, cells): resampled weights
        values = []
        for srt, keys, first in groups:
            conf = np.zeros((size, k * k))
            conf[:, keys[first]] = np.add.reduceat(reps[:, srt], first, axis=1)
            conf = conf.reshape(size, k, k)
            m = binary_confusion_metrics(conf, beta, cost) if task == "binary" else \
                multiclass_confusion_metrics(conf, beta, cost)[0]
            values.append(np.broadcast_to(np.asarray(m[metric], dtype=np.float64), (size,)))
        out[start:start + size] = values[0] - values[1]
    return out


def _score_replicates(metric, task, y, a, b, n_boot, rng, kwargs) -> np.ndarray:
    """metric(a) - metric(b) for n_boot row resamples, passed to the reports as sample weights."""
    kwargs = dict(kwargs)
    n = y.size
    base = kwargs.pop("sample_weight", None)
    base = np.ones(n) if base is None else np.asarray(to_numpy(base, "sample_weight"), np.float64)
    diffs = np.empty(n_boot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", MisreadInputWarning)  # said once, by the observed reports
        for i in range(n_boot):
            w = np.bincount(rng.integers(0, n, n), minlength=n) * base
            diffs[i] = (_report(task, y, a, "score", sample_weight=w, **kwargs).metrics[metric]
                        - _report(task, y, b, "score", sample_weight=w, **kwargs).metrics[metric])
    return diffs


def _check_options(task: str, kind: str, n_boot) -> None:
    check_task(task)
    if kind not in ("pred", "score"):
        raise InputError(f"kind: must be 'pred' (predicted labels) or 'score' (scores), got {kind!r}.")
    if not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise InputError(f"n_boot: must be a positive integer, got {n_boot!r}.")


def _with_labels(task: str, kind: str, y, pa, pb, report_kwargs: dict) -> dict:
    """The report options, with the multiclass labels fixed once so every replicate shares them."""
    kwargs = dict(report_kwargs)
    if task == "multiclass" and kwargs.get("labels") is None:
        pool = [y] if kind == "score" else [y, pa, pb]
        kwargs["labels"] = np.unique(np.concatenate(pool)) if len({x.dtype.kind for x in pool}) == 1 \
            else np.unique(y)
    return kwargs


def _percentile_and_p(diffs: np.ndarray, observed: float, level: float, metric: str
                      ) -> tuple[float, float, float, int]:
    """(low, high, p, replicates kept): percentile interval and centred two-sided p-value."""
    n_boot = diffs.size
    ok = np.isfinite(diffs)
    if not ok.all():
        _warn(f"paired_bootstrap: {int((~ok).sum())} of {n_boot} replicates left {metric} undefined; "
              f"they are dropped.", stacklevel=4)
        diffs = diffs[ok]
    if diffs.size == 0 or not math.isfinite(observed):
        return NAN, NAN, NAN, int(diffs.size)
    lo, hi = (float(x) for x in np.quantile(diffs, [(1 - level) / 2, (1 + level) / 2]))
    p = float((1 + np.sum(np.abs(diffs - observed) >= abs(observed))) / (diffs.size + 1))
    return lo, hi, p, int(diffs.size)


def paired_bootstrap(metric: str, y_true, pred_a, pred_b, *, n_boot: int = 1000, level: float = 0.95,
                     seed: int = 0, task: str = "binary", kind: str = "pred", alpha: float = 0.05,
                     **report_kwargs) -> TestResult:
    """Paired bootstrap of metric(a) - metric(b) for two models scored on the same rows.

    Parameters
    ----------
    metric : str
        Any key of the report's ``metrics`` (:func:`~metrics_core.report.binary_report` or
        :func:`~metrics_core.report.multiclass_report`, by ``task``).
    y_true : array-like
        True labels.
    pred_a, pred_b : array-like
        The two models' predicted labels (``kind="pred"``) or scores (``kind="score"``: 1-D
        for binary, N x K for multiclass).
    n_boot : int
        Number of bootstrap replicates.
    level : float
        Level of the percentile interval.
    seed : int
        Seed of ``numpy.random.default_rng``.
    task : {"binary", "multiclass"}
    kind : {"pred", "score"}
    alpha : float
        Level of the verdict.
    **report_kwargs
        beta, pos_label, threshold, labels, cost_matrix, sample_weight: passed to the report.

    Returns
    -------
    TestResult
        ``statistic`` and ``effect_size`` the observed difference, ``interval`` the percentile
        interval at ``level``, ``p_value`` the bootstrap p-value; nan (all three) when the
        metric is undefined on the data or in every replicate.

    Notes
    -----
    Each replicate resamples the n rows with replacement, the same rows for both models (Efron
    & Tibshirani 1993, ch. 16). For labels this is done on statistics: the joint table of
    (true, pred_a, pred_b[, weight]) cells is resampled multinomially and each model's
    confusion matrix is summed from it (exactly a row bootstrap, at the cost of the table); for
    scores the resampled row counts are passed as ``sample_weight`` to the report. The
    two-sided p-value of the centred bootstrap is
    p = (1 + #{|d*_b - d| >= |d|}) / (n_boot + 1), which is 1 when the models agree on every
    row. Replicates where the metric is undefined (nan) are dropped, with a RuntimeWarning.
    Rows of weight 0 are dropped first (absent rows); weights scaled by a constant give the same
    replicates. Binary labels: ``pos_label`` names the positive class as the report names it
    (:func:`metrics_core.contract.classes.binary_classes`: ``"1"`` is the class 1 of integer labels), over
    the values of ``y_true`` and both models; more than two classes among them is an InputError.

    Examples
    --------
    >>> y = [0, 1] * 20
    >>> r = paired_bootstrap("accuracy", y, y, [0, 0] * 20, n_boot=200)
    >>> r.statistic, r.p_value < 0.01
    (0.5, True)
    """
    alpha, level = _check_alpha(alpha), _check_alpha(level, "level")
    _check_options(task, kind, n_boot)
    y = _labels(y_true, "y_true")
    pa = to_numpy(pred_a, "pred_a", ndim=None)
    pb = to_numpy(pred_b, "pred_b", ndim=None)
    check_lengths(y_true=y, pred_a=pa, pred_b=pb)
    if pa.shape != pb.shape:
        raise InputError(f"pred_a and pred_b: shapes differ, {pa.shape} vs {pb.shape}.")
    report_kwargs = dict(report_kwargs)
    w = check_weights(report_kwargs.get("sample_weight"), y.size)
    keep = weighted_rows(w)
    if keep is not None:  # a row of weight 0 is an absent row: it takes no draw of any replicate
        if kind == "score":  # the dropped rows are checked all the same
            check_scores(pa, "pred_a")
            check_scores(pb, "pred_b")
        y, pa, pb, report_kwargs["sample_weight"] = y[keep], pa[keep], pb[keep], w[keep]
    kwargs = _with_labels(task, kind, y, pa, pb, report_kwargs)
    ra, rb = _report(task, y, pa, kind, **kwargs), _report(task, y, pb, kind, **kwargs)
    if metric not in ra.metrics:
        hint = " Scores are needed for it: pass kind='score'." if kind == "pred" else ""
        raise InputError(f"metric: {metric!r} is not a key of the {task} report "
                         f"({', '.join(sorted(ra.metrics))}).{hint}")
    observed = ra.metrics[metric] - rb.metrics[metric]
    replicates = _label_replicates if kind == "pred" else _score_replicates
    diffs = replicates(metric, task, y, pa, pb, n_boot, np.random.default_rng(seed), kwargs)
    lo, hi, p, kept = _percentile_and_p(diffs, observed, level, metric)
    return TestResult(f"paired bootstrap of {metric}", observed, p, observed, f"{metric} difference (a - b)",
                      _verdict(p, alpha, f"{metric} differs between the models",
                               f"{metric} is undefined"), alpha, interval=(lo, hi),
                      details={"metric_a": ra.metrics[metric], "metric_b": rb.metrics[metric],
                               "n_boot": kept, "level": level, "seed": seed})
