"""The demo: synthetic price quotes -> a real title classifier in MLflow -> evaluate, monitor 12 months, compare."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import polars as pl
import yaml

from tasks.config.spec import fingerprint
from classwatch.demo.quotes import Shift, class_list, history, labelled_sample, quotes

MODEL_NAME = "price-classifier"
EXPERIMENT = "classwatch-demo"
TRAIN_MONTHS = ["2023-09", "2023-10", "2023-11", "2023-12"]
MONTHS = [f"2024-{m:02d}" for m in range(1, 13)]
UNLABELLED_FROM = 11  # months 11 and 12 arrive without labels (labelling lags in production)
SAMPLED_MONTH = 10  # month 10 arrives with labels on a stratified sample, with design weights (docs/label-lag.md)


@dataclass
class DemoResult:
    out_dir: Path
    tracking_uri: str
    evaluation: dict = field(default_factory=dict)
    periods: list = field(default_factory=list)  # tasks.monitor.PeriodResult per month
    comparison: dict = field(default_factory=dict)
    models: dict = field(default_factory=dict)
    plots: list = field(default_factory=list)
    seconds: float = 0.0


def _pipeline(kind: str, seed: int):
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import ComplementNB
    from sklearn.pipeline import Pipeline

    features = ColumnTransformer([("title", TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True),
                                   "title")])
    # saga converges in well under a second here (lbfgs takes 10-20 s on a loaded 2-core machine);
    # it visits the rows in a random order, so the seed makes a re-run give the same scores.
    if kind == "logistic_regression":
        model = LogisticRegression(C=4.0, solver="saga", max_iter=50, tol=1e-3, random_state=seed)
    else:
        model = ComplementNB(alpha=0.3)
    return Pipeline([("features", features), ("classifier", model)])


def train_and_register(kind: str, train: pl.DataFrame, tracking_uri: str, seed: int = 0) -> tuple[str, object]:
    """Fit a title classifier and log it to MLflow as a registered model version (pyfunc returns
    class probabilities; metadata holds the class order). Re-running with the same data reuses the
    logged version (training run found by its classwatch.run_key tag)."""
    import mlflow

    from tasks.store.mlflow import client, experiment_id, find_run, process_uris

    key = f"train|{kind}|{fingerprint(train['id'].to_list()[:50], train.height, seed)}"
    c = client(tracking_uri)
    exp_id = experiment_id(c, EXPERIMENT)
    done = find_run(c, exp_id, key)
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe = _pipeline(kind, seed).fit(train.select("title").to_pandas(), train["label"].to_numpy())
    if done is not None and done.info.status == "FINISHED" and "classwatch.model_version" in done.data.tags:
        return f"models:/{MODEL_NAME}/{done.data.tags['classwatch.model_version']}", pipe
    with process_uris(tracking_uri):
        with mlflow.start_run(experiment_id=exp_id, run_name=f"train {kind}",
                              tags={"classwatch.run_key": key, "classwatch.kind": "train"}) as run:
            params = {k: v for k, v in pipe.named_steps["classifier"].get_params().items() if v is not None}
            mlflow.log_params({"model_type": kind, "features": "tf-idf word 1-2 grams of title", "n_train": train.height,
                               **params})
            info = mlflow.sklearn.log_model(
                pipe, name="model", registered_model_name=MODEL_NAME, pyfunc_predict_fn="predict_proba",
                metadata={"classes": [str(x) for x in pipe.classes_]}, serialization_format="cloudpickle",
                pip_requirements=["scikit-learn", "numpy", "scipy", "pandas", "cloudpickle"])
            version = str(info.registered_model_version)
            mlflow.set_tag("classwatch.model_version", version)
            run_id = run.info.run_id
    c.set_terminated(run_id, "FINISHED")
    return f"models:/{MODEL_NAME}/{version}", pipe


def _scored(frame: pl.DataFrame, pipe, classes: list[str]) -> pl.DataFrame:
    proba = pipe.predict_proba(frame.select("title").to_pandas())
    order = [list(pipe.classes_).index(c) for c in classes]
    proba = proba[:, order]
    cols = {f"score_{c}": proba[:, j] for j, c in enumerate(classes)}
    return frame.with_columns(**cols, prediction=pl.Series(np.asarray(classes)[proba.argmax(axis=1)]))


def write_data(out_dir: Path, rows_per_month: int, seed: int) -> dict:
    """The training era (4 stable months) split 50/25/25 into train / validation / test by product
    title (a title is in one split only, so test rows never repeat a training product: no
    leakage), and 12 monthly deliveries with a prevalence and price shift from month 8, one
    retailer's pack sizes in kilograms in month 9 only, and one retailer's new titles from month 11."""
    data = out_dir / "data"
    (data / "deliveries").mkdir(parents=True, exist_ok=True)
    era = history(TRAIN_MONTHS, rows_per_month * 3 // 4, seed)
    part = (era["title"].hash(seed=seed) % 4).to_numpy()
    splits = {"train": era.filter(part < 2), "validation": era.filter(part == 2), "test": era.filter(part == 3)}
    shift = Shift()
    months = {m: quotes(rows_per_month, seed + 100 + i, m, shift=shift if i + 1 >= shift.from_month else None,
                        retitled=shift.retitled_retailer if i + 1 >= shift.retitle_month else None,
                        pack_in_kilograms=shift.pack_retailer if i + 1 == shift.pack_month else None)
              for i, m in enumerate(MONTHS)}
    return {"dir": data, "splits": splits, "months": months, "shift": shift}


def demo_spec(out_dir: Path, tracking_uri: str) -> dict:
    data = out_dir / "data"
    return {
        "name": MODEL_NAME, "task": "multiclass", "labels": class_list(),
        "context": "Demo: classify web-scraped grocery price quotes to COICOP-like item classes from their titles, "
                   "for an elementary price index (ONS use case).",
        "ground_truth": "Synthetic: the class each quote was generated from.",
        "data": {"train": str(data / "train.parquet"), "test": str(data / "test.parquet"),
                 "reference": str(data / "reference.parquet"), "current": str(data / "deliveries" / "{period}.parquet")},
        "columns": {"features": ["title", "pack_size"], "price": "price", "weight": "weight", "design_weight": "design_weight",
                    "segments": ["retailer"]},
        "mlflow": {"experiment": EXPERIMENT, "tracking_uri": tracking_uri},
        "n_boot": 300,
    }


def run_demo(out_dir: str | Path = "demo-output", *, rows_per_month: int = 10_000, seed: int = 0,
             tracking_uri: str | None = None, step: Callable[[str], None] | None = None,
             period_done: Callable[[object], None] | None = None) -> DemoResult:
    """Build the data, train two classifiers, then evaluate, monitor 12 months and compare.

    ``step(message)`` is called before each stage and ``period_done(result)`` after each month
    with its :class:`tasks.monitor.PeriodResult` (the CLI draws its progress from them). Returns
    what was logged where.
    """
    from flows.compare_models import compare_models
    from flows.evaluate_model import evaluate_model
    from flows.monitor_period import monitor_period
    from flows.runners import in_process_runs
    from tasks.config.spec import default_tracking_uri

    start = time.perf_counter()
    say = step or (lambda _m: None)
    out = Path(out_dir).resolve()
    uri = tracking_uri or default_tracking_uri()
    result = DemoResult(out, uri)
    say(f"Generating price quotes ({len(TRAIN_MONTHS)} training months, 12 deliveries of {rows_per_month:,})")
    d = write_data(out, rows_per_month, seed)
    classes = class_list()
    say("Training a logistic regression and a naive Bayes title classifier; logging them to MLflow")
    lr_uri, lr = train_and_register("logistic_regression", d["splits"]["train"], uri, seed)
    nb_uri, _ = train_and_register("complement_naive_bayes", d["splits"]["train"], uri, seed)
    result.models = {"logistic_regression": lr_uri, "complement_naive_bayes": nb_uri}
    say("Scoring the validation set (reference window) and the 12 deliveries with the logistic regression")
    data = d["dir"]
    for name, frame in d["splits"].items():
        frame.write_parquet(data / f"{name}.parquet")
    _scored(d["splits"]["validation"], lr, classes).write_parquet(data / "reference.parquet")
    for i, (month, frame) in enumerate(d["months"].items()):
        scored = _scored(frame, lr, classes)
        if i + 1 >= UNLABELLED_FROM:
            scored = scored.drop("label")
        elif i + 1 == SAMPLED_MONTH:
            scored = labelled_sample(scored, seed + 200 + i)
        scored.write_parquet(data / "deliveries" / f"{month}.parquet")
    spec = demo_spec(out, uri)
    (out / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    with in_process_runs():
        say(f"evaluate_model: {lr_uri} on the test set (checks, metrics with intervals, curves, ISO report)")
        result.evaluation = evaluate_model(spec, model_uri=lr_uri, promote_champion=True)
        for month in MONTHS:
            say(f"monitor_period {month}")
            summary = monitor_period(spec, month)
            result.periods.append(summary)
            if period_done:
                period_done(summary)
        say(f"compare_models: {lr_uri} vs {nb_uri}")
        result.comparison = compare_models(spec, [lr_uri, nb_uri])
    result.plots = export_plots(out / "plots", uri, result)
    result.seconds = time.perf_counter() - start
    return result


def export_plots(plot_dir: Path, tracking_uri: str, result: DemoResult) -> list[Path]:
    """Copy the PNGs the flows logged (evaluation curves, monitoring over time) next to the data."""
    from tasks.store.mlflow import client

    c = client(tracking_uri)
    plot_dir.mkdir(parents=True, exist_ok=True)
    out = []
    runs = [("evaluation", result.evaluation.get("run_id"))]
    if result.periods:
        runs.append(("monitoring", result.periods[-1].parent_run_id))
    for prefix, run_id in runs:
        if not run_id:
            continue
        for art in c.list_artifacts(run_id):
            if art.path.endswith(".png"):
                local = Path(c.download_artifacts(run_id, art.path, str(plot_dir)))
                name = Path(art.path).name
                target = plot_dir / (name if name.startswith(f"{prefix}_") else f"{prefix}_{name}")
                shutil.move(str(local), target)
                out.append(target)
    return out
