"""Class names that MLflow keys would merge (Chinese, accented, with a slash, 301 characters), through
monitor_period and evaluate_model on a real SQLite store: one key per class, the right values."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from flow_data import mlflow_runs
from mlflow import MlflowClient

from flows.evaluate_model import evaluate_model
from flows.monitor_period import monitor_period
from tasks.metric_names import mlflow_key
from tasks.store.keys import MAP_FILE, class_keys
from tasks.store.mlflow import MlflowStore

pytestmark = [pytest.mark.usefixtures("prefect_harness"), pytest.mark.slow]

#: Every pair here became one key before (``_`` for each character outside ``[A-Za-z0-9_ -./]``, cut at 250).
NAMES = ["面包", "牛奶", "啤酒", "café", "cafè", "tea/coffee", "tea_coffee", "x" * 300 + "a", "x" * 300 + "b"]
PERIODS = ("2024-01", "2024-02")


def _rows(n: int, seed: int, period: str) -> pl.DataFrame:
    """Labels with unequal shares, predictions right 80 % of the time, scores leaning to the label."""
    rng = np.random.default_rng(seed)
    k = len(NAMES)
    prior = np.arange(1, k + 1) / np.arange(1, k + 1).sum()
    y = rng.choice(k, n, p=prior)
    pred = np.where(rng.random(n) < 0.8, y, rng.integers(0, k, n))
    s = rng.random((n, k))
    s[np.arange(n), pred] += 2.0
    s /= s.sum(axis=1, keepdims=True)
    names = np.asarray(NAMES, dtype=object)
    return pl.DataFrame({"label": names[y].tolist(), "prediction": names[pred].tolist(),
                         **{f"score_{c}": s[:, j] for j, c in enumerate(NAMES)},
                         "price": np.round(np.linspace(1, 9, k)[y] * np.exp(0.2 * rng.standard_normal(n)), 2),
                         "weight": np.ones(n), "period": [period] * n})


@pytest.fixture
def spec(tmp_path, store) -> dict:
    _rows(2_000, 0, "2023-12").write_parquet(tmp_path / "reference.parquet")
    for i, p in enumerate(PERIODS):
        _rows(2_000, 1 + i, p).write_parquet(tmp_path / f"{p}.parquet")
    return {"name": "keys-model", "task": "multiclass", "labels": NAMES,
            "data": {"reference": str(tmp_path / "reference.parquet"), "current": str(tmp_path / "{period}.parquet"),
                     "test": str(tmp_path / f"{PERIODS[0]}.parquet")},
            "mlflow": {"experiment": "class-keys", "tracking_uri": store}, "n_boot": 50}


def test_each_class_has_its_own_key_in_the_period_runs_and_the_parent_series(spec, store, tmp_path):
    results = [monitor_period(spec, p) for p in PERIODS]
    keys = class_keys(NAMES)
    assert len(set(keys.values())) == len(NAMES)
    client = MlflowClient(store)
    parent = results[0].parent_run_id
    for p, result in zip(PERIODS, results):
        labels = pl.read_parquet(tmp_path / f"{p}.parquet")["label"]
        run = client.get_run(result.run_id)
        logged = {k for k in run.data.metrics if k.startswith("2 prevalence/labelled ")}
        assert logged == {mlflow_key(f"prevalence_label/{keys[c]}") for c in NAMES}  # 9 keys, not 4
        for c in NAMES:  # the right value under each class's key, in the run and in the parent's series
            share = labels.eq(c).mean()
            assert run.data.metrics[mlflow_key(f"prevalence_label/{keys[c]}")] == pytest.approx(share, abs=1e-12)
            assert result.metrics[f"prevalence_label/{keys[c]}"] == pytest.approx(share, abs=1e-12)
        assert sum(k.startswith("5 prices/median ") for k in run.data.metrics) == len(NAMES)
        assert set(json.loads(run.data.params["labels"])) == set(NAMES) and "面包" in run.data.params["labels"]
        assert sum(k.startswith("p-values adjusted/score_") for k in run.data.metrics) == len(NAMES)
        # the key-to-class map: only the classes whose key differs from their name
        mapped = json.loads(open(client.download_artifacts(result.run_id, MAP_FILE, str(tmp_path / p))).read())
        assert mapped == {keys[c]: c for c in ("tea/coffee", "x" * 300 + "a", "x" * 300 + "b")}
    assert all(r.parent_run_id == parent for r in results)
    for c in NAMES:
        history = client.get_metric_history(parent, mlflow_key(f"prevalence_label/{keys[c]}"))
        shares = [pl.read_parquet(tmp_path / f"{p}.parquet")["label"].eq(c).mean() for p in PERIODS]
        assert [h.value for h in sorted(history, key=lambda h: h.step)] == pytest.approx(shares, abs=1e-12)
    assert MAP_FILE in {a.path for a in client.list_artifacts(parent)}


def test_an_evaluation_run_keeps_every_class(spec, store, monkeypatch):
    """An evaluation logs no key per class: its per-class table holds each class once, with its support."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    out = evaluate_model(spec)
    run = MlflowClient(store).get_run(out["run_id"])
    assert run.info.status == "FINISHED" and not any("x" * 20 in k or "面包" in k for k in run.data.metrics)
    table = MlflowStore(store, "class-keys").read_table(out["run_id"], "per_class.json")
    labels = pl.read_parquet(spec["data"]["test"])["label"]
    assert sorted(table["class"]) == sorted(NAMES)
    assert "面包" in run.data.params["labels"]  # as written, not "\\u9762\\u5305"
    assert dict(zip(table["class"], table["support"])) == {c: labels.eq(c).sum() for c in NAMES}
    assert len(mlflow_runs(store, "class-keys", kind="evaluate")) == 1
