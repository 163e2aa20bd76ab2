"""Markdown of a monitored period: its summary and its retraining alert (MLflow and Prefect artifacts)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from metrics_core.monitoring import Alert, AlertPolicy
from metrics_core.monitoring.policy import POLICY_FIELDS
from metrics_core.monitoring.estimate import PREFIX as ESTIMATE_PREFIX

if TYPE_CHECKING:  # the tasks import this module, not the other way round
    from metrics_core.monitoring import PeriodAssessment
    from tasks.monitor import Plan


def alert_markdown(model: str, period: str, decision: Alert, run_id: str | None, tracking_uri: str | None,
                   experiment_id: str | None = None) -> str:
    """The alert: its reasons, the table of the tests that passed their thresholds and the MLflow run
    (a link to its page when the store is a tracking server and ``experiment_id`` is known).

    >>> from metrics_core import drift
    >>> from metrics_core.monitoring import TestKey, decide_alert
    >>> d = decide_alert({TestKey("prevalence_pred", "a"): drift.two_proportion_z(1000, 10000, 1500, 10000)})
    >>> alert_markdown("m", "2024-08", d, "r1", "sqlite:///x.db").splitlines()[0]
    '# Retraining alert: m, 2024-08'
    """
    lines = [f"# Retraining alert: {model}, {period}", "",
             f"{len(decision.reasons)} reason(s) (corrected tests that reject AND pass their practical threshold, "
             "the headline metric's drop among them):", ""]
    lines += [f"- {r}" for r in decision.texts]
    rows = decision.table.filter(decision.table["drift"].fill_null(False)) if decision.table.height else None
    if rows is not None and rows.height:
        lines += ["", "| test | effect | threshold | p (adjusted) |", "|---|---|---|---|"]
        for r in rows.iter_rows(named=True):
            lines.append(f"| {r['name']} | {r['effect_size']:.4g} | {r['threshold']:g} | {r['p_adjusted']:.2g} |")
    if run_id and experiment_id and (tracking_uri or "").startswith(("http://", "https://")):
        from tasks.store.mlflow import ui_link

        lines += ["", f"MLflow run: [{run_id}]({ui_link(experiment_id, run_id, tracking_uri)})"]
    elif run_id:
        lines += ["", f"MLflow run `{run_id}` in `{tracking_uri}`: open it with `classwatch ui`."]
    return "\n".join(lines) + "\n"


def summary_markdown(plan: "Plan", a: "PeriodAssessment", period_column: str, policy) -> str:
    """The period's monitoring summary: sources, rows, labels, the alert and its reasons, the policy."""
    d = a.decision
    lines = [f"# Monitoring {plan.model}, period {plan.period}", "",
             f"- reference: `{plan.reference}`", f"- current: `{plan.current}`"
             + (f" (rows where {period_column} = {plan.period})" if plan.current_filter is not None else ""),
             f"- rows: {a.metrics.get('n_rows')} (reference {a.metrics.get('n_rows_reference')})",
             f"- labels in this period: {_labels_clause(a.metrics, bool(plan.cur_layout.label))}",
             f"- alert: **{'RETRAIN' if d.alert else 'none'}**", ""]
    if d.reasons:
        lines += ["## Reasons", ""] + [f"- {r}" for r in d.texts] + [""]
    if d.segment_notes:
        lines += ["## Segments not tested", ""] + [f"- {r}" for r in d.segment_notes] + [""]
    if d.untested_notes:
        lines += ["## Not tested", ""] + [f"- {r}" for r in d.untested_notes] + [""]
    if d.headline:
        h = d.headline
        lines += [f"Headline {h.metric}: {h.value:.4f} (interval {h.low:.4f} - {h.high:.4f}), floor {h.floor:.4f}.", ""]
    lines += ["## Policy", "", policy_sentence(policy)]
    return "\n".join(lines) + "\n"


def _labels_clause(metrics: dict, has_column: bool) -> str:
    """Whether the period had labels; for a labelled sample its size, effective size, which estimate
    the alert read, and the rows to label next period (docs/label-lag.md).

    >>> _labels_clause({"sample/labelled_rows": 282.0, "sample/effective_n": 190.4, "sample/next_rows": 412.0,
    ...                 "sample/alert_uses_model_assisted": 0.0}, True)
    'a sample of 282 rows (effective 190), metrics estimated for the whole delivery (the alert reads the design-based estimate); label next period: 412 rows (next_sample.json)'
    """
    if "sample/labelled_rows" not in metrics:
        return "yes" if has_column else "no (performance not measured)"
    which = "model-assisted" if metrics.get("sample/alert_uses_model_assisted") == 1.0 else "design-based"
    return (f"a sample of {int(metrics['sample/labelled_rows']):,} rows (effective "
            f"{_num(metrics, 'sample/effective_n'):,.0f}), metrics estimated for the whole delivery (the alert reads "
            f"the {which} estimate); label next period: {int(_num(metrics, 'sample/next_rows')):,} rows "
            "(next_sample.json)")


