"""One period against its reference, to the typed result: from tables (the notebook API) or from statistics (the flow)."""

from __future__ import annotations

import dataclasses
import hashlib
import pickle
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import polars as pl
import pyarrow as pa

from metrics_core import contract
from metrics_core.checks.frames import as_frame
from metrics_core.contract import Columns
from metrics_core.dataset import resolve_class_list
from metrics_core.errors import InputError
from metrics_core.intervals import report_intervals
from metrics_core.monitoring import labelled
from metrics_core.monitoring.calibration_change import calibration_change
from metrics_core.monitoring.calibration_map import cached_calibration_map
from metrics_core.monitoring.estimate import assess_estimate
from metrics_core.monitoring.decision import Alert, Headline, Reason, decide_alert
from metrics_core.monitoring.bins import Bins
from metrics_core.monitoring.period import PeriodStats
from metrics_core.monitoring.policy import DEFAULT_HEADLINE, AlertPolicy
from metrics_core.monitoring.scan import scan_period
from metrics_core.monitoring.segments import (SEGMENT_BOOT, SegmentTests, segment_metrics, segment_table,
                                              segment_tests)
from metrics_core.monitoring.kinds import KINDS, TestKey, run_tests
from metrics_core.drift import drift_table
from metrics_core.monitoring.survey import SampleWarning
from metrics_core.monitoring.kinds.features import feature_metrics, feature_table
from metrics_core.price import price_impact_binned
from metrics_core.threads import in_background
from metrics_core.significance import TestResult

__all__ = ["PeriodAssessment", "assess_period", "assess_stats"]

#: What a labelled sample with unequal design weights cannot give (docs/label-lag.md): each class's
#: one-vs-rest calibration test needs every class's score of each labelled row, and the price-impact
#: table reads the raw cells; the top-label calibration test and the price-cell tests are weighted.
UNEQUAL_WEIGHTS_UNTESTED = ("the one-vs-rest calibration test of each class and the Annex E price-impact table are not "
                            "given for a labelled sample with unequal design weights (the top-label calibration test "
                            "and the price-cell tests are, weighted by the design)")


@dataclass(frozen=True)
class PeriodAssessment:
    """A period judged against its reference: what the flow logs, without I/O.

    Parameters
    ----------
    decision : Alert
        The alert, its typed reasons, the table of tests (p-values corrected together) and the
        headline check.
    tests : dict of TestKey to TestResult
        The monitoring tests (:func:`~metrics_core.monitoring.kinds.run_tests`).
    headline : Headline or None
        The headline metric of the period and of the reference (None without labels).
    metrics : dict of str to float
        Flat metrics with semantic names (``n_rows``, ``perf/<metric>``, ``<headline>_ci_low``,
        ``p_adj/<test>``, ``prevalence_label/<class>``, ...); the flow logs these.
    tables : dict of str to polars.DataFrame
        ``drift_table.json``, ``per_class_monitoring.json``, and when available
        ``price_impact.json`` (ONS Annex E), ``per_class_performance.json`` and, with segments,
        ``segments.json`` (:func:`~metrics_core.monitoring.segments.segment_table`). The report
        page shows every table here.
    reference, current : PeriodStats
        The statistics compared.
    headline_metric : str
        Name of the headline metric.
    report : Report or None
        The period's performance report (None without labels).
    """

    decision: Alert
    tests: dict
    headline: Headline | None
    metrics: dict
    tables: dict
    reference: PeriodStats
    current: PeriodStats
    headline_metric: str
    report: Any = None

    @property
    def alert(self) -> bool:
        """Whether the period raises a retraining alert."""
        return self.decision.alert

    @property
    def reasons(self) -> tuple[Reason, ...]:
        """Why (strongest first)."""
        return self.decision.reasons


