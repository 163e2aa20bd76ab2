"""A monitored period's labelled sample in its assessment: whole-delivery estimates, effective n, what to label next."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.stats import norm

from metrics_core.calibration import TOP_LABEL
from metrics_core.compute import binary_confusion_metrics, multiclass_confusion_metrics
from metrics_core.errors import InputError
from metrics_core.monitoring.calibration_map import CalibrationMap, bootstrap_stack
from metrics_core.monitoring.decision import POWER, Headline
from metrics_core.monitoring.period import PeriodStats
from metrics_core.monitoring.policy import AlertPolicy
from metrics_core.monitoring.sample import (DEFF_LIMIT, SampleStats, conditional_from_map, effective_sample_size,
                                            expansion, unequal)
from metrics_core.significance import TestResult
from metrics_core.formulas import per_class
from metrics_core.monitoring.survey import (_interval, _linearised, _stratum_variances, _value_and_gradient,
                                            design_confusion, design_metric, model_assisted_metric, next_sample)

__all__ = ["SampleAssessment", "DEFF_LIMIT", "is_sample", "unequal_weights", "without_labels", "sample_conditional",
           "assess_sample", "PREFIX", "next_margin", "design_per_class", "design_calibration_change"]

#: Prefix of a labelled sample's own metrics in a period's metrics.
PREFIX = "sample/"


def is_sample(current: PeriodStats) -> bool:
    """Whether the period's labels are a sample to estimate from: some rows unlabelled, or design
    weights other than 1. A fully labelled period without design weights is measured as it is.

    >>> from metrics_core.monitoring.bins import Bins
    >>> from metrics_core.monitoring.period import update
    >>> full = update("binary", np.array([0, 1]), Bins(), np.array([0, 1]), label_idx=np.array([0, 1]),
    ...               labelled_sample=True)
    >>> part = update("binary", np.array([0, 1]), Bins(), np.array([0, 1]), label_idx=np.array([0, -1]),
    ...               labelled_sample=True)
    >>> is_sample(full), is_sample(part)
    (False, True)
    """
    s = current.sample
    if s is None or int(s.rows.sum()) == 0:
        return False
    return int(s.rows.sum()) < int(s.population_rows.sum()) or not np.allclose(s.dw, s.rows)


def unequal_weights(current: PeriodStats) -> bool:
    """Whether the labelled rows stand for unequal shares of the delivery: Kish's design effect
    (:func:`~metrics_core.monitoring.sample.effective_sample_size`, each stratum expanded to its
    rows) over :data:`DEFF_LIMIT`, whether from design weights or from sampling rates that differ
    by predicted class. Statistics of the labelled rows as they are (the calibration tests, the
    price cells, the label counts) are then not of the delivery."""
    return unequal(current.sample)


def without_labels(current: PeriodStats) -> PeriodStats:
    """The period as one without labels, when its label column holds no label at all: then it is
    judged by the label-lag estimate (:mod:`.estimate`), not by an empty sample."""
    if current.sample is None or int(current.sample.rows.sum()) > 0:
        return current
    return unlabelled(current)


def unlabelled(stats: PeriodStats) -> PeriodStats:
    """The statistics with every label statistic dropped: judged as a period without labels."""
    return dataclasses.replace(stats, label_counts=None, performance=None, calibration=None, positives_by_pred=None,
                               price_cells=None)


def _metrics(task: str, m: np.ndarray, beta: float) -> dict:
    return binary_confusion_metrics(m, beta) if task == "binary" else multiclass_confusion_metrics(m, beta)[0]


def sample_conditional(cal_map: CalibrationMap | None, task: str, sample: SampleStats) -> np.ndarray | None:
    """P(label | predicted class, coarse score bin) (K, B, K) from the reference's calibration map
    (:func:`~metrics_core.monitoring.sample.conditional_from_map`); None without a map or when its
    bins are not the sample's (no scores, a score range other than [0, 1])."""
    if cal_map is None or cal_map.cond.shape[-1] != sample.n_bins:
        return None
    return conditional_from_map(cal_map, task)


