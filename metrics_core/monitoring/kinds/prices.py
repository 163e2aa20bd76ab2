"""The price kinds: the log-price distribution of each predicted class, labelled class and Annex E error cell.

One family, as all four run the same test (:func:`price_test`) on different rows of a class:
``price`` its predicted rows, ``price_label`` its labelled rows, ``price_false_positive`` /
``price_false_negative`` the confusion cells ONS Annex E looks at.
"""

from __future__ import annotations

import dataclasses
import math
from functools import partial

import numpy as np

from metrics_core import drift
from metrics_core.counts import ScoreCounts
from metrics_core.monitoring.kinds.base import (PRICES, Job, Kind, Metric, PanelSpec, Planned, TestKey, binned_job,
                                                stacked)
from metrics_core.monitoring.period import PeriodStats, binned
from metrics_core.monitoring.sample import CellSums, expanded_cells, unequal
from metrics_core.price import binned_median, binned_medians
from metrics_core.significance import TestResult

__all__ = ["PRICE", "PRICE_LABEL", "PRICE_FALSE_POSITIVE", "PRICE_FALSE_NEGATIVE", "MIN_PRICE_ROWS", "price_test",
           "price_tests", "design_cells"]

#: Fewest rows of a class (in reference and current) for its price distribution to be tested.
MIN_PRICE_ROWS = 20


def price_test(r: ScoreCounts, c: ScoreCounts, n_effective: tuple[float, float] | None = None) -> TestResult:
    """KS on binned log10 prices; effect = relative price shift ``10**(±W) - 1``, W the
    Wasserstein-1 distance, signed by the change of the mean log price; details: KS D, medians,
    geometric-mean change. With ``n_effective`` the histograms may be weighted (a design-weighted
    sample): each is rescaled to its effective size (:func:`metrics_core.drift.at_effective_size`,
    whole counts for equal weights, so the test is then the unweighted one exactly) and the KS
    p-value read at those sizes (:func:`metrics_core.drift.ks`)."""
    if n_effective is not None:
        r, c = (drift.at_effective_size(x, n) for x, n in zip((r, c), n_effective))
        ks, w1 = drift.ks(r, c, n_effective=n_effective), drift.wasserstein(r, c, threshold=None).statistic
    else:  # one call: KS and Wasserstein share the merge of the two distributions (the single tests' values)
        found = drift.drift_tests(r, c, ("ks", "wasserstein"), thresholds={"wasserstein": None})
        ks, w1 = found["ks"], found["wasserstein"].statistic
    return _price_result(r, c, ks, w1)


def price_tests(jobs: list[Job]) -> list[TestResult]:
    """:func:`price_test` (unweighted) of each job (histograms over the same bins), their KS and
    Wasserstein parts computed together (:func:`metrics_core.drift.ks_wasserstein_rows`, the same values)."""
    points, reference, current = stacked(jobs)
    tests, w1 = drift.ks_wasserstein_rows(points, reference, current)
    medians = zip(*(binned_medians(points, m).tolist() for m in (reference, current)))
    return [_price_result(job.reference, job.current, ks, w, m)
            for job, ks, w, m in zip(jobs, tests, w1.tolist(), medians, strict=True)]


def _price_result(r: ScoreCounts, c: ScoreCounts, ks: TestResult, w1: float,
                  medians: tuple[float, float] | None = None) -> TestResult:
    """The price test's result from its KS result, the Wasserstein-1 distance of the log prices and
    their binned medians (reference, current; :func:`~metrics_core.price.binned_median` when not given)."""
    shift = float(np.dot(c.scores, c.counts) / c.total - np.dot(r.scores, r.counts) / r.total)
    m_r, m_c = (10 ** m for m in (medians or (binned_median(r), binned_median(c))))
    # The sign goes on W, not on 10**W - 1: a uniform fall by a factor f then reads f - 1, as a rise does.
    effect = 10 ** math.copysign(w1, shift) - 1.0
    return dataclasses.replace(ks, effect_size=effect, effect_name="relative price shift",
                               details={**ks.details, "ks_d": ks.statistic, "median_reference": m_r,
                                        "median_current": m_c, "geometric_mean_change": 10 ** shift - 1.0})


def _predicted_tests(reference: PeriodStats, current: PeriodStats) -> Planned:
    """Price test of each predicted class with :data:`MIN_PRICE_ROWS` rows in both periods."""
    if reference.price_counts is None or current.price_counts is None:
        return []
    names = reference.class_names()
    points = reference.bins.price_points()
    return [(TestKey("price", names[j]),
             binned_job(price_test, price_tests, points, reference.price_counts[j], current.price_counts[j]))
            for j in range(reference.labels.size)
            if reference.price_counts[j].sum() >= MIN_PRICE_ROWS and current.price_counts[j].sum() >= MIN_PRICE_ROWS]


#: The price histograms of class c that ONS Annex E looks at, from the margins of the (label,
#: predicted) cells (:attr:`~metrics_core.monitoring.period.PeriodStats.price_cell_margins`).
CELL_GROUPS = {"price_label": lambda by_label, by_pred, both, c: by_label[c],
               "price_false_positive": lambda by_label, by_pred, both, c: by_pred[c] - both[c],
               "price_false_negative": lambda by_label, by_pred, both, c: by_label[c] - both[c]}


def _cell_mask(kind: str, label: np.ndarray, pred: np.ndarray, c: int) -> np.ndarray:
    """The (label, predicted) cells of :data:`CELL_GROUPS`' group ``kind`` of class c, as a mask."""
    if kind == "price_label":
        return label == c
    return (pred == c) & (label != c) if kind == "price_false_positive" else (label == c) & (pred != c)


