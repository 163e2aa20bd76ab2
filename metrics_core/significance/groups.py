"""Tests of k independent groups: one-way ANOVA and Kruskal-Wallis (ISO/IEC TS 4213 clause 7)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from metrics_core.errors import InputError
from metrics_core.significance.base import NAN, TestResult, _check_alpha, _quiet, _sample, _verdict, _warn


def _groups(groups: tuple, name: str = "groups") -> list[np.ndarray]:
    if len(groups) < 2:
        raise InputError(f"{name}: need at least 2 groups, got {len(groups)}.")
    return [_sample(g, f"{name}[{i}]") for i, g in enumerate(groups)]


def anova(*groups, alpha: float = 0.05) -> TestResult:
    """One-way ANOVA F-test of equal group means, effect size eta squared.

    Parameters
    ----------
    *groups : array-like of float
        Two or more samples (e.g. per-fold scores of each model); no NaN.
    alpha : float
        Level of the verdict.

    Returns
    -------
    TestResult
        ``statistic`` F, ``p_value``, ``effect_size`` eta squared; ``details``: k and n.

    Notes
    -----
    F as ``scipy.stats.f_oneway`` (Fisher 1925); eta^2 = SS_between / SS_total. Undefined (nan,
    with a RuntimeWarning) when every value is equal or every group has one value; F = inf,
    p = 0 when groups differ but each is constant.

    Examples
    --------
    >>> r = anova([1.0, 2.0, 3.0], [2.0, 3.0, 4.0], [5.0, 6.0, 7.0])
    >>> round(r.statistic, 4), round(r.effect_size, 4)
    (13.0, 0.8125)
    """
    alpha = _check_alpha(alpha)
    gs = _groups(groups)
    res = _quiet(stats.f_oneway, *gs)
    values = np.concatenate(gs)
    grand = values.mean()
    ss_total = float(((values - grand) ** 2).sum())
    ss_between = float(sum(g.size * (g.mean() - grand) ** 2 for g in gs))
    eta2 = ss_between / ss_total if ss_total > 0 else NAN
    p = float(res.pvalue)
    if math.isnan(p):
        _warn("anova: undefined (no variation within or between groups); F and p are nan.")
    return TestResult("one-way ANOVA", float(res.statistic), p, eta2, "eta squared",
                      _verdict(p, alpha, "the group means differ", "no variation to test"), alpha,
                      details={"k": len(gs), "n": int(values.size)})


def kruskal_wallis(*groups, alpha: float = 0.05) -> TestResult:
    """Kruskal-Wallis H-test on ranks, effect size epsilon squared.

    Parameters
    ----------
    *groups : array-like of float
        Two or more samples; no NaN.
    alpha : float
        Level of the verdict.

    Returns
    -------
    TestResult
        ``statistic`` H (tie-corrected), ``p_value``, ``effect_size`` epsilon squared.

    Notes
    -----
    H as ``scipy.stats.kruskal`` (Kruskal & Wallis 1952, tie-corrected); epsilon^2 = H / (n - 1)
    (Tomczak & Tomczak 2014). Undefined (nan, with a RuntimeWarning) when all values are
    identical.

    Examples
    --------
    >>> r = kruskal_wallis([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    >>> round(r.statistic, 4), round(r.p_value, 4)
    (3.8571, 0.0495)
    """
    alpha = _check_alpha(alpha)
    gs = _groups(groups)
    res = _quiet(stats.kruskal, *gs)
    n = sum(g.size for g in gs)
    h, p = float(res.statistic), float(res.pvalue)
    if math.isnan(p):
        _warn("kruskal_wallis: undefined (all values are identical); H and p are nan.")
    return TestResult("Kruskal-Wallis H-test", h, p, h / (n - 1) if n > 1 else NAN, "epsilon squared",
                      _verdict(p, alpha, "the group distributions differ", "all values are identical"),
                      alpha, details={"k": len(gs), "n": n})
