"""Estimates of a delivery's performance from its labelled sample: design-based, model-assisted, and what to label next.

The labelled rows of a monitored period are a sample of its delivery, often stratified by the
predicted class with unequal rates (rare classes labelled more). Every estimator here works on
the mergeable :class:`~metrics_core.monitoring.sample.SampleStats`:

- :func:`design_confusion` and :func:`design_metric`: the delivery's confusion totals estimated
  from the design-weighted sample, each stratum expanded to its known total weight, and any
  count-based metric as a smooth function of them, with an interval by Taylor linearisation
  (Woodruff 1971; Särndal, Swensson and Wretman 1992, chapters 5-7);
- :func:`model_assisted_metric`: the difference (GREG-type) estimator that adds the calibrated
  probabilities of every row, labelled or not, to the design-weighted residuals of the sample
  (Särndal et al. 1992, chapter 6; Breidt and Opsomer 2017);
- :func:`next_sample`: rows to label per stratum for a target margin of a metric (Neyman 1934;
  Cochran 1977, section 5.5).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import polars as pl

from metrics_core.compute import binary_confusion_metrics, multiclass_confusion_metrics
from metrics_core.errors import InputError
from metrics_core.intervals import metric_range
from metrics_core.monitoring.sample import SampleStats, expansion
from metrics_core.sampling import _allocate, _z, sample_size
from metrics_core.undefined import UndefinedMetricWarning, _caller_stacklevel

__all__ = ["design_confusion", "design_metric", "design_metrics", "model_assisted_metric",
           "model_assisted_metrics", "next_sample", "NextSample",
           "SampleWarning"]


class SampleWarning(UserWarning):
    """A labelled sample that cannot support the estimate as asked: a stratum without labelled rows."""


@lru_cache(maxsize=64)
def _keys(n_classes: int, beta: float) -> tuple[frozenset, frozenset]:
    """The count-based keys of the binary (two classes; else empty) and multiclass reports."""
    binary = frozenset(binary_confusion_metrics(np.eye(2), beta)) if n_classes == 2 else frozenset()
    multi = frozenset(k for k in multiclass_confusion_metrics(np.eye(n_classes), beta)[0]
                      if not k.startswith("n_undefined"))
    return binary, multi


def _metrics_fn(metrics: tuple[str, ...], n_classes: int, beta: float):
    """The metrics as one vectorised function of (..., K, K) confusion totals [label, pred] -> dict of
    arrays: the binary report's formulas for two classes when it has every key, else the multiclass
    report's (:mod:`metrics_core.compute`, so each formula exists once)."""
    binary, multi = _keys(n_classes, beta)
    if metrics and all(k in binary for k in metrics):
        return lambda m: binary_confusion_metrics(m, beta)
    unknown = [k for k in metrics if k not in multi]
    if unknown or not metrics:
        raise InputError(f"metric: {unknown[0] if unknown else metrics!r} is not a count-based metric of "
                         f"{n_classes} classes; choose from {sorted(multi | binary)}.")
    return lambda m: multiclass_confusion_metrics(m, beta)[0]


def _value_and_gradient(fn, metrics: tuple[str, ...], m: np.ndarray) -> dict[str, tuple[float, np.ndarray]]:
    """Per metric, its value at ``m`` and ∂ metric / ∂ N[j, k] by central differences, all K² cells and
    every metric in one vectorised call.

    The step is 1e-6 of the total, so the error is about 1e-10 relative to the gradient (the
    metrics are rational in the cells). The derivative is 0 for the cells of a label row or a
    predicted column that is empty: there the metric skips the class (undefined recall or
    precision), and no row of the sample falls in such a cell.
    """
    k = m.shape[-1]
    step = 1e-6 * max(float(np.abs(m).sum()), 1e-300)
    e = np.eye(k * k).reshape(k * k, k, k) * step
    out = fn(np.concatenate([m[None], m + e, m - e]))
    empty = (m.sum(axis=1) <= 0)[:, None] | (m.sum(axis=0) <= 0)[None, :]
    result = {}
    for name in metrics:
        vals = np.asarray(out[name], dtype=np.float64)
        g = ((vals[1:k * k + 1] - vals[k * k + 1:]) / (2 * step)).reshape(k, k)
        result[name] = (float(vals[0]), np.where(empty | ~np.isfinite(g), 0.0, g))
    return result


