"""Prefect tasks of evaluate_model: plan, predict with an MLflow model (timed), statistics, report, checks,
champion comparison, ONS recommendation."""

from __future__ import annotations

import platform
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl
import pyarrow as pa
from prefect import task
from prefect.cache_policies import NO_CACHE

import metrics_core as mc
from metrics_core import checks, monitoring as mon, ons
from metrics_core.contract import class_indices, predicted_class, resolve_layout
from metrics_core.dataset import scan_stats
from metrics_core.errors import InputError
from metrics_core.significance import mcnemar, paired_bootstrap
from tasks.config import sources
from tasks import IO
from metrics_core.monitoring import DEFAULT_HEADLINE
from tasks.monitor import bins_of
from tasks.config.spec import RunSpec

LATENCY_ROWS = 100
FREE_TEXT_DISTINCT = 1000


@dataclass(frozen=True)
class EvalPlan:
    """Sources and layouts of an evaluation (metadata only)."""

    test: str
    reference: str | None
    labels: list
    test_layout: sources.Layout
    ref_layout: sources.Layout | None
    model_uri: str | None


@task(name="plan-evaluation", **IO)
def plan_evaluation(spec: RunSpec) -> EvalPlan:
    """Resolve the test (and reference) sources and map their columns; nothing is read but metadata."""
    test, _ = sources.source_for(spec, "test")
    reference = spec.data.reference
    labels = sources.class_list(spec, test)
    model_uri = pinned_model_uri(spec.model_uri, spec.tracking_uri()) if spec.model_uri else None
    if model_uri:
        classes = model_classes(model_uri, spec.tracking_uri())
        if classes and spec.labels is None and spec.task == "multiclass":
            labels = sorted(set(labels) | set(classes), key=lambda v: (str(type(v)), v))
        # A model scores the rows: the source needs the label and the model's input columns.
        test_layout = resolve_layout(sources.open_dataset(test).schema, spec.task, sources.columns_of(spec),
                                     labels=labels, require=["label", "features"], predictions=False, where=test)
        if not spec.columns.features:
            raise InputError("columns.features: scoring the test set with a model needs its input columns; set "
                             "`columns: {features: [title, ...]}` in the spec.")
    else:
        test_layout = sources.layout(spec, test, labels, require_labels=True)
    ref_layout = None
    if reference:
        ref_layout = sources.layout(spec, reference, labels, require_labels=False)
    return EvalPlan(test, reference, labels, test_layout, ref_layout, model_uri)


def pinned_model_uri(model_uri: str, tracking_uri: str) -> str:
    """``models:/NAME@ALIAS`` as ``models:/NAME/VERSION``, the version the alias points to now; other URIs as given.

    An evaluation is of one version: its run key, its predictions and a champion promotion must
    not follow the alias if it moves while (or after) the evaluation runs.
    """
    if not model_uri.startswith("models:/") or "@" not in model_uri:
        return model_uri
    from tasks.store.mlflow import client

    name, _, alias = model_uri.removeprefix("models:/").partition("@")
    version = client(tracking_uri).get_model_version_by_alias(name, alias.rstrip("/"))
    return f"models:/{name}/{version.version}"


def model_files(model_uri: str, tracking_uri: str, path: str = "") -> str:
    """Download a model (or one of its files, ``path``) from the spec's MLflow store; the local path.

    A ``models:/`` URI (``name/version``, ``name@alias``, a logged model id) is resolved with a
    client of ``tracking_uri`` (registry on the same URI), and the files are downloaded with that
    tracking URI: the process-global MLflow URIs are neither read nor set, so runs against
    different stores can share a process.
    """
    from mlflow.artifacts import download_artifacts
    from mlflow.utils.uri import append_to_uri_path

    from tasks.store.mlflow import client

    uri = model_uri
    if uri.startswith("models:"):
        from mlflow.store.artifact.models_artifact_repo import ModelsArtifactRepository
        from mlflow.store.artifact.utils.models import get_model_name_and_version

        c = client(tracking_uri)
        base, sub = ModelsArtifactRepository.split_models_uri(uri)
        found = get_model_name_and_version(c, base)
        uri = c.get_logged_model(found[0]).artifact_location if len(found) == 1 \
            else c.get_model_version_download_uri(*found)
        uri = append_to_uri_path(uri, sub) if sub else uri
    if path:
        uri = append_to_uri_path(uri, path)
    return download_artifacts(artifact_uri=uri, tracking_uri=tracking_uri, registry_uri=tracking_uri)


