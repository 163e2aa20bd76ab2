"""Flow compare_models: several models on one test set (or CV fold scores): clause-7 tests, corrected -> MLflow."""

from __future__ import annotations

from typing import Any

from prefect import flow

from tasks.compare import (compared_metric, comparison, comparison_key, finished_comparison, log_comparison,
                           model_label)
from tasks.config.spec import load_spec
from tasks.evaluate import plan_evaluation, predict


@flow(name="compare_models")
def compare_models(spec: Any = None, model_uris: list[str] | None = None, test_data: str | None = None,
                   cv_scores: dict[str, list[float]] | None = None, cv_n_train: int | None = None,
                   cv_n_test: int | None = None, force: bool = False) -> dict:
    """Compare models on the same test rows (ISO/IEC TS 4213 clause 7), all tests corrected together.

    ``model_uris``: two or more MLflow models that score the test set (``columns.features`` of the
    spec are their inputs); ``cv_scores``: optional per-model lists of a metric over the same
    cross-validation folds, with ``cv_n_train``/``cv_n_test`` for the corrected resampled t-test.
    The compared metric is the spec's headline metric, else the ONS recommendation (a
    label-based metric). One MLflow run holds the per-model metrics and the test table.
    """
    uris = list(model_uris or [])
    if len(uris) < 2:
        raise ValueError(f"model_uris: compare_models needs at least two MLflow model URIs, got {uris!r}.")
    s = load_spec(spec, data={"test": test_data}, model_uri=uris[0])
    plan = plan_evaluation(s)
    key = comparison_key(s, uris, cv_scores, plan.test)
    base = {"model": s.name, "experiment": s.mlflow.experiment, "tracking_uri": s.tracking_uri()}
    summary = None if force else finished_comparison(s, key)
    if summary is not None:
        return {**base, **summary, "created": False}
    futures = {model_label(u): predict.submit(s, plan, u) for u in uris}
    preds = {name: f.result() for name, f in futures.items()}
    metric = compared_metric(s, plan)
    y = next(iter(preds.values())).y_true
    result = comparison(s, plan.labels, y, {n: p.y_pred for n, p in preds.items()}, metric, cv_scores, cv_n_train,
                        cv_n_test)
    run_id, created, metrics = log_comparison(s, key, uris, metric, plan.test, result, force)
    return {**base, "run_id": run_id, "created": created, "best": result["best"], "metric": metric,
            "tests": result["tests"].to_dicts(), "metrics": metrics}