def _report(stats: PeriodStats, options: Mapping | None):
    if stats.performance is None:
        return None
    from metrics_core.report import binary_from_stats, multiclass_from_stats

    from_stats = binary_from_stats if stats.task == "binary" else multiclass_from_stats
    return from_stats(stats.performance, **dict(options or {}))


def _headline(reference: PeriodStats, current: PeriodStats, metric: str, ref_report, cur_report,
              only: bool = False) -> Headline | None:
    """The headline metric of the period (value, interval, labelled rows) and of the reference; None
    without labels. ``only``: of the reports' intervals only the headline's is computed (a segment's)."""
    if cur_report is None:
        return None
    if metric not in cur_report.metrics:
        raise InputError(f"headline_metric: {metric!r} is not a metric of the {current.task} report; "
                         f"choose one of {sorted(cur_report.metrics)[:30]}.")

    def interval(report):
        return (report_intervals(report, (metric,)) if only else report.intervals).get(metric)

    ref_value = ref_report.metrics.get(metric) if ref_report is not None else None
    ref_interval = interval(ref_report) if ref_report is not None else None
    return Headline(metric, cur_report.metrics[metric], interval(cur_report), ref_value, ref_interval,
                    int(current.label_counts.sum()), int(reference.label_counts.sum()) if ref_report is not None else 0)


#: Reference segments' headline (value, interval) remembered by content, as the calibration maps are
#: (:func:`~metrics_core.monitoring.calibration_map.cached_calibration_map`): the periods monitored in one
#: process share their reference, whose 50 segments' bootstrap intervals cost 2-3 ms each.
_REFERENCE_HEADLINES: OrderedDict[bytes, tuple | None] = OrderedDict()
_REFERENCE_LOCK = threading.Lock()
_REFERENCE_MAX = 10_000  # entries of a few floats each


def _reference_headline(reference: PeriodStats, metric: str, options: Mapping) -> tuple | None:
    """The headline metric's value and interval (only its own, :func:`report_intervals`) on a reference
    segment's report (:func:`_report`); None without labels. Remembered by the statistics' content, the
    metric and the report options (a key of their pickle: the same content gives the same values)."""
    if reference.performance is None:
        return None
    key = hashlib.sha1(pickle.dumps((metric, reference.task, sorted(options.items()), reference.performance)),
                       usedforsecurity=False).digest()
    with _REFERENCE_LOCK:
        if key in _REFERENCE_HEADLINES:
            _REFERENCE_HEADLINES.move_to_end(key)
            return _REFERENCE_HEADLINES[key]
    report = _report(reference, options)
    found = None if report is None else (report.metrics.get(metric), report_intervals(report, (metric,)).get(metric))
    with _REFERENCE_LOCK:
        _REFERENCE_HEADLINES[key] = found
        while len(_REFERENCE_HEADLINES) > _REFERENCE_MAX:
            _REFERENCE_HEADLINES.popitem(last=False)
    return found


def _sample(reference: PeriodStats, current: PeriodStats, metric: str, p: AlertPolicy, lag, ref_report, options
            ) -> "labelled.SampleAssessment | None":
    """The labelled sample's estimates for the whole delivery (:func:`.labelled.assess_sample`), or None
    when the period is fully labelled without design weights (measured as it is) or has no labels."""
    if not labelled.is_sample(current):
        return None
    cal_map = cached_calibration_map(reference, 100, options.get("seed", 0))  # assess_estimate's (cached) fit
    # With unequal design weights only the top-label calibration test can be weighted by the design
    # (labelled.design_calibration_change); the rest of the map the model-assisted estimate reads (the
    # share of each error among the other classes) goes unchecked: the design-based estimate alone is used.
    rejects = labelled.unequal_weights(current) or _calibration_alerts(lag.tests, p)
    ref_value = ref_report.metrics.get(metric) if ref_report is not None else None
    ref_interval = ref_report.intervals.get(metric) if ref_report is not None else None
    return labelled.assess_sample(reference, current, metric, p, cal_map=cal_map,
                                  reliable=lag.metrics.get("estimated/reliable") == 1.0, calibration_alerts=rejects,
                                  ref_value=ref_value, ref_interval=ref_interval, beta=options.get("beta", 1.0))


