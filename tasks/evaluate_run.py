"""Prefect tasks that turn an evaluation into an MLflow run: its key, its content, logging, champion promotion."""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks import IO
from tasks.config import sources
from tasks.config.spec import RunSpec, fingerprint
from tasks.evaluate import EvalPlan, environment, model_description, no_scores_reason
from tasks.render.iso_report import iso_report
from tasks.render.markdown import evaluation_note
from tasks.render.tables import curve_tables
from metrics_core.monitoring import DEFAULT_HEADLINE
from tasks.store.mlflow import RunContent, client, finished_run, log_run

MODEL_VERSION = re.compile(r"^models:/([^/@]+)/(\d+)\Z")

#: The baselines' logged prefix. MLflow's UI shows a run's chart sections sorted by the text
#: before the last "/" of a metric key (the model's unprefixed metrics after them all): under
#: ``baseline_majority/`` the baselines' bars opened the page and were taken for the model's.
#: This prefix sorts after every other section of an evaluation run and says what they are.
BASELINE_PREFIX = ("baseline_", "zero-skill baseline ")
#: The first chart section of an evaluation run: the model's headline metric and its interval, a
#: copy of the unprefixed keys (which the UI shows last, as "Model metrics", and which searches such
#: as ``metrics.auroc > 0.9`` keep reading), so the page opens on the model, not on a check's counts.
HEADLINE_SECTION = "1 model headline"


def logged_name(key: str) -> str:
    """The MLflow name of an evaluation metric's semantic key (only the baselines are renamed).

    >>> logged_name("baseline_majority/accuracy"), logged_name("auroc"), logged_name("check_leakage/n")
    ('zero-skill baseline majority/accuracy', 'auroc', 'check_leakage/n')
    """
    semantic, logged = BASELINE_PREFIX
    return logged + key[len(semantic):] if key.startswith(semantic) else key


def headline_section(metrics: dict, headline: str) -> dict:
    """The first chart section's metrics: ``headline`` and its interval bounds, under
    :data:`HEADLINE_SECTION` (copies; the semantic keys stay as they are).

    >>> headline_section({"f1": 0.8, "f1_ci_low": 0.7, "f1_ci_high": 0.9, "auroc": 0.95}, "f1")
    {'1 model headline/f1': 0.8, '1 model headline/f1_ci_low': 0.7, '1 model headline/f1_ci_high': 0.9}
    """
    keys = (headline, f"{headline}_ci_low", f"{headline}_ci_high")
    return {f"{HEADLINE_SECTION}/{k}": metrics[k] for k in keys if k in metrics}


def semantic_metrics(logged: dict) -> dict:
    """Logged evaluation metrics under their semantic keys, without the headline section's copies.

    >>> semantic_metrics({"1 model headline/f1": 0.8, "f1": 0.8, "zero-skill baseline majority/f1": 0.3})
    {'f1': 0.8, 'baseline_majority/f1': 0.3}
    """
    return {semantic_name(k): v for k, v in logged.items() if not k.startswith(HEADLINE_SECTION + "/")}


def semantic_name(name: str) -> str:
    """The semantic key of a logged evaluation metric (the inverse of :func:`logged_name`).

    >>> semantic_name(logged_name("baseline_random/f1")), semantic_name("f1")
    ('baseline_random/f1', 'f1')
    """
    semantic, logged = BASELINE_PREFIX
    return semantic + name[len(logged):] if name.startswith(logged) else name


def run_key(spec: RunSpec, plan: EvalPlan) -> str:
    """The evaluation's MLflow run key: model name, spec, test source and the model version evaluated
    (a re-run finds its run; a moved alias is a new evaluation)."""
    parts = [spec.fingerprint(), sources.describe_source(plan.test)]
    if plan.model_uri != spec.model_uri:  # an alias, pinned to its version by plan_evaluation
        parts.append(plan.model_uri)
    return f"evaluate|{spec.name}|{fingerprint(*parts)}"