def policy_sentence(policy) -> str:
    """The alert policy in one sentence: the correction, then every threshold by the name a run spec's
    ``alerts`` section sets it (read from :data:`~metrics_core.monitoring.policy.POLICY_FIELDS`, so a
    new field is shown without an edit here; ``metric_floor`` only when set).

    >>> s = policy_sentence({"calibration_change": 0.07}).split("; ")[1]
    >>> s[:95]
    'practical thresholds prevalence_change 0.02, psi 0.1, score_shift 0.02, calibration_change 0.07'
    >>> s[-37:]
    'feature_auroc 0.6 (run spec: alerts).'
    """
    p = AlertPolicy.of(policy)
    shown = [f"{f.name} {getattr(p, f.name):g}" for f in POLICY_FIELDS
             if f.name not in ("alpha", "correction", "level") and getattr(p, f.name) is not None]
    return (f"Tests corrected with {p.correction} at alpha {p.alpha:g}; practical thresholds {', '.join(shown)} "
            "(run spec: alerts).")


def _num(metrics: dict, key: str) -> float:
    try:
        return float(metrics.get(key, float("nan")))
    except (TypeError, ValueError):
        return float("nan")


def _headline_sentence(metrics: dict, headline: str) -> str:
    """The headline clause of a period's description: measured with labels, else the label-lag
    estimate (``estimated/<headline>``, :mod:`metrics_core.monitoring.estimate`) when there is one.

    >>> _headline_sentence({"balanced_accuracy": 0.91, "balanced_accuracy_floor": 0.85}, "balanced_accuracy")
    'labels present: balanced_accuracy 0.910 (floor 0.850)'
    >>> _headline_sentence({"estimated/balanced_accuracy": 0.932, "estimated/balanced_accuracy_ci_low": 0.926,
    ...                     "estimated/balanced_accuracy_ci_high": 0.939, "balanced_accuracy_floor": 0.88},
    ...                    "balanced_accuracy")
    "no labels in this period; balanced_accuracy estimated from the scores and the reference's calibration: 0.932 (95 % interval 0.926 to 0.939; floor 0.880)"
    >>> _headline_sentence({"estimated/balanced_accuracy": 0.902, "estimated/reliable": 0.0,
    ...                     "estimated/score_shift": 0.097, "estimated/support_share": 1.0}, "balanced_accuracy")
    "no labels in this period; balanced_accuracy estimated from the scores and the reference's calibration: 0.902, UNRELIABLE: the period's scores moved beyond what the reference's calibration vouches for (shift of the predicted classes' own scores 0.097, 100% of rows in score bins the reference covers), so the labels may show a very different value"
    >>> _headline_sentence({"balanced_accuracy": 0.939, "sample/labelled_rows": 627.0}, "balanced_accuracy")
    'labels on a sample of 627 rows; balanced_accuracy estimated for the whole delivery: 0.939'
    >>> _headline_sentence({}, "balanced_accuracy")
    'no labels in this period, so performance was not measured'
    """
    value = _num(metrics, headline)
    sampled = _num(metrics, "sample/labelled_rows")
    if value == value and sampled == sampled:
        return (f"labels on a sample of {int(sampled):,} rows; {headline} estimated for the whole delivery: "
                f"{value:.3f}" + _qualifiers(metrics, headline))
    if value == value:
        return f"labels present: {headline} {value:.3f}" + _qualifiers(metrics, headline)
    estimate = _num(metrics, ESTIMATE_PREFIX + headline)
    if estimate == estimate:
        return (f"no labels in this period; {headline} estimated from the scores and the reference's calibration: "
                f"{estimate:.3f}" + _qualifiers(metrics, ESTIMATE_PREFIX + headline, headline) + _assumed(metrics)
                + _caveat(metrics))
    return "no labels in this period, so performance was not measured"