def _names(metric) -> tuple[str, ...]:
    return (metric,) if isinstance(metric, str) else tuple(metric)


def _stratum_variances(sample: SampleStats, value: np.ndarray, *, cover_empty: bool) -> np.ndarray:
    """Per stratum, the linearised variance of Σ_h W_h × (the design-weighted mean of ``value``).

    ``value`` is the linearised variable of each cell (per unit of weight). Within stratum h the
    estimate is a ratio of design-weighted sums expanded by W_h / D_h, so its linearised variable
    is u_i = (W_h / D_h) d_i w_i (value_i - mean_h), and under the with-replacement approximation
    V_h = n_h / (n_h - 1) Σ_i u_i² (Σ_i u_i = 0), computed from the cells' sums of (d w)². A
    stratum with one labelled row (or none, when ``cover_empty``) takes W_h² × the pooled
    within-stratum variance per unit of weight of the strata with two or more rows: the variance of
    one row drawn from it. nan when no stratum has two rows.
    """
    total, factor = expansion(sample)
    h = sample.key[:, 0]
    n_strata = len(sample.strata)
    d = np.bincount(h, weights=sample.dw, minlength=n_strata)
    mean = np.divide(np.bincount(h, weights=sample.dw * value, minlength=n_strata), d, out=np.zeros(n_strata),
                     where=d > 0)
    e2 = (value - mean[h]) ** 2
    rows = np.bincount(h, weights=sample.rows, minlength=n_strata)
    ss = np.bincount(h, weights=sample.dw2 * e2, minlength=n_strata)
    var = np.zeros(n_strata)
    many = rows >= 2
    var[many] = factor[many] ** 2 * rows[many] / (rows[many] - 1) * ss[many]
    few = ~many & (total > 0) & ((rows == 1) | cover_empty)
    if few.any():
        sigma2 = np.divide(np.bincount(h, weights=sample.dw * e2, minlength=n_strata), d, out=np.zeros(n_strata),
                           where=d > 0)
        dof = float((rows[many] - 1).sum())
        pooled = float((rows[many] * sigma2[many]).sum()) / dof if dof > 0 else math.nan
        var[few] = total[few] ** 2 * pooled
    return var


def _warn_empty(sample: SampleStats, what: str) -> None:
    """One warning naming the strata that have rows but no labelled row."""
    total, factor = expansion(sample)
    empty = (total > 0) & (factor == 0)
    if empty.any():
        names = [sample.strata[i] for i in np.flatnonzero(empty)]
        rows = int(sample.population_rows[empty].sum())
        warnings.warn(f"{len(names)} stratum(s) with rows but no labelled row ({rows:,} rows, e.g. {names[0]!r}): "
                      f"{what}. Label at least 2 rows in every stratum.", SampleWarning,
                      stacklevel=_caller_stacklevel())


def _interval(value: float, var: float, metric: str, level: float) -> tuple[float, float]:
    """value ± z sqrt(var), clipped to the metric's range; (nan, nan) when undefined."""
    if not (math.isfinite(value) and math.isfinite(var)):
        return math.nan, math.nan
    lo, hi = metric_range(metric)
    half = float(_z(level)) * math.sqrt(max(var, 0.0))
    return max(lo, value - half), min(hi, value + half)


def _undefined(metric: str, value: float, caller: str) -> None:
    if not math.isfinite(value):
        warnings.warn(f"{caller}: {metric} is undefined (nan) on the estimated confusion totals: no labelled row, "
                      "or a class it needs never labelled or predicted.", UndefinedMetricWarning,
                      stacklevel=_caller_stacklevel())


