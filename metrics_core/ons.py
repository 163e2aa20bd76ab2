"""ONS metric selection as code: the metric of Tables 1 and 2, chosen from stability measured on history.

Source: the ONS guidelines for selecting metrics to evaluate classification in price statistics
production pipelines (Advisory Panel on Consumer Prices - Technical): Tables 1 (binary) and 2
(multiclass), Annex C (averaging) and Annex F (stability over time).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np
import polars as pl

from metrics_core.checks import CheckResult, as_frame, require_columns
from metrics_core.checks.stability import prevalence_stability, price_stability
from metrics_core.contract.classes import check_task
from metrics_core.errors import InputError
from metrics_core.monitoring.policy import POLICY

COLUMNS = ("yes", "only prevalence", "only price distribution", "no")


@dataclass(frozen=True)
class Option:
    """Another metric the ONS table allows: its catalogue key, plotting space and when to prefer it.

    Parameters
    ----------
    metric : str
        Key of the report catalogue.
    space : {"PR", "ROC"}
        Space the metric is read in (ONS Annex D).
    when : str
        When to prefer it, in words.

    Examples
    --------
    >>> Option("balanced_accuracy", "ROC", "prevalence is balanced").metric
    'balanced_accuracy'
    """

    metric: str
    space: str
    when: str


@dataclass(frozen=True)
class Recommendation:
    """One cell column of ONS Table 1 (binary) or Table 2 (multiclass), made executable.

    ``metric`` is a key of the report catalogue (look it up in ``report.metrics``); ``space`` is
    "PR" or "ROC"; ``weight_by_prevalence`` and ``averaging`` ("macro", "micro" or None when not
    applicable) are the table's PREVALENCE WEIGHTING and AVERAGING rows; ``beta`` is 1.0 where
    the table fixes it and None where it is tuned (``tune_beta``) or not applicable;
    ``column`` names the table column ("yes", "only prevalence", "only price distribution", "no").

    Parameters
    ----------
    task : {"binary", "multiclass"}
    column : str
        The table column.
    metric : str
        Headline catalogue key.
    space : {"PR", "ROC"}
    weight_by_prevalence : bool
    averaging : {"macro", "micro"} or None
    beta : float or None
    tune_beta : bool
    beta_advice : str
        How to set beta, in words.
    reason : str
        Why this metric, in words.
    alternatives : tuple of Option

    Examples
    --------
    >>> r = recommend("binary", False, False)
    >>> r.column, r.metric, r.as_dict()["alternatives"]
    ('no', 'balanced_accuracy', '')
    """

    task: str
    column: str
    metric: str
    space: str
    weight_by_prevalence: bool
    averaging: str | None
    beta: float | None
    tune_beta: bool
    beta_advice: str
    reason: str
    alternatives: tuple[Option, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        """Flat strings, numbers and booleans for logging as run parameters or tags.

        Returns
        -------
        dict
            The fields, with ``alternatives`` joined as ``"metric (space), ..."``.
        """
        out = asdict(self)
        out["alternatives"] = ", ".join(f"{o.metric} ({o.space})" for o in self.alternatives)
        return out


_TUNE = ("Set beta from the errors that hurt the index more: beta < 1 weighs precision (fewer false "
         "positives), beta > 1 weighs recall (fewer false negatives).")
_ONE = "beta = 1: with unstable distributions no error type can be favoured safely."
_NA = "Not applicable: the headline metric has no beta."


def _binary(column: str, low: bool | None) -> Recommendation:
    bal = Option("balanced_accuracy", "ROC", "positive prevalence is balanced or high")
    fb = Option("fbeta", "PR", "positive prevalence is low (needle in a haystack)")
    unknown = (" The positive prevalence level was not given (low_prevalence=None), so the general "
               "choice is made; pass low_prevalence=True for a rare positive class.") if low is None else ""
    if column == "yes":
        if low:
            return Recommendation(
                "binary", column, "fbeta", "PR", True, "macro", None, True, _TUNE,
                "Prevalence and prices are stable and positives are rare: F-beta in PR space rewards finding the "
                "rare positives, and stable distributions let beta be tuned to the costlier error. If F-beta is "
                "averaged over both classes, average it macro with prevalence weights (fbeta_weighted of a "
                "two-class report): stable prevalence keeps those weights valid.", (bal,))
        return Recommendation(
            "binary", column, "balanced_accuracy", "ROC", False, None, None, True, _TUNE,
            "Prevalence and prices are stable and positives are not rare: balanced accuracy in ROC space is "
            "prevalence-insensitive and needs neither weights nor averaging. F-beta with a tuned beta is the "
            "alternative when false positives or false negatives must be emphasised." + unknown,
            (Option("fbeta", "PR", "false positives or false negatives must be emphasised (tune beta)"),))
    if column == "only prevalence":
        why = ("Prevalence is stable but prices are not, so neither error type can be favoured and beta stays 1; "
               "balanced accuracy is prevalence-insensitive, so no weights or averaging are needed.")
        if low:
            return Recommendation("binary", column, "fbeta", "PR", False, None, 1.0, False, _ONE,
                                  why + " Positives are rare, where F-beta in PR space is the better measure.", (bal,))
        return Recommendation("binary", column, "balanced_accuracy", "ROC", False, None, 1.0, False, _ONE,
                              why + unknown, (fb,))
    if column == "only price distribution":
        return Recommendation(
            "binary", column, "fbeta", "PR", False, None, None, True, _TUNE,
            "Prices are stable but prevalence is not: F-beta lets beta favour precision where the classes' "
            "price distributions differ, or recall where they are similar. Prevalence weights would change "
            "with the prevalence, so none are used.",
            (Option("balanced_accuracy", "ROC", "beta is 1 or close to 1, especially with balanced or high "
                    "prevalence: F-beta then brings no benefit"),))
    return Recommendation(
        "binary", column, "balanced_accuracy", "ROC", False, None, None, False, _NA,
        "Neither prevalence nor prices are stable: balanced accuracy (average recall) is comparable across "
        "datasets with different prevalence, so performance can be monitored over time.")


def _multiclass(column: str) -> Recommendation:
    av_recall = Option("balanced_accuracy", "ROC", "true negatives matter (average recall); with beta = 1")
    if column == "yes":
        return Recommendation(
            "multiclass", column, "fbeta_of_weighted", "PR", True, "macro", None, True, _TUNE,
            "Prevalence and prices are stable: macro averaging with prevalence weights corrects for class "
            "imbalance and shows each class's contribution, and a tuned beta favours the costlier error. "
            "F-beta is the harmonic mean of the prevalence-weighted precision and recall (ONS Annex C).",
            (av_recall,))
    if column == "only prevalence":
        return Recommendation(
            "multiclass", column, "fbeta_of_weighted", "PR", True, "macro", 1.0, False, _ONE,
            "Prevalence is stable, so prevalence-weighted macro averaging stays valid; prices are not, so "
            "beta stays 1. (Table 2 names F-beta micro here; we follow its weighting and averaging rows.)",
            (av_recall, Option("fbeta_micro", "PR", "the metric cell of Table 2 taken literally; equal to "
                               "accuracy for single-label data")))
    if column == "only price distribution":
        return Recommendation(
            "multiclass", column, "fbeta_micro", "PR", False, "micro", None, True, _TUNE,
            "Prices are stable but prevalence is not: an unweighted, micro-averaged F-beta is not tied to one "
            "prevalence, and beta can be tuned. Note that for single-label data micro precision = micro "
            "recall = accuracy, so micro F-beta does not move with beta.",
            (Option("fbeta_of_macro", "PR", "a tuned beta must take effect on single-label data"),))
    return Recommendation(
        "multiclass", column, "fbeta_micro", "PR", False, "micro", 1.0, False, _ONE,
        "Neither prevalence nor prices are stable: micro averaging ignores prevalence weights, which would "
        "not hold on future data, and beta stays 1 as the best compromise.",
        (Option("balanced_accuracy_micro", "ROC", "true negatives matter (average recall, ONS Annex C)"),))


def _flag(value: Any, name: str, allow_none: bool = False) -> bool | None:
    """A measured fact as a bool (or None where allowed); an error naming the argument otherwise."""
    if value is None and allow_none:
        return None
    if not isinstance(value, (bool, np.bool_)):
        allowed = "True, False or None" if allow_none else "True or False"
        raise InputError(f"{name}: expected {allowed}, got {value!r}. Measure it with stability_from_history.")
    return bool(value)


def recommend(task: str, prevalence_stable: bool, price_stable: bool,
              low_prevalence: bool | None = None) -> Recommendation:
    """The headline metric and how to read it, from ONS Tables 1 (binary) and 2 (multiclass).

    The table column follows from the two facts: both stable = "yes", only prevalence stable =
    "only prevalence", only prices stable = "only price distribution", neither = "no".

    Table 1 (binary): "yes" gives F-beta/PR for a low positive prevalence (weights and macro
    averaging apply only when F-beta is averaged over both classes) and balanced accuracy/ROC
    otherwise, beta tuned; "only prevalence": balanced accuracy/ROC, F-beta/PR for low prevalence,
    no weights, beta 1; "only price distribution": F-beta/PR with tuned beta, balanced accuracy
    when beta is near 1; "no": balanced accuracy/ROC, beta not applicable.

    Table 2 (multiclass): "yes": prevalence-weighted macro F-beta (``fbeta_of_weighted``, Annex C)
    /PR, beta tuned; "only prevalence": as "yes" with beta 1; "only price distribution":
    unweighted micro F-beta (``fbeta_micro``)/PR, beta tuned; "no": ``fbeta_micro``/PR with beta 1,
    average recall (``balanced_accuracy_micro``)/ROC when true negatives matter. Average recall
    in the macro columns is the unweighted macro recall (``balanced_accuracy``): weighting recall
    by prevalence would turn it into accuracy.

    Choices where the tables are ambiguous:

    - Table 2, "only prevalence" names "F-beta micro" as metric but "Yes" for prevalence weighting
      and "Macro" for averaging. We follow the weighting and averaging rows and strategy 10a
      (stable prevalence: macro averaging with prevalence weights): micro F-beta cannot take
      prevalence weights, and on single-label data it equals accuracy for every beta, so the
      weighting the table asks for would be lost. ``fbeta_micro`` is kept as an alternative.
    - Table 2, "only price distribution" asks for a tuned beta with micro averaging; on
      single-label data micro F-beta does not depend on beta. We keep the table's ``fbeta_micro``
      and offer ``fbeta_of_macro`` (unweighted) for when the tuned beta must take effect.
    - Table 1, "yes" and "only prevalence" depend on whether the positive prevalence is low; with
      ``low_prevalence=None`` the general choice, balanced accuracy (strategy 9c/9d), is made and
      the reason says so. ``low_prevalence`` is ignored for multiclass (Table 2 does not use it).

    Parameters
    ----------
    task : {"binary", "multiclass"}
    prevalence_stable, price_stable : bool
        Measured facts, e.g. from :func:`stability_from_history`.
    low_prevalence : bool or None
        Binary only: is the positive class rare?

    Returns
    -------
    Recommendation

    Examples
    --------
    >>> r = recommend("binary", True, True, low_prevalence=True)
    >>> r.metric, r.space, r.tune_beta
    ('fbeta', 'PR', True)
    >>> recommend("multiclass", False, False).metric
    'fbeta_micro'
    """
    check_task(task, hint="ONS Tables 1 and 2 cover these two; for multilabel data apply the binary table to each "
                          "label.")
    prev = _flag(prevalence_stable, "prevalence_stable")
    price = _flag(price_stable, "price_stable")
    low = _flag(low_prevalence, "low_prevalence", allow_none=True)
    column = COLUMNS[(0 if price else 1) if prev else (2 if price else 3)]
    return _binary(column, low) if task == "binary" else _multiclass(column)


@dataclass(frozen=True)
class Stability:
    """Prevalence and price stability measured on a history of periods, ready for :func:`recommend`.

    ``prevalence`` and ``price`` hold the underlying checks (tables per period and class);
    ``prevalence_source`` says which counts were judged ("label", "prediction" or "counts");
    ``positive_prevalence`` is the positive class's share in the reference window (binary).

    How :func:`stability_from_history` judges, per period outside the reference window (the first
    ``reference`` periods by default):

    - prevalence is unstable when, for some period, a test of the monitoring alert flags after
      the correction of the period's tests (``correction``, BH by default, at ``alpha``): a
      class's two-proportion z-test with a change of at least ``max_abs_change`` (2 points), or
      the chi-squared test of the class counts (3+ classes) with a PSI of the class shares >=
      ``psi_threshold`` (0.1); see :func:`metrics_core.checks.stability.prevalence_stability`.
      Label counts are judged when they cover the reference window; otherwise prediction counts;
    - prices are unstable when, for some (period, class), the KS test against the reference
      prices of the class rejects after the correction of the period's price tests AND the
      relative price shift (Wasserstein distance of log prices, as the monitoring alert) is at
      least ``max_relative_change`` (10%); see
      :func:`metrics_core.checks.stability.price_stability`. Without ``prices`` the price distribution
      is not known to be stable and is treated as unstable (the robust choice of Annex F), and
      the reason says so;
    - low prevalence (binary, with ``positive_class``): the positive share of the reference
      window is below ``low_prevalence_below`` (0.2).

    Parameters
    ----------
    prevalence_stable, price_stable : bool
    low_prevalence : bool or None
        None without a positive class.
    positive_prevalence : float or None
    prevalence_source : {"label", "prediction", "counts"}
    reason : str
        The measurements, in words.
    prevalence : CheckResult
    price : CheckResult or None
        None without prices.

    Examples
    --------
    >>> s = stability_from_history([[50, 50], [52, 48]])
    >>> s.prevalence_stable, s.recommend("multiclass").column
    (True, 'only prevalence')
    """

    prevalence_stable: bool
    price_stable: bool
    low_prevalence: bool | None
    positive_prevalence: float | None
    prevalence_source: str
    reason: str
    prevalence: CheckResult
    price: CheckResult | None

    def recommend(self, task: str) -> Recommendation:
        """:func:`recommend` with these measured facts (``low_prevalence`` used for binary only).

        Parameters
        ----------
        task : {"binary", "multiclass"}

        Returns
        -------
        Recommendation
        """
        return recommend(task, self.prevalence_stable, self.price_stable,
                         self.low_prevalence if task == "binary" else None)


def _history_frame(counts: Any, classes: Sequence | None) -> pl.DataFrame:
    """Rows (period, class, count) from a table, or from a periods x classes array of counts."""
    if isinstance(counts, (pl.DataFrame, pl.LazyFrame)) or hasattr(counts, "schema"):
        return as_frame(counts, "counts")
    matrix = np.asarray(counts)
    if matrix.ndim != 2 or matrix.shape[0] < 2 or matrix.shape[1] < 1:
        raise InputError(f"counts: expected a table (period, class, count) or a periods x classes array with at "
                         f"least 2 periods, got shape {matrix.shape}.")
    if matrix.dtype.kind not in "iuf":
        raise InputError(f"counts: counts must be numbers, got dtype {matrix.dtype}.")
    names = list(range(matrix.shape[1])) if classes is None else list(classes)
    if len(names) != matrix.shape[1]:
        raise InputError(f"classes: {len(names)} names for {matrix.shape[1]} columns of counts.")
    t, k = np.meshgrid(np.arange(matrix.shape[0]), np.arange(matrix.shape[1]), indexing="ij")
    return pl.DataFrame({"period": t.ravel(), "class": [names[i] for i in k.ravel()],
                         "count": matrix.ravel().astype(np.float64)})


def stability_from_history(counts: Any, prices: Any = None, *, reference: Any = 1, positive_class: Any = None,
                           low_prevalence_below: float = 0.2, classes: Sequence | None = None,
                           alpha: float = POLICY.alpha, max_abs_change: float = POLICY.prevalence_change,
                           psi_threshold: float = POLICY.psi, max_relative_change: float = POLICY.price_change,
                           correction: str = POLICY.correction, period_column: str = "period",
                           class_column: str = "class", count_column: str = "count",
                           price_column: str = "price") -> Stability:
    """Measure whether prevalence and price distributions are stable, so that the flows call
    :func:`recommend` with facts (ONS Annex F: "past data can be used to examine how the class
    has changed over time").

    The rule is described under :class:`Stability`.

    Parameters
    ----------
    counts : polars.DataFrame, pyarrow.Table or 2-D array
        Rows (period, class, count[, source]) as :func:`metrics_core.checks.stability.class_counts`
        returns, or a periods x classes array of counts (periods 0..T-1, columns named by
        ``classes``).
    prices : polars.DataFrame or pyarrow.Table, optional
        Item rows (period, class, price).
    reference : int or sequence
        Size of the reference window (first periods) or its period values.
    positive_class : optional
        Binary: the positive class, to judge whether its prevalence is low.
    low_prevalence_below : float
        Share in (0, 1) under which the positive prevalence counts as low.
    classes : sequence, optional
        Column names of an array of counts.
    alpha, max_abs_change, psi_threshold, max_relative_change : float
        Level of the adjusted tests and the effect sizes of the rule (see :class:`Stability`);
        the defaults are the alert policy's ``alpha``, ``prevalence_change``, ``psi`` and
        ``price_change`` (:data:`metrics_core.monitoring.policy.POLICY`).
    correction : {"bh", "holm", "bonferroni"}
        Multiple-testing correction (default: the alert policy's, BH).
    period_column, class_column, count_column, price_column : str
        Column names of ``counts`` and ``prices``.

    Returns
    -------
    Stability
        With the underlying checks and a ``reason`` in words.

    Raises
    ------
    InputError
        A reference window that leaves nothing to compare, a missing column, bad counts, or a
        ``positive_class`` that is not among the classes.

    Examples
    --------
    >>> s = stability_from_history([[900, 100], [905, 95], [898, 102]], positive_class=1)
    >>> s.prevalence_stable, s.price_stable, s.low_prevalence
    (True, False, True)
    >>> s.recommend("binary").metric
    'fbeta'
    """
    frame = _history_frame(counts, classes)
    require_columns(frame, "counts", [period_column, class_column, count_column])
    if not isinstance(low_prevalence_below, (int, float)) or not 0 < low_prevalence_below < 1:
        raise InputError(f"low_prevalence_below: expected a share in (0, 1), got {low_prevalence_below!r}.")
    prevalence = prevalence_stability(frame, reference=reference, alpha=alpha, max_abs_change=max_abs_change,
                                      psi_threshold=psi_threshold, correction=correction, period_column=period_column,
                                      class_column=class_column, count_column=count_column)
    judged = prevalence.table["source"].unique().to_list()
    source = "label" if "label" in judged else ("prediction" if "prediction" in judged else judged[0])
    prevalence_stable = bool(prevalence.figures[f"{source}_stable"])
    reasons = [f"Prevalence, judged on the {source!r} counts. {prevalence.message}"]
    positive_prevalence = low = None
    if positive_class is not None:
        positive_prevalence, low, why = _positive_prevalence(prevalence, source, positive_class, low_prevalence_below)
        reasons.append(why)
    price = None
    if prices is None:
        price_stable = False
        reasons.append("Price stability not measured (no prices given): treated as unstable.")
    else:
        price = price_stability(prices, reference=reference, alpha=alpha, max_relative_change=max_relative_change,
                                correction=correction, period_column=period_column,
                                class_column=class_column, price_column=price_column)
        price_stable = bool(price.figures["stable"])
        reasons.append(f"Prices: {price.message}")
    return Stability(prevalence_stable, price_stable, low, positive_prevalence, source, " ".join(reasons),
                     prevalence, price)


def _positive_prevalence(prevalence: CheckResult, source: str, positive_class: Any,
                         low_prevalence_below: float) -> tuple[float, bool, str]:
    """(share of the positive class in the reference window, is it low, the sentence saying so)."""
    ref = prevalence.table.filter(pl.col("source") == source).unique("class").select("class", "reference_count")
    total = ref["reference_count"].sum()
    hit = ref.filter(pl.col("class") == positive_class)["reference_count"]
    if hit.len() == 0:
        raise InputError(f"positive_class: {positive_class!r} is not a class of the counts "
                         f"(classes: {ref['class'].to_list()[:10]}).")
    share = float(hit[0] / total)
    low = share < low_prevalence_below
    return share, low, (f"Positive class {positive_class!r} has prevalence {share:.1%} in the reference "
                        f"window ({'low' if low else 'not low'}: threshold {low_prevalence_below:.0%}).")


def stability_from_rows(rows: Any, *, period_column: str = "period", label_column: str = "label",
                        prediction_column: str | None = None, price_column: str | None = None,
                        **options: Any) -> Stability:
    """:func:`stability_from_history` measured on item rows: one row per classified item.

    A date or timestamp period column is grouped by month on its local calendar
    (:func:`metrics_core.checks.stability.month_periods`). Counts the rows per period and class (:func:`metrics_core.checks.stability.class_counts`, labels
    and, when ``prediction_column`` is given, predictions) and takes each labelled class's prices
    from ``price_column`` when given (ONS Annex F: how the class has changed over time).

    Parameters
    ----------
    rows : polars.DataFrame or pyarrow.Table
        Item rows with the period, the label and optionally the prediction and the price.
    period_column, label_column, prediction_column, price_column : str
        Column names; ``prediction_column`` and ``price_column`` None leave those out.
    **options
        Keyword arguments of :func:`stability_from_history` (``reference``, ``positive_class``,
        ``alpha``, the thresholds).

    Returns
    -------
    Stability
        As :func:`stability_from_history`. Fewer than two periods is an :class:`InputError`
        there (stability cannot be measured on one period).

    Examples
    --------
    >>> rows = pl.DataFrame({"period": [1] * 50 + [2] * 50, "label": (["a"] * 30 + ["b"] * 20) * 2})
    >>> stability_from_rows(rows).prevalence_stable
    True
    """
    from metrics_core.checks.stability import check_periods, class_counts, label_prices, month_periods

    frame = as_frame(month_periods(rows, period_column), "rows")
    require_columns(frame, "rows", [period_column, label_column])
    check_periods(frame, period_column)
    counts = class_counts(frame, period_column=period_column, label_column=label_column,
                          prediction_column=prediction_column)
    # Only labelled rows have a class to take a price for; checked under the caller's column names.
    prices = None if price_column is None else label_prices(frame, period_column=period_column,
                                                            label_column=label_column, price_column=price_column)
    return stability_from_history(counts, prices, **options)