def _calibration_alerts(tests: Mapping[TestKey, TestResult], p: AlertPolicy) -> bool:
    """Whether a calibration-change test of the period alerts as the alert rule judges it (its
    p-values corrected together at ``alpha``, the effect past ``calibration_change``)."""
    if not tests:
        return False
    table = drift_table({k.name: t for k, t in tests.items()}, {k.name: p.threshold(k.kind) for k in tests},
                        p.correction, p.alpha)
    return bool(table["drift"].fill_null(False).any())


def _headline_metrics(metric: str, headline: Headline | None, decision: Alert) -> dict:
    """The headline's value, interval, floor, reference and test (drop, power, labelled rows needed).

    Without labels only the floor, when the label-lag estimate was tested against it: the floor
    belongs to the period's policy, not to the measurement, and the over-time plot draws it.
    """
    m, check = metric, decision.headline
    if headline is None:
        return {} if check is None else {f"{m}_floor": check.floor}
    out = {m: headline.value}
    if headline.interval is not None:
        out[f"{m}_ci_low"], out[f"{m}_ci_high"] = headline.interval
    if check is not None:
        out[f"{m}_floor"] = check.floor
    if headline.reference is not None:
        out[f"{m}_reference"] = headline.reference
    if check is not None:
        out.update({f"{m}_drop": check.drop, f"{m}_power": check.power, "not_enough_labels": float(
            not check.enough_labels)})
        if check.n_needed is not None:
            out[f"{m}_n_labelled_needed"] = check.n_needed
    return out


def _test_metrics(tests: Mapping[TestKey, TestResult]) -> dict:
    """Per test: the watched values its kind logs (prevalence, PSI, score shift, median price and its
    shift, ...); per summary metric of the kinds (``worst``), the largest finite |effect| of their
    tests (nan without one)."""
    out = {}
    tests = {k: t for k, t in tests.items() if not k.segment}
    for key, t in tests.items():
        if KINDS[key.kind].metrics is not None:
            out.update(KINDS[key.kind].metrics(key, t))
    summaries: dict[str, set[str]] = {}
    for kind in KINDS.values():
        if kind.worst is not None:
            summaries.setdefault(kind.worst, set()).add(kind.name)
    for name, kinds in summaries.items():
        vals = [abs(t.effect_size) for k, t in tests.items() if k.kind in kinds and np.isfinite(t.effect_size)]
        out[name] = max(vals) if vals else float("nan")
    return out


def _per_class(ref: PeriodStats, cur: PeriodStats, tests: Mapping[TestKey, TestResult]) -> pl.DataFrame:
    """One row per class: prevalences, score and price summaries, expenditure share."""
    rows = []
    share = cur.weight_by_pred / cur.weight_by_pred.sum() if cur.weight_by_pred is not None \
        and cur.weight_by_pred.sum() > 0 else np.full(cur.labels.size, np.nan)
    for j, name in enumerate(ref.class_names()):
        score = tests.get(TestKey("score", name))
        price = tests.get(TestKey("price", name))
        rows.append({
            "class": name,
            "prevalence_label_reference": float(ref.prevalence("label")[j]),
            "prevalence_label_current": float(cur.prevalence("label")[j]),
            "prevalence_pred_reference": float(ref.prevalence("pred")[j]),
            "prevalence_pred_current": float(cur.prevalence("pred")[j]),
            "score_mean_reference": score.details["mean_reference"] if score else np.nan,
            "score_mean_current": score.details["mean_current"] if score else np.nan,
            "score_wasserstein": score.effect_size if score else np.nan,
            "score_psi": score.details["psi"] if score else np.nan,
            "price_median_reference": price.details["median_reference"] if price else np.nan,
            "price_median_current": price.details["median_current"] if price else np.nan,
            "price_shift": price.effect_size if price else np.nan,
            "expenditure_share_current": float(share[j]),
        })
    return pl.DataFrame(rows)