def next_margin(policy: AlertPolicy) -> float:
    """The half-width of the headline's interval at which its drop test sees a drop of
    ``metric_drop`` with power :data:`~metrics_core.monitoring.decision.POWER`:
    ``z_level * metric_drop / (z_(1-alpha) + z_power)`` (the reference's own spread left out).

    >>> round(next_margin(AlertPolicy()), 4)
    0.0394
    """
    se = policy.metric_drop / (float(norm.isf(policy.alpha)) + float(norm.isf(1 - POWER)))
    return float(norm.isf((1 - policy.level) / 2)) * se


def design_calibration_change(cal_map: CalibrationMap, sample: SampleStats, task: str, *, n_bins: int = 10,
                              n_boot: int = 50, seed: int = 0) -> dict[str, TestResult]:
    """The calibration-change test of a labelled sample with unequal weights, weighted by the design.

    Parameters
    ----------
    cal_map : CalibrationMap
        The reference's calibration map.
    sample : SampleStats
        The period's labelled sample (strata: the predicted classes).
    task : {"binary", "multiclass"}
    n_bins : int
        Fixed-width bins of the score compared (as
        :func:`~metrics_core.monitoring.calibration_change.calibration_change`).
    n_boot, seed : int
        Bootstrap replicates of the reference's map (its own sampling noise), and their seed.

    Returns
    -------
    dict of str to TestResult
        One test: ``top_label`` (multiclass: the prediction right, against the predicted class's
        own score) or the positive class (binary: its label, against its score). The expected
        positives come from the reference's map within each predicted class,
        P(label | predicted k, score bin) (:func:`~metrics_core.monitoring.sample.conditional_from_map`):
        the labelled rows are sampled by predicted class, so only a relation that conditions on it
        holds among them. With a_i the weight a labelled row carries in the estimate of the delivery
        (:func:`~metrics_core.monitoring.sample.expansion`), per bin O_b = Σ a_i 1[right],
        E_b = Σ a_i p_i, variance Σ a_i² p_i (1 - p_i) plus the bootstrap variance of E_b over the
        map's replicates; then the test of :func:`~metrics_core.monitoring.calibration_change.calibration_result`,
        the rule on expected counts read at each bin's Kish effective size. For equal weights it is
        the unweighted test of the same rows. Empty when the map's bins are not the sample's.
        The one-vs-rest tests of each class's score are not given: they need every score of each
        labelled row within its stratum, which the sample's statistics do not keep.
    """
    from metrics_core.monitoring.calibration_change import calibration_result

    cond = sample_conditional(cal_map, task, sample)
    if cond is None or not sample.key.size:
        return {}
    _, factor = expansion(sample)
    h, k, b, y = sample.key.T
    a, a2 = factor[h] * sample.dw, factor[h] ** 2 * sample.dw2
    target = k if task == "multiclass" else np.ones_like(k)  # the label the score is the probability of
    coarse = b * n_bins // sample.n_bins
    rows, rows2 = (np.bincount(coarse, weights=x, minlength=n_bins) for x in (a, a2))
    obs = np.bincount(coarse, weights=a * (y == target), minlength=n_bins)
    p = cond[k, b, target]
    exp = np.bincount(coarse, weights=a * p, minlength=n_bins)
    var = np.bincount(coarse, weights=a2 * p * (1 - p), minlength=n_bins)
    reps = [np.bincount(coarse, weights=a * conditional_from_map(dataclasses.replace(cal_map, cond=rep), task)[
        k, b, target], minlength=n_bins) for rep in (bootstrap_stack(cal_map, seed, n_boot)[0] if n_boot else ())]
    ref_var = np.var(reps, axis=0) if reps else np.zeros(n_bins)
    scale = np.divide(rows, rows2, out=np.zeros(n_bins), where=rows2 > 0)
    name = TOP_LABEL if task == "multiclass" else str(sample.strata[1])
    return {name: calibration_result(obs, exp, var + ref_var, rows, float(a.sum()), scale)}


#: The per-class rates of :func:`design_per_class` given with a design-based interval.
PER_CLASS_RATES = ("precision", "recall", "f1")