def design_cells(current: PeriodStats) -> CellSums | None:
    """The period's Annex E price cells weighted by the design, when its labelled sample stands for
    unequal shares of the delivery (:func:`~metrics_core.monitoring.sample.unequal`); else None
    (the labelled rows' cells, ``price_cells``, are then read as they are).

    Returns
    -------
    CellSums or None
        Per (label, predicted class, price bin): Σ a and Σ a² over the labelled rows, a the weight
        a row carries in the estimate of the delivery (:func:`~metrics_core.monitoring.sample.expanded_cells`).
        None too for a period judged without its labels (no ``label_counts``).
    """
    s = current.sample
    if s is None or s.price_cells is None or current.label_counts is None or not unequal(s):
        return None  # (no label counts: a period, or segment, judged without its labels)
    return expanded_cells(s, s.price_cells)


def _design_group(kind: str, cells: CellSums, c: int) -> tuple[np.ndarray, float]:
    """A group's design-weighted histogram (Σ a per price bin) and its Kish effective size (Σ a)² / Σ a²."""
    label, pred, price = cells.index()
    keep = _cell_mask(kind, label, pred, c)
    hist = np.bincount(price[keep], weights=cells.dw[keep], minlength=cells.shape[2])
    square = float(cells.dw2[keep].sum())
    return hist, (float(hist.sum()) ** 2 / square if square > 0 else 0.0)


def _cell_tests(kind: str, reference: PeriodStats, current: PeriodStats) -> Planned:
    """Price tests of one group of cells per class (labelled rows, false positives or false
    negatives), reference against current; groups under :data:`MIN_PRICE_ROWS` rows in either are left out.

    A labelled sample with unequal weights (:func:`design_cells`) is read weighted by the design:
    the group's histogram of Σ a per price bin, its size Kish's effective sample size, which is
    the one :data:`MIN_PRICE_ROWS` and the KS p-value read."""
    design = design_cells(current)
    if reference.price_cells is None or (current.price_cells is None and design is None):
        return []
    points, names = reference.bins.price_points(), reference.class_names()
    binary_cell = reference.task == "binary" and kind != "price_label"  # FP of 1 = FN of 0
    group = CELL_GROUPS[kind]
    planned: Planned = []
    for j in ([1] if binary_cell else range(reference.labels.size)):
        r = group(*reference.price_cell_margins, j)
        c, n_c = (group(*current.price_cell_margins, j), None) if design is None else _design_group(kind, design, j)
        if r.sum() >= MIN_PRICE_ROWS and (c.sum() if n_c is None else n_c) >= MIN_PRICE_ROWS:
            job = binned_job(price_test, price_tests, points, r, c) if design is None else Job(
                partial(price_test, n_effective=(float(r.sum()), n_c)), binned(points, r), binned(points, c))
            planned.append((TestKey(kind, names[j]), job))
    return planned


def _render(rows: str, r, tail: str) -> tuple[str, str]:
    verb = "rose" if r.effect > 0 else "fell"
    return (f"prices of {r.key.cls!r}{rows} {verb} {abs(r.effect):.1%}",
            f"median {r.reference:.2f} -> {r.current:.2f}, threshold {r.threshold:.0%}; {tail}")


def _predicted_metrics(key: TestKey, t: TestResult) -> dict[str, float]:
    return {f"price_median/{key.cls}": t.details["median_current"], f"price_shift/{key.cls}": t.effect_size}


def _cell_metrics(key: TestKey, t: TestResult) -> dict[str, float]:
    return {f"{key.kind}_shift/{key.cls}": t.effect_size}


_MEDIANS = ("median_reference", "median_current")
PANEL = PanelSpec(4, "price_change", "max_abs_price_shift", "largest price change\nof a class, %", "price_change",
                  scale=100, legend="predicted classes",
                  extra=(("price_change_label", "max_abs_price_shift_label", "labelled classes"),))
_CELLS = Metric("max_abs_price_shift_cells", f"{PRICES}/largest relative shift misclassified", True)

PRICE = Kind("price", "price_change", partial(_render, ""), _MEDIANS, tests=_predicted_tests,
             metrics=_predicted_metrics, worst="max_abs_price_shift",
             logged=(Metric("price_median/", f"{PRICES}/median "), Metric("price_shift/", f"{PRICES}/relative shift "),
                     Metric("max_abs_price_shift", f"{PRICES}/largest relative shift", True)), panel=PANEL)
PRICE_LABEL = Kind("price_label", "price_change", partial(_render, " (labelled rows)"), _MEDIANS, "labels",
                   partial(_cell_tests, "price_label"), _cell_metrics, "max_abs_price_shift_label",
                   (Metric("price_label_shift/", f"{PRICES}/relative shift labelled "),
                    Metric("max_abs_price_shift_label", f"{PRICES}/largest relative shift labelled", True)), PANEL)
PRICE_FALSE_POSITIVE = Kind("price_false_positive", "price_change", partial(_render, " false positives"), _MEDIANS,
                            tests=partial(_cell_tests, "price_false_positive"), metrics=_cell_metrics,
                            worst=_CELLS.key, panel=PANEL, tier=3,
                            logged=(Metric("price_false_positive_shift/", f"{PRICES}/relative shift false positives "),
                                    _CELLS))
PRICE_FALSE_NEGATIVE = Kind("price_false_negative", "price_change", partial(_render, " false negatives"), _MEDIANS,
                            tests=partial(_cell_tests, "price_false_negative"), metrics=_cell_metrics,
                            worst=_CELLS.key, panel=PANEL, tier=3,
                            logged=(Metric("price_false_negative_shift/", f"{PRICES}/relative shift false negatives "),
                                    _CELLS))