def _assumed(metrics: dict) -> str:
    """``; assumed ...`` : the shift the label-lag estimate assumed and why
    (:func:`metrics_core.monitoring.label_shift.choose_shift`), ``""`` when not logged.

    >>> _assumed({"estimated/label_shift": 1.0, "estimated/covariate_shift": 0.0, "estimated/no_shift_p": 1e-9,
    ...           "estimated/label_shift_p": 0.31, "estimated/label_shift_unexplained": 0.02})
    '; label shift assumed: the scores moved as a change of the class mix explains (p = 1e-09 without a shift, 0.31 with the class priors re-estimated from the scores), so the estimate uses the re-estimated priors'
    """
    ls, cov = _num(metrics, ESTIMATE_PREFIX + "label_shift"), _num(metrics, ESTIMATE_PREFIX + "covariate_shift")
    if ls != ls:
        return ""
    p = (f"p = {_num(metrics, ESTIMATE_PREFIX + 'no_shift_p'):.2g} without a shift, "
         f"{_num(metrics, ESTIMATE_PREFIX + 'label_shift_p'):.2g} with the class priors re-estimated from the scores")
    if ls == 1.0:
        return (f"; label shift assumed: the scores moved as a change of the class mix explains ({p}), so the "
                "estimate uses the re-estimated priors")
    if cov == 1.0:
        left = _num(metrics, ESTIMATE_PREFIX + "label_shift_unexplained")
        return (f"; covariate shift assumed: the scores moved in a way a change of the class mix does not explain "
                f"({p}; {left:.0%} of the discrepancy left), so the reference's calibration is applied as it is")
    return ""


def _caveat(metrics: dict) -> str:
    """``, UNRELIABLE: ...`` when the label-lag estimate is flagged (``estimated/reliable`` 0,
    :func:`metrics_core.monitoring.label_shift.support`), else ``""``."""
    if _num(metrics, ESTIMATE_PREFIX + "reliable") != 0.0:
        return ""
    if _num(metrics, ESTIMATE_PREFIX + "degenerate") == 1.0:
        return (", UNRELIABLE: most of the period's rows have the same scores, which the reference's rows "
                "never had (a broken scoring step?), so the scores say nothing of the labels")
    shift, share = _num(metrics, ESTIMATE_PREFIX + "score_shift"), _num(metrics, ESTIMATE_PREFIX + "support_share")
    return (", UNRELIABLE: the period's scores moved beyond what the reference's calibration vouches for "
            f"(shift of the predicted classes' own scores {shift:.3f}, {share:.0%} of rows in score bins the "
            "reference covers), so the labels may show a very different value")


def _qualifiers(metrics: dict, key: str, headline: str | None = None) -> str:
    """`` (95 % interval ...; floor ...; reference ...)`` of a metric, the parts that are logged; the
    floor and reference are those of ``headline`` (default ``key``): an estimate has no floor of its own."""
    base = headline or key
    low, high = _num(metrics, key + "_ci_low"), _num(metrics, key + "_ci_high")
    floor, ref = _num(metrics, base + "_floor"), _num(metrics, base + "_reference")
    parts = [f"95 % interval {low:.3f} to {high:.3f}"] if low == low and high == high else []
    parts += [f"floor {floor:.3f}"] if floor == floor else []
    parts += [f"reference {ref:.3f}"] if ref == ref else []
    return f" ({'; '.join(parts)})" if parts else ""


def period_note(plan: "Plan", a: "PeriodAssessment", most: int = 3) -> str:
    """The period run's description (MLflow ``mlflow.note.content``): one paragraph on what happened
    in the month, the verdict first, then the rows, the headline metric, the strongest reasons."""
    m, d = a.metrics, a.decision
    n, n_ref = _num(m, "n_rows"), _num(m, "n_rows_reference")
    verdict = (f"retraining alert, {len(d.reasons)} reason(s)" if d.alert else "no alert: no corrected test passed "
               "its practical threshold and the headline metric stayed above its floor")
    if not d.alert and d.notes:  # "not enough labels to judge <metric>: ... labelled rows are needed"
        verdict = f"no alert, but {d.notes[0]}"
    text = (f"{plan.period}, {plan.model}: {verdict}. {n:,.0f} rows against {n_ref:,.0f} in the reference window; "
            f"{_headline_sentence(m, a.headline_metric)}.")
    change = _num(m, "max_abs_prevalence_change_pred")
    if change == change:
        text += f" The largest change in a class's share of the predictions was {change * 100:.1f} points."
    if d.reasons:
        more = f" (and {len(d.reasons) - most} more)" if len(d.reasons) > most else ""
        text += f" Strongest reasons: {'; '.join(d.texts[:most])}{more}."
    return text + (" Charts: '1 headline and alert' first (alert 1 = retrain), then prevalence, performance, "
                   "scores, prices; adjusted p-values last. Full text: monitoring_summary.md"
                   + (" and alert.md." if d.alert else "."))


