"""Flow evaluate_model: checks -> (model predictions, timed) -> report -> champion test -> ONS -> ISO report -> MLflow."""

from __future__ import annotations

from typing import Any

from prefect import flow

from tasks.config.spec import load_spec
from tasks.evaluate import (build_report, champion_comparison, data_checks, evaluation_calibration, evaluation_stats,
                            plan_evaluation, predict, recommendation, reference_drift)
from tasks.evaluate_run import (Evaluation, choose_headline, finished_evaluation, log_evaluation, promote,
                                run_key)


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
    base = {"model": s.name, "experiment": s.mlflow.experiment, "tracking_uri": s.tracking_uri()}
    summary = None if force else finished_evaluation(s, key)
    if summary is not None:
        return {**base, **summary, "created": False, "promoted": False}
    preds = predict(s, plan) if plan.model_uri else None
    report = build_report(s, evaluation_stats(s, plan, preds))
    checks = data_checks(s, plan)
    rec = recommendation(s, plan)
    headline = choose_headline(s, report, rec)
    champion = champion_comparison(s, plan, preds, headline) if preds is not None else None
    drift = reference_drift(s, plan, preds)
    calibration = evaluation_calibration(s, plan, report, preds)
    found = Evaluation(plan, report, headline, checks, rec, champion, preds.timing if preds else None, drift,
                       calibration)
    logged = log_evaluation(s, key, found, force)
    promoted = promote(s, plan, champion) if promote_champion else False
    return {**base, "run_id": logged.run_id, "created": logged.created, "headline": headline,
            "metrics": logged.metrics, "recommendation": rec["recommendation"].metric, "promoted": promoted,
            "champion": None if champion is None else champion["champion_uri"]}