def _model_meta(model_uri: str, tracking_uri: str):
    """The model's MLmodel metadata (flavors, run id, ``metadata``), without loading the model."""
    from mlflow.models import Model

    return Model.load(model_files(model_uri, tracking_uri, "MLmodel"))


def model_classes(model_uri: str, tracking_uri: str) -> list | None:
    """The class list a model declares in its metadata (``classes``), or None."""
    meta = _model_meta(model_uri, tracking_uri).metadata or {}
    return list(meta["classes"]) if "classes" in meta else None


@dataclass(frozen=True)
class Predictions:
    """A model's output on the test rows: labels, predictions, scores (N x K in ``labels`` order,
    binary: positive-class column), timings (ISO 6.6) and the rows' optional columns."""

    y_true: np.ndarray
    y_pred: np.ndarray
    y_score: np.ndarray | None
    timing: dict
    extra: dict = field(default_factory=dict)


def _scores_in_order(output, classes: list | None, labels: list, task: str, threshold: float = 0.5):
    """``(predicted classes, scores)`` of a model's output: scores re-ordered to the class list
    (binary: the positive-class column), the predicted class as the contract derives it."""
    out = output.to_numpy() if hasattr(output, "to_numpy") else np.asarray(output)
    if hasattr(output, "columns") and classes is None:
        classes = list(output.columns)
    if out.ndim == 1 or (out.ndim == 2 and out.shape[1] == 1):
        return out.reshape(-1), None
    if classes is None or len(classes) != out.shape[1]:
        raise InputError(f"model output: {out.shape[1]} score columns but the model declares no class list; log it "
                         "with metadata={'classes': [...]} or set labels: in the spec (in score-column order).")
    column = class_indices(pa.array([str(c) for c in labels]), [str(c) for c in classes])  # -1: not scored
    scores = np.where(column >= 0, out[:, np.maximum(column, 0)], 0.0).astype(np.float64)
    if task == "binary":
        scores = scores[:, 1]
    return np.asarray(labels, dtype=object)[predicted_class(scores, task, threshold)], scores


def _typed(pred: np.ndarray, like: np.ndarray) -> np.ndarray:
    try:
        return pred.astype(like.dtype)
    except (ValueError, TypeError):
        return pred


@dataclass(frozen=True)
class Scorer:
    """How a loaded model scores rows: ``fn(inputs)`` and the class order of its score columns (None: unknown)."""

    fn: Callable
    classes: list | None


def model_scorer(model) -> Scorer:
    """Score with per-class probabilities whenever the model has them, whatever the pyfunc's default.

    ``mlflow.sklearn.log_model`` makes ``predict`` (labels) the pyfunc's function unless it is given
    ``pyfunc_predict_fn="predict_proba"``. So the object the pyfunc wraps (``get_raw_model()``,
    else ``unwrap_python_model()``) is scored with its ``predict_proba`` when it is a classifier in
    scikit-learn's sense (``predict_proba`` and ``classes_``); its columns are in ``classes_`` order,
    named by the model's ``metadata["classes"]`` when that list has as many entries. A pyfunc that
    already returns probabilities, or a model without ``predict_proba``, is scored by its ``predict``.
    Returns the scoring function of the loaded ``mlflow.pyfunc.PyFuncModel`` and its class order.
    """
    declared = (model.metadata.metadata or {}).get("classes")
    if model.metadata.flavors.get("python_function", {}).get("predict_fn") == "predict_proba":
        return Scorer(model.predict, declared)
    raw = _wrapped(model)
    own = getattr(raw, "classes_", None)
    if not callable(getattr(raw, "predict_proba", None)) or own is None:
        return Scorer(model.predict, declared)
    same = declared is not None and len(declared) == len(own)
    return Scorer(raw.predict_proba, list(declared) if same else list(own))


def _wrapped(model):
    """The object a pyfunc model wraps (a flavour's raw model or a PythonModel), or None."""
    from mlflow.exceptions import MlflowException

    for unwrap in (model.get_raw_model, model.unwrap_python_model):
        try:
            return unwrap()
        except (NotImplementedError, MlflowException):
            continue
    return None