def design_confusion(sample: SampleStats) -> np.ndarray:
    """The delivery's confusion totals [label, pred] estimated from the design-weighted labelled sample.

    Parameters
    ----------
    sample : SampleStats

    Returns
    -------
    numpy.ndarray of float64, shape (K, K)
        N̂_jk = Σ_h (W_h / D_h) Σ_{i in s_h} d_i w_i 1[y_i = j, ŷ_i = k]: the Horvitz-Thompson
        totals Σ_s d_i w_i 1[y = j, ŷ = k] with each stratum's design-weighted sum expanded to its
        known total weight W_h (:func:`~metrics_core.monitoring.sample.expansion`; the same as
        Horvitz-Thompson for a stratified simple random sample, d_i = N_h / n_h). A stratum without
        labelled rows adds nothing (:func:`design_metric` warns).

    Examples
    --------
    >>> from metrics_core.monitoring.sample import sample_update
    >>> s = sample_update([0] * 4 + [1] * 2, [0] * 4 + [1] * 2, [0] * 6, [0, 1, -1, -1, 1, -1],
    ...                   strata=("a", "b"), n_classes=2, n_bins=1)
    >>> design_confusion(s).tolist()
    [[2.0, 0.0], [2.0, 2.0]]
    """
    _, factor = expansion(sample)
    k = sample.n_classes
    cell = sample.key[:, 3] * k + sample.key[:, 1]
    return np.bincount(cell, weights=factor[sample.key[:, 0]] * sample.dw, minlength=k * k).reshape(k, k)


def design_metric(sample: SampleStats, metric: str, *, beta: float = 1.0, level: float = 0.95
                  ) -> tuple[float, tuple[float, float]]:
    """A count-based metric of the whole delivery from its labelled sample, with a design-based interval.

    Parameters
    ----------
    sample : SampleStats
        The period's statistics.
    metric : str
        Any count-based key of the binary (two classes) or multiclass report: ``accuracy``,
        ``balanced_accuracy``, ``f1_macro``, ``precision``, ``recall``, ``mcc``, ...
    beta : float
        The beta of the F-beta metrics.
    level : float
        Level of the interval.

    Returns
    -------
    (value, (low, high))
        value = f(N̂), the metric's formula (:mod:`metrics_core.formulas`, through
        :mod:`metrics_core.compute`) on :func:`design_confusion`. Interval: value ± z sqrt(V),
        normal on the linearised scale, clipped to the metric's range ([0, 1] for rates). V is the
        Taylor-linearisation variance (Woodruff 1971; Särndal, Swensson and Wretman 1992, sections
        5.5-5.7 and 7.6): with g = ∂f/∂N̂ (exact central differences), each labelled row's
        linearised value is u_i = (W_h / D_h) d_i w_i (g_{y_i ŷ_i} - ḡ_h), and under the
        with-replacement approximation in each stratum V = Σ_h n_h / (n_h - 1) [Σ_i u_i² -
        (Σ_i u_i)² / n_h] (conservative for sampling without replacement: no finite-population
        correction). A stratum with one labelled row takes the pooled within-stratum variance
        (its W_h² times the per-unit-weight variance of the strata with two or more rows). nan
        (with a warning) when the metric is undefined on N̂; the interval is nan when no stratum
        has two labelled rows.

    Warns
    -----
    SampleWarning
        When a stratum has rows but no labelled row: the estimate then covers the other strata only.

    Examples
    --------
    >>> from metrics_core.monitoring.sample import sample_update
    >>> y = [0, 0, 1, 1, 0, 1, 1, 1]
    >>> s = sample_update([0] * 8, [0, 1, 1, 1, 0, 1, 0, 1], [0] * 8, y, strata=("all",), n_classes=2, n_bins=1)
    >>> value, (low, high) = design_metric(s, "accuracy")
    >>> value, round(low, 3), round(high, 3)
    (0.75, 0.429, 1.0)
    """
    return design_metrics(sample, (metric,), beta=beta, level=level)[metric]


def design_metrics(sample: SampleStats, metrics, *, beta: float = 1.0, level: float = 0.95
                   ) -> dict[str, tuple[float, tuple[float, float]]]:
    """:func:`design_metric` of several metrics at once (one evaluation of the formulas for all).

    Parameters
    ----------
    sample : SampleStats
    metrics : sequence of str
        Count-based metric keys.
    beta, level
        As for :func:`design_metric`.

    Returns
    -------
    dict of str to (value, (low, high))
        Keyed by metric, in the order given.
    """
    return _estimates(sample, design_confusion(sample), _names(metrics), beta, level, _linearised(None),
                      False, "design_metric")


