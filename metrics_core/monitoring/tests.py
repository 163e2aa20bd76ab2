"""The monitoring tests of a period against its reference (ONS Annex F) and the binned price impact (Annex E)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from metrics_core import drift
from metrics_core.counts import ScoreCounts
from metrics_core.dataset.parallel import ordered_map
from metrics_core.errors import InputError
from metrics_core.monitoring.period import PeriodStats, binned
from metrics_core.monitoring.policy import KINDS
from metrics_core.significance import TestResult, correct
from metrics_core.threads import kernel_threads

__all__ = ["TestKey", "compare", "price_impact_binned", "MIN_PRICE_ROWS"]

#: Fewest rows of a class (in reference and current) for its price distribution to be tested.
MIN_PRICE_ROWS = 20


@dataclass(frozen=True, order=True)
class TestKey:
    """Which test: its ``kind`` (a key of :data:`~metrics_core.monitoring.policy.KINDS`,
    ``"headline"`` for the drop of the headline metric, or ``"new_class"`` for a class outside the
    class list, which is counted, not tested) and the class it concerns (None for a test of the
    whole class distribution). ``name`` is the text form used as MLflow key and table row.

    >>> TestKey("prevalence_pred", "wine").name, TestKey("class_mix_label").name
    ('prevalence_pred:wine', 'class_mix_label')
    """

    __test__ = False  # not a pytest test class

    kind: str
    cls: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS and self.kind not in ("headline", "new_class"):
            raise InputError(f"tests: unknown test kind {self.kind!r}; expected one of {sorted(KINDS)}.")

    @property
    def name(self) -> str:
        return self.kind if self.cls is None else f"{self.kind}:{self.cls}"

    @property
    def source(self) -> str:
        """``"labels"`` or ``"predictions"`` for the prevalence and class-mix tests, else ``""``."""
        if self.kind.endswith("_label"):
            return "labels"
        return "predictions" if self.kind.endswith("_pred") else ""


def _median_log(sc: ScoreCounts) -> float:
    """Median of a binned distribution: the point of the bin holding the middle row (bin width
    0.002 in log10 price by default, i.e. within 0.5 % of the exact median)."""
    cum = np.cumsum(sc.counts)
    return float(sc.scores[int(np.searchsorted(cum, cum[-1] / 2.0, side="left"))])


def _prevalence_tests(reference: PeriodStats, current: PeriodStats) -> dict[TestKey, TestResult]:
    """Class-mix (3+ classes) and per-class prevalence tests, on labels and on predictions."""
    tests: dict[TestKey, TestResult] = {}
    names = reference.class_names()
    classes = [1] if reference.task == "binary" else range(reference.labels.size)
    for source in ("label", "pred"):
        ref = reference.label_counts if source == "label" else reference.pred_counts
        cur = current.label_counts if source == "label" else current.pred_counts
        if ref is None or cur is None:
            continue
        n1, n2 = int(ref.sum()), int(cur.sum())
        if reference.labels.size > 2:
            chi = drift.chi_squared_counts(ref, cur)
            ps = drift.psi(dict(zip(names, ref.tolist())), dict(zip(names, cur.tolist()))).statistic
            tests[TestKey(f"class_mix_{source}")] = dataclasses.replace(
                chi, effect_size=ps, effect_name="PSI of the class distribution",
                details={**chi.details, "cramers_v": chi.effect_size})
        for j in classes:
            tests[TestKey(f"prevalence_{source}", names[j])] = drift.two_proportion_z(int(ref[j]), n1, int(cur[j]), n2)
    return tests


def _score_test(r: ScoreCounts, c: ScoreCounts) -> TestResult:
    ks = drift.ks(r, c)
    w1 = drift.wasserstein(r, c, threshold=None).statistic
    ps = drift.psi(r, c, bins=10, threshold=None).statistic
    mean_r = float(np.dot(r.scores, r.counts) / r.total)
    mean_c = float(np.dot(c.scores, c.counts) / c.total)
    return dataclasses.replace(ks, effect_size=w1, effect_name="Wasserstein-1 distance of the scores",
                               details={**ks.details, "ks_d": ks.statistic, "psi": ps, "mean_reference": mean_r,
                                        "mean_current": mean_c})


def _price_test(r: ScoreCounts, c: ScoreCounts) -> TestResult:
    ks = drift.ks(r, c)
    w1 = drift.wasserstein(r, c, threshold=None).statistic
    shift = float(np.dot(c.scores, c.counts) / c.total - np.dot(r.scores, r.counts) / r.total)
    m_r, m_c = 10 ** _median_log(r), 10 ** _median_log(c)
    # The sign goes on W, not on 10**W - 1: a uniform fall by a factor f then reads f - 1, as a rise does.
    effect = 10 ** math.copysign(w1, shift) - 1.0
    return dataclasses.replace(ks, effect_size=effect, effect_name="relative price shift",
                               details={**ks.details, "ks_d": ks.statistic, "median_reference": m_r,
                                        "median_current": m_c, "geometric_mean_change": 10 ** shift - 1.0})


def compare(reference: PeriodStats, current: PeriodStats) -> dict[TestKey, TestResult]:
    """The monitoring tests of a period against the reference window (ONS Annex F).

    Parameters
    ----------
    reference, current : PeriodStats
        Statistics of the reference window and of the period, over the same class list and bins.

    Returns
    -------
    dict of TestKey to TestResult
        In this order:

        - ``prevalence_label:<c>`` / ``prevalence_pred:<c>``: two-proportion z-test of class c's
          share (labels / predictions; binary: the positive class only); effect = current minus
          reference share. Without labels in either period the label tests are left out.
        - ``class_mix_label`` / ``class_mix_pred`` (3+ classes): chi-squared homogeneity test of
          the class counts; effect = PSI of the class distribution.
        - ``score:<c>``: two-sample KS on the binned score distribution of class c; effect =
          Wasserstein-1 distance in score units (mean absolute shift); details: PSI over 10
          reference deciles, means.
        - ``price_label:<c>``, ``price_false_positive:<c>``, ``price_false_negative:<c>`` (when
          both periods have labels and prices, K <= ``MAX_CELL_CLASSES``): the same price test on
          the rows labelled c and on the confusion cells ONS Annex E uses, class c's false
          positives (predicted c, labelled otherwise) and false negatives (labelled c, predicted
          otherwise). A price rise in a class the model rarely predicts shows here, not in
          ``price:<c>``.
        - ``price:<c>``: KS on the binned log prices of predicted class c (both with at least
          :data:`MIN_PRICE_ROWS` rows, else left out); effect = relative price shift
          ``10**(±W) - 1``, W the Wasserstein-1 distance of the log10 prices, signed by the change
          of the mean log price: a uniform 15 % rise gives 0.15, a uniform 15 % fall -0.15. Unlike
          the median, it does not jump between the modes of a multimodal price distribution (pack sizes); medians and
          the geometric-mean change are in the details.

        An undefined test (e.g. a class absent from both periods) has a nan p-value and effect.

    Raises
    ------
    InputError
        When the two statistics have different class lists or bins.

    Examples
    --------
    >>> from metrics_core.monitoring.period import Bins, update
    >>> ref = update("binary", np.array([0, 1]), Bins(score_bins=10), np.array([0, 1, 0, 0]))
    >>> cur = update("binary", np.array([0, 1]), Bins(score_bins=10), np.array([1, 1, 0, 1]))
    >>> [k.name for k in compare(ref, cur)]
    ['prevalence_pred:1']
    """
    if not np.array_equal(reference.labels, current.labels) or reference.bins != current.bins:
        raise InputError("reference and current: statistics over different class lists or bins.")
    tests = _prevalence_tests(reference, current)
    jobs: list[tuple[TestKey, _Job]] = []
    for s, cls in enumerate(reference.score_names() if current.score_counts is not None else []):
        jobs.append((TestKey("score", cls), (_score_test, reference.score_distribution(s),
                                             current.score_distribution(s))))
    if reference.price_counts is not None and current.price_counts is not None:
        names = reference.class_names()
        for j in range(reference.labels.size):
            if reference.price_counts[j].sum() < MIN_PRICE_ROWS or current.price_counts[j].sum() < MIN_PRICE_ROWS:
                continue
            jobs.append((TestKey("price", names[j]), (_price_test, reference.price_distribution(j),
                                                      current.price_distribution(j))))
    if reference.price_cells is not None and current.price_cells is not None:
        jobs += _cell_price_jobs(reference, current)
    tests.update(zip([key for key, _ in jobs], _run([job for _, job in jobs])))
    return tests


#: A distribution test to run: the test and the (reference, current) distributions it compares.
_Job = tuple[Callable[[ScoreCounts, ScoreCounts], TestResult], ScoreCounts, ScoreCounts]


def _run(jobs: list[_Job]) -> list[TestResult]:
    """The distribution tests' results, in order, on up to :func:`~metrics_core.threads.kernel_threads` threads.

    scipy's exact two-sample KS p-value (up to 10,000 rows a side: up to 0.1 s a test, dozens of
    tests a period) and the Smirnov sum release the GIL; each test gives what it gives alone.
    """
    return list(ordered_map(lambda job: job[0](job[1], job[2]), jobs, kernel_threads(len(jobs), min_size=2)))


#: The price histograms of class c that ONS Annex E looks at, from the (label, predicted) cells.
CELL_GROUPS = {"price_label": lambda cells, c: cells[c].sum(axis=0),
               "price_false_positive": lambda cells, c: cells[:, c].sum(axis=0) - cells[c, c],
               "price_false_negative": lambda cells, c: cells[c].sum(axis=0) - cells[c, c]}


def _cell_price_jobs(reference: PeriodStats, current: PeriodStats) -> list[tuple[TestKey, _Job]]:
    """Price tests per labelled class and per Annex E error cell (false positives, false negatives),
    reference against current; groups under :data:`MIN_PRICE_ROWS` rows in either are left out."""
    jobs: list[tuple[TestKey, _Job]] = []
    points = reference.bins.price_points()
    names = reference.class_names()
    for kind, group in CELL_GROUPS.items():
        binary_cell = reference.task == "binary" and kind != "price_label"  # FP of 1 = FN of 0
        for j in ([1] if binary_cell else range(reference.labels.size)):
            r, c = group(reference.price_cells, j), group(current.price_cells, j)
            if r.sum() >= MIN_PRICE_ROWS and c.sum() >= MIN_PRICE_ROWS:
                jobs.append((TestKey(kind, names[j]), (_price_test, binned(points, r), binned(points, c))))
    return jobs


def price_impact_binned(stats: PeriodStats, alpha: float = 0.05) -> pl.DataFrame | None:
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
    >>> from metrics_core.monitoring.period import Bins, update
    >>> s = update("binary", np.array([0, 1]), Bins(), np.array([0, 1, 1]), label_idx=np.array([0, 1, 0]),
    ...            price=np.array([1.0, 2.0, 3.0]))
    >>> price_impact_binned(s).select("class", "group", "n").row(0)
    ('0', 'false_positive', 0)
    """
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
        ref_median = 10 ** _median_log(ref) if ref is not None else math.nan
        for group, counts in groups.items():
            n = int(counts.sum())
            row = {"class": name, "group": group, "n": n, "n_labelled": int(labelled.sum()), "ks_statistic": math.nan,
                   "ks_p_value": math.nan, "median": math.nan, "labelled_median": float(ref_median),
                   "median_difference": math.nan}
            if n and ref is not None:
                cur = binned(points, counts)
                median = 10 ** _median_log(cur)
                row.update(median=float(median), median_difference=float(median - ref_median))
                jobs.append((row, (drift.ks, ref, cur)))
            rows.append(row)
    for (row, _), res in zip(jobs, _run([job for _, job in jobs])):
        row.update(ks_statistic=float(res.statistic), ks_p_value=float(res.p_value))
    table = pl.DataFrame(rows)
    adjusted = correct(table["ks_p_value"].to_numpy(), "bh", alpha).p_adjusted
    return table.insert_column(6, pl.Series("ks_p_adjusted", adjusted))