def design_per_class(sample: SampleStats, names, *, beta: float = 1.0, level: float = 0.95) -> pl.DataFrame:
    """The per-class performance table of the whole delivery, estimated from its labelled sample.

    Parameters
    ----------
    sample : SampleStats
        The labelled sample.
    names : sequence of str
        The class names, in index order.
    beta : float
        The beta of ``fbeta``.
    level : float
        Level of the intervals.

    Returns
    -------
    polars.DataFrame
        One row per class: the columns of a report's per-class table (support, prevalence,
        precision, recall, specificity, f1, fbeta: :func:`metrics_core.formulas.per_class`) on the
        design-weighted confusion totals N̂ (:func:`~metrics_core.monitoring.survey.design_confusion`;
        support is the estimated rows labelled so), and ``<rate>_ci_low`` / ``<rate>_ci_high`` of
        precision, recall and f1 by Taylor linearisation over the strata, as the headline's
        (Woodruff 1971; Särndal, Swensson and Wretman 1992, 5.5-5.7). nan where the rate is
        undefined (a class never predicted has no precision, one never labelled no recall) or no
        stratum has two labelled rows. For equal weights (a simple random sample) the point
        estimates are the labelled rows' own rates.

    Examples
    --------
    >>> from metrics_core.monitoring.sample import sample_update
    >>> s = sample_update([0] * 4 + [1] * 2, [0] * 4 + [1] * 2, [0] * 6, [0, 1, -1, -1, 1, -1],
    ...                   strata=("a", "b"), n_classes=2, n_bins=1)
    >>> t = design_per_class(s, ["a", "b"])
    >>> t["support"].to_list(), t["recall"].to_list()
    ([2.0, 4.0], [1.0, 0.5])
    """
    m = design_confusion(sample)
    k = sample.n_classes
    keys = tuple(f"{r}/{j}" for r in PER_CLASS_RATES for j in range(k))

    def rates(x: np.ndarray) -> dict:
        pc = per_class(x, beta)
        return {f"{r}/{j}": pc[r][..., j] for r in PER_CLASS_RATES for j in range(k)}

    table = {"class": list(names), **{key: np.asarray(v, float) for key, v in per_class(m, beta).items()}}
    linearised = _linearised(None)
    for key, (value, g) in _value_and_gradient(rates, keys, m).items():
        rate, j = key.split("/")
        low, high = (math.nan, math.nan)
        if math.isfinite(value) and sample.key.size:
            var = float(_stratum_variances(sample, linearised(sample, g), cover_empty=False).sum())
            low, high = _interval(value, var, rate, level)
        table.setdefault(f"{rate}_ci_low", np.full(k, math.nan))[int(j)] = low
        table.setdefault(f"{rate}_ci_high", np.full(k, math.nan))[int(j)] = high
    return pl.DataFrame(table)


@dataclass(frozen=True)
class SampleAssessment:
    """What a labelled sample adds to a period's assessment: ``headline`` (the estimate the alert
    uses, with the effective sample size as its labelled rows), ``perf`` (the count-based metrics
    of the design-weighted confusion), ``metrics`` (``sample/...``), ``next_sample`` (rows to label
    per stratum; None when the sample cannot tell), ``current`` (the period as its tests read it),
    ``unequal`` (:func:`unequal_weights`) and ``per_class`` (:func:`design_per_class`, with
    unequal weights; else None: the labelled rows' own table stands)."""

    headline: Headline | None
    perf: dict
    metrics: dict
    next_sample: pl.DataFrame | None
    current: PeriodStats
    unequal: bool
    per_class: pl.DataFrame | None = None


