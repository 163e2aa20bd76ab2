"""The record of a monitoring test kind (Kind), the test key, the logged metrics' sections and the over-time panels."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from metrics_core.counts import ScoreCounts
from metrics_core.dataset.parallel import ordered_map
from metrics_core.drift.kolmogorov import SMIRNOV_FAST_N
from metrics_core.errors import InputError
from metrics_core.significance import TestResult
from metrics_core.threads import kernel_threads

if TYPE_CHECKING:
    from metrics_core.monitoring.period import PeriodStats

__all__ = ["Kind", "TestKey", "Metric", "PanelSpec", "Job", "KINDS", "run_jobs", "HEADLINE", "PREVALENCE",
           "PERFORMANCE", "SCORES", "PRICES", "COUNTS", "OTHER"]

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
    """A distribution test to run on a worker thread: ``test(reference, current)``."""

    test: Callable[[ScoreCounts, ScoreCounts], TestResult]
    reference: ScoreCounts
    current: ScoreCounts


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


def _heavy(job: Job) -> bool:
    """Whether the job's KS p-value releases the GIL long enough to pay for a thread: scipy's exact
    method over :data:`HEAVY_CELLS` cells or more, or Smirnov's sum
    (:func:`~metrics_core.drift.kolmogorov.kstwo_sf`)."""
    n1, n2 = (float(sc.pos.sum() + sc.neg.sum()) for sc in (job.reference, job.current))
    if max(n1, n2) <= 10_000:
        return n1 * n2 >= HEAVY_CELLS
    return n1 * n2 / (n1 + n2) >= SMIRNOV_FAST_N


def run_jobs(jobs: list[Job]) -> list[TestResult]:
    """The distribution tests' results, in order; the heavy ones (:func:`_heavy`) on up to
    :func:`~metrics_core.threads.kernel_threads` threads, the others on the calling thread.

    scipy's exact two-sample KS p-value (up to 10,000 rows a side: up to 0.1 s a test, dozens of
    tests a period) and the Smirnov sum release the GIL; each test gives what it gives alone, so
    the results do not depend on where it ran.
    """
    def run(job: Job) -> TestResult:
        return job.test(job.reference, job.current)

    heavy = [_heavy(job) for job in jobs]
    on_threads = [job for job, h in zip(jobs, heavy) if h]
    found = iter(ordered_map(run, on_threads, kernel_threads(len(on_threads), min_size=2)))
    here = iter(ordered_map(run, [job for job, h in zip(jobs, heavy) if not h], 1))
    return [next(found) if h else next(here) for h in heavy]
