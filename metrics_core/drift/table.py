"""Several drift tests on one pair of distributions, and the table that judges them together."""

from __future__ import annotations

from typing import Mapping

import numpy as np
import polars as pl

from metrics_core.drift.distances import _hellinger, _jensen_shannon, _psi
from metrics_core.drift.distributions import Histogram, _binned, _dist
from metrics_core.drift.ecdf import _integer_counts, _ks, _merge, _wasserstein
from metrics_core.errors import InputError
from metrics_core.significance import correct
from metrics_core.significance.base import NAN, TestResult, _check_alpha

BINNED, EXACT = ("psi", "jensen_shannon", "hellinger"), ("ks", "wasserstein")
DEFAULT_THRESHOLDS = {"psi": 0.25, "jensen_shannon": 0.1, "hellinger": 0.1, "wasserstein": 0.1, "ks": None}
SCHEMA = {"name": pl.String, "test": pl.String, "statistic": pl.Float64, "p_value": pl.Float64,
          "p_adjusted": pl.Float64, "effect_size": pl.Float64, "effect_name": pl.String,
          "threshold": pl.Float64, "drift": pl.Boolean, "verdict": pl.String}


def drift_tests(reference, current, tests=("psi", "ks", "wasserstein", "jensen_shannon", "hellinger"), *,
            bins=10, alpha: float = 0.05, thresholds: Mapping[str, float | None] | None = None
            ) -> dict[str, TestResult]:
    """Several drift tests on one reference/current pair, sharing the work.

    Parameters
    ----------
    reference, current : array-like, ScoreCounts, Histogram or mapping
        As the single tests take them; KS and Wasserstein need exact values (rows or
        ScoreCounts).
    tests : sequence of str
        Names among "psi", "ks", "wasserstein", "jensen_shannon", "hellinger".
    bins : int, array-like or None
        Binning of PSI, Jensen-Shannon and Hellinger, as in :func:`psi`.
    alpha : float
        Level of the KS verdict.
    thresholds : mapping, optional
        Test name -> threshold, overriding the defaults (PSI 0.25; Jensen-Shannon, Hellinger,
        normalised Wasserstein 0.1; KS none).

    Returns
    -------
    dict of str to TestResult
        One result per test, in the order of ``tests``, equal to the single functions' results.

    Notes
    -----
    Each input is summarised once, KS and Wasserstein share one merge, PSI, Jensen-Shannon and
    Hellinger one binning. Feed the dict, or several merged, to :func:`drift_table`.

    Examples
    --------
    >>> sorted(drift_tests([0.1, 0.2, 0.3, 0.4], [0.3, 0.5, 0.6, 0.7], bins=2))
    ['hellinger', 'jensen_shannon', 'ks', 'psi', 'wasserstein']
    """
    alpha = _check_alpha(alpha)
    unknown = set(tests) - set(BINNED + EXACT)
    if unknown:
        raise InputError(f"tests: unknown test(s) {sorted(unknown)!r}; choose from {list(BINNED + EXACT)!r}.")
    thr = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
    exact = any(t in EXACT for t in tests)
    ref, cur = (x if isinstance(x, (Histogram, Mapping)) and not exact else _dist(x, name)
                for x, name in ((reference, "reference"), (current, "current")))
    out = {}
    if exact:
        m = _merge(*(_integer_counts(ref, cur) if "ks" in tests else (ref, cur)))
        if "ks" in tests:
            out["ks"] = _ks(m, (int(ref.total), int(cur.total)), alpha, thr["ks"])
        if "wasserstein" in tests:
            out["wasserstein"] = _wasserstein(ref, cur, m, thr["wasserstein"])
    if any(t in BINNED for t in tests):
        binned = _binned(ref, cur, bins)
        for name, fn in (("psi", _psi), ("jensen_shannon", _jensen_shannon), ("hellinger", _hellinger)):
            if name in tests:
                out[name] = fn(*binned, thr[name])
    return {t: out[t] for t in tests}