def assess_sample(reference: PeriodStats, current: PeriodStats, metric: str, policy: AlertPolicy, *,
                  cal_map: CalibrationMap | None, reliable: bool, calibration_alerts: bool, ref_value=None,
                  ref_interval=None, beta: float = 1.0) -> SampleAssessment:
    """A period's performance estimated for its whole delivery from its labelled sample.

    Parameters
    ----------
    reference, current : PeriodStats
        The reference window and the period (``current.sample`` set, :func:`is_sample`).
    metric : str
        The headline metric.
    policy : AlertPolicy
        ``level`` of the intervals; ``metric_drop``, ``alpha`` of the next sample's margin (:func:`next_margin`).
    cal_map : CalibrationMap, optional
        The reference's calibration map: the model-assisted estimate's auxiliary variable.
    reliable, calibration_alerts : bool
        Whether the label-lag estimate's support holds and whether a calibration-change test of
        the period alerts: the model-assisted estimate is the alert's only when reliable and not.
    ref_value, ref_interval : optional
        The reference's headline value and interval.
    beta : float
        The beta of F-beta.

    Returns
    -------
    SampleAssessment
        Design-based estimate of the headline (Horvitz-Thompson totals post-stratified by the
        strata, :func:`~metrics_core.monitoring.survey.design_metric`) and model-assisted one (the
        difference estimator: the predicted confusion of every row from the calibration map plus the
        design-weighted residuals of the sample, :func:`~metrics_core.monitoring.survey.model_assisted_metric`;
        Sarndal, Swensson and Wretman 1992, ch. 6), each with its interval. The alert uses the
        model-assisted estimate when the map exists, its support holds and no calibration test
        alerts; else the design-based one. The headline's labelled rows are Kish's effective
        sample size, so the small-sample rule reads the design. Label counts seen by the tests:
        with unequal design weights, the estimated label shares at the effective size (a design-effect
        correction of the prevalence tests); the Annex E price cells are then read weighted by the
        design (:func:`~metrics_core.monitoring.kinds.prices.design_cells`), and the per-class
        table is :func:`design_per_class`.
    """
    s = current.sample
    level = policy.level
    task = current.task
    n_eff = effective_sample_size(s)
    conf = np.asarray(design_confusion(s), dtype=np.float64)
    perf = {k: float(v) for k, v in _metrics(task, conf, beta).items()}
    counted = metric in perf and not metric.startswith("n_undefined")  # the estimators take count-based metrics
    design = design_metric(s, metric, beta=beta, level=level) if counted else None
    cond = sample_conditional(cal_map, task, s) if counted else None
    assisted = None if cond is None else model_assisted_metric(s, cond, metric, beta=beta, level=level)
    use_assisted = assisted is not None and reliable and not calibration_alerts
    chosen = assisted if use_assisted else design
    names = current.class_names()
    share = conf.sum(axis=1) / conf.sum() if conf.sum() > 0 else np.full(len(names), math.nan)
    out = {f"{PREFIX}labelled_rows": float(s.rows.sum()), f"{PREFIX}effective_n": float(n_eff),
           f"{PREFIX}alert_uses_model_assisted": float(use_assisted)}
    for name, est in (("design_based", design), ("model_assisted", assisted)):
        if est is not None:
            out[f"{PREFIX}{name}/{metric}"] = est[0]
            out[f"{PREFIX}{name}/{metric}_ci_low"], out[f"{PREFIX}{name}/{metric}_ci_high"] = est[1]
    out.update({f"{PREFIX}prevalence_label/{c}": float(v) for c, v in zip(names, share)})
    headline = None if chosen is None else Headline(metric, chosen[0], chosen[1], ref_value, ref_interval,
                                                     int(round(n_eff)), reference.n_labelled)
    if chosen is not None:
        perf[metric] = chosen[0]
    table = _next_table(s, metric, policy, beta, cond if use_assisted else None) if counted else None
    if table is not None:
        out[f"{PREFIX}next_rows"] = float(table["label"].sum())
        out.update({f"{PREFIX}next_rows/{r['stratum']}": float(r["label"]) for r in table.iter_rows(named=True)})
    unequal = unequal_weights(current)
    tested, classes = current, None
    if unequal:  # price_cells: the raw cells are not the delivery's (the price tests read design_cells)
        tested = dataclasses.replace(current, label_counts=np.rint(share * n_eff).astype(np.int64), price_cells=None)
        classes = design_per_class(s, names, beta=beta, level=level)
    return SampleAssessment(headline, perf, out, table, tested, unequal, classes)


def _next_table(s: SampleStats, metric: str, policy: AlertPolicy, beta: float, cond) -> pl.DataFrame | None:
    """Per stratum: its rows in the period, its labelled rows, the spread and the rows to label next
    period (:func:`~metrics_core.monitoring.survey.next_sample`, Neyman allocation for the estimate
    the alert reads, margin :func:`next_margin`); None when the sample cannot tell (no stratum with
    two labelled rows) or no margin is asked for (``metric_drop`` 0)."""
    margin = next_margin(policy)
    if not 0 < margin < 1:
        return None
    try:
        return next_sample(s, metric, margin, level=policy.level, beta=beta, conditional=cond).table
    except InputError:
        return None