def _segment_tests(reference: PeriodStats, current: PeriodStats, metric: str, options: Mapping,
                   estimate) -> SegmentTests:
    """Every segment's tests (:func:`~metrics_core.monitoring.segments.segment_tests`) with its
    calibration tests and headline: measured with labels, else the label-lag estimate; the
    bootstraps of a segment (its intervals, its reference's calibration map) draw at most
    :data:`~metrics_core.monitoring.segments.SEGMENT_BOOT` replicates."""
    if not current.segments:
        return segment_tests(reference, current)
    if labelled.is_sample(current):
        # a segment's few labelled rows, read unweighted, would misstate it: it is judged without labels
        current = dataclasses.replace(current, segments={k: labelled.unlabelled(v) for k, v in current.segments.items()})
    seg_options = {**options, "n_boot": min(int(options.get("n_boot", SEGMENT_BOOT)), SEGMENT_BOOT)}

    def extra(ref: PeriodStats, cur: PeriodStats):
        cur_report = _report(cur, seg_options)
        if cur_report is None:  # no labels: the segment's label-lag estimate is its headline
            lag = estimate(ref, cur, SEGMENT_BOOT)
            return lag.tests, lag.headline
        # labelled: the measured headline; of the estimate only its calibration tests are needed
        cal_map = cached_calibration_map(ref, SEGMENT_BOOT, options.get("seed", 0))
        tests = {} if cal_map is None or cur.calibration is None else {
            TestKey("calibration", name): t for name, t in calibration_change(cal_map, cur).items()}
        head = _headline(ref, cur, metric, None, cur_report, only=True)  # the reference's part: remembered
        found = _reference_headline(ref, metric, seg_options)
        if head is not None and found is not None:
            head = dataclasses.replace(head, reference=found[0], reference_interval=found[1],
                                       n_reference=int(ref.label_counts.sum()))
        return tests, head

    return segment_tests(reference, current, extra)


