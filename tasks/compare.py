"""Prefect task of compare_models: the ISO clause-7 tests between models, corrected together."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

import metrics_core as mc
from metrics_core import significance as sig
from tasks import IO
from tasks.config.sources import describe_source
from tasks.config.spec import RunSpec, fingerprint
from tasks.evaluate import EvalPlan, label_metric, recommendation
from tasks.render.comparison import comparison_markdown
from tasks.render.markdown import comparison_note
from tasks.store.mlflow import MlflowStore, RunContent, log_run

FOLDS = 5


def model_label(uri: str) -> str:
    """A short name for a model URI.

    >>> model_label("models:/price-classifier/2"), model_label("runs:/abc/model")
    ('price-classifier v2', 'runs:/abc/model')
    """
    parts = uri.split("/")
    if uri.startswith("models:/") and len(parts) == 3 and parts[2].isdigit():
        return f"{parts[1]} v{parts[2]}"
    return uri


def comparison_key(spec: RunSpec, uris: list[str], cv_scores: dict | None, test_source: str) -> str:
    """The comparison's MLflow run key: models, CV scores, spec and test source."""
    return f"compare|{spec.name}|{fingerprint(uris, cv_scores, spec.fingerprint(), describe_source(test_source))}"


@task(name="compared-metric", **IO)
def compared_metric(spec: RunSpec, plan: EvalPlan) -> str:
    """The metric the models are compared on: the spec's headline metric, else the ONS
    recommendation for this data, as a metric of predicted labels (:func:`tasks.evaluate.label_metric`)."""
    return label_metric(spec.headline_metric or recommendation.fn(spec, plan)["recommendation"].metric)


@task(name="finished-comparison", **IO)
def finished_comparison(spec: RunSpec, key: str) -> dict | None:
    """The FINISHED comparison run with ``key``, or None: what :func:`log_comparison` logged, read
    back in the shape ``compare_models`` returns (run_id, best, metric, tests as rows, metrics)."""
    store = MlflowStore(spec.tracking_uri(), spec.mlflow.experiment)
    done = store.finished(key)
    if done is None:
        return None
    params = store.client.get_run(done.run_id).data.params
    return {"run_id": done.run_id, "best": done.tags.get("classwatch.best"), "metric": params.get("compared_metric"),
            "tests": store.read_table(done.run_id, "comparison_tests.json").to_dicts(), "metrics": done.metrics}


@task(name="log-comparison", **IO)
def log_comparison(spec: RunSpec, key: str, uris: list[str], metric: str, test_source: str, result: dict,
                   force: bool) -> tuple[str, bool, dict]:
    """Log the comparison as one MLflow run: per-model metrics, the test table, the folds, the markdown.

    Returns ``(run_id, created, metrics)``.
    """
    metrics = {}
    for i, row in enumerate(result["per_model"].iter_rows(named=True)):
        metrics.update({f"model_{i}/{k}": v for k, v in row.items() if k != "model"})
    metrics["n_rejected"] = int(result["tests"]["reject"].sum())
    params = {**spec.flat_params(), "compared_metric": metric, "test_source": test_source,
              **{f"model_{i}": u for i, u in enumerate(uris)}}
    content = RunContent(f"{spec.name} comparison", params=params, metrics=metrics,
                         tags={"classwatch.kind": "compare", "classwatch.model": spec.name,
                               "classwatch.best": result["best"],
                               "mlflow.note.content": comparison_note(result, spec.alerts.correction,
                                                                      spec.alerts.alpha)},
                         tables={"comparison_tests.json": result["tests"], "per_model.json": result["per_model"],
                                 "fold_metrics.json": result["folds"]},
                         texts={"comparison.md": comparison_markdown(result, spec)})
    run_id, created = log_run(spec.tracking_uri(), spec.mlflow.experiment, key, content, force=force)
    return run_id, created, metrics


def _report(spec: RunSpec, labels: list, y, pred):
    if spec.task == "binary":
        return mc.binary_report(y, y_pred=pred, pos_label=labels[1], beta=spec.beta)
    return mc.multiclass_report(y, pred, labels=labels, beta=spec.beta)


