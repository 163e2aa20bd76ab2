"""Significance tests, intervals and multiple-testing corrections (ISO/IEC TS 4213 clause 7)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple

import numpy as np
from scipy import stats

from metrics_core._validate import check_lengths, to_numpy
from metrics_core.errors import InputError, bad_rows

__all__ = [
    "TestResult", "Corrected", "paired_t_test", "corrected_resampled_t_test", "anova",
    "kruskal_wallis", "chi_squared", "wilcoxon_signed_rank", "fisher_exact", "mcnemar",
    "proportion_interval", "paired_bootstrap", "correct",
]

NAN = float("nan")


@dataclass(frozen=True)
class TestResult:
    """Outcome of one test or interval, the common result of ``significance`` and ``drift``.

    ``p_value`` and ``effect_size`` are nan where none exists (e.g. PSI has no p-value);
    ``effect_name`` says which effect size is reported; ``verdict`` is a short sentence with the
    decision at ``alpha`` (or at the threshold in ``details['threshold']`` for distances);
    ``interval`` is a confidence interval where one is computed; ``details`` holds counts and
    settings (floats or strings) worth logging.
    """

    __test__ = False  # not a pytest test class

    test: str
    statistic: float
    p_value: float
    effect_size: float
    effect_name: str
    verdict: str
    alpha: float = 0.05
    interval: tuple[float, float] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Flat dict (interval as ``ci_low``/``ci_high``), ready for logging."""
        out = {"test": self.test, "statistic": self.statistic, "p_value": self.p_value,
               "effect_size": self.effect_size, "effect_name": self.effect_name,
               "verdict": self.verdict, "alpha": self.alpha}
        if self.interval is not None:
            out["ci_low"], out["ci_high"] = self.interval
        out.update(self.details)
        return out


class Corrected(NamedTuple):
    """Adjusted p-values and rejections at ``alpha``, in the order of the input."""

    p_adjusted: np.ndarray
    reject: np.ndarray


# ---------------------------------------------------------------- input checks and helpers
def _check_alpha(alpha: float, name: str = "alpha") -> float:
    if not (isinstance(alpha, (int, float, np.floating)) and 0.0 < float(alpha) < 1.0):
        raise InputError(f"{name}: must be a number strictly between 0 and 1, got {alpha!r}.")
    return float(alpha)


