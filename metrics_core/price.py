"""ONS Annex E: the price impact of classification errors and the index bias, from rows or from binned statistics."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import polars as pl

from metrics_core import drift
from metrics_core._validate import check_lengths, to_labels, to_numpy
from metrics_core.counts import ScoreCounts
from metrics_core.errors import InputError, bad_rows
from metrics_core.significance import correct

if TYPE_CHECKING:
    from metrics_core.monitoring.period import PeriodStats

FORMULAS = ("jevons", "dutot", "carli")
GROUPS = ("false_positive", "false_negative", "classified_positive")


@dataclass(frozen=True)
class PriceImpact:
    """The price impact of classification errors for each assessed class (ONS Annex E).

    Parameters
    ----------
    distributions : polars.DataFrame
        One row per (class, group), group one of "false_positive", "false_negative",
        "classified_positive", each compared with the labelled positives of the class: n,
        n_labelled, ks_statistic, ks_p_value, ks_p_adjusted (BH over the table), ks_reject,
        mean, labelled_mean, mean_difference, median, labelled_median, median_difference
        (group minus labelled; nan for an empty group).
    index : polars.DataFrame or None
        One row per class (None without base prices): n_labelled, n_classified,
        index_labelled, index_classified, bias = index_classified - index_labelled,
        relative_bias = index_classified / index_labelled - 1.
    formula : str
        The elementary index formula used.
    figures : dict
        max_ks_statistic, n_ks_rejected and (with an index) max_abs_index_bias, for logging.

    Examples
    --------
    >>> price_impact([1, 1, 0, 0], [1, 0, 1, 0], [10, 20, 30, 5], pos_label=1).figures["n_ks_rejected"]
    0
    """

    distributions: pl.DataFrame
    index: pl.DataFrame | None
    formula: str
    figures: dict


def _prices(x: Any, name: str) -> np.ndarray:
    arr = to_numpy(x, name)
    if arr.dtype.kind not in "fiu":
        raise InputError(f"{name}: prices must be numbers, got dtype {arr.dtype} (e.g. row 0 = {arr[0]!r}).")
    arr = np.asarray(arr, dtype=np.float64)
    bad = ~np.isfinite(arr) | (arr <= 0)
    if bad.any():
        raise bad_rows(name, "price that is NaN, infinite or not positive", bad, arr,
                       "Drop these rows or fix the prices before computing the index impact.")
    return arr


def price_index(base_price: Any, price: Any, weight: Any = None, formula: str = "jevons") -> float:
    """Elementary price index between two periods over matched items (1.0 = no change).

    Parameters
    ----------
    base_price : array-like of float
        Base-period price of each item (> 0).
    price : array-like of float
        Current-period price of the same items (> 0).
    weight : array-like of float, optional
        Expenditure weight of each item (>= 0), e.g. base-period expenditure.
    formula : {"jevons", "dutot", "carli"}
        The elementary aggregate formula.

    Returns
    -------
    float
        The index; nan (with a warning) when the items have zero total weight.

    Notes
    -----
    The elementary aggregates of the CPI manual (ILO/IMF/OECD/UN/Eurostat/World Bank 2004,
    ch. 20) as the ONS guidance Annex E uses them. With price relatives r_i = p1_i / p0_i and,
    when ``weight`` is given, shares
    s_i = w_i / sum w (e.g. base-period expenditure):

    - ``jevons``: geometric mean of relatives, ``prod r_i^(1/n)``; weighted:
      ``exp(sum s_i ln r_i)`` (weighted geometric mean, the geometric Laspeyres form);
    - ``carli``: arithmetic mean of relatives, ``sum r_i / n``; weighted: ``sum s_i r_i``
      (the Laspeyres form with base-period expenditure shares);
    - ``dutot``: ratio of average prices, ``sum p1_i / sum p0_i``; unweighted by definition, so
      weights are an error.

    Examples
    --------
    >>> price_index([10, 10, 10], [10, 20, 40])
    2.0
    >>> round(price_index([10, 10, 10], [10, 20, 40], formula="dutot"), 4)
    2.3333
    """
    if formula not in FORMULAS:
        raise InputError(f"formula: expected one of {FORMULAS}, got {formula!r}.")
    p0 = _prices(base_price, "base_price")
    p1 = _prices(price, "price")
    check_lengths(base_price=p0, price=p1)
    w = _weights(weight, p0.size)
    return _index(p0, p1, w, formula)


def _weights(weight: Any, n: int) -> np.ndarray | None:
    if weight is None:
        return None
    w = to_numpy(weight, "weight")
    if w.dtype.kind not in "fiu":
        raise InputError(f"weight: weights must be numbers, got dtype {w.dtype}.")
    w = np.asarray(w, dtype=np.float64)
    check_lengths(weight=w, price=np.empty(n))
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        raise bad_rows("weight", "negative, NaN or infinite expenditure weight", bad, w, "Weights must be >= 0.")
    return w


def _index(p0: np.ndarray, p1: np.ndarray, w: np.ndarray | None, formula: str) -> float:
    if p0.size == 0:
        return float("nan")
    if formula == "dutot":
        if w is not None:
            raise InputError("weight: the Dutot index is unweighted by definition; use formula='jevons' or "
                             "'carli' with expenditure weights, or drop the weights.")
        return float(p1.sum() / p0.sum())
    r = p1 / p0
    if w is None:
        return float(np.exp(np.log(r).mean())) if formula == "jevons" else float(r.mean())
    total = w.sum()
    if total == 0:
        warnings.warn("price index: the items have zero total weight; the index is nan.", stacklevel=3)
        return float("nan")
    s = w / total
    return float(np.exp(np.dot(s, np.log(r)))) if formula == "jevons" else float(np.dot(s, r))


def _py(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _describe(x: np.ndarray) -> tuple[float, float]:
    return (float(x.mean()), float(np.median(x))) if x.size else (float("nan"), float("nan"))


def _impact_inputs(y_true, y_pred, price, base_price, weight, labels, pos_label, formula):
    """Checked (y_true, y_pred, price, base_price, weight, classes) of :func:`price_impact`."""
    if formula not in FORMULAS:
        raise InputError(f"formula: expected one of {FORMULAS}, got {formula!r}.")
    if labels is not None and pos_label is not None:
        raise InputError("labels, pos_label: give one of them (pos_label=c is labels=[c]).")
    # The contract's label rules (null, NaN, mixed types), as binary_report applies them: a NaN label is
    # missing, not a class of its own (NaN != NaN would also make it a false positive of every class).
    t = to_labels(y_true, "y_true")
    p = to_labels(y_pred, "y_pred", "prediction")
    x = _prices(price, "price")
    p0 = None if base_price is None else _prices(base_price, "base_price")
    n = check_lengths(y_true=t, y_pred=p, price=x, base_price=p0)
    w = _weights(weight, n)
    if formula == "dutot" and w is not None and p0 is not None:
        raise InputError("weight: the Dutot index is unweighted by definition; use formula='jevons' or "
                         "'carli' with expenditure weights, or drop the weights.")
    if pos_label is not None:
        labels = [pos_label]
    if (t.dtype.kind in "biuf") != (p.dtype.kind in "biuf"):
        raise InputError(f"y_true, y_pred: the label values cannot be compared (dtype {t.dtype} vs {p.dtype}); "
                         "use one label type in both, e.g. all strings.")
    classes = np.unique(np.concatenate([t, p])) if labels is None else list(labels)
    if len(classes) == 0:
        raise InputError("labels: the class list is empty. Give at least one class to assess.")
    return t, p, x, p0, w, classes


def _distribution_rows(c: Any, lab: np.ndarray, cls: np.ndarray, x: np.ndarray) -> list[dict]:
    """Prices of the false positives, false negatives and classified positives of class c vs its labelled ones."""
    ref = x[lab]
    ref_mean, ref_median = _describe(ref)
    rows = []
    for group, mask in zip(GROUPS, (cls & ~lab, lab & ~cls, cls)):
        g = x[mask]
        mean, median = _describe(g)
        if g.size and ref.size:
            res = drift.ks(ref, g)
            d, pv = float(res.statistic), float(res.p_value)
        else:
            d = pv = float("nan")
        rows.append({"class": _py(c), "group": group, "n": int(g.size), "n_labelled": int(ref.size),
                     "ks_statistic": d, "ks_p_value": pv, "mean": mean, "labelled_mean": ref_mean,
                     "mean_difference": mean - ref_mean, "median": median, "labelled_median": ref_median,
                     "median_difference": median - ref_median})
    return rows


def _index_row(c: Any, lab: np.ndarray, cls: np.ndarray, x: np.ndarray, p0: np.ndarray, w: np.ndarray | None,
               formula: str) -> dict:
    """The index over the classified positives of class c minus the index over its labelled positives."""
    il = _index(p0[lab], x[lab], None if w is None else w[lab], formula)
    ic = _index(p0[cls], x[cls], None if w is None else w[cls], formula)
    return {"class": _py(c), "formula": formula, "n_labelled": int(lab.sum()), "n_classified": int(cls.sum()),
            "index_labelled": il, "index_classified": ic, "bias": ic - il,
            "relative_bias": ic / il - 1 if il == il else float("nan")}


def _figures(distributions: pl.DataFrame, index: pl.DataFrame | None) -> dict:
    """The largest KS statistic, the number of rejections and the largest absolute index bias."""
    ks = distributions["ks_statistic"].to_numpy()
    figures = {"max_ks_statistic": float(np.nanmax(ks)) if np.isfinite(ks).any() else float("nan"),
               "n_ks_rejected": int(distributions["ks_reject"].sum())}
    if index is not None:
        bias = index["bias"].to_numpy()
        figures["max_abs_index_bias"] = float(np.nanmax(np.abs(bias))) if np.isfinite(bias).any() else float("nan")
    return figures


def price_impact(y_true: Any, y_pred: Any, price: Any, *, base_price: Any = None, weight: Any = None,
                 labels: Sequence | None = None, pos_label: Any = None, formula: str = "jevons",
                 alpha: float = 0.05) -> PriceImpact:
    """Compare the prices of classification errors with the labelled positives (ONS Annex E).

    For each assessed class c (one-vs-rest): labelled positives L = {y_true = c}, classified
    positives C = {y_pred = c}, false positives C \\ L, false negatives L \\ C. The prices of
    false positives, false negatives and classified positives are each compared with those of
    L: two-sample KS test (:func:`metrics_core.drift.ks`; p-values BH-adjusted over the table),
    difference of means and of medians (group minus labelled). Similar distributions mean
    errors that probably leave the index unbiased (Annex E, figures 1 and 3).

    With ``base_price`` (the same items' prices in the base period), the index bias is the
    elementary index (:func:`price_index`, Jevons by default) over C minus the index over L,
    using expenditure ``weight`` where given.

    An empty group (no false positives, a class never labelled) gives nan statistics, with one
    warning that counts them; their p-values stay nan and out of the BH adjustment
    (:func:`metrics_core.significance.correct`).

    Parameters
    ----------
    y_true, y_pred : array-like
        Labelled and classified class of each item. A null or NaN label or prediction is an
        :class:`~metrics_core.errors.InputError` (the contract's label rules, as in
        :func:`metrics_core.report.binary_report`): drop unlabelled items first.
    price : array-like
        Current-period price of each item (> 0).
    base_price : array-like, optional
        Base-period price of each item, for the index bias.
    weight : array-like, optional
        Expenditure weight of each item (>= 0).
    labels : sequence, optional
        Classes to assess; default every class in y_true or y_pred.
    pos_label : scalar, optional
        Binary shortcut for ``labels=[pos_label]``.
    formula : {"jevons", "dutot", "carli"}
    alpha : float
        Level at which the BH adjustment flags a KS test (``ks_reject``).

    Returns
    -------
    PriceImpact
        Distributions per (class, group), index bias per class and summary figures.

    Examples
    --------
    >>> out = price_impact([1, 1, 1, 0], [1, 1, 0, 1], [10, 20, 40, 5],
    ...                    base_price=[10, 10, 10, 10], pos_label=1)
    >>> out.index.select("index_labelled", "index_classified", "bias").row(0)
    (2.0, 1.0, -1.0)
    """
    t, p, x, p0, w, classes = _impact_inputs(y_true, y_pred, price, base_price, weight, labels, pos_label, formula)
    dist, idx = [], []
    for c in classes:
        dist.extend(_distribution_rows(c, t == c, p == c, x))
        if p0 is not None:
            idx.append(_index_row(c, t == c, p == c, x, p0, w, formula))
    empty = [(r["class"], r["group"]) for r in dist if np.isnan(r["ks_statistic"])]
    if empty:
        c, g = empty[0]
        warnings.warn(f"price_impact: {len(empty)} comparison(s) have an empty group (e.g. class {c!r}, "
                      f"{g.replace('_', ' ')}); their KS statistics are nan.", stacklevel=2)
    adjusted, reject = correct(np.array([r["ks_p_value"] for r in dist]), "bh", alpha)
    distributions = pl.DataFrame(dist).insert_column(6, pl.Series("ks_p_adjusted", adjusted)) \
        .insert_column(7, pl.Series("ks_reject", reject))
    index = pl.DataFrame(idx) if idx else None
    return PriceImpact(distributions, index, formula, _figures(distributions, index))


def binned_median(sc: ScoreCounts) -> float:
    """Median of a binned distribution: the point of the bin holding the middle row (bin width
    0.002 in log10 price by default, i.e. within 0.5 % of the exact median).

    >>> binned_median(ScoreCounts(np.array([0.0, 1.0, 2.0]), np.array([1, 1, 3]), np.zeros(3, np.int64)))
    2.0
    """
    return float(binned_medians(sc.scores, sc.counts[None, :])[0])


def binned_medians(points: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """:func:`binned_median` of each row of ``counts`` (shape (P, G), over the bin ``points``, shape (G,)):
    the point of the first bin whose cumulative count reaches half the row's total (every row non-empty).

    >>> binned_medians(np.array([0.0, 1.0, 2.0]), np.array([[1, 1, 3], [3, 0, 1]])).tolist()
    [2.0, 0.0]
    """
    cum = np.cumsum(counts, axis=1)
    return points[np.argmax(cum >= cum[:, -1:] / 2.0, axis=1)]


def price_impact_binned(stats: "PeriodStats", alpha: float = 0.05) -> pl.DataFrame | None:
    """ONS Annex E from statistics: prices of each class's errors against its labelled positives.

    The binned twin of :func:`metrics_core.price.price_impact` (same groups and columns, no index
    bias: monitoring has no base-period prices). For class c: labelled positives L (label c),
    false positives (predicted c, label not c), false negatives (label c, predicted not c) and
    classified positives (predicted c), from ``stats.price_cells``. Each group is compared with L
    by KS on the binned log prices and by its median price.

    Parameters
    ----------
    stats : PeriodStats
        Statistics of one period with per-cell price histograms (labels and prices present).
    alpha : float
        Level of the Benjamini-Hochberg adjustment of the KS p-values over the whole table.

    Returns
    -------
    polars.DataFrame or None
        One row per class and group: class, group, n, n_labelled, ks_statistic, ks_p_value,
        ks_p_adjusted, median, labelled_median, median_difference. An empty group (or a class
        without labelled rows) gives nan statistics and is left out of the adjustment. None
        without per-cell price statistics (no labels, no prices, or more than
        ``MAX_CELL_CLASSES`` classes).

    Examples
    --------
    >>> from metrics_core.monitoring.bins import Bins
    >>> from metrics_core.monitoring.period import update
    >>> s = update("binary", np.array([0, 1]), Bins(), np.array([0, 1, 1]), label_idx=np.array([0, 1, 0]),
    ...            price=np.array([1.0, 2.0, 3.0]))
    >>> price_impact_binned(s).select("class", "group", "n").row(0)
    ('0', 'false_positive', 0)
    """
    from metrics_core.monitoring.kinds import Job, run_jobs  # monitoring reads this module: imported when called
    from metrics_core.monitoring.period import binned

    cells = stats.price_cells
    if cells is None:
        return None
    points = stats.bins.price_points()
    rows, jobs = [], []
    for c, name in enumerate(stats.class_names()):
        labelled = cells[c].sum(axis=0)
        groups = {"false_positive": cells[:, c].sum(axis=0) - cells[c, c], "false_negative": labelled - cells[c, c],
                  "classified_positive": cells[:, c].sum(axis=0)}
        ref = binned(points, labelled) if labelled.sum() else None
        ref_median = 10 ** binned_median(ref) if ref is not None else math.nan
        for group, counts in groups.items():
            n = int(counts.sum())
            row = {"class": name, "group": group, "n": n, "n_labelled": int(labelled.sum()), "ks_statistic": math.nan,
                   "ks_p_value": math.nan, "median": math.nan, "labelled_median": float(ref_median),
                   "median_difference": math.nan}
            if n and ref is not None:
                cur = binned(points, counts)
                median = 10 ** binned_median(cur)
                row.update(median=float(median), median_difference=float(median - ref_median))
                jobs.append((row, Job(drift.ks, ref, cur)))
            rows.append(row)
    for (row, _), res in zip(jobs, run_jobs([job for _, job in jobs])):
        row.update(ks_statistic=float(res.statistic), ks_p_value=float(res.p_value))
    table = pl.DataFrame(rows)
    adjusted = correct(table["ks_p_value"].to_numpy(), "bh", alpha).p_adjusted
    return table.insert_column(6, pl.Series("ks_p_adjusted", adjusted))
