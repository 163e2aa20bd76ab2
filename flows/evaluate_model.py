"""Flow evaluate_model: checks -> (model predictions, timed) -> report -> champion test -> ONS -> ISO report -> MLflow."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from typing import Any

import numpy as np
import polars as pl
from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from tasks.config import sources
from tasks.evaluate import (EvalPlan, build_report, champion_comparison, data_checks, environment,
                            evaluation_stats, model_description, plan_evaluation, predict, recommendation,
                            reference_drift)
from tasks.render.iso_report import iso_report
from tasks.store.mlflow import RunContent, client, finished_run, log_run
from tasks.monitor import IO
from tasks.config.spec import RunSpec, fingerprint, load_spec

FALLBACK_HEADLINE = "balanced_accuracy"
MODEL_VERSION = re.compile(r"^models:/([^/@]+)/(\d+)$")


def run_key(spec: RunSpec, plan: EvalPlan) -> str:
    return f"evaluate|{spec.name}|{fingerprint(spec.model_dump(mode='json'), sources.describe_source(plan.test))}"


def _finite(a) -> list:
    return [None if not np.isfinite(v) else float(v) for v in np.asarray(a, dtype=np.float64)]


def curve_tables(report) -> dict[str, pl.DataFrame]:
    """Thinned curve points (<= 1,000 per curve) as tables ``curves_<name>.json``."""
    from metrics_core import thin

    out = {}
    binary = "roc" in report.curves
    sets = [(None, report.curves)] if binary else list(report.curves.items())
    for name in ("roc", "pr", "gain", "lift"):
        parts = []
        for label, curves in sets:
            c = curves[name]
            x, y, t = thin(c["x"], c["y"], c["thresholds"])
            part = {"x": _finite(x), "y": _finite(y), "threshold": _finite(t)}
            if label is not None:
                part = {"class": [str(label)] * len(part["x"]), **part}
            parts.append(pl.DataFrame(part, schema_overrides={"x": pl.Float64, "y": pl.Float64,
                                                               "threshold": pl.Float64}))
        if parts:
            out[f"curves_{name}.json"] = pl.concat(parts)
    return out


@task(name="assemble-evaluation", cache_policy=NO_CACHE)
def assemble(spec: RunSpec, plan: EvalPlan, report, headline: str, checks: dict, rec: dict, champion: dict | None,
             timing: dict | None, drift: pl.DataFrame | None, plot_dir: str) -> RunContent:
    """Everything the evaluation run will hold: metrics, intervals, baselines, plots, tables, ISO report."""
    from tasks.render.plots import plot_report

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
    files = {f"{k}.png": str(p) for k, p in plot_report(report, plot_dir, beta=spec.beta).items()}
    model = model_description(plan.model_uri, spec.tracking_uri())
    rec_d = rec["recommendation"].as_dict()
    params = {**spec.flat_params(), "test_source": plan.test, "reference_source": plan.reference or "none",
              "labels": json.dumps(plan.labels, default=str), "headline_metric": headline,
              **{f"ons.{k}": v for k, v in rec_d.items() if k in ("metric", "space", "column", "averaging", "beta")}}
    text = iso_report(spec=spec, plan=plan, report=report, headline=headline, checks=checks, recommendation=rec,
                      champion=champion, timing=timing, environment=environment(), model=model,
                      drift_rows=None if drift is None else metrics["drift_flagged"])
    return RunContent(f"{spec.name} evaluation", params=params, metrics=metrics, tags=tags, files=files,
                      tables=tables, texts={"iso_report.md": text})


@task(name="log-evaluation", **IO)
def log_evaluation(spec: RunSpec, key: str, content: RunContent, force: bool) -> tuple[str, bool]:
    return log_run(spec.tracking_uri(), spec.mlflow.experiment, key, content, force=force)


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


@flow(name="evaluate_model")
def evaluate_model(spec: Any = None, model_uri: str | None = None, model_name: str | None = None,
                   test_data: str | None = None, promote_champion: bool = False, force: bool = False) -> dict:
    """Evaluate a classifier on a test set the ISO/IEC TS 4213 way and log it all to MLflow.

    Parameters (JSON-able, for deployments and event triggers): ``spec`` a YAML path or dict,
    ``model_uri`` an MLflow model (``models:/name/3``, ``runs:/id/model``) that scores the test
    set (else the data's score/prediction columns are evaluated), ``model_name`` overrides the
    spec's name, ``test_data`` overrides ``data.test``, ``promote_champion`` sets the registry
    alias ``champion`` when the model is at least as good as the current one, ``force`` re-logs
    an evaluation already logged with the same spec and data.
    """
    s = load_spec(spec, model_uri=model_uri, name=model_name, data={"test": test_data})
    plan = plan_evaluation(s)
    key = run_key(s, plan)
    uri = s.tracking_uri()
    base = {"model": s.name, "experiment": s.mlflow.experiment, "tracking_uri": uri}
    summary = None if force else finished_run(uri, s.mlflow.experiment, key)
    if summary is not None:
        return {**base, "run_id": summary["run_id"], "created": False, "metrics": summary["metrics"],
                "headline": summary["tags"].get("classwatch.headline"), "promoted": False}
    preds = predict(s, plan) if plan.model_uri else None
    report = build_report(s, evaluation_stats(s, plan, preds))
    checks = data_checks(s, plan)
    rec = recommendation(s, plan)
    headline = s.headline_metric or rec["recommendation"].metric
    if headline not in report.metrics:
        headline = FALLBACK_HEADLINE
    champion = champion_comparison(s, plan, preds, headline) if preds is not None else None
    drift = reference_drift(s, plan, preds)
    plot_dir = tempfile.mkdtemp(prefix="classwatch-plots-")
    try:
        content = assemble(s, plan, report, headline, checks, rec, champion, preds.timing if preds else None, drift,
                           plot_dir)
        run_id, created = log_evaluation(s, key, content, force)
    finally:
        shutil.rmtree(plot_dir, ignore_errors=True)
    promoted = promote(s, plan, champion) if promote_champion else False
    return {**base, "run_id": run_id, "created": created, "headline": headline,
            "metrics": {k: v for k, v in content.metrics.items() if not k.startswith("baseline_")},
            "recommendation": rec["recommendation"].metric, "promoted": promoted,
            "champion": None if champion is None else champion["champion_uri"]}
