"""Helpers of the end-to-end tests: a real model and datasets, a webhook listener, bounded waits."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

MODEL_NAME = "cw-e2e"
EXPERIMENT = "cw-e2e"
STABLE_PERIODS = ("2024-02", "2024-03", "2024-05", "2024-06")
SHIFTED_PERIODS = ("2024-04",)
COEF = np.array([1.6, -1.1])


def wait_for(predicate, timeout: float, interval: float = 0.5, what: str = "condition"):
    """Poll ``predicate`` until it returns a truthy value (returned) or raise after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not reached within {timeout:.0f} s")
        time.sleep(interval)


def _rows(rng: np.random.Generator, n: int, intercept: float, x_shift: float = 0.0) -> pl.DataFrame:
    """Rows of a two-feature logistic world: x1, x2, label, price (the label's class price level)."""
    x = rng.normal(size=(n, 2)) + x_shift
    p = 1 / (1 + np.exp(-(x @ COEF + intercept)))
    label = (rng.random(n) < p).astype(np.int64)
    price = np.exp(rng.normal(np.where(label == 1, 1.2, 0.4), 0.25))
    return pl.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "label": label, "price": price})


@dataclass
class E2EData:
    """Paths of the datasets and specs, and the registered model URI."""

    root: Path
    spec: Path
    test: Path
    model_uri: str = ""
    deliveries: dict = field(default_factory=dict)


def write_datasets(root: Path, seed: int = 7) -> tuple[E2EData, object]:
    """Train a real classifier, write train/reference/test and one delivery per period, and a spec.

    Returns the paths and the fitted scikit-learn model (registered later on the MLflow server).
    Stable periods come from the reference world; shifted ones have a prevalence 12 points higher
    and their scores move with it (an intercept and feature shift).
    """
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    train = _rows(rng, 3000, -0.6)
    model = LogisticRegression().fit(train.select("x1", "x2").to_pandas(), train["label"].to_numpy())

    def scored(frame: pl.DataFrame, period: str | None = None) -> pl.DataFrame:
        score = model.predict_proba(frame.select("x1", "x2").to_pandas())[:, 1]
        out = frame.with_columns(pl.Series("score", score), pl.Series("prediction", (score >= 0.5).astype(np.int64)))
        return out if period is None else out.with_columns(pl.lit(period).alias("period"))

    train.write_parquet(root / "train.parquet")
    scored(_rows(rng, 4000, -0.6)).write_parquet(root / "reference.parquet")
    _rows(rng, 2000, -0.6).write_parquet(root / "test.parquet")
    (root / "deliveries").mkdir(exist_ok=True)
    data = E2EData(root, root / "classwatch.yaml", root / "test.parquet")
    for period in (*STABLE_PERIODS, *SHIFTED_PERIODS):
        shifted = period in SHIFTED_PERIODS
        frame = _rows(rng, 4000, 0.1 if shifted else -0.6, x_shift=0.25 if shifted else 0.0)
        path = root / "deliveries" / f"{period}.parquet"
        scored(frame, period).write_parquet(path)
        data.deliveries[period] = path
    data.spec.write_text(
        f"name: {MODEL_NAME}\n"
        "task: binary\n"
        "context: end-to-end test of classwatch deployments\n"
        "data:\n"
        "  train: train.parquet\n"
        "  reference: reference.parquet\n"
        "  test: test.parquet\n"
        "  current: deliveries/{period}.parquet\n"
        "columns:\n"
        "  features: [x1, x2]\n"
        "  weight: null\n"
        "labels: [0, 1]\n"
        f"mlflow:\n  experiment: {EXPERIMENT}\n"
        "n_boot: 100\n"
    )
    return data, model


def register_model(model, tracking_uri: str, sample: pl.DataFrame) -> str:
    """Log the classifier to the MLflow server (REST) and register it; return ``models:/NAME/VERSION``."""
    import mlflow
    import mlflow.sklearn

    from tasks.store.mlflow import process_uris

    client = mlflow.MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
    with process_uris(tracking_uri):  # log_model reads the process-wide URIs; they are put back after
        exp = client.get_experiment_by_name(f"{EXPERIMENT}-training") or client.get_experiment(
            client.create_experiment(f"{EXPERIMENT}-training"))
        with mlflow.start_run(experiment_id=exp.experiment_id):
            info = mlflow.sklearn.log_model(
                model, name="model", registered_model_name=MODEL_NAME, pyfunc_predict_fn="predict_proba",
                metadata={"classes": [str(c) for c in model.classes_]},
                input_example=sample.select("x1", "x2").head(3).to_pandas(),
            )
    return f"models:/{MODEL_NAME}/{info.registered_model_version}"


class WebhookListener:
    """A tiny HTTP server on 127.0.0.1 recording every JSON POST body (the notification target)."""

    def __init__(self) -> None:
        self.posts: list[dict] = []
        listener = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server API
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    listener.posts.append(json.loads(body or b"{}"))
                except ValueError:
                    listener.posts.append({"raw": body.decode(errors="replace")})
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/classwatch-alerts"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "WebhookListener":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def run_cli(servers, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``classwatch ARGS`` as a user would, against the session's servers; fail with its output."""
    exe = Path(sys.executable).parent / "classwatch"
    proc = subprocess.run([str(exe), *args], env=servers.env, capture_output=True, text=True, timeout=timeout,
                          cwd=servers.root)
    assert proc.returncode == 0, f"classwatch {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc
