"""Drift tests of category counts and proportions: chi-squared homogeneity (and the class-mix test), the two-proportion z-test."""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping

import numpy as np
from scipy import special

from metrics_core.counts import ScoreCounts
from metrics_core.drift.distances import psi
from metrics_core.drift.distributions import Histogram, _binned, _count_vector
from metrics_core.errors import InputError
from metrics_core.significance import chi_squared
from metrics_core.significance.base import NAN, TestResult, _check_alpha, _check_count, _verdict


def chi_squared_counts(reference_counts, current_counts, *, alpha: float = 0.05,
                       threshold: float | None = None) -> TestResult:
    """Chi-squared test of homogeneity between reference and current category counts.

    Parameters
    ----------
    reference_counts, current_counts : array-like, mapping, Histogram or ScoreCounts
        Aligned 1-D count arrays, two mappings category -> count (union of keys, missing = 0),
        two Histograms over the same edges, or ScoreCounts (union of distinct values).
    alpha : float
        Level of the verdict.
    threshold : float or None
        Optional minimum Cramer's V for drift, recorded in ``details['threshold']``.

    Returns
    -------
    TestResult
        As :func:`metrics_core.significance.chi_squared`: ``statistic`` chi^2, ``p_value``,
        ``effect_size`` Cramer's V; all nan (with a warning) when fewer than two categories
        are non-empty.

    Notes
    -----
    Pearson's chi-squared test of the 2 x K table [reference; current] (Pearson 1900), by
    :func:`metrics_core.significance.chi_squared`: categories empty in both are dropped;
    Yates' correction when K = 2, as scipy.

    Examples
    --------
    >>> r = chi_squared_counts({"a": 50, "b": 50}, {"a": 60, "b": 40})
    >>> round(r.statistic, 4), round(r.p_value, 4)
    (1.6364, 0.2008)
    """
    if isinstance(reference_counts, (Mapping, Histogram, ScoreCounts)):
        r, c, _ = _binned(reference_counts, current_counts, None)
    else:
        r = _count_vector(reference_counts, "reference_counts")
        c = _count_vector(current_counts, "current_counts")
        if r.size != c.size:
            raise InputError(f"reference_counts and current_counts: one count per category in each; got "
                             f"{r.size} and {c.size} categories.")
    res = chi_squared(np.vstack((r, c)), alpha=alpha)
    return dataclasses.replace(res, test="chi-squared homogeneity (reference vs current)",
                               details={**res.details, "threshold": NAN if threshold is None else threshold})


def two_proportion_z(k1, n1, k2, n2, *, alpha: float = 0.05, threshold: float | None = None) -> TestResult:
    """Two-proportion z-test (pooled variance) of reference k1/n1 against current k2/n2.

    Parameters
    ----------
    k1, n1 : float
        Successes and rows of the reference (n1 > 0, k1 <= n1).
    k2, n2 : float
        Successes and rows of the current sample.
    alpha : float
        Level of the verdict.
    threshold : float or None
        Optional minimum |p2 - p1| for drift, recorded in ``details['threshold']``.

    Returns
    -------
    TestResult
        ``statistic`` z, two-sided ``p_value``, ``effect_size`` p2 - p1; ``details``: the two
        proportions and the threshold.

    Notes
    -----
    z = (p2 - p1) / sqrt(p (1 - p) (1/n1 + 1/n2)), p = (k1 + k2) / (n1 + n2), two-sided normal
    p-value (Fleiss, Levin & Paik 2003, 3rd ed., sec. 2.5 without continuity correction);
    ``statsmodels.stats.proportion.proportions_ztest`` gives the same with the samples swapped.
    When p is 0 or 1 (both proportions equal at 0 or 1) z = 0 and p = 1 (statsmodels: nan;
    Fisher's exact test agrees with 1), so the test is never undefined.

    Examples
    --------
    >>> r = two_proportion_z(50, 100, 60, 100)
    >>> round(r.statistic, 4), round(r.p_value, 4), round(r.effect_size, 2)
    (1.4213, 0.1552, 0.1)
    """
    alpha = _check_alpha(alpha)
    for name, value in (("k1", k1), ("n1", n1), ("k2", k2), ("n2", n2)):
        _check_count(name, value)
    for k, n, kn, nn in ((k1, n1, "k1", "n1"), (k2, n2, "k2", "n2")):
        if n == 0:
            raise InputError(f"{nn}: the sample is empty (0 rows); a proportion needs n > 0.")
        if k > n:
            raise InputError(f"{kn}: {k!r} successes is more than {nn} = {n!r}.")
    p1, p2 = k1 / n1, k2 / n2
    pooled = (k1 + k2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    z = (p2 - p1) / se if se > 0 else 0.0
    # ndtr(-|z|) is what scipy.stats.norm.sf(|z|) computes (the same float), without its ~30 us of argument
    # handling: a period with segments runs thousands of these tests
    p = float(2 * special.ndtr(-abs(z))) if se > 0 else 1.0
    thr = NAN if threshold is None else float(threshold)
    return TestResult("two-proportion z-test", z, p, p2 - p1, "difference in proportions (current - reference)",
                      _verdict(p, alpha, f"the proportion changed ({p1:.4g} -> {p2:.4g})"), alpha,
                      details={"p_reference": p1, "p_current": p2, "threshold": thr})


def class_mix_test(reference_counts: np.ndarray, current_counts: np.ndarray, names) -> TestResult:
    """The class-mix test of two class-count vectors: :func:`chi_squared_counts` (classes empty in
    both dropped), with the PSI of the class shares (:func:`~metrics_core.drift.psi`) as its effect
    and Cramer's V in the details. Monitoring's ``class_mix`` kind and the prevalence stability
    check both judge a class distribution by it (practical threshold: the policy's ``psi``).

    >>> t = class_mix_test(np.array([500, 300, 200]), np.array([400, 350, 250]), ["a", "b", "c"])
    >>> round(t.effect_size, 4), t.effect_name, round(t.p_value, 6)
    (0.0412, 'PSI of the class distribution', 3.5e-05)
    """
    chi = chi_squared_counts(reference_counts, current_counts)
    shares = psi(dict(zip(names, np.asarray(reference_counts).tolist())),
                 dict(zip(names, np.asarray(current_counts).tolist()))).statistic
    return dataclasses.replace(chi, effect_size=shares, effect_name="PSI of the class distribution",
                               details={**chi.details, "cramers_v": chi.effect_size})