@dataclass(frozen=True)
class Evaluation:
    """What one evaluation found, before it is logged: the report and everything around it."""

    plan: EvalPlan
    report: Any
    headline: str
    checks: dict
    recommendation: dict
    champion: dict | None = None
    timing: dict | None = None
    drift: pl.DataFrame | None = None
    calibration: Any = None  # tasks.evaluate.CalibrationResult (helper E)


@dataclass(frozen=True)
class LoggedEvaluation:
    """The evaluation run in MLflow: its id, whether this call created it, and its metrics."""

    run_id: str
    created: bool
    metrics: dict = field(default_factory=dict)


@task(name="finished-evaluation", **IO)
def finished_evaluation(spec: RunSpec, key: str) -> dict | None:
    """The FINISHED evaluation run with ``key``, or None: nothing to recompute. Read back in the shape
    ``evaluate_model`` returns: run_id, metrics, headline, recommendation and champion (from its tags)."""
    done = finished_run(spec.tracking_uri(), spec.mlflow.experiment, key)
    if done is None:
        return None
    tags = done["tags"]
    champion = tags.get("classwatch.champion")
    metrics = semantic_metrics(done["metrics"])
    return {"run_id": done["run_id"], "metrics": metrics, "headline": tags.get("classwatch.headline"),
            "recommendation": tags.get("classwatch.recommendation"), "champion": champion}


@task(name="choose-headline", cache_policy=NO_CACHE)
def choose_headline(spec: RunSpec, report, rec: dict) -> str:
    """The headline metric: the spec's, else the ONS recommendation, else :data:`DEFAULT_HEADLINE`
    when the recommended metric is not in this report (e.g. a score metric without scores)."""
    headline = spec.headline_metric or rec["recommendation"].metric
    return headline if headline in report.metrics else DEFAULT_HEADLINE


@task(name="log-evaluation", **IO)
def log_evaluation(spec: RunSpec, key: str, evaluation: Evaluation, force: bool) -> LoggedEvaluation:
    """Log the evaluation as one MLflow run (idempotent by ``key``, FINISHED only when complete)."""
    with tempfile.TemporaryDirectory(prefix="classwatch-plots-") as plot_dir:
        content = run_content(spec, evaluation, plot_dir)
        run_id, created = log_run(spec.tracking_uri(), spec.mlflow.experiment, key, content, force=force)
    semantic = semantic_metrics(content.metrics)
    return LoggedEvaluation(run_id, created, {k: v for k, v in semantic.items() if not k.startswith("baseline_")})


def plot_subject(name: str, model_uri: str | None, test: str) -> str:
    """What an evaluation's plots are of, for their titles: the model (its URI, else the spec's
    name) and the test file.

    >>> plot_subject("m", "models:/m/3", "/data/test.parquet"), plot_subject("m", None, "s3://b/test/")
    ('models:/m/3 on test.parquet', 'm on test')
    """
    return f"{model_uri or name} on {Path(str(test).rstrip('/')).name}"