def _linearised(c: np.ndarray | None):
    """The function from the gradient g (K, K) to each cell's linearised value: g[label, pred] (design),
    minus its expectation under P̂(label | pred, bin) when ``c`` is given (the model-assisted residual)."""
    def linearised(sample: SampleStats, g: np.ndarray) -> np.ndarray:
        _, pred, b, y = sample.key.T
        own = g[y, pred]
        return own if c is None else own - np.einsum("ij,ij->i", g[:, pred].T, c[pred, b])

    return linearised


def _estimates(sample: SampleStats, m: np.ndarray, metrics: tuple[str, ...], beta: float, level: float,
               linearised, cover_empty: bool, caller: str) -> dict[str, tuple[float, tuple[float, float]]]:
    """Per metric, f(m) and its linearised interval (:func:`_stratum_variances` of ``linearised(g)``); a
    warning first when a stratum has rows but no labelled row."""
    fn = _metrics_fn(metrics, sample.n_classes, beta)
    _warn_empty(sample, "the model-assisted estimate covers their rows by the calibrated scores alone" if cover_empty
                else "the design-based estimate leaves their rows out")
    out = {}
    for name, (value, g) in _value_and_gradient(fn, metrics, m).items():
        _undefined(name, value, caller)
        if not math.isfinite(value) or not sample.key.size:
            out[name] = (value, (math.nan, math.nan))
            continue
        var = _stratum_variances(sample, linearised(sample, g), cover_empty=cover_empty)
        out[name] = (value, _interval(value, float(var.sum()), name, level))
    return out


def _conditional(sample: SampleStats, conditional) -> np.ndarray:
    """The checked (K, B, K) P(label | pred, bin), each (pred, bin) row divided by its sum (0 rows stay 0)."""
    c = np.asarray(conditional, dtype=np.float64)
    want = (sample.n_classes, sample.n_bins, sample.n_classes)
    if c.shape != want:
        raise InputError(f"conditional: expected P(label | predicted class, score bin) of shape {want} "
                         f"(pred, bin, label), got {c.shape}.")
    bad = ~np.isfinite(c) | (c < 0) | (c > 1)
    if bad.any():
        k, b, j = (int(x[0]) for x in np.nonzero(bad))
        raise InputError(f"conditional: {int(bad.sum())} probability(ies) missing or outside [0, 1], e.g. "
                         f"[pred {k}, bin {b}, label {j}] = {c[k, b, j]!r}.")
    s = c.sum(axis=-1, keepdims=True)
    return np.divide(c, s, out=np.zeros_like(c), where=s > 0)


def _model_assisted_confusion(sample: SampleStats, c: np.ndarray) -> np.ndarray:
    """N̂^MA [label, pred]: the model's totals over every row plus the expanded residuals of the labelled rows."""
    _, factor = expansion(sample)
    k = sample.n_classes
    h, pred, b, y = sample.key.T
    model = np.einsum("hkb,kbj->jk", sample.population, c)
    a = factor[h] * sample.dw
    observed = np.bincount(y * k + pred, weights=a, minlength=k * k).reshape(k, k)
    fitted = (np.eye(k)[pred] * a[:, None]).T @ c[pred, b]  # (pred, label)
    return model + observed - fitted.T