def _judge(r: TestResult, p_adjusted: float, threshold: float, alpha: float) -> tuple[bool | None, str]:
    """(drift, verdict) of one row: every available criterion must hold; None when not judged."""
    effect = abs(r.effect_size)
    parts, decisions = [], []
    if np.isfinite(p_adjusted):
        decisions.append(p_adjusted <= alpha)
        parts.append(f"p_adj = {p_adjusted:.3g} {'<=' if decisions[-1] else '>'} {alpha:g}")
    if np.isfinite(threshold):
        decisions.append(effect >= threshold)
        parts.append(f"|{r.effect_name}| = {effect:.4g} {'>=' if decisions[-1] else '<'} {threshold:g}")
    if not decisions:
        return None, "not judged: no p-value and no threshold"
    if np.isnan(effect) and np.isfinite(threshold):
        return None, f"undefined: {r.effect_name} is nan"
    drift = bool(all(decisions))
    return drift, ("drift: " if drift else "no drift: ") + " and ".join(parts)


def _checked(tests: Mapping[str, TestResult], thresholds: Mapping[str, float] | None) -> dict:
    """The threshold overrides, after checking that every test is a TestResult and every override names one."""
    thresholds = dict(thresholds or {})
    unknown = set(thresholds) - set(tests)
    if unknown:
        raise InputError(f"thresholds: no test named {sorted(unknown)!r}; tests are {sorted(tests)!r}.")
    for name, result in tests.items():
        if not isinstance(result, TestResult):
            raise InputError(f"tests[{name!r}]: expected a TestResult, got {type(result).__name__}.")
    return thresholds


def drift_table(tests: Mapping[str, TestResult], thresholds: Mapping[str, float] | None = None,
                correction: str = "bh", alpha: float = 0.05) -> pl.DataFrame:
    """One row per drift test, p-values corrected together, each row judged drift or not.

    Parameters
    ----------
    tests : mapping of str to TestResult
        Named results, e.g. from :func:`drift_tests`.
    thresholds : mapping of str to float, optional
        Name -> threshold on |effect_size|, overriding each result's ``details['threshold']``.
    correction : {"bh", "holm", "bonferroni"}
        Multiple-testing correction of the p-values (:func:`metrics_core.significance.correct`).
    alpha : float
        Level of the adjusted p-values.

    Returns
    -------
    polars.DataFrame
        Columns name, test, statistic, p_value, p_adjusted, effect_size, effect_name,
        threshold, drift, verdict.

    Notes
    -----
    A row is drift when every available criterion holds: the adjusted p-value <= alpha (tests
    with a p-value) and |effect| >= threshold (where one is set). With neither, or with a nan
    effect size and a threshold, ``drift`` is null (not judged / undefined). Tests without a
    p-value (PSI, distances) keep p_adjusted nan and do not count in the correction.

    Examples
    --------
    >>> from metrics_core.drift import psi, two_proportion_z
    >>> t = drift_table({"psi": psi({"a": 5, "b": 5}, {"a": 9, "b": 1}),
    ...                  "z": two_proportion_z(5, 10, 9, 10)})
    >>> t["drift"].to_list()
    [True, False]
    """
    alpha = _check_alpha(alpha)
    thresholds = _checked(tests, thresholds)
    names = list(tests)
    p_adj = correct([tests[k].p_value for k in names], correction, alpha).p_adjusted
    rows = []
    for name, p in zip(names, p_adj):
        r = tests[name]
        thr = thresholds.get(name, r.details.get("threshold", NAN))
        thr = NAN if thr is None else float(thr)
        drift, verdict = _judge(r, float(p), thr, alpha)
        rows.append({"name": name, "test": r.test, "statistic": float(r.statistic), "p_value": float(r.p_value),
                     "p_adjusted": float(p), "effect_size": float(r.effect_size),
                     "effect_name": r.effect_name, "threshold": thr, "drift": drift, "verdict": verdict})
    return pl.DataFrame(rows, schema=SCHEMA)
