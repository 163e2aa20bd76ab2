"""The record of a monitoring test kind (Kind), the test key, the logged metrics' sections and the over-time panels."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from metrics_core.counts import ScoreCounts
from metrics_core.dataset.parallel import ordered_map
from metrics_core.errors import InputError
from metrics_core.monitoring.period import binned
from metrics_core.significance import TestResult
from metrics_core.threads import in_background, kernel_threads, one_kernel_thread

if TYPE_CHECKING:
    from metrics_core.monitoring.period import PeriodStats

__all__ = ["Kind", "TestKey", "Metric", "PanelSpec", "Job", "KINDS", "run_jobs", "binned_job", "stacked", "HEADLINE",
           "PREVALENCE", "PERFORMANCE", "SCORES", "PRICES", "COUNTS", "OTHER"]

#: The chart sections of a period's logged metrics, in the order the MLflow UI shows them (it sorts
#: the sections, and digits sort before letters): number and title, before the "/" of a metric's name.
HEADLINE, PREVALENCE, PERFORMANCE, SCORES, PRICES, COUNTS, OTHER = (
    "1 headline and alert", "2 prevalence", "3 performance", "4 scores", "5 prices", "6 counts", "7 other")

#: The registry: kind name -> :class:`Kind`, in the order :func:`~metrics_core.monitoring.kinds.run_tests`
#: runs them. Filled once by :mod:`metrics_core.monitoring.kinds` (each family module's entries).
KINDS: dict[str, "Kind"] = {}


@dataclass(frozen=True, order=True)
class TestKey:
    """Which test: its ``kind`` (a key of the registry :data:`KINDS`: e.g. ``"headline"`` for the
    drop of the headline metric, ``"new_class"`` for a class outside the class list, which is
    counted, not tested), the class it concerns (None for a test of the whole class
    distribution) and the ``segment`` it ran in, ``(column, value)`` (empty: the whole period).
    ``name`` is the text form used as MLflow key and table row; a segment's test ends in
    ``@column=value``.

    >>> TestKey("prevalence_pred", "wine").name, TestKey("class_mix_label").name
    ('prevalence_pred:wine', 'class_mix_label')
    >>> TestKey("prevalence_pred", "wine", ("retailer", "shop_07")).name
    'prevalence_pred:wine@retailer=shop_07'
    """

    __test__ = False  # not a pytest test class

    kind: str
    cls: str | None = None
    segment: tuple[str, str] | tuple = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"tests: unknown test kind {self.kind!r}; expected one of {sorted(KINDS)}.")

    @property
    def name(self) -> str:
        base = self.kind if self.cls is None else f"{self.kind}:{self.cls}"
        return f"{base}@{self.segment_text}" if self.segment else base

    @property
    def segment_text(self) -> str:
        """The segment as ``column=value`` (``retailer=shop_07``); ``""`` for the whole period."""
        return f"{self.segment[0]}={self.segment[1]}" if self.segment else ""

    @property
    def source(self) -> str:
        """``"labels"`` or ``"predictions"`` for the tests of one of them (:attr:`Kind.source`), else ``""``."""
        return KINDS[self.kind].source


@dataclass(frozen=True)
class Metric:
    """A metric a kind logs: its semantic ``key`` (ending in ``/``: one per class, the class
    appended), its logged ``name`` (section, ``/``, then the chart's name; for one per class the
    prefix the class is appended to) and whether it is one of the parent run's time ``series``."""

    key: str
    name: str
    series: bool = False

    @property
    def per_class(self) -> bool:
        return self.key.endswith("/")


@dataclass(frozen=True)
class PanelSpec:
    """A panel of the over-time plot: ``column`` drawn from the semantic metric ``metric`` times
    ``scale``; ``label`` in words; ``threshold`` the :class:`~metrics_core.monitoring.AlertPolicy`
    field drawn as the practical threshold (times ``scale``), or ``threshold_column`` a metric
    holding one per period (drawn under its own name); ``extra`` further lines (column, metric,
    legend); ``band`` the (low, high) metrics of an interval; ``position`` from the top. ``{headline}`` and ``{estimated}`` in
    a text stand for the headline metric and its label-lag estimate's key (:meth:`named`)."""

    position: int
    column: str
    metric: str
    label: str
    threshold: str | None = None
    threshold_column: str | None = None
    scale: float = 1.0
    legend: str | None = None
    extra: tuple[tuple[str, str, str], ...] = ()
    band: tuple[str, str] | None = None
    threshold_legend: str = "practical threshold"

    def named(self, **names: str) -> "PanelSpec":
        """The panel with ``{headline}`` / ``{estimated}`` replaced in its columns, metrics and label."""
        def f(text):
            return None if text is None else text.format(**names)

        return PanelSpec(self.position, f(self.column), f(self.metric), f(self.label), self.threshold,
                         f(self.threshold_column), self.scale, self.legend,
                         tuple((f(c), f(m), legend) for c, m, legend in self.extra),
                         None if self.band is None else (f(self.band[0]), f(self.band[1])), self.threshold_legend)