def no_scores_reason(spec: RunSpec, model_uri: str | None) -> str:
    """Why an evaluation has no score-based metrics or curves: for its description, ISO report and log.

    >>> from tasks.config.spec import load_spec
    >>> no_scores_reason(load_spec({"task": "binary"}), None).split(", so")[0]
    'No scores: the test data has no `score` column, only predicted labels (`prediction`)'
    """
    lost = ("AUROC, average precision, log loss, Brier score, calibration and the ROC, PR, gain and lift curves "
            "need per-class scores and are missing")
    if model_uri:
        return (f"No scores: the model {model_uri} returned predicted labels only (its predict gives labels and it "
                f"has no predict_proba with classes_), so {lost}. Log a classifier that has predict_proba, or a "
                "pyfunc whose predict returns one probability column per class with metadata={'classes': [...]}.")
    c = spec.columns
    wanted = f"`{c.score}`" if spec.task == "binary" else f"`{c.score_prefix}<class>`"
    return (f"No scores: the test data has no {wanted} column, only predicted labels (`{c.prediction}`), so {lost}. "
            f"Add the model's {'positive-class score' if spec.task == 'binary' else 'per-class scores'} to the file.")


def _warn(message: str) -> None:
    """A warning in the flow run's log (the console of ``classwatch serve``); a Python warning outside a run."""
    from prefect.exceptions import MissingContextError
    from prefect.logging import get_run_logger

    try:
        get_run_logger().warning(message)
    except MissingContextError:
        warnings.warn(message, stacklevel=3)


@task(name="predict-with-model", **IO)
def predict(spec: RunSpec, plan: EvalPlan, model_uri: str | None = None) -> Predictions:
    """Load an MLflow model and score the test rows (:func:`model_scorer`): whole-set throughput and
    single-row latency p50/p95/p99 over up to ``LATENCY_ROWS`` rows (ISO 6.6). A model that gives
    labels only is evaluated on them, with a warning (:func:`no_scores_reason`)."""
    import mlflow.pyfunc

    uri = model_uri or plan.model_uri
    scorer = model_scorer(mlflow.pyfunc.load_model(model_files(uri, spec.tracking_uri())))
    classes = scorer.classes
    lay = plan.test_layout
    cols = [spec.columns.label, *spec.columns.features, *[c for c in (lay.price, lay.weight, lay.id) if c]]
    frame = sources.read_columns(plan.test, list(dict.fromkeys(cols)))
    y = frame[spec.columns.label].to_numpy()
    inputs = frame.select(spec.columns.features).to_pandas()
    start = time.perf_counter()
    output = scorer.fn(inputs)
    elapsed = time.perf_counter() - start
    single = []
    for i in range(min(LATENCY_ROWS, len(inputs))):
        t = time.perf_counter()
        scorer.fn(inputs.iloc[i:i + 1])
        single.append(time.perf_counter() - t)
    width = np.shape(output)[1] if np.ndim(output) == 2 else 0
    if classes is None and spec.labels is not None and width == len(spec.labels):
        classes = list(spec.labels)  # the spec's class list is the score-column order
    pred, scores = _scores_in_order(output, classes, plan.labels, spec.task, spec.threshold)
    if scores is None:
        _warn(no_scores_reason(spec, uri))
    lat = np.asarray(single) * 1000
    timing = {"latency_ms_p50": float(np.percentile(lat, 50)), "latency_ms_p95": float(np.percentile(lat, 95)),
              "latency_ms_p99": float(np.percentile(lat, 99)), "throughput_rows_per_s": len(inputs) / elapsed,
              "batch_predict_seconds": elapsed, "latency_rows": float(lat.size)}
    extra = {c: frame[c].to_numpy() for c in (lay.price, lay.weight) if c}
    return Predictions(y, _typed(np.asarray(pred), y), scores, timing, extra)