def run_content(spec: RunSpec, evaluation: Evaluation, plot_dir: str) -> RunContent:
    """Everything the evaluation run will hold: metrics (under their MLflow names, :func:`logged_name`),
    intervals, baselines, plots, tables, ISO report."""
    from tasks.render.plots import plot_report  # matplotlib: imported only when a run is assembled

    e = evaluation
    plan, report, headline, checks, rec, champion, timing, drift = (
        e.plan, e.report, e.headline, e.checks, e.recommendation, e.champion, e.timing, e.drift)
    metrics = dict(report.metrics)
    for k, (lo, hi) in report.intervals.items():
        metrics[f"{k}_ci_low"], metrics[f"{k}_ci_high"] = lo, hi
    for name, values in report.baselines.items():
        metrics.update({f"baseline_{name}/{k}": v for k, v in values.items()})
    metrics.update(timing or {})
    tags = {"classwatch.kind": "evaluate", "classwatch.model": spec.name, "classwatch.headline": headline,
            "classwatch.model_uri": plan.model_uri or "none", "classwatch.recommendation": rec["recommendation"].metric}
    tables = curve_tables(report) if report.curves else {}
    for name, result in checks.items():
        tags[f"classwatch.check.{name}"] = result.status
        metrics.update({f"check_{name}/{k}": v for k, v in result.figures.items()
                        if isinstance(v, (int, float, np.number))})
        tables[f"check_{name}.json"] = result.table
    if report.per_class is not None:
        tables["per_class.json"] = report.per_class
    if drift is not None:
        tables["drift_table.json"] = drift
        metrics["drift_flagged"] = int(drift["drift"].fill_null(False).sum())
    tables["baselines.json"] = pl.DataFrame([{"metric": k, "model": report.metrics.get(k),
                                              **{b: report.baselines[b].get(k) for b in report.baselines}}
                                             for k in report.metrics], infer_schema_length=None)
    if champion:
        b, m = champion["bootstrap"], champion["mcnemar"]
        metrics.update({"champion/mcnemar_statistic": m.statistic, "champion/mcnemar_p": m.p_value,
                        f"champion/{champion['metric']}_difference": b.statistic,
                        f"champion/{champion['metric']}_difference_ci_low": b.interval[0],
                        f"champion/{champion['metric']}_difference_ci_high": b.interval[1],
                        "champion/bootstrap_p": b.p_value})
        tags["classwatch.champion"] = champion["champion_uri"]
    subject = plot_subject(spec.name, plan.model_uri, plan.test)
    files = {f"{k}.png": str(p) for k, p in plot_report(report, plot_dir, beta=spec.beta, subject=subject).items()}
    if e.calibration is not None:  # calibration: keys, per-target table, reliability bins and diagram
        from tasks.render.calibration import plot_reliability

        metrics.update(e.calibration.metrics)
        tables.update({"calibration.json": e.calibration.table, "reliability_bins.json": e.calibration.bins})
        files["reliability.png"] = str(plot_reliability(e.calibration.diagrams, f"{plot_dir}/reliability.png",
                                                        subject=subject))
    model = model_description(plan.model_uri, spec.tracking_uri())
    rec_d = rec["recommendation"].as_dict()
    params = {**spec.flat_params(), "test_source": plan.test, "reference_source": plan.reference or "none",
              "labels": json.dumps(plan.labels, default=str, ensure_ascii=False), "headline_metric": headline,
              **{f"ons.{k}": v for k, v in rec_d.items() if k in ("metric", "space", "column", "averaging", "beta")}}
    no_scores = None if report.curves else no_scores_reason(spec, plan.model_uri)
    text = iso_report(spec=spec, plan=plan, report=report, headline=headline, checks=checks, recommendation=rec,
                      champion=champion, timing=timing, environment=environment(), model=model,
                      drift_rows=None if drift is None else metrics["drift_flagged"], no_scores=no_scores)
    tags["mlflow.note.content"] = evaluation_note(plan.model_uri, plan.test, report, headline,  # the run's description
                                                  rec["recommendation"].metric, checks, champion) \
        + (f" {no_scores}" if no_scores else "")
    metrics = {**headline_section(metrics, headline), **{logged_name(k): v for k, v in metrics.items()}}
    return RunContent(f"{spec.name} evaluation", params=params, metrics=metrics, tags=tags, files=files,
                      tables=tables, texts={"iso_report.md": text})


@task(name="promote-champion", **IO)
def promote(spec: RunSpec, plan: EvalPlan, champion: dict | None) -> bool:
    """Set the registry alias ``champion`` on the evaluated version when there is no champion yet or
    the new model is at least as good on the compared metric (bootstrap difference >= 0)."""
    m = MODEL_VERSION.match(plan.model_uri or "")
    if not m or m.group(1) != spec.name:
        return False
    if champion is not None and not champion["bootstrap"].statistic >= 0:
        return False
    client(spec.tracking_uri()).set_registered_model_alias(spec.name, "champion", m.group(2))
    return True
