"""Performance while labels lag: estimates from calibrated scores (covariate or label shift)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from metrics_core.calibration import calibration_metrics
from metrics_core.compute import binary_confusion_metrics, multiclass_confusion_metrics
from metrics_core.intervals import metric_range, replicate_interval
from metrics_core.monitoring.calibration_change import calibration_change
from metrics_core.monitoring.calibration_map import (CalibrationMap, bootstrap_stack, cached_calibration_map, coarsen,
                                                     fit_calibration_map)
from metrics_core.monitoring.decision import Headline
from metrics_core.monitoring.label_shift import (MIN_SUPPORT, MIN_SUPPORT_SHARE, PREFIX, ShiftChoice, adjust,
                                                 cell_posteriors, choose_shift, coarse_own, em_priors, own_scores,
                                                 support)
from metrics_core.monitoring.period import PeriodStats
from metrics_core.monitoring.kinds import TestKey

__all__ = ["Estimate", "expected_confusion", "estimate_performance", "estimate_period",
           "assess_estimate", "PeriodEstimate", "ESTIMATED", "PREFIX", "support", "MIN_SUPPORT", "MIN_SUPPORT_SHARE",
           "PriorShift", "shift_metrics", "LABEL_SHARE", "unreliable_note"]


#: The count-based metrics estimated per task (plus the headline metric when it is count-based).
ESTIMATED = {"binary": ("accuracy", "balanced_accuracy", "precision", "recall", "specificity", "f1", "fbeta", "mcc",
                        "cohen_kappa", "prevalence"),
             "multiclass": ("accuracy", "balanced_accuracy", "cohen_kappa", "mcc", "f1_macro", "f1_weighted",
                            "precision_macro", "recall_macro", "fbeta_macro")}


def expected_confusion(task: str, cond: np.ndarray, score_by_pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Expected confusion counts and their variances from calibrated probabilities.

    Parameters
    ----------
    task : {"binary", "multiclass"}
        The task.
    cond : numpy.ndarray, shape (..., K, S, B)
        Calibrated probability of score column j's class per predicted class k and fine bin
        (:attr:`CalibrationMap.cond`); leading axes are replicates.
    score_by_pred : numpy.ndarray, shape (K, S, B + 2)
        Rows per predicted class, score column and score bin (overflow bins first and last).

    Returns
    -------
    (expected, variance) : numpy.ndarray, shape (..., K, K)
        Rows = label, columns = predicted. Each row's label is an independent Bernoulli draw with
        its calibrated probability, so a cell is a Poisson-binomial count: mean the sum of the
        probabilities, variance the sum of p (1 - p). Binary: exact (one score per row).
        Multiclass: the diagonal cell (k, k) is exact in the same way (the predicted class's own
        score); a row's one-vs-rest probabilities of the other classes need not sum to 1 - p, so
        the off-diagonal cells of column k share the rest of its rows in proportion to their
        sums (variances scaled by the square of the factor).
    """
    return _expected_from_bins(task, cond, coarsen(score_by_pred, cond.shape[-1]))