@task(name="evaluation-statistics", **IO)
def evaluation_stats(spec: RunSpec, plan: EvalPlan, preds: Predictions | None = None):
    """Mergeable statistics of the test set: streamed from the file's scores/predictions, or from a
    model's predictions in memory; with the spec's weight column, the expenditure-weighted confusion
    too (same pass), so the report has the ``weighted/<key>`` twin of every count-based metric."""
    lay = plan.test_layout
    if preds is not None:
        twin = preds.extra.get(lay.weight) if lay.weight else None
        if spec.task == "binary":
            return mc.binary_stats(preds.y_true, preds.y_score, preds.y_pred if preds.y_score is None else None,
                                   threshold=spec.threshold, pos_label=plan.labels[1], twin_weight=twin)
        return mc.multiclass_stats(preds.y_true, preds.y_pred, y_score=preds.y_score, labels=plan.labels,
                                   twin_weight=twin)
    cols = replace(sources.columns_of(spec), weight=None)
    return scan_stats(plan.test, spec.task, cols, labels=plan.labels if spec.task == "multiclass" else None,
                      pos_label=plan.labels[1] if spec.task == "binary" else 1, threshold=spec.threshold,
                      use_prediction=lay.prediction is not None, twin_weight=lay.weight or None)


@task(name="build-report", cache_policy=NO_CACHE)
def build_report(spec: RunSpec, stats):
    """The report (metrics, intervals, baselines, curves) from statistics; intervals computed here."""
    o = spec.report_options()
    r = mc.binary_from_stats(stats, **o) if spec.task == "binary" else mc.multiclass_from_stats(stats, **o)
    _ = r.intervals, r.baselines
    return r


def _frame(source: str, columns: list[str]) -> pl.DataFrame:
    names = sources.open_dataset(source).schema.names
    return sources.read_columns(source, [c for c in dict.fromkeys(columns) if c in names])


@task(name="data-checks", **IO)
def data_checks(spec: RunSpec, plan: EvalPlan) -> dict:
    """ISO 5.3 data checks between the reference (training) rows and the test rows: leakage and
    representativeness. Empty dict without a reference source or feature columns."""
    train = spec.data.train or plan.reference
    if not train:
        return {}
    c = spec.columns
    feats = list(c.features)
    numeric_extra = [x for x in (c.price,) if x]
    ref = _frame(train, [c.id, c.label, *feats, *numeric_extra])
    test = _frame(plan.test, [c.id, c.label, *feats, *numeric_extra])
    out = {}
    if feats:
        out["leakage"] = checks.leakage(ref, test, id_column=c.id if c.id in ref.columns and c.id in test.columns
                                        else None, feature_columns=feats,
                                        label_column=c.label if c.label in ref.columns else None)
    compared = [f for f in feats if ref[f].dtype.is_numeric() or ref[f].n_unique() <= FREE_TEXT_DISTINCT]
    compared += [x for x in numeric_extra if x in ref.columns and x in test.columns]
    if compared:
        out["representativeness"] = checks.representativeness(
            ref, test, feature_columns=compared, label_column=c.label if c.label in ref.columns else None,
            alpha=spec.alerts.alpha, psi_threshold=spec.alerts.psi)
    return out


@task(name="reference-drift", **IO)
def reference_drift(spec: RunSpec, plan: EvalPlan, preds: Predictions | None = None) -> pl.DataFrame | None:
    """The drift table of the test set against the reference window (monitoring tests, corrected)."""
    if not plan.reference or plan.ref_layout is None:
        return None
    bins = bins_of(spec)
    ref = _scan(spec, plan.reference, plan.ref_layout, bins)
    if preds is None:
        cur = _scan(spec, plan.test, plan.test_layout, bins)
    else:
        pred_idx = class_indices(pa.array(preds.y_pred.tolist()), plan.labels)
        label_idx = class_indices(pa.array(preds.y_true.tolist()), plan.labels)
        scores = None if preds.y_score is None else preds.y_score.reshape(len(pred_idx), -1)
        if scores is not None and (ref.score_counts is None or scores.shape[1] != ref.score_counts.shape[0]):
            scores = None
        price = preds.extra.get(plan.test_layout.price)
        cur = mon.update(spec.task, np.asarray(plan.labels), bins, pred_idx,
                         label_idx=label_idx if (label_idx >= 0).all() else None, scores=scores,
                         price=price if ref.price_counts is not None else None, threshold=spec.threshold)
        if ref.score_counts is not None and cur.score_counts is None:
            ref = _scan(spec, plan.reference, sources.Layout(**{**plan.ref_layout.as_dict(), "scores": []}), bins)
    return mon.decide_alert(mon.run_tests(ref, cur), spec.alerts).table


def _scan(spec, source, layout, bins):
    return mon.scan_period(source, spec.task, layout.labels, bins, label=layout.label, prediction=layout.prediction,
                           scores=layout.scores, price=layout.price, threshold=spec.threshold,
                           batch_rows=spec.monitor.batch_size)


