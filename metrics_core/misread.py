"""Warnings of a binary report whose input looks misread: scores that look reversed for the positive
class, and a probability threshold applied to scores on another scale."""

from __future__ import annotations

import math
import warnings

import numpy as np

from metrics_core.counts import ScoreCounts
from metrics_core.stats import BinaryStats
from metrics_core.undefined import _caller_stacklevel

__all__ = ["MisreadInputWarning", "REVERSED_AUROC", "ReversedScoresWarning", "ThresholdScaleWarning",
           "reversed_scores", "warn_misread", "warn_reversed", "warn_threshold_scale",
           "warn_threshold_scale_period"]


#: A binary AUROC below this, with the upper bound of its interval below 0.5, warns of reversed scores.
REVERSED_AUROC = 0.3


class MisreadInputWarning(UserWarning):
    """The input looks misread: the numbers are computed, but probably not from what was meant.
    The bootstrap's replicate reports stay silent on these (the observed report says it once)."""


class ReversedScoresWarning(MisreadInputWarning):
    """Binary scores rank the negative class above the positive one: they look reversed.

    Raised by the binary compute step when AUROC < ``REVERSED_AUROC`` (0.3) and the upper bound of
    its 95% Hanley-McNeil interval is below 0.5 (:func:`reversed_scores`): the usual cause is a
    positive class that is not the class the scores are for. ``auroc`` and ``upper`` hold the
    values.

    Examples
    --------
    >>> str(ReversedScoresWarning("scores look reversed", 0.01, 0.05))
    'scores look reversed'
    """

    def __init__(self, message: str, auroc: float = float("nan"), upper: float = float("nan")):
        super().__init__(message)
        self.auroc, self.upper = auroc, upper


def reversed_scores(stats: BinaryStats, auroc: float, level: float = 0.95) -> float | None:
    """The upper bound of AUROC's interval when the scores look reversed, else None.

    Parameters
    ----------
    stats : BinaryStats
        The statistics of the report (confusion and ``n_rows``).
    auroc : float
        The report's AUROC.
    level : float
        Confidence level of the bound.

    Returns
    -------
    float or None
        The upper bound when ``auroc < REVERSED_AUROC`` and the bound is < 0.5.

    Notes
    -----
    Hanley & McNeil (1982): SE^2 = (A(1-A) + (n1-1)(Q1-A^2) + (n0-1)(Q2-A^2)) / (n1 n0), with
    Q1 = A/(2-A), Q2 = 2A^2/(1+A); n1, n0 the positive and negative rows (with weights: the
    rows of positive weight shared in proportion to the weight of each class). Analytic, so the
    check costs nothing beside the lazy bootstrap intervals.

    Examples
    --------
    >>> from metrics_core.report import binary_stats
    >>> s = binary_stats([0] * 20 + [1] * 20, y_score=[0.9] * 20 + [0.1] * 20)
    >>> round(reversed_scores(s, 0.0), 4)
    0.0
    """
    from metrics_core.significance.proportions import z_critical

    if not auroc < REVERSED_AUROC:  # nan too
        return None
    m = stats.confusion.matrix.astype(np.float64)
    total = m.sum()
    if total <= 0:
        return None
    n1 = stats.n_rows * m[1].sum() / total
    n0 = stats.n_rows * m[0].sum() / total
    if n1 < 1 or n0 < 1:
        return None
    a = auroc
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    var = (a * (1 - a) + (n1 - 1) * (q1 - a * a) + (n0 - 1) * (q2 - a * a)) / (n1 * n0)
    upper = a + z_critical(level) * math.sqrt(max(var, 0.0))
    return float(upper) if upper < 0.5 else None


def warn_reversed(report):
    """Warn, with a :class:`ReversedScoresWarning`, when a binary report's scores look reversed.

    Parameters
    ----------
    report : Report
        A finished binary report (other reports pass through).

    Returns
    -------
    Report
        The same report.

    Examples
    --------
    >>> import warnings
    >>> from metrics_core.report import binary_report
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     r = binary_report([0] * 20 + [1] * 20, y_score=[0.9] * 20 + [0.1] * 20)
    >>> [type(w.message).__name__ for w in caught]
    ['ReversedScoresWarning']
    """
    auroc = report.metrics.get("auroc", float("nan"))
    if report.task != "binary" or not isinstance(report.stats, BinaryStats):
        return report
    upper = reversed_scores(report.stats, auroc)
    if upper is not None:
        neg, pos = (x.item() if isinstance(x, np.generic) else x for x in report.stats.confusion.labels)
        other = "" if neg is None else \
            f" (--positive-class {neg} on the command line; positive_class: {neg} in a run spec; pos_label={neg!r})"
        message = (f"AUROC is {auroc:.4f} (95% upper bound {upper:.4f} < 0.5): the scores look reversed for the "
                   f"positive class {pos!r}: they rank the other class first. If they are the scores of the other "
                   f"class, make that class the positive one{other}, or use 1 - score.")
        warnings.warn(ReversedScoresWarning(message, auroc, upper), stacklevel=_caller_stacklevel())
    return report


