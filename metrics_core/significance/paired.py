"""Paired tests of two models on the same rows or folds (ISO/IEC TS 4213 clause 7)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats

from metrics_core._validate import check_lengths
from metrics_core.contract.classes import check_label_kinds
from metrics_core.errors import InputError
from metrics_core.significance.base import NAN, TestResult, _check_alpha, _labels, _quiet, _sample, _verdict, _warn


def _d_z(d: np.ndarray) -> float:
    """Cohen's d_z = mean(d) / sd(d) (ddof=1): +-inf for a constant non-zero d, nan for n < 2 or d = 0."""
    if d.size < 2:
        return NAN
    mean, sd = float(np.mean(d)), float(np.std(d, ddof=1))
    if sd > 0:
        return mean / sd
    return NAN if mean == 0 else math.copysign(math.inf, mean)


def _paired(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    a, b = _sample(a, "a"), _sample(b, "b")
    check_lengths(a=a, b=b)
    return a, b


def paired_t_test(a, b, *, alpha: float = 0.05) -> TestResult:
    """Paired t-test of mean(a - b) = 0, effect size Cohen's d_z.

    Parameters
    ----------
    a, b : array-like of float
        Paired scores of the two models (same rows or folds, same order); no NaN.
    alpha : float
        Level of the verdict.

    Returns
    -------
    TestResult
        ``statistic`` t, two-sided ``p_value``, ``effect_size`` d_z; ``details``: n and the mean
        difference.

    Notes
    -----
    t = mean(d) / (sd(d) / sqrt(n)) with d = a - b, n - 1 degrees of freedom, two-sided, as
    ``scipy.stats.ttest_rel``; d_z = mean(d) / sd(d) (sd with ddof=1; Cohen 1988). Undefined
    (nan statistic and p-value, with a RuntimeWarning) when n = 1 or when all differences are
    zero (0/0); a constant non-zero difference gives t = +-inf, p = 0.

    Examples
    --------
    >>> r = paired_t_test([0.81, 0.79, 0.84, 0.80], [0.78, 0.77, 0.80, 0.79])
    >>> round(r.statistic, 4), round(r.p_value, 4)
    (3.873, 0.0305)
    """
    alpha = _check_alpha(alpha)
    a, b = _paired(a, b)
    res = _quiet(stats.ttest_rel, a, b)
    d = a - b
    effect = _d_z(d)
    reason = "only one pair" if d.size < 2 else "all differences are zero"
    if not np.isfinite(res.pvalue):
        _warn(f"paired_t_test: undefined ({reason}); the statistic and p-value are nan.")
    return TestResult("paired t-test", float(res.statistic), float(res.pvalue), effect, "Cohen's d_z",
                      _verdict(float(res.pvalue), alpha, "the paired means differ", reason), alpha,
                      details={"n": int(d.size), "mean_difference": float(np.mean(d))})


def corrected_resampled_t_test(a, b, n_train: int, n_test: int, *, alpha: float = 0.05) -> TestResult:
    """Nadeau and Bengio's corrected resampled t-test for per-fold scores of two models.

    Parameters
    ----------
    a, b : array-like of float
        The k per-fold scores of the two models, folds in the same order.
    n_train, n_test : int
        Rows in the training and the test part of one fold.
    alpha : float
        Level of the verdict.

    Returns
    -------
    TestResult
        ``statistic`` t, two-sided ``p_value``, ``effect_size`` the uncorrected d_z.

    Notes
    -----
    t = mean(d) / sqrt(var(d) (1/k + n_test/n_train)), d the k per-fold differences a - b,
    var with ddof=1, k - 1 degrees of freedom, two-sided (Nadeau & Bengio 2003, Machine
    Learning 52). The n_test/n_train term corrects for the overlap of training sets across
    folds, which makes the plain paired t-test far too liberal. Undefined (nan, with a
    RuntimeWarning) when k = 1 or all differences are zero.

    Examples
    --------
    >>> r = corrected_resampled_t_test([0.81, 0.79, 0.84, 0.80], [0.78, 0.77, 0.80, 0.79], 900, 100)
    >>> round(r.statistic, 4)
    3.2225
    """
    alpha = _check_alpha(alpha)
    a, b = _paired(a, b)
    for name, value in (("n_train", n_train), ("n_test", n_test)):
        if not isinstance(value, (int, np.integer)) or value <= 0:
            raise InputError(f"{name}: must be a positive integer (rows per fold), got {value!r}.")
    d = a - b
    k = d.size
    mean = float(np.mean(d))
    var = float(np.var(d, ddof=1)) if k > 1 else NAN
    with np.errstate(all="ignore"):
        t = mean / math.sqrt(var * (1.0 / k + n_test / n_train)) if var > 0 else (
            NAN if k < 2 or mean == 0 else math.copysign(math.inf, mean))
    p = float(2 * stats.t.sf(abs(t), k - 1)) if k > 1 and not math.isnan(t) else NAN
    reason = "only one fold" if k < 2 else "all differences are zero"
    if math.isnan(p):
        _warn(f"corrected_resampled_t_test: undefined ({reason}); the statistic and p-value are nan.")
    return TestResult("corrected resampled t-test", t, p, _d_z(d), "Cohen's d_z (uncorrected)",
                      _verdict(p, alpha, "the paired means differ", reason), alpha,
                      details={"k": k, "n_train": int(n_train), "n_test": int(n_test)})


def wilcoxon_signed_rank(a, b, *, alpha: float = 0.05) -> TestResult:
    """Wilcoxon signed-rank test of the paired differences, effect the rank-biserial correlation.

    Parameters
    ----------
    a, b : array-like of float
        Paired scores of the two models; no NaN.
    alpha : float
        Level of the verdict.

    Returns
    -------
    TestResult
        ``statistic`` min(W+, W-), two-sided ``p_value``, ``effect_size`` r; ``details``: n and
        the number of non-zero differences.

    Notes
    -----
    ``scipy.stats.wilcoxon`` with its defaults: zero differences are dropped
    (``zero_method='wilcox'``), ``method='auto'``. Effect size: the matched-pairs rank-biserial
    correlation r = (W+ - W-) / (W+ + W-) (Kerby 2014). When all differences are zero the
    statistic is 0 and p = 1 (as scipy for two or more pairs) and the effect size is nan, with
    a RuntimeWarning.

    Examples
    --------
    >>> r = wilcoxon_signed_rank([1.0, 2.0, 3.0, 4.0, 5.0], [1.5, 2.5, 2.0, 3.0, 4.0])
    >>> float(r.statistic), round(r.effect_size, 4)
    (3.0, 0.6)
    """
    alpha = _check_alpha(alpha)
    a, b = _paired(a, b)
    d = a - b
    d = d[d != 0]
    if d.size:
        res = _quiet(stats.wilcoxon, a, b)
        stat, p = float(res.statistic), float(res.pvalue)
        ranks = stats.rankdata(np.abs(d))
        w_plus, w_minus = ranks[d > 0].sum(), ranks[d < 0].sum()
        effect = float((w_plus - w_minus) / (w_plus + w_minus))
    else:  # scipy gives statistic 0, p 1 here (and raises for a single pair)
        stat, p, effect = 0.0, 1.0, NAN
        _warn("wilcoxon_signed_rank: all differences are zero; the effect size is nan.")
    return TestResult("Wilcoxon signed-rank test", stat, p, effect,
                      "rank-biserial correlation",
                      _verdict(p, alpha, "the paired differences are not centred on zero"), alpha,
                      details={"n": int(a.size), "n_nonzero": int(d.size)})


def mcnemar(y_true, pred_a, pred_b, exact: bool = True, *, alpha: float = 0.05) -> TestResult:
    """McNemar's test: do models a and b have the same error rate on the same rows?

    Parameters
    ----------
    y_true, pred_a, pred_b : array-like
        True labels and the two models' predicted labels, one per row; no NaN.
    exact : bool
        Exact binomial test (True) or the continuity-corrected chi-squared test (False).
    alpha : float
        Level of the verdict.

    Returns
    -------
    TestResult
        ``effect_size`` accuracy(a) - accuracy(b); ``details``: n and the two discordant counts.

    Raises
    ------
    InputError
        Mismatched lengths, NaN labels, or labels and predictions of mixed kinds (strings on one
        side, numbers on the other: :func:`metrics_core.contract.classes.check_label_kinds`).

    Notes
    -----
    With b = rows a gets right and b gets wrong, c = the reverse (McNemar 1947): exact=True is
    the two-sided binomial test p = min(1, 2 P(X <= min(b, c))), X ~ Bin(b + c, 1/2), statistic
    min(b, c); exact=False is chi^2 = (|b - c| - 1)^2 / (b + c) on 1 degree of freedom
    (Edwards' continuity correction), as ``statsmodels.stats.contingency_tables.mcnemar``. When
    the models never disagree (b + c = 0) the statistic is 0 and p = 1 (the corrected formula
    would give 1/0). Effect size: (b - c) / n.

    Examples
    --------
    >>> y = [1, 1, 1, 1, 0, 0, 0, 0]
    >>> r = mcnemar(y, [1, 1, 1, 1, 0, 0, 0, 1], [0, 0, 0, 1, 0, 0, 0, 0])
    >>> r.statistic, r.p_value, r.effect_size
    (1.0, 0.625, 0.25)
    """
    alpha = _check_alpha(alpha)
    y, a, b = _labels(y_true, "y_true"), _labels(pred_a, "pred_a"), _labels(pred_b, "pred_b")
    n = check_lengths(y_true=y, pred_a=a, pred_b=b)
    for pred, name in ((a, "pred_a"), (b, "pred_b")):  # "1" never equals 1: an error, as in binary_report
        check_label_kinds(y.dtype, pred.dtype, prediction=name)
    ok_a, ok_b = a == y, b == y
    n10, n01 = int(np.sum(ok_a & ~ok_b)), int(np.sum(~ok_a & ok_b))
    m = n10 + n01
    if m == 0:
        stat, p = 0.0, 1.0
    elif exact:
        stat = float(min(n10, n01))
        p = float(min(1.0, 2 * stats.binom.cdf(stat, m, 0.5)))
    else:
        stat = (abs(n10 - n01) - 1.0) ** 2 / m
        p = float(stats.chi2.sf(stat, 1))
    name = "McNemar (exact binomial)" if exact else "McNemar (chi-squared, continuity corrected)"
    return TestResult(name, stat, p, (n10 - n01) / n, "accuracy difference (a - b)",
                      _verdict(p, alpha, "the two models have different error rates"), alpha,
                      details={"n": n, "a_right_b_wrong": n10, "a_wrong_b_right": n01})