@task(name="champion-comparison", **IO)
def champion_comparison(spec: RunSpec, plan: EvalPlan, preds: Predictions, headline: str) -> dict | None:
    """McNemar and a paired bootstrap of the headline metric against the registry alias ``champion``
    of ``spec.name`` (ISO clause 7). None when there is no champion or it is the evaluated model."""
    from mlflow.exceptions import MlflowException

    from tasks.store.mlflow import client

    try:
        version = client(spec.tracking_uri()).get_model_version_by_alias(spec.name, "champion")
    except MlflowException:
        return None
    champion_uri = f"models:/{spec.name}/{version.version}"
    if plan.model_uri in (champion_uri, f"models:/{spec.name}@champion"):
        return None
    champ = predict.fn(spec, plan, champion_uri)
    metric = label_metric(headline)
    kw = {"labels": plan.labels} if spec.task == "multiclass" else {"pos_label": plan.labels[1]}
    mc_test = mcnemar(preds.y_true, preds.y_pred, champ.y_pred)
    boot = paired_bootstrap(metric, preds.y_true, preds.y_pred, champ.y_pred, n_boot=spec.n_boot, seed=spec.seed,
                            task=spec.task, kind="pred", alpha=spec.alerts.alpha, beta=spec.beta, **kw)
    return {"champion_uri": champion_uri, "champion_version": version.version, "metric": metric,
            "mcnemar": mc_test, "bootstrap": boot}


#: Metrics computed from predicted labels alone: what a paired bootstrap of two models can compare.
LABEL_METRICS = {"accuracy", "balanced_accuracy", "f1", "fbeta", "precision", "recall", "mcc", "cohen_kappa",
                 "f1_macro", "fbeta_macro", "f1_micro", "fbeta_micro", "f1_weighted", "fbeta_weighted",
                 "fbeta_of_macro", "fbeta_of_weighted", "balanced_accuracy_micro", "recall_macro", "precision_macro"}


def label_metric(headline: str) -> str:
    """``headline`` when it is computed from predicted labels (:data:`LABEL_METRICS`), else
    :data:`~tasks.monitor.DEFAULT_HEADLINE` (a score metric such as AUROC cannot be compared on labels).

    >>> label_metric("f1_macro"), label_metric("auroc")
    ('f1_macro', 'balanced_accuracy')
    """
    return headline if headline in LABEL_METRICS else DEFAULT_HEADLINE


@task(name="ons-recommendation", **IO)
def recommendation(spec: RunSpec, plan: EvalPlan) -> dict:
    """ONS Tables 1-2 from stability measured on the history of the reference (else test) data's
    periods; with fewer than two periods, or a period column of nearly unique values
    (:func:`metrics_core.checks.stability.check_periods`), stability is not measured and is treated as unstable."""
    c = spec.columns
    source = plan.reference or plan.test
    names = sources.open_dataset(source).schema.names
    history = None
    if c.period in names and c.label in names:
        columns = [c.period, c.label, *([c.prediction] if c.prediction in names else []),
                   *([c.price] if c.price and c.price in names else [])]
        # dates and timestamps become months before polars reads them (it cannot hold a "+02:00" zone)
        history = checks.as_frame(mc.month_periods(sources.open_dataset(source).to_table(
            columns=list(dict.fromkeys(columns))), c.period), "rows")
    why = f"{source} has fewer than two periods in column {c.period!r}."
    if history is not None:
        try:  # the recommendation is advice: a column that is no period column leaves it unmeasured
            mc.check_periods(history, c.period)
        except InputError as exc:
            history, why = None, str(exc)
    if history is not None and history[c.period].n_unique() < 2:
        history = None
    if history is None:
        rec = ons.recommend(spec.task, False, False, None)
        return {"recommendation": rec, "stability_reason": f"Stability not measured: {why} Both are treated as "
                "unstable (the robust ONS choice).", "prevalence_stable": None, "price_stable": None}
    st = ons.stability_from_rows(history, period_column=c.period, label_column=c.label,
                                 prediction_column=c.prediction if c.prediction in history.columns else None,
                                 price_column=c.price if c.price and c.price in history.columns else None,
                                 positive_class=plan.labels[1] if spec.task == "binary" else None,
                                 alpha=spec.alerts.alpha, max_abs_change=spec.alerts.prevalence_change,
                                 psi_threshold=spec.alerts.psi, max_relative_change=spec.alerts.price_change,
                                 correction=spec.alerts.correction)
    return {"recommendation": st.recommend(spec.task), "stability_reason": st.reason,
            "prevalence_stable": st.prevalence_stable, "price_stable": st.price_stable}