class ThresholdScaleWarning(MisreadInputWarning):
    """A threshold and the scores it decided the confusion of are on different scales.

    Raised by the binary compute step when the confusion follows the threshold and either the
    scores leave [0, 1] (percentages, decision scores) while the threshold lies in [0, 1], or the
    scores lie in [0, 1] (probabilities) while the threshold does not (a percentage such as 70,
    which predicts every row negative) (:func:`warn_threshold_scale`). ``share`` is the fraction
    of rows predicted positive.
    """

    def __init__(self, message: str, share: float = float("nan")):
        super().__init__(message)
        self.share = share


def warn_threshold_scale(report):
    """Warn, with a :class:`ThresholdScaleWarning`, when a binary report's confusion comes from a
    threshold in [0, 1] on scores outside [0, 1], or from a threshold outside [0, 1] on scores in
    [0, 1].

    Parameters
    ----------
    report : Report
        A finished binary report (other reports, reports without exact scores (none, or binned)
        and reports whose confusion does not follow the threshold, e.g. from given predictions,
        pass through).

    Returns
    -------
    Report
        The same report.

    Examples
    --------
    >>> import warnings
    >>> from metrics_core.report import binary_report
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     r = binary_report([0, 0, 1, 1], y_score=[20.0, 40.0, 60.0, 80.0])
    >>> [type(w.message).__name__ for w in caught if isinstance(w.message, MisreadInputWarning)]
    ['ThresholdScaleWarning']
    """
    stats, t = report.stats, report.options.get("threshold")
    sc = getattr(stats, "scores", None)
    if (report.task != "binary" or not isinstance(stats, BinaryStats) or not isinstance(sc, ScoreCounts)
            or not sc.scores.size or t is None or (0 <= t <= 1) == (0 <= sc.scores[0] <= sc.scores[-1] <= 1)):
        return report
    m = stats.confusion.matrix.astype(np.float64)
    i = int(np.searchsorted(sc.scores, t, side="left"))
    above = float(sc.pos[i:].sum() + sc.neg[i:].sum())
    total = m.sum()
    if total <= 0 or not math.isclose(m[:, 1].sum(), above, rel_tol=1e-9, abs_tol=1e-9):
        return report
    share = above / total
    if 0 <= t <= 1:
        scores = f"The scores range from {sc.scores[0]:.4g} to {sc.scores[-1]:.4g}, outside [0, 1]"
        message = _threshold_message(scores, "confusion counts come", t, share)
    else:
        scores = f"The scores range from {sc.scores[0]:.4g} to {sc.scores[-1]:.4g}, probabilities"
        message = _probability_scores_message(scores, t, share)
    warnings.warn(ThresholdScaleWarning(message, share), stacklevel=_caller_stacklevel())
    return report


def _probability_scores_message(scores: str, threshold: float, share: float) -> str:
    hint = f"If it is a percentage, use {threshold / 100:g}" if 0 <= threshold <= 100 else "Set it within [0, 1]"
    return (f"{scores}, but the threshold {threshold:g} is outside [0, 1]: {share:.1%} of the rows are predicted "
            f"positive. {hint} (--threshold on the command line; threshold: in a run spec; threshold= in Python).")


def _threshold_message(scores: str, what: str, threshold: float, share: float) -> str:
    return (f"{scores}, but the {what} from the threshold {threshold:g}, a probability: {share:.1%} of the rows "
            "are predicted positive. If the scores are percentages, divide them by 100; else set the threshold "
            "on their scale (--threshold on the command line; threshold: in a run spec; threshold= in Python).")


def warn_threshold_scale_period(where: str, outside: int, n_rows: int, predicted_positive: float,
                                threshold: float) -> None:
    """Monitoring's :func:`warn_threshold_scale`: a binary period whose predicted class comes from
    ``threshold`` in [0, 1] while ``outside`` of its ``n_rows`` rows score outside [0, 1] (the
    overflow bins of the default score range), or from a threshold outside [0, 1] while every row
    scores in [0, 1], warns with a :class:`ThresholdScaleWarning`."""
    if n_rows <= 0 or (outside > 0) != (0 <= threshold <= 1):
        return
    share = predicted_positive / n_rows
    if outside > 0:
        scores = f"{where}: {outside:,} of {n_rows:,} rows have scores outside [0, 1]"
        message = _threshold_message(scores, "predicted class comes", threshold, share)
    else:
        message = _probability_scores_message(f"{where}: all {n_rows:,} rows score in [0, 1], probabilities",
                                              threshold, share)
    warnings.warn(ThresholdScaleWarning(message, share), stacklevel=_caller_stacklevel())


def warn_misread(report):
    """:func:`warn_reversed` and :func:`warn_threshold_scale`; returns the report."""
    return warn_threshold_scale(warn_reversed(report))
