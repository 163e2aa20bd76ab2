"""Tests of association in contingency tables: Pearson's chi-squared and Fisher's exact test."""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from metrics_core.errors import InputError
from metrics_core.significance.base import NAN, TestResult, _check_alpha, _table, _verdict, _warn


def chi_squared(table, *, alpha: float = 0.05) -> TestResult:
    """Pearson chi-squared test of independence on an R x C table, effect size Cramer's V.

    Parameters
    ----------
    table : array-like, shape (R, C)
        Counts (finite, >= 0), e.g. rows = model or period, columns = outcome or class.
    alpha : float
        Level of the verdict.

    Returns
    -------
    TestResult
        ``statistic`` chi^2, ``p_value``, ``effect_size`` Cramer's V; ``details``: dof, n and
        whether Yates' correction applied.

    Notes
    -----
    As ``scipy.stats.chi2_contingency`` with ``correction=True`` (Pearson 1900): Yates'
    continuity correction applies when the table has one degree of freedom (2 x 2 after
    dropping empty rows/columns); larger tables are uncorrected. All-zero rows and columns are
    dropped first, with a RuntimeWarning (they carry no information and would make an expected
    count 0). Cramer's V = sqrt(chi^2 / (n (min(R, C) - 1))) from the uncorrected statistic
    (Cramer 1946), as ``scipy.stats.contingency.association``. Undefined (nan, with a warning)
    when fewer than two rows or two columns remain.

    Examples
    --------
    >>> r = chi_squared([[10, 20], [30, 40]])
    >>> round(r.statistic, 4), round(r.p_value, 4)
    (0.4464, 0.504)
    """
    alpha = _check_alpha(alpha)
    t = _table(table)
    rows, cols = t.sum(axis=1) > 0, t.sum(axis=0) > 0
    if not rows.all() or not cols.all():
        _warn(f"chi_squared: dropped {int((~rows).sum())} empty row(s) and {int((~cols).sum())} "
              f"empty column(s) of the table.")
        t = t[rows][:, cols]
    details = {"dof": NAN, "n": float(t.sum())}
    if t.shape[0] < 2 or t.shape[1] < 2:
        _warn(f"chi_squared: undefined, the non-empty table is {t.shape[0]} x {t.shape[1]}; "
              f"need at least 2 x 2.")
        return TestResult("chi-squared test", NAN, NAN, NAN, "Cramer's V",
                          _verdict(NAN, alpha, "", "need at least 2 non-empty rows and columns"),
                          alpha, details=details)
    dof = (t.shape[0] - 1) * (t.shape[1] - 1)
    if dof == 1:  # Yates' correction: scipy's own
        res = stats.chi2_contingency(t)
        statistic, p_value = float(res.statistic), float(res.pvalue)
        plain = stats.chi2_contingency(t, correction=False).statistic
    else:
        statistic, p_value = _pearson(t, dof)
        plain = statistic
    v = math.sqrt(float(plain) / (t.sum() * (min(t.shape) - 1)))
    details["dof"] = dof
    details["yates"] = dof == 1
    return TestResult("chi-squared test", statistic, p_value, v, "Cramer's V",
                      _verdict(p_value, alpha, "rows and columns are associated"), alpha, details=details)


def _pearson(t: np.ndarray, dof: int) -> tuple[float, float]:
    """Pearson's X^2 and its chi-squared p-value for a table without empty rows or columns, with the
    float operations of ``scipy.stats.chi2_contingency`` (no correction): expected = row sum x
    column sum / n, X^2 = sum of (observed - expected)^2 / expected, p = ``chdtrc(dof, X^2)``.
    The same values, without scipy's checks and wrappers (a period with 50 segments runs 100 of
    these tests, each 0.25 ms through scipy)."""
    observed = np.asarray(t, dtype=np.float64)
    expected = observed.sum(axis=1, keepdims=True) * observed.sum(axis=0, keepdims=True) / observed.sum()
    statistic = float(np.sum((t - expected) ** 2 / expected))
    return statistic, float(special.chdtrc(dof, statistic))


_INT64_MAX = int(np.iinfo(np.int64).max)


def _check_int64_products(t: np.ndarray) -> None:
    """Raise when ``scipy.stats.fisher_exact`` would overflow int64 on the 2 x 2 integer table ``t``.

    scipy multiplies int64 counts (a d, b c, and (n + 1)(n1 + 1) for the mode of the two-sided
    test), which wrap around past 2^63 - 1 (counts of about 3e9 and more) into a negative odds ratio and a
    wrong p-value. Checked in Python integers (exact); a table with an empty row or column is safe
    (scipy returns before multiplying) unless a count itself exceeds int64.
    """
    (a, b), (c, d) = (int(x) for x in t[0]), (int(x) for x in t[1])
    if max(a, b, c, d) <= _INT64_MAX and (0 in (a + b, c + d, a + c, b + d)):
        return
    largest = max(a * d, b * c, (a + c + 1) * (a + b + 1))
    if largest > _INT64_MAX:
        raise InputError(f"table: counts too large for Fisher's exact test (total {a + b + c + d:,}): scipy "
                         f"computes it in 64-bit integers, whose products overflow here (a product of "
                         f"{largest:.3g} > 2^63 - 1). Use chi_squared (a close approximation when every expected "
                         "count is 5 or more).")


def fisher_exact(table, *, alpha: float = 0.05) -> TestResult:
    """Fisher's exact test on a 2 x 2 table (two-sided), effect size the sample odds ratio.

    Parameters
    ----------
    table : array-like, shape (2, 2)
        Integer counts [[a, b], [c, d]].
    alpha : float
        Level of the verdict.

    Returns
    -------
    TestResult
        ``statistic`` and ``effect_size`` the odds ratio, ``p_value`` two-sided.

    Raises
    ------
    InputError
        A table that is not 2 x 2 of finite integer counts >= 0, or one too large for scipy's
        int64 arithmetic (see Notes).

    Notes
    -----
    ``scipy.stats.fisher_exact`` (Fisher 1922). The odds ratio (a d) / (b c) is inf when
    b c = 0 < a d and nan when both products are 0 (e.g. a zero row), where the p-value is 1.
    Tables whose products of counts exceed 2^63 - 1 (counts of about 3e9 and more), where scipy's
    int64 arithmetic overflows into a negative odds ratio, are an InputError.

    Examples
    --------
    >>> r = fisher_exact([[8, 2], [1, 5]])
    >>> r.statistic, round(r.p_value, 4)
    (20.0, 0.035)
    """
    alpha = _check_alpha(alpha)
    t = _table(table)
    if t.shape != (2, 2):
        raise InputError(f"table: Fisher's exact test needs a 2 x 2 table, got shape {t.shape}. "
                         f"Use chi_squared for larger tables.")
    if np.any(t != np.round(t)):
        raise InputError("table: Fisher's exact test needs integer counts.")
    _check_int64_products(t)
    res = stats.fisher_exact(t.astype(np.int64))
    odds = float(res.statistic)
    return TestResult("Fisher's exact test", odds, float(res.pvalue), odds, "odds ratio",
                      _verdict(float(res.pvalue), alpha, "rows and columns are associated"), alpha,
                      details={"n": int(t.sum())})