def environment() -> dict:
    """ISO 5.3 environment: interpreter, platform and the versions of the packages that compute."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0], "platform": platform.platform(), "machine": platform.machine()}
    for pkg in ("classwatch", "numpy", "scipy", "polars", "pyarrow", "scikit-learn", "mlflow", "prefect"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def model_description(model_uri: str | None, tracking_uri: str) -> dict:
    """ISO 5.3 algorithm and hyperparameters: the model's flavour and the params of the run that logged it."""
    if not model_uri:
        return {}
    info = _model_meta(model_uri, tracking_uri)
    out = {"model_uri": model_uri, "flavors": ", ".join(sorted(info.flavors)), "run_id": info.run_id or ""}
    if info.run_id:
        from tasks.store.mlflow import client

        try:
            out["params"] = dict(client(tracking_uri).get_run(info.run_id).data.params)
        except Exception:  # noqa: BLE001 - the training run may live in another store
            pass
    return out


@dataclass(frozen=True)
class CalibrationResult:
    """Calibration of the evaluated model (metrics_core.calibration): the report keys (``metrics``),
    one row per target (``table``), the reliability bins of every target and binning (``bins``) and
    the diagrams to draw (``diagrams``: target -> (fixed-width, equal-mass))."""

    metrics: dict
    table: pl.DataFrame
    bins: pl.DataFrame
    diagrams: dict


def _calibration_set(spec: RunSpec, plan: EvalPlan, report, preds: Predictions | None):
    """The test set's calibration statistics: from a model's scores in memory, from the exact binary score
    counts of the report, else one more pass over the file's score columns (fine bins); None without scores."""
    from metrics_core.calibration import CalibrationCounts, CalibrationSet, calibration_set
    from metrics_core.counts import FoldedScoreCounts, ScoreCounts

    names = [mon.class_name(c) for c in plan.labels]
    if preds is not None:
        if preds.y_score is None:
            return None
        label_idx = class_indices(pa.array(preds.y_true.tolist()), plan.labels)
        pred_idx = class_indices(pa.array(preds.y_pred.tolist()), plan.labels)
        return calibration_set(spec.task, names, label_idx, preds.y_score.reshape(label_idx.size, -1),
                               pred_idx=pred_idx if spec.task == "multiclass" else None)
    sc = getattr(report.stats, "scores", None)
    if spec.task == "binary" and isinstance(sc, ScoreCounts) and not isinstance(sc, FoldedScoreCounts):
        return CalibrationSet((names[1],), (CalibrationCounts.from_score_counts(sc),))
    if not plan.test_layout.scores:
        return None
    return _scan(spec, plan.test, plan.test_layout, bins_of(spec)).calibration


@task(name="calibration", **IO)
def evaluation_calibration(spec: RunSpec, plan: EvalPlan, report, preds: Predictions | None = None
                           ) -> CalibrationResult | None:
    """ECE/MCE (fixed-width and equal-mass bins), the Murphy decomposition of the Brier score and the
    reliability diagrams of the test set; None without scores (or with scores outside [0, 1])."""
    from metrics_core.calibration import STRATEGIES, TOP_LABEL, calibration_metrics, reliability

    cs = _calibration_set(spec, plan, report, preds)
    if cs is None or not all(c.valid for c in cs.targets):
        return None
    metrics, table = calibration_metrics(cs)
    targets = ([(TOP_LABEL, cs.top_label)] if cs.top_label is not None else []) + list(zip(cs.names, cs.targets))
    diagrams, frames = {}, []
    for name, cc in targets:
        pair = tuple(reliability(cc, strategy=s) for s in STRATEGIES)
        frames += [r.as_frame().with_columns(pl.lit(name).alias("target"), pl.lit(r.strategy).alias("strategy"))
                   for r in pair]
        if not diagrams or spec.task == "binary":  # the PNG: binary the positive class, multiclass the top label
            diagrams[name] = pair
    return CalibrationResult(metrics, table, pl.concat(frames), diagrams)