@dataclass(frozen=True)
class Job:
    """A distribution test to run: ``test(reference, current)``.

    ``binned``, when the two distributions are histograms of integer counts over the same bin
    points: ``(points, reference bins, current bins)``, the indices of each one's non-empty bins
    (whose counts ``reference`` and ``current`` hold), and ``batch`` the test's form for many such
    jobs at once, ``batch(jobs) -> [TestResult, ...]``, equal to ``test`` on each (:func:`run_jobs`
    runs the jobs sharing a batch form and bin points together). Build one with :func:`binned_job`.
    """

    test: Callable[[ScoreCounts, ScoreCounts], TestResult]
    reference: ScoreCounts
    current: ScoreCounts
    batch: Callable[[list["Job"]], list[TestResult]] | None = None
    binned: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


def binned_job(test: Callable[[ScoreCounts, ScoreCounts], TestResult],
               batch: Callable[[list[Job]], list[TestResult]] | None, points: np.ndarray, reference: np.ndarray,
               current: np.ndarray) -> Job:
    """The :class:`Job` of ``test`` on two histograms over the same bin ``points`` (each read as a
    :class:`~metrics_core.counts.ScoreCounts` of its non-empty bins, :func:`~metrics_core.monitoring.period.binned`),
    runnable with others in ``batch`` when the counts are integers."""
    if not (reference.dtype.kind in "iu" and current.dtype.kind in "iu"):
        return Job(test, binned(points, reference), binned(points, current))
    at_r, at_c = np.flatnonzero(reference > 0), np.flatnonzero(current > 0)  # the bins binned() keeps (a mask: fast)
    return Job(test, _at(points, reference, at_r), _at(points, current, at_c), batch, (points, at_r, at_c))


def _at(points: np.ndarray, counts: np.ndarray, at: np.ndarray) -> ScoreCounts:
    """The histogram's bins ``at`` as a ScoreCounts (no positives), as :func:`~metrics_core.monitoring.period.binned`."""
    return ScoreCounts(points[at], counts[at], np.zeros(at.size, np.int64))