def model_assisted_metric(sample: SampleStats, conditional, metric: str, *, beta: float = 1.0,
                          level: float = 0.95) -> tuple[float, tuple[float, float]]:
    """A count-based metric of the delivery by the model-assisted (difference) estimator, with its interval.

    Parameters
    ----------
    sample : SampleStats
        The period's statistics.
    conditional : array-like, shape (K, B, K)
        P̂(label = j | predicted class k, score bin b), [k, b, j], from the reference's calibration
        map (fixed: fitted without this period's labels). Each (k, b) row is divided by its sum
        (one-vs-rest maps need not sum to 1); a row of zeros leaves its cells to the sample alone.
    metric, beta, level
        As for :func:`design_metric`.

    Returns
    -------
    (value, (low, high))
        value = f(N̂^MA) with N̂^MA_jk = Σ_{all rows predicted k} w P̂(j | k, bin) +
        Σ_h (W_h / D_h) Σ_{i in s_h, ŷ_i = k} d_i w_i (1[y_i = j] - P̂(j | k, bin_i)): the
        calibrated probabilities of every row, labelled or not, plus the design-weighted residuals
        of the labelled ones (the difference estimator, Särndal, Swensson and Wretman 1992,
        sections 6.3-6.5; with each stratum's residuals expanded to its total, a GREG estimator
        on the stratum indicators; Breidt and Opsomer 2017). Design-unbiased (to the first order)
        whatever P̂ is, so a miscalibrated model costs precision, not bias; with rows summing to 1
        each predicted class's column total is its known weight. Interval as for
        :func:`design_metric`, with the residuals' linearised values u_i = (W_h / D_h) d_i w_i
        (r_i - r̄_h), r_i = g_{y_i k} - Σ_j g_{jk} P̂(j | k, bin_i): narrower than the design-based
        one when P̂ predicts the labels. A stratum without labelled rows enters through the model
        alone, with the variance of one row (the pooled rule), and a warning.

    Examples
    --------
    >>> from metrics_core.monitoring.sample import sample_update
    >>> s = sample_update([0] * 4, [0, 0, 1, 1], [0] * 4, [0, -1, 1, -1], strata=("all",), n_classes=2, n_bins=1)
    >>> p = [[[0.9, 0.1]], [[0.2, 0.8]]]
    >>> round(model_assisted_metric(s, p, "accuracy")[0], 4)  # 0.9 and 0.8 plus residuals 0.1 and 0.2, doubled
    1.0
    """
    return model_assisted_metrics(sample, conditional, (metric,), beta=beta, level=level)[metric]


def model_assisted_metrics(sample: SampleStats, conditional, metrics, *, beta: float = 1.0, level: float = 0.95
                           ) -> dict[str, tuple[float, tuple[float, float]]]:
    """:func:`model_assisted_metric` of several metrics at once (one evaluation of the formulas for all);
    ``sample`` and ``conditional`` as there, ``metrics``, ``beta``, ``level`` and the result as for
    :func:`design_metrics`."""
    c = _conditional(sample, conditional)
    return _estimates(sample, _model_assisted_confusion(sample, c), _names(metrics), beta, level, _linearised(c),
                      True, "model_assisted_metric")


@dataclass(frozen=True)
class NextSample:
    """What to label next period: ``n`` rows in all, ``table`` per stratum (``stratum``, ``rows`` of this
    period, ``labelled`` now, ``sd`` the estimated N_h S_h of the metric's linearised value, ``label`` the
    rows to label), for a half-width ``margin`` of ``metric`` at ``level``; ``method`` says how
    (``"neyman"`` or, without a labelled row to learn from, ``"proportional"``)."""

    metric: str
    margin: float
    level: float
    n: int
    method: str
    table: pl.DataFrame


def _neyman(spread: np.ndarray, caps: np.ndarray, target: float) -> np.ndarray:
    """Neyman allocation n_h = n A_h / Σ A (A_h = N_h S_h) with n = (Σ A)² / V for a variance V of
    Σ_h A_h² / n_h (Cochran 1977, eqs. 5.26-5.27 without the finite-population correction); a
    stratum whose share exceeds its rows is taken whole and the rest reallocated (Cochran 1977,
    5.9). Fractional; the caller rounds up."""
    alloc = np.zeros(spread.size)
    whole = np.zeros(spread.size, bool)
    for _ in range(spread.size + 1):
        left = target - float(np.sum(spread[whole] ** 2 / caps[whole]))
        free = ~whole & (spread > 0)
        if left <= 0:
            return np.where(spread > 0, caps, 0.0)
        n = float(spread[free].sum()) ** 2 / left
        alloc[free] = n * spread[free] / spread[free].sum()
        alloc[whole] = caps[whole]
        over = free & (alloc > caps)
        if not over.any():
            return alloc
        whole |= over
    return alloc  # pragma: no cover - each pass takes one more stratum whole