def _sample(x: Any, name: str) -> np.ndarray:
    """1-D float64 sample without NaN/inf; an error names ``name`` and the first bad row."""
    arr = to_numpy(x, name)
    if arr.dtype.kind not in "fiub":
        raise InputError(f"{name}: values must be numbers, got dtype {arr.dtype} "
                         f"(e.g. row 0 = {arr[0]!r}).")
    arr = np.asarray(arr, dtype=np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise bad_rows(name, "NaN or infinite value", bad, arr, "Drop these rows before testing.")
    return arr


def _table(table: Any, name: str = "table") -> np.ndarray:
    """2-D float64 table of non-negative finite counts."""
    arr = to_numpy(table, name, ndim=2)
    if arr.dtype.kind not in "fiub":
        raise InputError(f"{name}: counts must be numbers, got dtype {arr.dtype}.")
    arr = np.asarray(arr, dtype=np.float64)
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise InputError(f"{name}: {int(bad.sum())} cell(s) are negative, NaN or infinite, e.g. "
                         f"cell ({i}, {j}) = {arr[i, j]!r}. Counts must be finite and >= 0.")
    return arr


def _verdict(p: float, alpha: float, claim: str, undefined: str = "the p-value is nan") -> str:
    """'significant at alpha=..: claim' / 'not significant ...: no evidence that claim'."""
    if not np.isfinite(p):
        return f"undefined at alpha={alpha:g}: {undefined}"
    if p <= alpha:
        return f"significant at alpha={alpha:g} (p={p:.3g}): {claim}"
    return f"not significant at alpha={alpha:g} (p={p:.3g}): no evidence that {claim}"


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def _quiet(fn: Callable, *args, **kwargs):
    """Call a scipy function with its own RuntimeWarnings silenced (we warn in our words)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


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


# ---------------------------------------------------------------- paired and group tests
def paired_t_test(a, b, *, alpha: float = 0.05) -> TestResult:
    """Paired t-test of mean(a - b) = 0 (scipy.stats.ttest_rel), effect size Cohen's d_z.

    t = mean(d) / (sd(d) / sqrt(n)) with d = a - b, n - 1 degrees of freedom, two-sided;
    d_z = mean(d) / sd(d) (sd with ddof=1). Undefined (nan, with a warning) when n = 1 or when
    all differences are equal to zero (0/0); a constant non-zero difference gives t = +-inf, p = 0.

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

    t = mean(d) / sqrt(var(d) * (1/k + n_test/n_train)), d the k per-fold differences a - b,
    var with ddof=1, k - 1 degrees of freedom, two-sided (Nadeau & Bengio 2003, Machine
    Learning 52). The n_test/n_train term corrects for the overlap of training sets across
    folds, which makes the plain paired t-test far too liberal. Undefined (nan, warning) when
    k = 1 or all differences are zero. The effect size is the uncorrected d_z = mean(d)/sd(d).

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


def _groups(groups: tuple, name: str = "groups") -> list[np.ndarray]:
    if len(groups) < 2:
        raise InputError(f"{name}: need at least 2 groups, got {len(groups)}.")
    return [_sample(g, f"{name}[{i}]") for i, g in enumerate(groups)]


def anova(*groups, alpha: float = 0.05) -> TestResult:
    """One-way ANOVA F-test of equal group means (scipy.stats.f_oneway), effect eta squared.

    eta^2 = SS_between / SS_total. Undefined (nan, warning) when every value is equal or every
    group has one value; F = inf, p = 0 when groups differ but each is constant.

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
    """Kruskal-Wallis H-test on ranks (scipy.stats.kruskal, tie-corrected), effect epsilon squared.

    epsilon^2 = H / (n - 1) (Tomczak & Tomczak 2014). Undefined (nan, warning) when all values
    are identical.

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


def chi_squared(table, *, alpha: float = 0.05) -> TestResult:
    """Pearson chi-squared test of independence on an R x C table (scipy.stats.chi2_contingency).

    As scipy's default (``correction=True``), Yates' continuity correction applies when the
    table has one degree of freedom (2 x 2 after dropping empty rows/columns); larger tables are
    uncorrected. All-zero rows and columns are dropped first, with a warning (they carry no
    information and would make an expected count 0). Undefined (nan, warning) when fewer than
    two rows or two columns remain. Effect size: Cramer's V = sqrt(chi^2 / (n (min(R, C) - 1)))
    from the uncorrected statistic, as scipy.stats.contingency.association.

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
    res = stats.chi2_contingency(t)
    plain = res.statistic if res.dof != 1 else stats.chi2_contingency(t, correction=False).statistic
    v = math.sqrt(float(plain) / (t.sum() * (min(t.shape) - 1)))
    details["dof"] = int(res.dof)
    details["yates"] = bool(res.dof == 1)
    return TestResult("chi-squared test", float(res.statistic), float(res.pvalue), v, "Cramer's V",
                      _verdict(float(res.pvalue), alpha, "rows and columns are associated"), alpha,
                      details=details)


def wilcoxon_signed_rank(a, b, *, alpha: float = 0.05) -> TestResult:
    """Wilcoxon signed-rank test of the paired differences (scipy.stats.wilcoxon defaults).

    Zero differences are dropped (``zero_method='wilcox'``), ``method='auto'``; the statistic is
    scipy's min(W+, W-). Effect size: the matched-pairs rank-biserial correlation
    r = (W+ - W-) / (W+ + W-) (Kerby 2014). When all differences are zero the statistic is 0
    and p = 1 (as scipy for two or more pairs) and the effect size is nan, with a warning.

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


def fisher_exact(table, *, alpha: float = 0.05) -> TestResult:
    """Fisher's exact test on a 2 x 2 table (scipy.stats.fisher_exact, two-sided).

    The statistic and effect size are the sample odds ratio (a d) / (b c): inf when b c = 0 <
    a d, nan when both products are 0 (e.g. a zero row), where the p-value is 1.

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
    res = stats.fisher_exact(t.astype(np.int64))
    odds = float(res.statistic)
    return TestResult("Fisher's exact test", odds, float(res.pvalue), odds, "odds ratio",
                      _verdict(float(res.pvalue), alpha, "rows and columns are associated"), alpha,
                      details={"n": int(t.sum())})


def _labels(x: Any, name: str) -> np.ndarray:
    arr = to_numpy(x, name)
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise bad_rows(name, "NaN label", np.isnan(arr), arr, "Drop these rows before testing.")
    return arr


def mcnemar(y_true, pred_a, pred_b, exact: bool = True, *, alpha: float = 0.05) -> TestResult:
    """McNemar's test: do models a and b have the same error rate on the same rows?

    With b = rows a gets right and b gets wrong, c = the reverse: exact=True is the two-sided
    binomial test p = min(1, 2 P(X <= min(b, c))), X ~ Bin(b + c, 1/2), statistic min(b, c);
    exact=False is chi^2 = (|b - c| - 1)^2 / (b + c) on 1 degree of freedom (Edwards' continuity
    correction), as statsmodels.stats.contingency_tables.mcnemar. When the models never disagree
    (b + c = 0) the statistic is 0 and p = 1 (the corrected formula would give 1/0, p = 0).
    Effect size: accuracy(a) - accuracy(b) = (b - c) / n.

    >>> y = [1, 1, 1, 1, 0, 0, 0, 0]
    >>> r = mcnemar(y, [1, 1, 1, 1, 0, 0, 0, 1], [0, 0, 0, 1, 0, 0, 0, 0])
    >>> r.statistic, r.p_value, r.effect_size
    (1.0, 0.625, 0.25)
    """
    alpha = _check_alpha(alpha)
    y, a, b = _labels(y_true, "y_true"), _labels(pred_a, "pred_a"), _labels(pred_b, "pred_b")
    n = check_lengths(y_true=y, pred_a=a, pred_b=b)
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


def proportion_interval(successes, n, level: float = 0.95, method: str = "wilson") -> TestResult:
    """Confidence interval for a proportion: Wilson score (default) or normal/CLT (Wald).

    Wilson: (p + z^2/2n +- z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n); normal:
    p +- z sqrt(p(1-p)/n); z = Phi^-1(1 - (1-level)/2); both clipped to [0, 1] as in
    statsmodels.stats.proportion.proportion_confint. The statistic and effect size are the
    proportion successes / n; there is no p-value (nan).

    >>> r = proportion_interval(81, 100)
    >>> [round(x, 4) for x in r.interval]
    [0.7222, 0.8749]
    """
    level = _check_alpha(level, "level")
    if method not in ("wilson", "normal"):
        raise InputError(f"method: must be 'wilson' or 'normal', got {method!r}.")
    for name, value in (("successes", successes), ("n", n)):
        if not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(value) \
                or value < 0:
            raise InputError(f"{name}: must be a finite count >= 0, got {value!r}.")
    if n == 0:
        raise InputError("n: the proportion of an empty set is undefined; need n > 0.")
    if successes > n:
        raise InputError(f"successes: {successes!r} is more than n = {n!r}.")
    q = successes / n
    z = float(stats.norm.isf((1 - level) / 2))
    if method == "normal":
        half = z * math.sqrt(q * (1 - q) / n)
        lo, hi = q - half, q + half
    else:
        denom = 1 + z * z / n
        centre = (q + z * z / (2 * n)) / denom
        half = z * math.sqrt(q * (1 - q) / n + z * z / (4.0 * n * n)) / denom
        lo, hi = centre - half, centre + half
    lo, hi = min(max(lo, 0.0), 1.0), min(max(hi, 0.0), 1.0)
    label = "Wilson" if method == "wilson" else "normal"
    return TestResult(f"{label} interval for a proportion", q, NAN, q, "proportion",
                      f"{q:.4g} ({level:.0%} {label} interval {lo:.4g} to {hi:.4g}, n={n:g})",
                      1 - level, interval=(lo, hi), details={"n": n, "successes": successes})


# ---------------------------------------------------------------- multiple testing
def correct(p_values, method: str = "bh", alpha: float = 0.05) -> Corrected:
    """Adjust p-values for multiple testing: Benjamini-Hochberg, Holm or Bonferroni.

    With m p-values sorted ascending, p_(1) <= ... <= p_(m):
    ``bonferroni``: min(1, m p); ``holm`` (plain step-down Holm, not Holm-Sidak): running max
    of (m - i + 1) p_(i); ``bh`` (false discovery rate): running min from the top of
    m p_(i) / i; all capped at 1, returned in the input order. Rejections follow the step-down
    (Holm) and step-up (BH) rules at ``alpha`` exactly as statsmodels.stats.multitest.
    multipletests with method "holm", "fdr_bh", "bonferroni".

    >>> c = correct([0.01, 0.04, 0.03, 0.2], "bh")
    >>> c.p_adjusted.round(4).tolist(), c.reject.tolist()
    ([0.04, 0.0533, 0.0533, 0.2], [True, False, False, False])
    """
    alpha = _check_alpha(alpha)
    if method not in ("bh", "holm", "bonferroni"):
        raise InputError(f"method: must be 'bh', 'holm' or 'bonferroni', got {method!r}.")
    if hasattr(p_values, "__len__") and len(p_values) == 0:
        return Corrected(np.empty(0), np.empty(0, dtype=bool))
    p = to_numpy(p_values, "p_values")
    if p.dtype.kind not in "fiub":
        raise InputError(f"p_values: must be numbers, got dtype {p.dtype}.")
    p = np.asarray(p, dtype=np.float64)
    bad = ~((p >= 0) & (p <= 1))
    if bad.any():
        raise bad_rows("p_values", "p-value outside [0, 1] (or NaN)", bad, p,
                       "Drop undefined tests before correcting.")
    m = p.size
    order = np.argsort(p)
    ps = p[order]
    rank = np.arange(1, m + 1)
    if method == "bonferroni":
        adj, rej = ps * m, ps <= alpha / m
    elif method == "holm":
        adj = np.maximum.accumulate(ps * (m - rank + 1))
        keep = ps > alpha / (m - rank + 1)
        first = np.flatnonzero(keep)
        rej = np.ones(m, dtype=bool)
        rej[first[0] if first.size else m:] = False
    else:
        frac = rank / m
        adj = np.minimum.accumulate((ps / frac)[::-1])[::-1]
        below = np.flatnonzero(ps <= frac * alpha)
        rej = np.zeros(m, dtype=bool)
        rej[: below[-1] + 1 if below.size else 0] = True
    adj = np.minimum(adj, 1.0)
    out_p, out_r = np.empty(m), np.empty(m, dtype=bool)
    out_p[order], out_r[order] = adj, rej
    return Corrected(out_p, out_r)


# ---------------------------------------------------------------- paired bootstrap
def _report(task: str, y, pred, kind: str, **kwargs):
    from metrics_core.report import binary_report, multiclass_report

    if task == "binary":
        return binary_report(y, **({"y_score": pred} if kind == "score" else {"y_pred": pred}), **kwargs)
    return multiclass_report(y, **({"y_score": pred} if kind == "score" else {"y_pred": pred}), **kwargs)


def _label_replicates(metric, task, y, a, b, n_boot, rng, kwargs) -> np.ndarray:
    """metric(a) - metric(b) for n_boot multinomial resamples of the joint (true, a, b, weight) cells."""
    from metrics_core._validate import check_weights, encode
    from metrics_core.compute import binary_confusion_metrics, multiclass_confusion_metrics

    n = y.size
    w = check_weights(kwargs.get("sample_weight"), n)
    if task == "binary":
        pos = kwargs.get("pos_label", 1)
        t, ia, ib = (np.asarray(x == pos, dtype=np.int64) for x in (y, a, b))
        k = 2
    else:
        t, labels = encode(y, kwargs["labels"], "y_true")
        ia, ib = encode(a, labels, "pred_a")[0], encode(b, labels, "pred_b")[0]
        k = labels.size
    code = (t * k + ia) * k + ib
    weight = np.ones(n) if w is None else w
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


def paired_bootstrap(metric: str, y_true, pred_a, pred_b, *, n_boot: int = 1000, level: float = 0.95,
                     seed: int = 0, task: str = "binary", kind: str = "pred", alpha: float = 0.05,
                     **report_kwargs) -> TestResult:
    """Paired bootstrap of metric(a) - metric(b) for two models scored on the same rows.

    ``metric`` is any key of the report's ``metrics`` (binary_report / multiclass_report of
    ``task``); ``kind="pred"`` takes predicted labels, ``kind="score"`` scores (1-D for binary,
    N x K for multiclass); ``report_kwargs`` (beta, pos_label, threshold, labels, cost_matrix,
    sample_weight) go to the report. Each replicate resamples the n rows with replacement, the
    same rows for both models. For labels this is done on statistics: the joint table of
    (true, pred_a, pred_b[, weight]) cells is resampled multinomially and each model's confusion
    matrix is summed from it (exactly a row bootstrap, at the cost of the table); for scores
    the resampled row counts are passed as ``sample_weight`` to the report.

    Returns the observed difference (statistic and effect size), the percentile interval at
    ``level`` and the two-sided p-value of the centred bootstrap,
    p = (1 + #{|d*_b - d| >= |d|}) / (n_boot + 1), which is 1 when the models agree on every
    row. Replicates where the metric is undefined (nan) are dropped, with a warning.

    >>> y = [0, 1] * 20
    >>> r = paired_bootstrap("accuracy", y, y, [0, 0] * 20, n_boot=200)
    >>> r.statistic, r.p_value < 0.01
    (0.5, True)
    """
    alpha, level = _check_alpha(alpha), _check_alpha(level, "level")
    if task not in ("binary", "multiclass"):
        raise InputError(f"task: must be 'binary' or 'multiclass', got {task!r}.")
    if kind not in ("pred", "score"):
        raise InputError(f"kind: must be 'pred' (predicted labels) or 'score' (scores), got {kind!r}.")
    if not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise InputError(f"n_boot: must be a positive integer, got {n_boot!r}.")
    y = _labels(y_true, "y_true")
    pa = to_numpy(pred_a, "pred_a", ndim=None)
    pb = to_numpy(pred_b, "pred_b", ndim=None)
    n = check_lengths(y_true=y, pred_a=pa, pred_b=pb)
    if pa.shape != pb.shape:
        raise InputError(f"pred_a and pred_b: shapes differ, {pa.shape} vs {pb.shape}.")
    kwargs = dict(report_kwargs)
    if task == "multiclass" and kwargs.get("labels") is None:
        pool = [y] if kind == "score" else [y, pa, pb]
        kwargs["labels"] = np.unique(np.concatenate(pool)) if len({x.dtype.kind for x in pool}) == 1 \
            else np.unique(y)
    ra, rb = _report(task, y, pa, kind, **kwargs), _report(task, y, pb, kind, **kwargs)
    if metric not in ra.metrics:
        hint = " Scores are needed for it: pass kind='score'." if kind == "pred" else ""
        raise InputError(f"metric: {metric!r} is not a key of the {task} report "
                         f"({', '.join(sorted(ra.metrics))}).{hint}")
    observed = ra.metrics[metric] - rb.metrics[metric]
    rng = np.random.default_rng(seed)
    if kind == "pred":
        diffs = _label_replicates(metric, task, y, pa, pb, n_boot, rng, kwargs)
    else:
        base = kwargs.pop("sample_weight", None)
        base = np.ones(n) if base is None else np.asarray(to_numpy(base, "sample_weight"), np.float64)
        diffs = np.empty(n_boot)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for i in range(n_boot):
                w = np.bincount(rng.integers(0, n, n), minlength=n) * base
                diffs[i] = (_report(task, y, pa, kind, sample_weight=w, **kwargs).metrics[metric]
                            - _report(task, y, pb, kind, sample_weight=w, **kwargs).metrics[metric])
    ok = np.isfinite(diffs)
    if not ok.all():
        _warn(f"paired_bootstrap: {int((~ok).sum())} of {n_boot} replicates left {metric} undefined; "
              f"they are dropped.")
        diffs = diffs[ok]
    if diffs.size == 0 or not math.isfinite(observed):
        lo = hi = p = NAN
    else:
        lo, hi = (float(x) for x in np.quantile(diffs, [(1 - level) / 2, (1 + level) / 2]))
        p = float((1 + np.sum(np.abs(diffs - observed) >= abs(observed))) / (diffs.size + 1))
    return TestResult(f"paired bootstrap of {metric}", observed, p, observed, f"{metric} difference (a - b)",
                      _verdict(p, alpha, f"{metric} differs between the models",
                               f"{metric} is undefined"), alpha, interval=(lo, hi),
                      details={"metric_a": ra.metrics[metric], "metric_b": rb.metrics[metric],
                               "n_boot": int(diffs.size), "level": level, "seed": seed})
