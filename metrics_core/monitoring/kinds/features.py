"""The input-feature kinds: each watched feature against the reference (numeric, categorical, text) and all of them at once.

Which test a feature gets is read off the reference's statistics
(:class:`~metrics_core.monitoring.features.FeatureStats`), so it is the same for every period:

- ``feature_numeric``: a numeric feature with more than :data:`MAX_LEVELS` (20) distinct binned
  values in the reference: KS on its floating-point bins; effect = Wasserstein-1 distance in
  reference standard deviations (scale-free: a feature has no known unit), threshold
  ``feature_shift``. The details hold the bounds of both against the rows.
- ``feature_category``: a string or bool feature of fewer than :data:`TEXT_TOKENS` (3) tokens per
  value on average in the reference, or a numeric one with at most :data:`MAX_LEVELS` values
  (codes, pack sizes): the class-mix test of its value counts
  (:func:`metrics_core.drift.class_mix_test`: chi-squared, effect PSI, threshold
  ``feature_psi``), missing values as a category of their own; rows of values unseen in the
  reference counted in the details.
- ``feature_tokens`` and ``feature_unseen``: a string feature of 3+ tokens a value (titles,
  descriptions): KS and Wasserstein of the tokens per row (threshold ``feature_shift``); and the
  share of the period's tokens unseen in the reference against the share the reference itself
  predicts for a new sample, its Good-Turing missing mass (tokens seen once / tokens; Good
  1953), by the two-proportion z-test (effect = the difference, threshold ``feature_unseen``).
  Hash collisions of the token table can only hide an unseen token, so the share is
  underestimated by at most the table's occupancy (in the details).
- ``feature_domain``: the numeric features and the token counts together (2+ columns): a
  cross-fitted domain classifier on the bottom-k row samples tells the period's rows from the
  reference's; effect = its AUROC, threshold ``feature_auroc``. Each half of the samples (a bit of
  the row hash) trains a ridge-regularised linear discriminant on its whitened principal
  components and their squares (so a change of spread or of correlation counts as well as a
  change of mean) and scores the other half;
  the one-sided Mann-Whitney tests of both halves (scipy) are combined by Stouffer's z. Held-out
  scores keep the AUROC at 0.5 on stable periods whatever the number of features.

Their tests log no metric each (a period may watch a thousand features): the period logs the
worst feature per kind and the counts tested and alerting (:func:`feature_metrics`), and the
table of every feature's test (:func:`feature_table`) as ``feature_drift.json``.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import polars as pl
from scipy import stats

from metrics_core import drift
from metrics_core.counts import ScoreCounts
from metrics_core.errors import InputError
from metrics_core.monitoring.features import MAX_TOKENS, FeatureStats, numeric_points
from metrics_core.monitoring.kinds.base import Job, Kind, Metric, Planned, TestKey
from metrics_core.monitoring.period import PeriodStats, binned
from metrics_core.significance import TestResult
from metrics_core.significance.base import NAN

__all__ = ["FEATURE_NUMERIC", "FEATURE_CATEGORY", "FEATURE_TOKENS", "FEATURE_UNSEEN", "FEATURE_DOMAIN",
           "FEATURE_KINDS", "FEATURES", "MAX_LEVELS", "TEXT_TOKENS", "MIN_FEATURE_ROWS", "feature_roles",
           "numeric_test", "domain_test", "feature_metrics", "feature_table"]

#: The chart section of the features' summary metrics.
FEATURES = "9 input features"
#: A numeric feature with at most this many distinct (binned) values in the reference is tested as categories.
MAX_LEVELS = 20
#: A string feature of at least this many tokens per value on average in the reference is text.
TEXT_TOKENS = 3.0
#: Fewest non-missing values of a feature in reference and period for it to be tested.
MIN_FEATURE_ROWS = 20
#: Fewest sampled rows a side for the domain classifier.
MIN_DOMAIN_ROWS = 200
#: Ridge added to the standardised within-class covariance of the domain classifier.
RIDGE = 1.0


def numeric_test(r: ScoreCounts, c: ScoreCounts) -> TestResult:
    """KS on two binned distributions; effect = Wasserstein-1 over the reference's standard deviation.

    Details: ``ks_d``, ``wasserstein`` (raw units), both means, and the bounds of the binned
    statistics against the rows (module notes of :mod:`metrics_core.monitoring.features`):
    ``ks_bound`` (the largest share of either sample in one bin: the rows' D is at most this
    above the binned D, never below) and ``wasserstein_bound`` (inf when a value fell in an
    overflow bin).
    """
    ks = drift.ks(r, c)
    w = drift.wasserstein(r, c, threshold=None)
    means = [float(np.dot(x.scores, x.counts) / x.total) for x in (r, c)]
    top = numeric_points()[-1]
    overflow = any(np.abs(x.scores).max() >= top for x in (r, c))
    w_bound = math.inf if overflow else sum(float(np.dot(np.abs(x.scores), x.counts) / x.total) for x in (r, c)) / 128 \
        + 2 * 2.0 ** -20
    return dataclasses.replace(ks, effect_size=w.effect_size, effect_name="Wasserstein-1 / reference std",
                               details={**ks.details, "ks_d": ks.statistic, "wasserstein": w.statistic,
                                        "reference_std": w.details["reference_std"], "mean_reference": means[0],
                                        "mean_current": means[1],
                                        "ks_bound": float(max(x.counts.max() / x.total for x in (r, c))),
                                        "wasserstein_bound": w_bound})


def _mean_tokens(s: FeatureStats, j: int) -> float:
    rows = s.token_rows[j]
    return float(np.dot(np.arange(MAX_TOKENS + 1), rows) / rows.sum()) if rows.sum() else 0.0


def feature_roles(reference: FeatureStats) -> dict[str, str]:
    """Each feature's test family, from the reference: ``"numeric"``, ``"category"`` or ``"text"``.

    >>> import pyarrow as pa
    >>> from metrics_core.monitoring.features import feature_update
    >>> ref = feature_update(pa.table({"x": [0.1 * i for i in range(50)], "pack": [250, 500] * 25,
    ...                                "title": ["Tesco Finest Cheddar 400g"] * 50, "shop": ["a", "b"] * 25}),
    ...                      ("x", "pack", "title", "shop"))
    >>> feature_roles(ref)
    {'x': 'numeric', 'pack': 'category', 'title': 'text', 'shop': 'category'}
    """
    out, i_num, i_str = {}, 0, 0
    for col, t in zip(reference.columns, reference.types):
        if t == "numeric":
            out[col] = "numeric" if np.count_nonzero(reference.numeric[i_num]) > MAX_LEVELS else "category"
            i_num += 1
        else:
            out[col] = "text" if _mean_tokens(reference, i_str) >= TEXT_TOKENS else "category"
            i_str += 1
    return out


def _category_counts(s: FeatureStats, col: str) -> dict:
    """Value -> rows of a feature tested as categories (numeric levels by their bin's value), missing included."""
    i = s.columns.index(col)
    if s.types[i] == "numeric":
        row = s.numeric[s.of_type("numeric").index(col)]
        points = numeric_points()
        counts = {f"{points[b]:.6g}": int(row[b]) for b in np.flatnonzero(row)}
    else:
        counts = s.categories[s.of_type("string").index(col)].counts()
    if s.missing[i]:
        counts["(missing)"] = int(s.missing[i])
    return counts


def _category_test(r: dict, c: dict) -> TestResult:
    names = list(dict.fromkeys([*r, *c]))
    rv = np.array([r.get(k, 0) for k in names], dtype=np.int64)
    cv = np.array([c.get(k, 0) for k in names], dtype=np.int64)
    t = drift.class_mix_test(rv, cv, names)
    unseen = int(cv[rv == 0].sum())
    share = np.abs(cv / cv.sum() - rv / rv.sum())
    return dataclasses.replace(t, details={**t.details, "unseen_rows": unseen, "unseen_share": unseen / cv.sum(),
                                           "categories": len(names), "most_changed": names[int(share.argmax())]})


def _unseen_test(r: np.ndarray, c: np.ndarray) -> TestResult:
    """The period's share of tokens in buckets empty in the reference against the reference's Good-Turing missing mass."""
    n_ref, n_cur = int(r.sum()), int(c.sum())
    seen_once, unseen = int((r == 1).sum()), int(c[r == 0].sum())
    t = drift.two_proportion_z(seen_once, n_ref, unseen, n_cur)
    return dataclasses.replace(t, effect_name="share of tokens unseen in the reference, over the expected share",
                               details={**t.details, "unseen_tokens": unseen, "tokens": n_cur,
                                        "occupancy": float(np.count_nonzero(r) / r.size)})


def _valid(r: FeatureStats, c: FeatureStats, col: str) -> bool:
    i = r.columns.index(col)
    return min(r.n_rows - r.missing[i], c.n_rows - c.missing[i]) >= MIN_FEATURE_ROWS


def _pair(reference: PeriodStats, current: PeriodStats) -> tuple[FeatureStats, FeatureStats] | None:
    r, c = getattr(reference, "features", None), getattr(current, "features", None)
    if r is None or c is None:
        return None
    if r.columns != c.columns or r.types != c.types:
        raise InputError(f"features: the reference has {dict(zip(r.columns, r.types))}, the period "
                         f"{dict(zip(c.columns, c.types))}; watch the same features, of the same types, in both.")
    return r, c


def _warn_overflow(r: FeatureStats, c: FeatureStats) -> None:
    """A loud warning per numeric feature with values beyond the bins (|x| >= 2**40, e.g. ids read as
    numbers): they are counted in the overflow bins, where no shift among them shows."""
    for j, col in enumerate(r.of_type("numeric")):
        n = [int(s.numeric[j, 0] + s.numeric[j, -1]) for s in (r, c)]
        if any(n):
            warnings.warn(f"feature {col}: {n[0]:,} reference and {n[1]:,} period values beyond +-2**40 (about "
                          f"1.1e12) share the overflow bins, where a shift among them does not show; watch such a "
                          f"column as text or categories (cast it to string), or rescale it.", stacklevel=3)


def _numeric_tests(reference: PeriodStats, current: PeriodStats) -> Planned:
    pair = _pair(reference, current)
    if pair is None:
        return []
    r, c = pair
    _warn_overflow(r, c)
    points, names = numeric_points(), r.of_type("numeric")
    return [(TestKey("feature_numeric", col), Job(numeric_test, binned(points, r.numeric[names.index(col)]),
                                                  binned(points, c.numeric[names.index(col)])))
            for col, role in feature_roles(r).items() if role == "numeric" and _valid(r, c, col)]


def _category_tests(reference: PeriodStats, current: PeriodStats) -> Planned:
    pair = _pair(reference, current)
    if pair is None:
        return []
    r, c = pair
    return [(TestKey("feature_category", col), _category_test(_category_counts(r, col), _category_counts(c, col)))
            for col, role in feature_roles(r).items() if role == "category" and _valid(r, c, col)]


def _text_tests(kind: str, reference: PeriodStats, current: PeriodStats) -> Planned:
    pair = _pair(reference, current)
    if pair is None:
        return []
    r, c = pair
    names, out = r.of_type("string"), []
    points = np.arange(MAX_TOKENS + 1, dtype=np.float64)
    for col, role in feature_roles(r).items():
        if role != "text" or not _valid(r, c, col):
            continue
        j = names.index(col)
        if kind == "feature_tokens":
            out.append((TestKey(kind, col), Job(numeric_test, binned(points, r.token_rows[j]),
                                                binned(points, c.token_rows[j]))))
        elif r.tokens[j].sum() and c.tokens[j].sum():
            out.append((TestKey(kind, col), _unseen_test(r.tokens[j], c.tokens[j])))
    return out


def _domain_columns(r: FeatureStats) -> list[int]:
    roles = feature_roles(r)
    return [i for i, col in enumerate(r.columns) if r.types[i] == "numeric" or roles[col] == "text"]


def domain_test(reference: np.ndarray, current: np.ndarray, ref_hash: np.ndarray, cur_hash: np.ndarray) -> TestResult:
    """The cross-fitted domain classifier's AUROC (current rows against reference rows) and its one-sided p-value.

    Parameters
    ----------
    reference, current : numpy.ndarray, shape (n, d)
        Sampled rows (NaN = missing, imputed by the training half's mean).
    ref_hash, cur_hash : numpy.ndarray of uint64
        The rows' hashes; their lowest bit splits them into the two halves.

    Returns
    -------
    TestResult
        ``effect_size`` the AUROC over both held-out halves (0.5: indistinguishable), ``p_value``
        Stouffer's combination of the halves' one-sided Mann-Whitney tests; nan when a half lacks
        rows of either side.
    """
    x = np.vstack((reference, current))
    y = np.concatenate((np.zeros(len(reference), bool), np.ones(len(current), bool)))
    half = (np.concatenate((ref_hash, cur_hash)) & np.uint64(1)).astype(bool)
    aucs, zs, sizes = [], [], []
    for test_half in (False, True):
        train, test = half != test_half, half == test_half
        if min(np.sum(y[train]), np.sum(~y[train]), np.sum(y[test]), np.sum(~y[test])) < 2:
            return TestResult("cross-fitted domain classifier (Mann-Whitney)", NAN, NAN, NAN, "AUROC",
                              "undefined: too few sampled rows")
        mean = np.nanmean(x[train], axis=0)
        std = np.nanstd(x[train], axis=0)
        std[~(std > 0)] = 1.0
        z = np.nan_to_num((x - mean) / std, nan=0.0)
        # principal axes of the training half, whitened: a change of correlation is a change of
        # spread along them, which the squares then see
        val, vec = np.linalg.eigh(np.atleast_2d(np.cov(z[train], rowvar=False)))
        z = np.clip(z @ (vec / np.sqrt(np.maximum(val, 1e-6 * max(val.max(), 1e-12)))), -10, 10)
        z = np.hstack((z, z * z - 1.0))
        a, b = z[train & ~y], z[train & y]
        cov = (np.cov(a, rowvar=False) * (len(a) - 1) + np.cov(b, rowvar=False) * (len(b) - 1)) / (len(a) + len(b) - 2)
        w = np.linalg.solve(np.atleast_2d(cov) + RIDGE * np.eye(z.shape[1]), b.mean(axis=0) - a.mean(axis=0))
        s = z[test] @ w
        u = stats.mannwhitneyu(s[y[test]], s[~y[test]], alternative="greater")
        n1, n0 = int(y[test].sum()), int((~y[test]).sum())
        aucs.append(u.statistic / (n1 * n0))
        zs.append(float(stats.norm.isf(u.pvalue)))
        sizes.append(n1 + n0)
    auc = float(np.average(aucs, weights=sizes))
    p = float(stats.norm.sf(sum(zs) / math.sqrt(len(zs))))
    return TestResult("cross-fitted domain classifier (Mann-Whitney)", float(sum(zs) / math.sqrt(2)), p, auc,
                      "AUROC of the domain classifier", f"p = {p:.3g}",
                      details={"auroc_halves": aucs, "n_reference": len(reference), "n_current": len(current),
                               "columns": x.shape[1]})


def _domain_tests(reference: PeriodStats, current: PeriodStats) -> Planned:
    pair = _pair(reference, current)
    if pair is None:
        return []
    r, c = pair
    cols = _domain_columns(r)
    if len(cols) < 2 or min(len(r.sample_hash), len(c.sample_hash)) < MIN_DOMAIN_ROWS:
        return []
    return [(TestKey("feature_domain"), domain_test(r.sample[:, cols], c.sample[:, cols], r.sample_hash,
                                                    c.sample_hash))]


def _render_numeric(r, tail: str) -> tuple[str, str]:
    return (f"feature {r.key.cls}: distribution shifted, mean {r.reference:.4g} -> {r.current:.4g}, Wasserstein "
            f"{r.effect:.3f} reference SDs >= {r.threshold:g}", tail)


def _render_category(r, tail: str) -> tuple[str, str]:
    unseen = f"; {r.current:.1%} of rows unseen in the reference" if r.current > 0 else ""
    return f"feature {r.key.cls}: values shifted, PSI {r.effect:.3f} >= {r.threshold:g}{unseen}", tail


def _render_tokens(r, tail: str) -> tuple[str, str]:
    return (f"feature {r.key.cls}: tokens per value shifted, mean {r.reference:.2f} -> {r.current:.2f}, Wasserstein "
            f"{r.effect:.3f} reference SDs >= {r.threshold:g}", tail)


def _render_unseen(r, tail: str) -> tuple[str, str]:
    return (f"feature {r.key.cls}: {r.current:.1%} of tokens unseen in the reference (expected {r.reference:.1%})",
            f"+{r.effect * 100:.1f} points, threshold {r.threshold * 100:g}; {tail}")


def _render_domain(r, tail: str) -> tuple[str, str]:
    return (f"features jointly shifted: a classifier tells the period from the reference with AUROC {r.effect:.3f} "
            f">= {r.threshold:g}", tail)


_WORST = {"feature_numeric": "max_feature_shift", "feature_tokens": "max_feature_shift",
          "feature_category": "max_feature_psi", "feature_unseen": "max_feature_unseen",
          "feature_domain": "feature_domain_auroc"}
_COUNTS = (Metric("n_features_tested", f"{FEATURES}/features tested", True),
           Metric("n_features_alerting", f"{FEATURES}/features alerting", True))

FEATURE_NUMERIC = Kind("feature_numeric", "feature_shift", _render_numeric, ("mean_reference", "mean_current"),
                       tests=_numeric_tests, summary_only=True,
                       logged=(Metric("max_feature_shift", f"{FEATURES}/largest shift (reference SDs)", True),
                               *_COUNTS))
FEATURE_CATEGORY = Kind("feature_category", "feature_psi", _render_category, ("", "unseen_share"),
                        tests=_category_tests, summary_only=True,
                        logged=(Metric("max_feature_psi", f"{FEATURES}/largest PSI", True),))
FEATURE_TOKENS = Kind("feature_tokens", "feature_shift", _render_tokens, ("mean_reference", "mean_current"),
                      tests=lambda r, c: _text_tests("feature_tokens", r, c), summary_only=True)
FEATURE_UNSEEN = Kind("feature_unseen", "feature_unseen", _render_unseen, ("p_reference", "p_current"),
                      tests=lambda r, c: _text_tests("feature_unseen", r, c), summary_only=True,
                      logged=(Metric("max_feature_unseen", f"{FEATURES}/largest unseen-token excess", True),))
FEATURE_DOMAIN = Kind("feature_domain", "feature_auroc", _render_domain, tests=_domain_tests, summary_only=True,
                      logged=(Metric("feature_domain_auroc", f"{FEATURES}/domain classifier AUROC", True),))
FEATURE_KINDS = (FEATURE_NUMERIC, FEATURE_CATEGORY, FEATURE_TOKENS, FEATURE_UNSEEN, FEATURE_DOMAIN)


def feature_metrics(tests: dict, table: pl.DataFrame) -> dict[str, float]:
    """The features' summary: the worst finite ``|effect|`` per summary metric (nan without a test),
    the features tested and the features with a test that alerts (from the decision's ``table``)."""
    names = {k.name: k for k in tests if k.kind in _WORST}
    out = {}
    for metric in dict.fromkeys(_WORST.values()):
        vals = [abs(t.effect_size) for k, t in tests.items()
                if _WORST.get(k.kind) == metric and np.isfinite(t.effect_size)]
        out[metric] = max(vals) if vals else NAN
    alerting = {names[n].cls for n, d in zip(table["name"], table["drift"]) if n in names and d}
    out["n_features_tested"] = len({k.cls for k in names.values() if k.cls is not None})
    out["n_features_alerting"] = len(alerting - {None})
    return out


def feature_table(tests: dict, table: pl.DataFrame) -> pl.DataFrame:
    """One row per feature test, strongest first (``|effect| / threshold``): feature, kind, statistic,
    p-value (raw and corrected with the period's tests), effect and its name, threshold, alert,
    the values before and after, and the bounds of the binned statistics against the rows."""
    keys = {k.name: k for k in tests if k.kind in _WORST}
    rows = []
    for row in table.iter_rows(named=True):
        key = keys.get(row["name"])
        if key is None:
            continue
        d, kind = tests[key].details, key.kind
        before, after = FEATURE_BY_NAME[kind].before_after
        rows.append({"feature": key.cls or "(all)", "kind": kind, "test": row["test"], "statistic": row["statistic"],
                     "p_value": row["p_value"], "p_adjusted": row["p_adjusted"], "effect_size": row["effect_size"],
                     "effect_name": row["effect_name"], "threshold": row["threshold"], "alert": bool(row["drift"]),
                     "reference": float(d.get(before, NAN)) if before else NAN,
                     "current": float(d.get(after, NAN)) if after else NAN,
                     # the bounds of the floating-point bins (token counts are exact integers)
                     "ks_bound": float(d["ks_bound"]) if kind == "feature_numeric" else NAN,
                     "wasserstein_bound": float(d["wasserstein_bound"]) if kind == "feature_numeric" else NAN,
                     "unseen_share": float(d.get("unseen_share", d.get("p_current", NAN)) if kind in (
                         "feature_category", "feature_unseen") else NAN)})
    schema = {"feature": pl.String, "kind": pl.String, "test": pl.String, "statistic": pl.Float64,
              "p_value": pl.Float64, "p_adjusted": pl.Float64, "effect_size": pl.Float64, "effect_name": pl.String,
              "threshold": pl.Float64, "alert": pl.Boolean, "reference": pl.Float64, "current": pl.Float64,
              "ks_bound": pl.Float64, "wasserstein_bound": pl.Float64, "unseen_share": pl.Float64}
    out = pl.DataFrame(rows, schema=schema)
    ratio = (pl.col("effect_size").abs() / pl.col("threshold")).fill_nan(-1.0)
    return out.sort(ratio, descending=True, nulls_last=True)


FEATURE_BY_NAME = {k.name: k for k in FEATURE_KINDS}