def next_sample(sample: SampleStats, metric: str, margin: float, *, level: float = 0.95,
                minimum_per_stratum: int = 2, beta: float = 1.0, conditional=None) -> NextSample:
    """Rows to label per stratum so that the next period's interval of ``metric`` is ± ``margin``.

    Parameters
    ----------
    sample : SampleStats
        This period's statistics: the strata and their rows, and the labelled sample from which
        each stratum's spread is estimated (next period is assumed alike).
    metric : str
        The metric, as for :func:`design_metric` (the headline).
    margin : float
        Half-width wanted, in (0, 1).
    level : float
        Level of the interval.
    minimum_per_stratum : int
        Rows every stratum gets at least (capped at its rows), so its variance can be estimated.
    beta : float
        The beta of the F-beta metrics.
    conditional : array-like, shape (K, B, K), optional
        With it, the allocation is for :func:`model_assisted_metric` (the residuals' spread).

    Returns
    -------
    NextSample
        Neyman allocation (Neyman 1934; Cochran 1977, section 5.5): n_h ∝ N_h S_h, where N_h S_h =
        sqrt(n_h V_h) from this period's linearised variance V_h of the stratum (the same
        V_h as :func:`design_metric`'s interval, so N_h² S_h² / n_h is its variance with n_h rows),
        and n = (Σ N_h S_h)² / V with V = (margin / z)²; rounded up per stratum, capped at N_h,
        raised to ``minimum_per_stratum``. A stratum with fewer than two labelled rows uses the
        pooled within-stratum variance. Without any labelled row (nothing to estimate S_h from):
        the simple case, :func:`metrics_core.sampling.sample_size` at p = 0.5 allocated in
        proportion to the strata's rows (``method="proportional"``).

    Examples
    --------
    >>> from metrics_core.monitoring.sample import sample_update
    >>> rng = np.random.default_rng(0)
    >>> pred = np.repeat([0, 1], [900, 100])
    >>> y = np.where(rng.random(1000) < np.where(pred == 0, 0.95, 0.6), pred, 1 - pred)
    >>> y[rng.random(1000) > 0.2] = -1
    >>> s = sample_update(pred, pred, np.zeros(1000, int), y, strata=("a", "b"), n_classes=2, n_bins=1)
    >>> plan = next_sample(s, "accuracy", 0.03)
    >>> plan.n, plan.table["label"].to_list()
    (320, [260, 60])
    """
    if not isinstance(margin, (int, float)) or not 0 < margin < 1:
        raise InputError(f"margin: the half-width must be in (0, 1), got {margin!r}. Use e.g. 0.03 for +-3 points.")
    if not isinstance(minimum_per_stratum, (int, np.integer)) or minimum_per_stratum < 0:
        raise InputError(f"minimum_per_stratum: expected a non-negative integer, got {minimum_per_stratum!r}.")
    z = float(_z(level))
    caps = sample.population_rows.astype(np.float64)
    labelled = np.bincount(sample.key[:, 0], weights=sample.rows, minlength=len(sample.strata)).astype(np.int64)
    if sample.n_labelled == 0:
        n, _ = sample_size(margin, level, population_size=max(int(caps.sum()), 1))
        alloc = _allocate(n, sample.population_rows, int(minimum_per_stratum))
        spread, method = np.full(caps.size, math.nan), "proportional"
    else:
        fn = _metrics_fn((metric,), sample.n_classes, beta)
        c = None if conditional is None else _conditional(sample, conditional)
        m = design_confusion(sample) if c is None else _model_assisted_confusion(sample, c)
        _, g = _value_and_gradient(fn, (metric,), m)[metric]
        value = _linearised(c)(sample, g)
        var = _stratum_variances(sample, value, cover_empty=True)
        spread = np.sqrt(np.maximum(labelled, 1) * var)
        if not np.isfinite(spread).all():
            raise InputError("next_sample: no stratum has two labelled rows, so no spread can be estimated. "
                             "Label at least 2 rows in some stratum.")
        raw = _neyman(spread, caps, (margin / z) ** 2)
        alloc = np.minimum(np.ceil(raw - 1e-9), caps).astype(np.int64)
        alloc = np.maximum(alloc, np.minimum(sample.population_rows, int(minimum_per_stratum)))
        method = "neyman"
    table = pl.DataFrame({"stratum": list(sample.strata), "rows": sample.population_rows.astype(np.int64),
                          "labelled": labelled, "sd": spread, "label": np.asarray(alloc, dtype=np.int64)})
    return NextSample(metric, float(margin), float(level), int(np.sum(alloc)), method, table)