def _expected_from_bins(task: str, cond: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`expected_confusion` from the histogram already summed to the bins of ``cond`` (``h``:
    (K, S, B'), :func:`~metrics_core.monitoring.calibration_map.coarsen`), as the bootstrap uses it once
    per replicate."""
    raw = np.einsum("ksb,...ksb->...sk", h, cond)
    var = np.einsum("ksb,...ksb->...sk", h, cond * (1 - cond))
    n_k = h[:, 0].sum(axis=1)
    if task == "binary":
        pos, v = raw[..., 0, :], var[..., 0, :]
        return np.stack([n_k - pos, pos], axis=-2), np.stack([v, v], axis=-2)
    k = n_k.size
    eye = np.eye(k, dtype=bool)
    diag = np.where(eye, raw, 0.0)
    off = np.where(eye, 0.0, raw)
    rest = n_k - diag.sum(axis=-2)
    tot = off.sum(axis=-2, keepdims=True)
    scale = np.divide(rest[..., None, :], tot, out=np.zeros_like(tot), where=tot > 0)
    return diag + off * scale, np.where(eye, var, var * scale ** 2)


@dataclass(frozen=True)
class Estimate:
    """The estimated performance of a period: ``expected`` confusion (label x predicted), the
    metrics with their intervals (``metrics``: ``estimated/<key>``, ``..._ci_low``, ``..._ci_high``)
    and the replicate values (``draws``: key -> array) the intervals come from."""

    expected: np.ndarray
    metrics: dict[str, float]
    draws: dict[str, np.ndarray]
    level: float
    shares: np.ndarray | None = None
    shift: ShiftChoice | None = None

    def interval(self, key: str) -> tuple[float, float]:
        """(low, high) of metric ``key`` (without the prefix)."""
        return self.metrics[f"{PREFIX}{key}_ci_low"], self.metrics[f"{PREFIX}{key}_ci_high"]


def _metrics(task: str, m: np.ndarray, beta: float, keys=None) -> dict:
    """The count-based metrics of confusion counts (binary: all of them; multiclass: those in ``keys``, default all)."""
    if task == "binary":
        return binary_confusion_metrics(m, beta)
    out, _ = multiclass_confusion_metrics(m, beta, keys=keys)
    return out


def _draw(task: str, expected: np.ndarray, var: np.ndarray, n_k: np.ndarray, rng) -> np.ndarray:
    """One Poisson-binomial draw per replicate (normal approximation), columns kept at their row counts."""
    z = rng.standard_normal(expected.shape)
    if task == "binary":
        pos = np.clip(expected[..., 1, :] + np.sqrt(var[..., 1, :]) * z[..., 1, :], 0, n_k)
        return np.stack([n_k - pos, pos], axis=-2)
    c = np.clip(expected + np.sqrt(var) * z, 0, None)
    eye = np.eye(n_k.size, dtype=bool)
    diag = np.minimum(np.where(eye, c, 0.0), n_k)
    off = np.where(eye, 0.0, c)
    tot = off.sum(axis=-2, keepdims=True)
    rest = (n_k - diag.sum(axis=-2))[..., None, :]
    return diag + off * np.divide(rest, tot, out=np.zeros_like(tot), where=tot > 0)


def estimate_performance(task: str, cal_map: CalibrationMap, score_by_pred: np.ndarray, *, known=None,
                         keys=None, beta: float = 1.0, level: float = 0.95, n_boot: int = 200, seed: int = 0,
                         priors: "PriorShift | None" = None) -> Estimate:
    """Count-based metrics of a period estimated from calibrated scores, with intervals.

    Parameters
    ----------
    task : {"binary", "multiclass"}
        The task.
    cal_map : CalibrationMap
        Fitted on the reference (:func:`fit_calibration_map`).
    score_by_pred : numpy.ndarray, shape (K, S, B + 2)
        The unlabelled rows' score histograms per predicted class (``PeriodStats.score_by_pred``).
    known : numpy.ndarray, shape (K, K), optional
        Confusion counts of the period's rows that are labelled already (a part labelled),
        added to the estimate of the others.
    keys : sequence of str, optional
        Metrics to return (default :data:`ESTIMATED` of the task); each must be count-based.
    beta : float
        The beta of F-beta.
    level : float
        Level of the intervals.
    n_boot : int
        Replicates of the interval.
    seed : int
        Seed of the draws.
    priors : PriorShift, optional
        Label shift: the period's class priors are re-estimated (:func:`~metrics_core.monitoring.label_shift.em_priors`)
        and the calibrated posteriors adjusted to them before the counts are summed; each
        replicate re-estimates them on a bootstrap of the period's own-score histograms (rows
        redrawn multinomially) with its refitted maps, so the interval holds the priors'
        uncertainty too.

    Returns
    -------
    Estimate
        Point values: the metrics of the expected confusion (calibration maps of the whole
        reference). Interval: the point plus or minus Student's t (B - 1 degrees of freedom) times
        the standard deviation of the metric over B replicates
        (:func:`~metrics_core.intervals.replicate_interval`; the 2.5/97.5 % percentiles of 100
        replicates were too noisy to cover at their level), each replicate the maps refitted
        on a bootstrap of the reference statistics (every bin's positives redrawn as
        Binomial(rows, rate)) and a draw of the counts from their Poisson-binomial
        distribution (normal approximation, sum of p(1-p)): both the calibration's uncertainty
        and the period's own sampling of labels, so the interval is for the metric the labels
        will show. Valid while P(label | score) is the reference's (no concept shift; see
        docs/label-lag.md). Metrics undefined on the counts are nan.
    """
    keys = tuple(keys or ESTIMATED[task])
    known = 0.0 if known is None else np.asarray(known, dtype=np.float64)
    n_k = score_by_pred[:, 0, 1:-1].sum(axis=1).astype(np.float64)
    rng = np.random.default_rng(seed)
    h = coarsen(score_by_pred, cal_map.cond.shape[-1])
    if priors is None:
        expected, _ = _expected_from_bins(task, cal_map.cond, h)
        drawn = np.empty((n_boot, *expected.shape))
        for r, cond in enumerate(cal_map.bootstrap_conditionals(rng, n_boot)):
            rep_exp, rep_var = _expected_from_bins(task, cond, h)
            drawn[r] = _draw(task, rep_exp, rep_var, n_k, rng)
    else:
        expected, drawn = _label_shift_draws(task, cal_map, h, priors, n_k, n_boot, seed)
    drawn += known
    point = _metrics(task, expected + known, beta, keys)
    reps = _metrics(task, drawn, beta, keys)
    out: dict[str, float] = {}
    draws: dict[str, np.ndarray] = {}
    for k in keys:
        draws[k] = np.asarray(reps[k], dtype=np.float64)
        out[f"{PREFIX}{k}"] = float(point[k])
        out[f"{PREFIX}{k}_ci_low"], out[f"{PREFIX}{k}_ci_high"] = replicate_interval(point[k], draws[k], level,
                                                                                   metric_range(k))
    return Estimate(expected + known, out, draws, level, drawn.sum(axis=-1))


@dataclass(frozen=True)
class PriorShift:
    """What the label-shift estimate needs of the reference: its confusion counts (the mix of the
    wrong labels per predicted class) and its rows per (predicted class, own-score bin) on the
    calibration map's bins (``ref_own``, :func:`~metrics_core.monitoring.label_shift.own_scores`)."""

    confusion: np.ndarray
    ref_own: np.ndarray

    def fit(self, task: str, cond: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posteriors (..., K, B, K) of ``cond`` and the priors' weights (..., K) re-estimated on ``counts``."""
        post = cell_posteriors(task, cond, self.confusion)
        prior = np.einsum("kb,...kbj->...j", self.ref_own, post) / self.ref_own.sum()
        pi = em_priors(post, counts, prior)
        return post, np.divide(pi, prior, out=np.zeros_like(pi), where=prior > 0)


def _from_posteriors(post: np.ndarray, own: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Expected confusion (label x predicted) and its Poisson-binomial variance from the cells' posteriors."""
    return (np.einsum("kb,...kbj->...jk", own, post), np.einsum("kb,...kbj->...jk", own, post * (1 - post)))


def _label_shift_draws(task, cal_map, h, priors: PriorShift, n_k, n_boot, seed):
    """Point expected confusion and ``n_boot`` drawn confusions under re-estimated priors; the
    generator seeded ``seed`` draws the maps' replicates first (remembered per reference,
    :func:`~metrics_core.monitoring.calibration_map.bootstrap_stack`), then the rest."""
    own = own_scores(task, h)
    post, w = priors.fit(task, cal_map.cond, own)
    expected, _ = _from_posteriors(adjust(post, w), own)
    conds, rng = bootstrap_stack(cal_map, seed, n_boot)
    n = int(round(own.sum()))
    boot = rng.multinomial(n, (own / own.sum()).ravel(), size=n_boot).reshape(n_boot, *own.shape).astype(float)
    post_r, w_r = priors.fit(task, conds, boot)
    rep_exp, rep_var = _from_posteriors(adjust(post_r, w_r), own)
    return expected, _draw(task, rep_exp, rep_var, n_k, rng)


def estimate_period(reference: PeriodStats, current: PeriodStats, *, headline: str | None = None,
                    cal_map: CalibrationMap | None = None, beta: float = 1.0, level: float = 0.95,
                    n_boot: int = 200, seed: int = 0) -> Estimate | None:
    """The performance of ``current`` estimated from its scores and the reference's calibration.

    Parameters
    ----------
    reference, current : PeriodStats
        The reference window (labels and scores) and the period (scores; labels not used).
    headline : str, optional
        The headline metric, added to the estimated keys when it is count-based.
    cal_map : CalibrationMap, optional
        A map fitted before (else fitted here with ``n_boot`` replicates).
    beta, level, n_boot, seed
        As for :func:`estimate_performance` and :func:`fit_calibration_map`.

    Returns
    -------
    Estimate or None
        None when the reference has no calibration statistics or the period no score histograms
        per predicted class (more than ``MAX_CELL_CLASSES`` classes) or scores outside [0, 1].
        The estimate's ``shift`` says which shift the period's scores support
        (:func:`~metrics_core.monitoring.label_shift.choose_shift`): under ``"label"`` the class
        priors are re-estimated and the posteriors adjusted (``priors`` of
        :func:`estimate_performance`); under ``"none"`` and ``"covariate"`` the reference's
        P(label | score) is applied as it is.
        Labels of the period are ignored: with labels the estimate is checked against the
        measured metric (the label-lag validation).
    """
    cal_map = cal_map or fit_calibration_map(reference, n_boot=n_boot, seed=seed)
    h = current.score_by_pred
    if cal_map is None or h is None or h[:, :, 0].sum() or h[:, :, -1].sum():
        return None
    keys = list(ESTIMATED[current.task])
    probe = _metrics(current.task, np.eye(current.labels.size), beta, (headline,))  # is it a count-based metric?
    if headline and headline not in keys and headline in probe:
        keys.append(headline)
    shift, priors = _choose(reference, current, cal_map)
    est = estimate_performance(current.task, cal_map, h, keys=keys, beta=beta, level=level, n_boot=n_boot,
                               seed=seed, priors=priors if shift is not None and shift.model == "label" else None)
    return dataclasses.replace(est, shift=shift)


def _choose(reference: PeriodStats, current: PeriodStats, cal_map: CalibrationMap
            ) -> tuple[ShiftChoice | None, PriorShift | None]:
    """The shift the period's scores support, and the reference's part of the label-shift estimate."""
    if reference.performance is None or not current.n_rows:
        return None, None
    res = cal_map.cond.shape[-1]
    priors = PriorShift(reference.performance.confusion.matrix.astype(np.float64),
                        coarse_own(reference.task, reference.score_by_pred, res))
    cur = coarse_own(current.task, current.score_by_pred, res)
    post, w = priors.fit(current.task, cal_map.cond, cur)
    return choose_shift(current.task, post, priors.ref_own, cur, w), priors


@dataclass(frozen=True)
class PeriodEstimate:
    """What the label-lag estimate and the calibration check add to a monitored period: ``metrics``
    (``estimated/<key>`` with intervals; with labels the period's ``perf/<calibration key>``),
    ``tests`` (the calibration-change tests, keyed by ``TestKey("calibration", class)``; their
    metrics are the calibration kind's, :mod:`metrics_core.monitoring.kinds.calibration`) and ``headline`` (the
    estimated headline, metric ``estimated/<metric>``, for a period without labels; else None)."""

    metrics: dict
    tests: dict
    headline: Headline | None
    estimate: Estimate | None


def assess_estimate(reference: PeriodStats, current: PeriodStats, metric: str, *, beta: float = 1.0,
                    level: float = 0.95, n_boot: int = 100, seed: int = 0,
                    score_shift: float | None = None) -> PeriodEstimate:
    """The label-lag estimate and the calibration-change tests of one period (used by the period assessment).

    Parameters
    ----------
    reference, current : PeriodStats
        The reference window and the period.
    metric : str
        The headline metric.
    beta, level, n_boot, seed
        As for :func:`estimate_period` (100 replicates: the coverage test's setting, about 1 s
        for 10 classes).
    score_shift : float, optional
        The score shift past which the estimate is flagged unreliable (:func:`support`).

    Returns
    -------
    PeriodEstimate
        Empty (no metrics, no tests, no headline) when the reference has no calibration map (no
        labels or scores there). The estimated headline's reference value is the reference's
        measured metric; its interval is the estimate's (it holds the reference's calibration
        uncertainty), so the reference enters the drop test without its own interval. With an
        estimate, ``metrics`` holds :func:`support`'s ``estimated/support_share``,
        ``estimated/score_shift``, ``estimated/degenerate`` and ``estimated/reliable`` (0: the
        period's scores moved beyond what the reference's calibration vouches for), and
        :func:`shift_metrics` (the shift assumed, and the estimated prevalence of the labels).
    """
    cal_map = cached_calibration_map(reference, n_boot, seed)
    if cal_map is None:
        return PeriodEstimate({}, {}, None, None)
    est = estimate_period(reference, current, headline=metric, cal_map=cal_map, beta=beta, level=level,
                          n_boot=n_boot, seed=seed)
    metrics = {}
    if est is not None:
        metrics = {**est.metrics, **shift_metrics(est, current.class_names(), level),
                   **support(reference, current, score_shift, est.shift)}
    tests: dict = {}
    if current.calibration is not None:
        checks = calibration_change(cal_map, current)
        tests = {TestKey("calibration", name): t for name, t in checks.items()}
        values, _ = calibration_metrics(current.calibration)
        metrics.update({f"perf/{k}": v for k, v in values.items()})
    headline = None
    if est is not None and not current.has_labels and f"{PREFIX}{metric}" in est.metrics:
        ref_value = _metrics(reference.task, reference.performance.confusion.matrix, beta, (metric,)).get(metric)
        headline = Headline(f"{PREFIX}{metric}", est.metrics[f"{PREFIX}{metric}"], est.interval(metric),
                            None if ref_value is None else float(ref_value), None, int(current.n_rows),
                            caveat=unreliable_note(metrics))
    return PeriodEstimate(metrics, tests, headline, est)


def unreliable_note(metrics: dict) -> str:
    """Why an estimate flagged unreliable (:func:`support`) is not vouched for, as a clause of its sentences.

    The estimated headline still enters the alert decision when it is flagged: the flag says that
    nothing backs the estimate, not that it is wrong (a covariate shift moves the scores while the
    estimate stays right), and the scores that moved that far alert through their own tests; a
    drop test that rejects on it is reported with this clause (:attr:`Headline.caveat
    <metrics_core.monitoring.decision.Headline>`), so the reason is never read as a measured drop.

    Parameters
    ----------
    metrics : dict
        The estimate's metrics (``estimated/reliable``, ``estimated/degenerate``,
        ``estimated/score_shift``, ``estimated/support_share``).

    Returns
    -------
    str
        ``""`` unless ``estimated/reliable`` is 0; else ``"UNRELIABLE: degenerate scores ..."`` or
        ``"UNRELIABLE: scores moved beyond the reference's calibration (...)"`` with the own-score
        shift and the support share.

    Examples
    --------
    >>> unreliable_note({"estimated/reliable": 1.0})
    ''
    >>> unreliable_note({"estimated/reliable": 0.0, "estimated/degenerate": 1.0})
    'UNRELIABLE: degenerate scores (most rows share one score the reference rarely gave)'
    >>> unreliable_note({"estimated/reliable": 0.0, "estimated/degenerate": 0.0, "estimated/score_shift": 0.097,
    ...                  "estimated/support_share": 0.8})
    "UNRELIABLE: scores moved beyond the reference's calibration (shift 0.097, 80% of rows in covered score bins)"
    """
    if metrics.get(f"{PREFIX}reliable") != 0.0:
        return ""
    if metrics.get(f"{PREFIX}degenerate") == 1.0:
        return "UNRELIABLE: degenerate scores (most rows share one score the reference rarely gave)"
    shift, share = metrics.get(f"{PREFIX}score_shift", math.nan), metrics.get(f"{PREFIX}support_share", math.nan)
    return ("UNRELIABLE: scores moved beyond the reference's calibration "
            f"(shift {shift:.3f}, {share:.0%} of rows in covered score bins)")


#: The estimated share of each class among the period's labels: ``prevalence_estimated/<class>``
#: (with ``_ci_low`` and ``_ci_high``), beside the shares of the predictions (``prevalence_pred/<class>``).
LABEL_SHARE = "prevalence_estimated/"


def shift_metrics(est: Estimate, names: list[str], level: float = 0.95) -> dict[str, float]:
    """The shift the estimate assumed and the estimated prevalence of the labels, as metrics.

    Parameters
    ----------
    est : Estimate
        The period's estimate (:func:`estimate_period`).
    names : list of str
        The classes as text, in label order.
    level : float
        Level of the prevalence intervals.

    Returns
    -------
    dict
        ``estimated/label_shift`` 1 when the priors were re-estimated (the scores moved as a change
        of the class mix explains), ``estimated/covariate_shift`` 1 when the scores moved in a way
        it does not explain (the reference's P(label | score) applied as it is), both 0 when the
        scores fit the reference's; ``estimated/no_shift_p`` and ``estimated/label_shift_p``, the
        p-values behind the choice (:func:`~metrics_core.monitoring.label_shift.choose_shift`);
        ``prevalence_estimated/<class>``: the expected share of the class among the period's
        labels (row sums of the expected confusion: the adjusted posteriors' mean under label
        shift), with its interval from the replicates' shares
        (:func:`~metrics_core.intervals.replicate_interval`; nan without rows).
    """
    out: dict[str, float] = {}
    if est.shift is not None:
        out.update({f"{PREFIX}label_shift": float(est.shift.model == "label"),
                    f"{PREFIX}covariate_shift": float(est.shift.model == "covariate"),
                    f"{PREFIX}no_shift_p": est.shift.p_none, f"{PREFIX}label_shift_p": est.shift.p_label,
                    f"{PREFIX}label_shift_unexplained": est.shift.unexplained})
    n = est.expected.sum()
    if est.shares is None or n <= 0:
        return out
    point = est.expected.sum(axis=1) / n
    lo, hi = replicate_interval(point, est.shares / est.shares.sum(axis=-1, keepdims=True), level, (0.0, 1.0))
    for j, name in enumerate(names):
        out.update({f"{LABEL_SHARE}{name}": float(point[j]), f"{LABEL_SHARE}{name}_ci_low": float(lo[j]),
                    f"{LABEL_SHARE}{name}_ci_high": float(hi[j])})
    return out