def assess_stats(reference: PeriodStats, current: PeriodStats, policy: Any = None, *,
                 headline_metric: str | None = None, report_options: Mapping | None = None) -> PeriodAssessment:
    """Tests, headline and alert decision of a period from its statistics, plus the metrics and tables.

    Parameters
    ----------
    reference, current : PeriodStats
        Statistics of the reference window and of the period (same class list and bins).
    policy : AlertPolicy, mapping or object, optional
        The alert policy (:meth:`AlertPolicy.of`).
    headline_metric : str, optional
        Metric watched against the floor; default :data:`DEFAULT_HEADLINE`.
    report_options : mapping, optional
        Keyword arguments of :func:`metrics_core.binary_from_stats` /
        :func:`~metrics_core.multiclass_from_stats` (``beta``, ``cost_matrix``, ``level``,
        ``n_boot``, ``seed``); ``level`` defaults to the policy's.

    Returns
    -------
    PeriodAssessment
        See :func:`assess_period`; the headline and performance metrics are absent (and the
        headline check skipped) when the period has no labels.
    """
    p = AlertPolicy.of(policy)
    options = {"level": p.level, **dict(report_options or {})}
    current = labelled.without_labels(current)  # a label column without a label: a period without labels
    metric = headline_metric or DEFAULT_HEADLINE
    cur_report = _report(current, options)
    ref_report = _report(reference, options)
    headline = _headline(reference, current, metric, ref_report, cur_report)

    def estimate(ref: PeriodStats, cur: PeriodStats, n_boot: int | None = None):  # label lag and calibration
        boot = {} if n_boot is None else {"n_boot": n_boot}
        return assess_estimate(ref, cur, metric, beta=options.get("beta", 1.0), level=p.level,
                               seed=options.get("seed", 0), score_shift=p.score_shift, **boot)

    # Without a labelled sample the Annex E table needs only the period's statistics: its exact KS
    # p-values (scipy's compiled routine, which releases the GIL) run while the estimate runs here
    impact_now = None if labelled.is_sample(current) else in_background(price_impact_binned, current, p.alpha)
    lag = estimate(reference, current)
    sample = _sample(reference, current, metric, p, lag, ref_report, options)
    tests = run_tests(reference, current if sample is None else sample.current)
    if sample is not None and sample.unequal:  # the calibration test weighted by the design, not the raw rows'
        cal_map = cached_calibration_map(reference, 100, options.get("seed", 0))
        checks = {} if cal_map is None else labelled.design_calibration_change(
            cal_map, current.sample, current.task, seed=options.get("seed", 0))
        lag = dataclasses.replace(lag, tests={TestKey("calibration", name): t for name, t in checks.items()},
                                  metrics={k: v for k, v in lag.metrics.items() if not k.startswith("perf/")})
    tests.update(lag.tests)
    if sample is not None and sample.headline is not None:
        headline = sample.headline
    elif sample is not None and sample.unequal and headline is not None:
        # the labelled rows as they are would misstate a metric the estimators cannot weight (not count-based)
        warnings.warn(f"headline_metric: {metric!r} is not a count-based metric, so it cannot be estimated for the "
                      "whole delivery from a labelled sample with unequal weights; the headline test of this period "
                      "is skipped. Choose a count-based headline (e.g. balanced_accuracy) to judge it.",
                      SampleWarning, stacklevel=2)
        headline = None
    total = current.n_rows + current.n_new_class_rows
    new = {c: (v[0], v[0] / total) for c, v in current.new_classes.items()}
    seg = _segment_tests(reference, current, metric, options, estimate)
    decision = decide_alert({**tests, **seg.tests}, p, headline or lag.headline, new,  # no labels: the estimate
                            segment_headlines=seg.headlines, segment_notes=seg.notes,
                            untested_notes=(UNEQUAL_WEIGHTS_UNTESTED,) if sample is not None and sample.unequal else ())
    metrics: dict = {"n_rows": current.n_rows, "n_rows_reference": reference.n_rows}
    if cur_report is not None:
        metrics.update({f"perf/{k}": v for k, v in (cur_report.metrics if sample is None else sample.perf).items()})
    metrics.update(lag.metrics)
    if sample is not None:
        metrics.update(sample.metrics)
    metrics.update(_headline_metrics(metric, headline, decision))
    summary_only = {k.name for k in tests if KINDS[k.kind].summary_only}  # input features: a summary, not a metric each
    metrics.update({f"p_adj/{name}": v for name, v in zip(decision.table["name"], decision.table["p_adjusted"])
                    if "@" not in name and name not in summary_only})  # a segment's tests: summarised (segments/...)
    metrics.update(_test_metrics(tests))
    if current.new_classes:
        metrics["new_class_rows"] = current.n_new_class_rows
        metrics.update({f"new_class/{c}": v[0] for c, v in current.new_classes.items()})
    metrics.update({"n_tests": decision.table.height, "n_alert_reasons": len(decision.reasons),
                    "alert": float(decision.alert)})
    tested = current if sample is None else sample.current
    tables = {"drift_table.json": decision.table, "per_class_monitoring.json": _per_class(reference, tested, tests)}
    impact = impact_now.result() if impact_now is not None else price_impact_binned(tested, p.alpha)
    if impact is not None:
        tables["price_impact.json"] = impact
    if sample is not None and sample.per_class is not None:  # unequal weights: estimated for the delivery
        tables["per_class_performance.json"] = sample.per_class
    elif cur_report is not None and cur_report.per_class is not None:
        tables["per_class_performance.json"] = cur_report.per_class
    if sample is not None and sample.next_sample is not None:
        tables["next_sample.json"] = sample.next_sample
    if current.segments or reference.segments:
        keys = {k.name: k for k in seg.tests} | {TestKey("headline", metric, s).name: TestKey("headline", metric, s)
                                                 for s in seg.headlines}
        tables["segments.json"] = segment_table(decision, keys)
        metrics.update(segment_metrics(tables["segments.json"], seg))
    if current.features is not None:
        metrics.update(feature_metrics(tests, decision.table))
        tables["feature_drift.json"] = feature_table(tests, decision.table)
    return PeriodAssessment(decision, tests, headline, metrics, tables, reference, current, metric, cur_report)


