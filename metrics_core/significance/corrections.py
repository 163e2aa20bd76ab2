"""Multiple-testing corrections of p-values: Benjamini-Hochberg, Holm and Bonferroni, NaN-aware."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from metrics_core._validate import to_numpy
from metrics_core.errors import InputError, bad_rows
from metrics_core.significance.base import _check_alpha

METHODS = ("bh", "holm", "bonferroni")


class Corrected(NamedTuple):
    """Adjusted p-values and rejections at ``alpha``, in the order of the input.

    Parameters
    ----------
    p_adjusted : numpy.ndarray of float
        Adjusted p-values, capped at 1; nan where the input p-value was nan.
    reject : numpy.ndarray of bool
        True where the null hypothesis is rejected; never for a nan p-value.

    Examples
    --------
    >>> Corrected(np.array([0.02]), np.array([True])).reject.tolist()
    [True]
    """

    p_adjusted: np.ndarray
    reject: np.ndarray


def _p_values(p_values) -> np.ndarray:
    """Float64 p-values in [0, 1] or NaN (an undefined test); anything else is an error."""
    if hasattr(p_values, "__len__") and len(p_values) == 0:
        return np.empty(0)
    p = to_numpy(p_values, "p_values")
    if p.dtype.kind not in "fiub":
        raise InputError(f"p_values: must be numbers, got dtype {p.dtype}.")
    p = np.asarray(p, dtype=np.float64)
    bad = ~(np.isnan(p) | ((p >= 0) & (p <= 1)))
    if bad.any():
        raise bad_rows("p_values", "p-value outside [0, 1]", bad, p,
                       "NaN marks an undefined test; every other value must be a probability.")
    return p


def _adjust_sorted(ps: np.ndarray, method: str, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Adjusted p-values (uncapped) and rejections of ascending p-values ``ps``."""
    m = ps.size
    rank = np.arange(1, m + 1)
    if method == "bonferroni":
        return ps * m, ps <= alpha / m
    if method == "holm":
        adj = np.maximum.accumulate(ps * (m - rank + 1))
        first = np.flatnonzero(ps > alpha / (m - rank + 1))  # step-down: stop at the first acceptance
        rej = np.ones(m, dtype=bool)
        rej[first[0] if first.size else m:] = False
        return adj, rej
    frac = rank / m
    adj = np.minimum.accumulate((ps / frac)[::-1])[::-1]
    below = np.flatnonzero(ps <= frac * alpha)  # step-up: reject up to the last p_(i) <= i alpha / m
    rej = np.zeros(m, dtype=bool)
    rej[: below[-1] + 1 if below.size else 0] = True
    return adj, rej


def correct(p_values, method: str = "bh", alpha: float = 0.05) -> Corrected:
    """Adjust p-values for multiple testing: Benjamini-Hochberg, Holm or Bonferroni.

    Parameters
    ----------
    p_values : array-like of float
        One p-value per test, in [0, 1]; NaN marks an undefined test (e.g. an empty group).
    method : {"bh", "holm", "bonferroni"}
        Benjamini-Hochberg false discovery rate, Holm's step-down or Bonferroni
        family-wise error rate.
    alpha : float
        Level of the rejections.

    Returns
    -------
    Corrected
        ``p_adjusted`` and ``reject`` in the order of the input. A NaN p-value stays NaN, is
        never rejected and does not count in m; an empty input gives empty arrays.

    Notes
    -----
    With the m finite p-values sorted ascending, p_(1) <= ... <= p_(m):
    ``bonferroni``: min(1, m p); ``holm`` (plain step-down Holm 1979, not Holm-Sidak): running
    max of (m - i + 1) p_(i); ``bh`` (Benjamini & Hochberg 1995): running min from the top of
    m p_(i) / i; all capped at 1. Rejections follow the step-down (Holm) and step-up (BH) rules
    at ``alpha``. On the finite p-values the result equals
    ``statsmodels.stats.multitest.multipletests`` with method "fdr_bh", "holm" or "bonferroni".

    Examples
    --------
    >>> c = correct([0.01, 0.04, 0.03, 0.2], "bh")
    >>> c.p_adjusted.round(4).tolist(), c.reject.tolist()
    ([0.04, 0.0533, 0.0533, 0.2], [True, False, False, False])
    >>> correct([0.01, float("nan"), 0.04], "bonferroni").p_adjusted.tolist()
    [0.02, nan, 0.08]
    """
    alpha = _check_alpha(alpha)
    if method not in METHODS:
        raise InputError(f"method: must be 'bh', 'holm' or 'bonferroni', got {method!r}.")
    p = _p_values(p_values)
    adjusted, reject = np.full(p.size, np.nan), np.zeros(p.size, dtype=bool)
    finite = np.flatnonzero(~np.isnan(p))
    if finite.size:
        order = finite[np.argsort(p[finite])]
        adj, rej = _adjust_sorted(p[order], method, alpha)
        adjusted[order], reject[order] = np.minimum(adj, 1.0), rej
    return Corrected(adjusted, reject)
