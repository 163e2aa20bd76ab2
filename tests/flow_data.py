"""Test data shared by the test folders (scored periods as a production classifier delivers them, seeded
scores) and the flow tests' MLflow and Prefect read-back."""

from __future__ import annotations

import time

import numpy as np
import polars as pl

K = 6
LABELS = [f"item_{j}" for j in range(K)]
PRIOR = (1 / np.arange(1, K + 1)) / (1 / np.arange(1, K + 1)).sum()


def scored_rows(n: int, seed: int, period: str, *, prevalence=None, price_rise=None, labels: bool = True
                ) -> pl.DataFrame:
    """Rows a production classifier delivers: id, label, score_<class>, prediction, price, weight, period.

    ``prevalence=(j, d)`` raises class j's share by d; ``price_rise=(j, r)`` multiplies the prices
    of rows predicted as class j by 1 + r.
    """
    rng = np.random.default_rng(seed)
    prior = PRIOR.copy()
    if prevalence:
        j, d = prevalence
        prior = prior * (1 - PRIOR[j] - d) / (1 - PRIOR[j])
        prior[j] = PRIOR[j] + d
    y = rng.choice(K, size=n, p=prior / prior.sum())
    logits = rng.standard_normal((n, K)) + np.log(PRIOR)
    logits[np.arange(n), y] += 2.5
    s = np.exp(logits - logits.max(axis=1, keepdims=True))
    s /= s.sum(axis=1, keepdims=True)
    pred = s.argmax(axis=1)
    price = np.linspace(1, 5, K)[y] * np.exp(0.3 * rng.standard_normal(n))
    if price_rise:
        j, r = price_rise
        price = np.where(pred == j, price * (1 + r), price)
    names = np.asarray(LABELS)
    frame = pl.DataFrame({"id": [f"{period}-{i}" for i in range(n)], "label": names[y],
                          **{f"score_{c}": s[:, j] for j, c in enumerate(LABELS)}, "prediction": names[pred],
                          "price": np.round(price, 2), "weight": np.round(price * 3, 2), "period": [period] * n})
    return frame if labels else frame.drop("label")


PERIODS = ["2024-01", "2024-02", "2024-03"]
SHIFTED = "2024-04"


def period_arrays(n: int, seed: int, **kw) -> tuple[np.ndarray, np.ndarray]:
    """:func:`scored_rows` as (label indices in ``LABELS`` order, scores (n, K))."""
    df = scored_rows(n, seed, "p", **kw)
    idx = {c: i for i, c in enumerate(LABELS)}
    return np.array([idx[c] for c in df["label"]]), df.select([f"score_{c}" for c in LABELS]).to_numpy()


def multiclass_stats(y: np.ndarray, s: np.ndarray, labelled: bool = True):
    """The monitoring statistics (``PeriodStats``) of scored rows, predicted by their largest score."""
    from metrics_core.monitoring.bins import Bins
    from metrics_core.monitoring.period import update

    return update("multiclass", np.array(LABELS), Bins(), s.argmax(axis=1), label_idx=y if labelled else None,
                  scores=s)


def binary_stats(n: int, seed: int, prev: float = 0.12, signal: float = 1.8):
    """The monitoring statistics of n binary rows: prevalence ``prev``, logistic scores separated by ``signal``."""
    from metrics_core.monitoring.bins import Bins
    from metrics_core.monitoring.period import update

    rng = np.random.default_rng(seed)
    y = (rng.random(n) < prev).astype(int)
    s = 1 / (1 + np.exp(-(1.3 * (rng.standard_normal(n) + signal * y) - 2.2)))
    return update("binary", np.array([0, 1]), Bins(), (s >= 0.5).astype(int), label_idx=y, scores=s[:, None])


def three_class_period(n: int = 3000, seed: int = 1) -> pl.DataFrame:
    """Labels a, b, c (shares 0.5, 0.3, 0.2) and predictions right 85 % of the time (else a random class)."""
    rng = np.random.default_rng(seed)
    names = np.array(["a", "b", "c"])
    y = rng.choice(3, n, p=[0.5, 0.3, 0.2])
    pred = np.where(rng.random(n) < 0.85, y, rng.choice(3, n))
    return pl.DataFrame({"label": names[y], "prediction": names[pred]})


def multiclass_scores(n: int = 300, k: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Integer labels 0..k-1 and score rows summing to 1 that lean towards the label (by 0.8 before normalising)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    raw = rng.uniform(size=(n, k))
    raw[np.arange(n), y] += 0.8
    return y, raw / raw.sum(axis=1, keepdims=True)


def three_models(labels: list, n: int, seed: int = 11) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """True labels of ``n`` rows (shares 0.5, 0.3, 0.2 of three classes) and three models' predictions:
    90 % right, 70 % right and a copy of the first (the model-comparison tests)."""
    rng = np.random.default_rng(seed)
    y = np.asarray(labels)[rng.choice(3, n, p=[0.5, 0.3, 0.2])]

    def model(p_right: float) -> np.ndarray:
        return np.where(rng.random(n) < p_right, y, np.asarray(labels)[rng.integers(0, 3, n)])

    good, weak = model(0.9), model(0.7)
    return y, {"m v1": good, "m v2": weak, "m v1 copy": good.copy()}


def mlflow_runs(store: str, experiment: str, *, kind: str | None = None):
    """All active runs of ``experiment`` (optionally of one classwatch.kind), read back with MlflowClient."""
    from mlflow import MlflowClient

    c = MlflowClient(store)
    exp = c.get_experiment_by_name(experiment)
    if exp is None:
        return []
    runs = c.search_runs([exp.experiment_id], max_results=1000)
    return [r for r in runs if kind is None or r.data.tags.get("classwatch.kind") == kind]


def alert_events(model: str, wait: float = 20.0, expect: int = 1):
    """classwatch.alert.retrain events of ``model`` from the Prefect API (polled until ``expect`` are there)."""
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter

    flt = EventFilter(event=EventNameFilter(name=["classwatch.alert.retrain"]),
                      resource=EventResourceFilter(id=[f"classwatch.model.{model}"]))
    deadline = time.monotonic() + wait
    while True:
        with get_client(sync_client=True) as client:
            events = client.read_events(flt, limit=50).events
        if len(events) >= expect or time.monotonic() > deadline:
            return events
        time.sleep(0.5)