def fold_metrics(spec: RunSpec, labels: list, y, preds: dict, metric: str, folds: int = FOLDS) -> pl.DataFrame:
    """``metric`` of every model on ``folds`` seeded, disjoint folds of the test rows (long table)."""
    rng = np.random.default_rng(spec.seed)
    fold = rng.permutation(len(y)) % folds
    rows = []
    for name, pred in preds.items():
        for f in range(folds):
            m = fold == f
            rows.append({"model": name, "fold": f, metric: _report(spec, labels, y[m], pred[m]).metrics[metric]})
    return pl.DataFrame(rows)


@task(name="compare-models", cache_policy=NO_CACHE)
def compare(spec: RunSpec, labels: list, y: np.ndarray, preds: dict, metric: str,
            cv_scores: dict | None = None, cv_n_train: int | None = None, cv_n_test: int | None = None) -> dict:
    """Pairwise McNemar and paired bootstrap of ``metric`` on the shared test rows, a paired t-test
    over disjoint folds, and for cross-validation scores (one list per model, same folds) the
    corrected resampled t-test (Nadeau-Bengio, with n_train/n_test) or the paired t-test; with 3+
    models also ANOVA and Kruskal-Wallis over the fold values. All p-values of the run are
    corrected together (``spec.alerts.correction`` at ``spec.alerts.alpha``)."""
    alpha = spec.alerts.alpha
    reports = {name: _report(spec, labels, y, p) for name, p in preds.items()}
    per_model = pl.DataFrame([{"model": n, **{k: r.metrics.get(k) for k in (metric, "accuracy", "balanced_accuracy")}}
                              for n, r in reports.items()])
    folds = fold_metrics(spec, labels, y, preds, metric) if preds else None
    kw = {"labels": labels} if spec.task == "multiclass" else {"pos_label": labels[1]}
    tests = []
    for a, b in combinations(list(preds), 2):
        tests.append((a, b, "McNemar", sig.mcnemar(y, preds[a], preds[b], alpha=alpha)))
        tests.append((a, b, f"paired bootstrap ({metric})",
                      sig.paired_bootstrap(metric, y, preds[a], preds[b], n_boot=spec.n_boot, seed=spec.seed,
                                           task=spec.task, kind="pred", alpha=alpha, beta=spec.beta, **kw)))
        fa = folds.filter(pl.col("model") == a)[metric].to_numpy()
        fb = folds.filter(pl.col("model") == b)[metric].to_numpy()
        tests.append((a, b, f"paired t-test over {FOLDS} test folds", sig.paired_t_test(fa, fb, alpha=alpha)))
    if cv_scores:
        for a, b in combinations(list(cv_scores), 2):
            if cv_n_train and cv_n_test:
                res = sig.corrected_resampled_t_test(cv_scores[a], cv_scores[b], cv_n_train, cv_n_test, alpha=alpha)
            else:
                res = sig.paired_t_test(cv_scores[a], cv_scores[b], alpha=alpha)
            tests.append((a, b, f"{res.test} (CV scores)", res))
    if len(preds) >= 3:
        groups = [folds.filter(pl.col("model") == n)[metric].to_numpy() for n in preds]
        tests.append(("all", "all", "ANOVA over folds", sig.anova(*groups, alpha=alpha)))
        tests.append(("all", "all", "Kruskal-Wallis over folds", sig.kruskal_wallis(*groups, alpha=alpha)))
    corrected = sig.correct([t.p_value for *_, t in tests], spec.alerts.correction, alpha)
    adj, rej = corrected.p_adjusted, corrected.reject
    table = pl.DataFrame([{"model_a": a, "model_b": b, "test": name, "statistic": float(t.statistic),
                           "p_value": float(t.p_value), "p_adjusted": float(adj[i]), "reject": bool(rej[i]),
                           "effect_size": float(t.effect_size), "effect_name": t.effect_name,
                           "ci_low": float(t.interval[0]) if t.interval else None,
                           "ci_high": float(t.interval[1]) if t.interval else None, "verdict": t.verdict}
                          for i, (a, b, name, t) in enumerate(tests)])
    best = max(reports, key=lambda n: np.nan_to_num(reports[n].metrics.get(metric, np.nan), nan=-np.inf))
    return {"per_model": per_model, "tests": table, "folds": folds, "best": best, "metric": metric}