def stacked(jobs: list[Job]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The jobs' histograms as (points, reference counts, current counts) of shape (G,), (P, G), (P, G),
    the bins empty in every histogram left out (they change no test on a pair of them)."""
    points = jobs[0].binned[0]
    at = [[job.binned[side] for job in jobs] for side in (1, 2)]
    flat = [np.concatenate(a) for a in at]
    seen = np.zeros(points.size, bool)  # bin indices on one grid: a mask, not a sort (4x faster than unique)
    seen[flat[0]] = True
    seen[flat[1]] = True
    column = np.cumsum(seen) - 1

    def matrix(side: int) -> np.ndarray:
        counts = [(job.reference, job.current)[side].counts for job in jobs]
        out = np.zeros((len(jobs), int(column[-1]) + 1), np.result_type(*{c.dtype for c in counts}))
        out[np.repeat(np.arange(len(jobs)), [a.size for a in at[side]]), column[flat[side]]] = np.concatenate(counts)
        return out

    return points[seen], matrix(0), matrix(1)


#: What a kind's test function gives: per test, its key and its result or the job computing it.
Planned = list[tuple[TestKey, "TestResult | Job"]]


@dataclass(frozen=True)
class Kind:
    """One monitoring test kind, all it takes in one place (NannyML registers a monitored metric
    the same way, as one entry owning its name, threshold, alert rule and display).

    Parameters
    ----------
    name : str
        The kind, the first part of :attr:`TestKey.name` (an MLflow key: never renamed).
    policy_field : str or None
        The :class:`~metrics_core.monitoring.AlertPolicy` field holding its practical threshold
        (None: a reason that is no test, such as a new class).
    render : callable
        ``render(reason, tail) -> (sentence, parenthesis)``: the alert reason in words
        (:class:`~metrics_core.monitoring.Reason`, ``tail`` its corrected p-value as text).
    before_after : (str, str)
        The test's ``details`` keys holding the values the sentence shows (reference, current);
        ``""`` for none.
    source : str
        ``"labels"`` or ``"predictions"`` when the kind tests one of them, else ``""``.
    tests : callable or None
        ``tests(reference, current) -> [(TestKey, TestResult or Job), ...]`` on two
        :class:`~metrics_core.monitoring.PeriodStats`; None when its tests come from elsewhere
        (the headline and calibration tests need the reports and the calibration map).
    metrics : callable or None
        ``metrics(key, result) -> {semantic key: value}``: what a test of this kind logs.
    worst : str or None
        The summary metric over the kind's tests: the largest finite ``|effect|`` (nan without
        tests), shared by the kinds that name the same one.
    logged : tuple of Metric
        The MLflow names of the kind's metrics (its section and chart name).
    panel : PanelSpec or None
        Its panel of the over-time plot (kinds sharing a panel hold the same one).
    tier : int
        Where its reasons rank among a period's reasons (:func:`~metrics_core.monitoring.decide_alert`
        orders by tier, then effect over threshold): 0 a class outside the class list, 1 the model's
        performance (headline, calibration), 2 (the default) what the model reads and predicts,
        3 the prices of its error cells, which move whenever the errors move.
    summary_only : bool
        Its tests log no metric each (no ``p_adj/<test>``): a period may hold thousands of them
        (input features); the kind's module gives the period's summary instead.
    """

    name: str
    policy_field: str | None
    render: Callable[[Any, str], tuple[str, str]]
    before_after: tuple[str, str] = ("", "")
    source: str = ""
    tests: Callable[["PeriodStats", "PeriodStats"], Planned] | None = None
    metrics: Callable[[TestKey, TestResult], dict[str, float]] | None = None
    worst: str | None = None
    logged: tuple[Metric, ...] = ()
    panel: PanelSpec | None = None
    tier: int = 2
    summary_only: bool = False


#: The work from which a distribution test runs on a worker thread: n_reference x n_current cells of
#: scipy's exact KS p-value (up to 10,000 rows a side, about 1 ns a cell), which releases the GIL.
#: A smaller test (a segment's few hundred rows a side) spends its time in small numpy calls that
#: hold the GIL: on threads the tests only queue for it (a period with 50 segments took 1.7 s on
#: two threads, 1.5 s on one).
HEAVY_CELLS = 1_000_000

#: The effective size from which an asymptotic KS p-value's Smirnov sum (about 0.1 us a term,
#: in numpy loops that release the GIL: 2 ms here) runs on a worker thread.
HEAVY_SMIRNOV_N = 20_000


def _heavy(job: Job) -> bool:
    """Whether the job's KS p-value releases the GIL long enough to pay for a thread: scipy's exact
    method over :data:`HEAVY_CELLS` cells or more, or Smirnov's sum
    (:func:`~metrics_core.drift.kolmogorov.kstwo_sf`) at an effective size of :data:`HEAVY_SMIRNOV_N` or more."""
    n1, n2 = (float(sc.pos.sum() + sc.neg.sum()) for sc in (job.reference, job.current))
    if max(n1, n2) <= 10_000:
        return n1 * n2 >= HEAVY_CELLS
    return n1 * n2 / (n1 + n2) >= HEAVY_SMIRNOV_N


def _batches(jobs: list[Job], light: list[int]) -> list[list[int]]:
    """The light jobs that have a batch form, grouped by batch form and bin points (in order)."""
    groups: list[tuple[Callable, np.ndarray, list[int]]] = []
    for i in light:
        job = jobs[i]
        if job.batch is None or job.binned is None:
            continue
        points = job.binned[0]
        for batch, at, members in groups:
            if batch is job.batch and (at is points or np.array_equal(at, points)):
                members.append(i)
                break
        else:
            groups.append((job.batch, points, [i]))
    return [members for _, _, members in groups]


def run_jobs(jobs: list[Job], meanwhile: Callable[[], None] | None = None) -> list[TestResult]:
    """The distribution tests' results, in order; the heavy ones (:func:`_heavy`) on up to
    :func:`~metrics_core.threads.kernel_threads` threads, the others on the calling thread, those
    with a batch form (:class:`Job`) together; then ``meanwhile()``, other work of the caller's,
    on the calling thread while the heavy ones finish (a period's segments: their calibration
    tests and headlines, which would otherwise wait for them).

    scipy's exact two-sample KS p-value (up to 10,000 rows a side: up to 0.1 s a test, dozens of
    tests a period) and the Smirnov sum release the GIL; each test gives what it gives alone
    (a batch form gives each job's own result), so the results do not depend on where it ran.
    A segment's tests are small: run one by one they cost ~0.3 ms each in Python and numpy calls,
    which a period with 50 segments pays some 1,200 times.
    """
    def run(job: Job) -> TestResult:
        return job.test(job.reference, job.current)

    heavy = [_heavy(job) for job in jobs]
    out: list[TestResult | None] = [None] * len(jobs)
    on_threads = [i for i, h in enumerate(heavy) if h]
    # the heavy ones run while this thread runs the others (their compiled kernels release the GIL)
    threaded = in_background(lambda todo: list(ordered_map(run, todo, kernel_threads(len(todo), min_size=2))),
                             [jobs[i] for i in on_threads]) if on_threads else None
    with one_kernel_thread():  # as ordered_map runs them on the calling thread
        for members in _batches(jobs, [i for i, h in enumerate(heavy) if not h]):
            group = [jobs[i] for i in members]
            for i, result in zip(members, group[0].batch(group) if len(group) > 1 else [run(group[0])]):
                out[i] = result
        for i in [i for i, r in enumerate(out) if r is None and not heavy[i]]:
            out[i] = run(jobs[i])
    if meanwhile is not None:
        meanwhile()
    for i, result in zip(on_threads, threaded.result() if threaded is not None else []):
        out[i] = result
    return out