def _arrow(table: Any, name: str) -> pa.Table:
    """A pyarrow Table from a pyarrow Table or what :func:`metrics_core.checks.as_frame` reads
    (polars DataFrame or LazyFrame, pandas DataFrame)."""
    return table if isinstance(table, pa.Table) else as_frame(table, name).to_arrow()


def _columns(columns: Columns | Mapping | None) -> Columns:
    if columns is None or isinstance(columns, Columns):
        return columns or Columns()
    return Columns(**{k: (tuple(v) if k == "features" else v) for k, v in columns.items()})


def assess_period(reference: Any, current: Any, policy: Any = None, *, task: str = "multiclass",
                  labels: list | None = None, columns: Columns | Mapping | None = None, positive_class: Any = 1,
                  headline_metric: str | None = None, bins: Bins = Bins(), threshold: float = 0.5,
                  report_options: Mapping | None = None, classes: str = "open",
                  design_weight: str | None = None, segments: Sequence[str] = ()) -> PeriodAssessment:
    """Monitor one period against a reference in memory: the same result the monitor_period flow logs.

    Parameters
    ----------
    reference, current : polars.DataFrame, polars.LazyFrame, pyarrow.Table or PeriodStats
        The reference window and the period, with the columns named by ``columns`` (label
        optional in both; prediction and/or score columns; price and weight optional). Statistics
        (:func:`~metrics_core.monitoring.scan.scan_period`) are taken as they are.
    policy : AlertPolicy, mapping or object, optional
        The alert policy (:class:`AlertPolicy`; a mapping of some fields; None = the defaults).
    task : {"binary", "multiclass"}
        The classification task.
    labels : list, optional
        The class list (order of the score columns); default the reference's classes as the
        monitor_period flow finds them (:func:`metrics_core.dataset.resolve_class_list`): its
        sorted labels and predictions on rows of positive weight, and for multiclass the classes
        named by its score columns.
    columns : Columns or mapping, optional
        Column roles (:class:`metrics_core.contract.Columns`): ``label``, ``prediction``,
        ``score``/``score_prefix``, ``price``, ``weight``, ``features`` (input columns watched for
        drift: :mod:`metrics_core.monitoring.kinds.features`). A ``price`` or ``weight`` named here
        must exist in both tables; a label column that is absent while a near-miss of its name
        exists (``lable``) is an error, not a period without labels.
    positive_class : optional
        Binary: the positive class, matched to the label type as the report matches ``pos_label``
        (:func:`metrics_core.contract.classes.binary_classes`); default 1, as the report's ``pos_label``
        and the run spec's ``positive_class``.
    headline_metric : str, optional
        Metric watched against the floor (default ``balanced_accuracy``).
    bins : Bins
        Histogram bins (must match when statistics are given).
    threshold : float
        Binary decision threshold when the class comes from the score.
    report_options : mapping, optional
        Keyword arguments of the performance report (``n_boot``, ``seed``, ``beta``, ``cost_matrix``).
    classes : {"open", "closed"}
        ``"open"``: rows of ``current`` whose label or prediction is outside the class list are
        counted, left out and reported ("class 'X' appeared: N rows (p% of the period)", an alert
        reason); ``"closed"``: they are an error. The reference is always closed.
    design_weight : str, optional
        The column of ``current`` holding each labelled row's design weight (the inverse of its
        inclusion probability in the labelled sample; same as ``columns={"design_weight": ...}``).
        A null label in ``current`` marks an unlabelled row: its labelled rows are a sample, and
        the label metrics are estimated for the whole period (docs/label-lag.md). Without design
        weights the labelled rows are taken as a simple random sample within each predicted class.
    segments : sequence of str
        Segment columns (e.g. ``["retailer"]``): every test also runs within each value's rows
        against the same value's rows of the reference, all corrected together; a reason from a
        segment names it (``retailer=shop_07: ...``). A value absent from the reference, or with
        fewer than :data:`~metrics_core.monitoring.segments.MIN_SEGMENT_ROWS` rows in either, is
        named once in :attr:`Alert.notes`, not tested.

    Returns
    -------
    PeriodAssessment
        The decision (``alert``, typed ``reasons``), the tests, the headline, the metrics with
        semantic names and the tables; the flow logs exactly these metrics (MLflow keys made safe).

    Raises
    ------
    InputError
        A table that breaks the input contract (missing column, NaN scores, a label outside the
        class list, ...), named as ``reference`` or ``current``.

    Examples
    --------
    >>> import polars as pl
    >>> ref = pl.DataFrame({"label": ["a", "b"] * 500, "prediction": ["a", "b"] * 450 + ["b", "a"] * 50})
    >>> cur = pl.DataFrame({"label": ["a", "b"] * 500, "prediction": ["a", "b"] * 350 + ["a", "a"] * 150})
    >>> out = assess_period(ref, cur, {"metric_drop": 0.1}, report_options={"n_boot": 0})
    >>> out.alert, out.metrics["prevalence_pred/b"], out.metrics["balanced_accuracy"]
    (True, 0.35, 0.85)
    >>> [r.key.name for r in out.reasons]
    ['prevalence_pred:a', 'prevalence_pred:b']
    """
    if isinstance(reference, PeriodStats) and isinstance(current, PeriodStats):
        return assess_stats(reference, current, policy, headline_metric=headline_metric,
                            report_options=report_options)
    cols = _columns(columns)
    ref, cur = _arrow(reference, "reference"), _arrow(current, "current")
    if classes not in ("open", "closed"):
        raise InputError(f"classes: expected 'open' or 'closed', got {classes!r}.")
    for table, where in ((ref, "reference"), (cur, "current")):
        contract.check_label_spelling(table.column_names, cols.label, where)
    class_list = resolve_class_list(ref, task, cols, labels=labels, positive_class=positive_class, where="reference")
    if design_weight is not None:
        cols = dataclasses.replace(cols, design_weight=design_weight)
    named = [role for role in ("price", "weight") if getattr(cols, role)]  # named: meant to be there
    layouts = [contract.resolve_layout(t.schema, task, cols, labels=class_list, require=named, where=w)
               for t, w in ((ref, "reference"), (cur, "current"))]
    contract.check_same_schema(ref.schema, cur.schema, layouts[0], reference="reference", current="current")
    if cols.design_weight and cols.design_weight not in cur.column_names:
        raise contract.missing_columns("current", {cols.design_weight: "design_weight"}, cur.column_names)
    stats = [scan_period(t, task, class_list, bins, label=lay.label, prediction=lay.prediction, scores=lay.scores,
                         price=lay.price, weight=lay.weight, threshold=threshold, where=w,
                         open_classes=w == "current" and classes == "open", partial_labels=w == "current",
                         design_weight=cols.design_weight if w == "current" else None, segments=segments,
                         features=cols.features)
             for t, lay, w in zip((ref, cur), layouts, ("reference", "current"))]
    return assess_stats(*stats, policy, headline_metric=headline_metric, report_options=report_options)