def parent_note(model: str, reference: str, verdicts: dict, links: dict | None = None, most: int = 36) -> str:
    """The monitoring parent run's description: what its children are, its last ``most`` periods
    (each a link to its run when ``links`` has one: period -> MLflow UI link; the description is a
    tag of at most 8,000 characters), the alert periods, and how to read its charts' x axis
    (``verdicts``: period -> alerted).

    >>> parent_note("m", "ref", {"2024-06": True, "2024-05": False}, {"2024-06": "#/r6"}).split(". ")[1]
    '2 period(s) logged, 2024-05 to 2024-06: 2024-05, [2024-06 ALERT](#/r6); alerts in 2024-06 (1)'
    """
    from tasks.config import sources

    links = links or {}
    periods = sorted(verdicts, key=sources.period_index)
    alerts = [p for p in periods if verdicts[p]]

    def shown(p: str) -> str:
        name = f"{p} ALERT" if verdicts[p] else p
        return f"[{name}]({links[p]})" if p in links else name

    first = periods[0] if periods else "2024-01"
    earlier = f"(the first {len(periods) - most} are in the runs table) " if len(periods) > most else ""
    return (f"Monitoring of {model} against the reference window {reference}: one child run per period, named "
            f"'YYYY-MM ALERT · {model}' or 'YYYY-MM ok · {model}' (expand this run in the runs table). "
            f"{len(periods)} period(s) logged, {periods[0]} to {periods[-1]}: "
            f"{earlier}{', '.join(map(shown, periods[-most:]))}; "
            f"alerts in {', '.join(alerts) + f' ({len(alerts)})' if alerts else 'none'}. The charts of this run "
            "show the periods' main figures over time. Their x axis is the step, the period written as a number "
            f"({first} is {sources.period_step(first)}; a week 2024-W19 is 202419, a day 2024-05-12 is 20240512); "
            "to read dates instead, click the gear 'Configure charts' (right of 'Auto-refresh') and choose X-axis "
            "'Time (wall)': every point is stamped with the first day of its period. "
            "monitoring_over_time.png (Artifacts) draws each watched quantity with its alert threshold and marks "
            "each alert on the panel whose test raised it.")


def evaluation_note(model_uri: str | None, test_source: str, report, headline: str, recommended: str,
                    checks: dict, champion: dict | None) -> str:
    """The evaluation run's description (``mlflow.note.content``): one paragraph on what was measured."""
    value = report.metrics.get(headline, float("nan"))
    low, high = report.intervals.get(headline, (float("nan"), float("nan")))
    base = report.baselines.get("majority", {}).get(headline)
    n = getattr(getattr(report, "stats", None), "n_rows", None)
    text = (f"Evaluation of {model_uri or 'the predictions in the test data'} on {test_source}"
            + (f" ({n:,} rows)" if isinstance(n, (int, float)) else "") + f": headline {headline} {value:.3f}"
            + (f" (95 % interval {low:.3f} to {high:.3f})" if low == low and high == high else "")
            + (f", majority-class baseline {base:.3f}" if isinstance(base, (int, float)) and base == base else "")
            + f". The ONS guidance recommends {recommended} for this data.")
    if checks:
        text += " Data checks: " + ", ".join(f"{name} {r.status}" for name, r in checks.items()) + "."
    if champion:
        b, m = champion["bootstrap"], champion["mcnemar"]
        text += (f" Against the champion {champion['champion_uri']}: {champion['metric']} difference "
                 f"{b.statistic:+.3f} (interval {b.interval[0]:+.3f} to {b.interval[1]:+.3f}), McNemar p "
                 f"{m.p_value:.2g}.")
    return text + (f" Find the headline by typing {headline} in 'Search metrics'; curves, tables and the ISO/IEC "
                   "TS 4213 report (iso_report.md) are under Artifacts.")


def comparison_note(result: dict, correction: str, alpha: float) -> str:
    """The comparison run's description: the best model and how many corrected tests reject."""
    tests = result["tests"]
    rejected = int(tests["reject"].sum()) if tests.height else 0
    models = result["per_model"]["model"].to_list() if "model" in result["per_model"].columns else []
    return (f"Comparison of {len(models)} models ({', '.join(map(str, models))}) on the same test rows by "
            f"{result['metric']}: best {result['best']}. {rejected} of {tests.height} tests (McNemar, paired "
            f"bootstrap, paired t over folds) reject after the {correction} correction at alpha {alpha}. The "
            "tests are in comparison_tests.json and comparison.md, per-model metrics as model_<i>/<metric>.")
