"""monitor_period on a real 2-worker Dask LocalCluster named by the spec: segments, input features and a labelled
sample with design weights, scanned as groups of partitions on the workers and merged there, equal the local stream's
assessment."""

from __future__ import annotations

import math
import time

import numpy as np
import polars as pl
import pytest
from flow_data import LABELS, PERIODS, scored_rows

SHOPS = np.array([f"shop_{i}" for i in range(4)])


def _rows(n: int, seed: int, period: str, sampled: bool = False) -> pl.DataFrame:
    """Scored rows with a retailer, a numeric and a text input; ``sampled``: labels kept on a sample of
    the rows, over-sampled where the prediction is a rare class, with dyadic design weights (1/rate)."""
    rng = np.random.default_rng(seed + 100)
    rows = scored_rows(n, seed, period).with_columns(
        retailer=pl.Series(SHOPS[rng.integers(0, SHOPS.size, n)]),
        pack_size=pl.Series(rng.choice([0.25, 0.5, 1.0, 2.0], n) * rng.integers(1, 7, n)),
        title=pl.Series([f"brand {b} item {t}" for b, t in zip(rng.integers(0, 30, n), rng.integers(0, 200, n))]))
    if not sampled:
        return rows
    pred = np.array([LABELS.index(p) for p in rows["prediction"]])
    rates = np.where(pred >= 4, 0.5, 0.125)
    on = rng.random(n) < rates
    return rows.with_columns(label=pl.when(pl.Series(on)).then(pl.col("label")).otherwise(None),
                             design_weight=pl.Series(1 / rates))


def _task_names(flow_run_id) -> list[str]:
    """The task runs' names of the flow run's subflow runs."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, FlowRunFilterParentFlowRunId

    deadline = time.monotonic() + 20
    while True:  # task runs reach the API as events, recorded a moment later
        with get_client(sync_client=True) as c:
            children = [r.id for r in c.read_flow_runs(flow_run_filter=FlowRunFilter(
                parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run_id])))]
            names = [r.name.rsplit("-", 1)[0] for r in c.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=children)))] if children else []
        if names.count("scan-source-part") >= 4 or time.monotonic() > deadline:
            return names
        time.sleep(0.5)


@pytest.mark.slow
def test_a_period_with_segments_features_and_a_sample_on_dask_equals_the_local_stream(
        prefect_harness, cluster, tmp_path, store):
    from flows.monitor_period import monitor_period

    period = PERIODS[0]
    (tmp_path / "deliveries").mkdir()
    _rows(3000, 0, "2023-12").write_parquet(tmp_path / "reference.parquet", row_group_size=400)
    _rows(3000, 10, period, sampled=True).write_parquet(tmp_path / "deliveries" / f"{period}.parquet",
                                                         row_group_size=400)
    spec = {"task": "multiclass", "labels": LABELS, "n_boot": 50,
            "data": {"reference": str(tmp_path / "reference.parquet"),
                     "current": str(tmp_path / "deliveries" / "{period}.parquet")},
            "columns": {"segments": ["retailer"], "features": ["pack_size", "title"]},
            "mlflow": {"experiment": "monitor-dask", "tracking_uri": store}}
    local = monitor_period({**spec, "name": "local"}, period)
    # called as a deployment's run calls it, on Prefect's default runner: it runs on the spec's cluster
    state = monitor_period({**spec, "name": "on-dask", "task_runner": cluster.scheduler_address}, period,
                           return_state=True)
    on_dask = state.result()

    names = _task_names(state.state_details.flow_run_id)
    assert names.count("scan-source-part") >= 4 and "merge-stats" in names  # 2+ groups a source, merged on Dask
    assert "scan-source-stats" not in names
    a, b = local.metrics, on_dask.metrics
    assert a.keys() == b.keys() and a["n_rows"] == b["n_rows"] == 3000
    assert a["sample/labelled_rows"] == b["sample/labelled_rows"] > 0 and a["segments/tested"] == 4
    assert a["n_features_tested"] == 2
    for key in a:  # counts exactly; float sums (weights, prices) to rounding
        assert b[key] == pytest.approx(a[key], rel=1e-9, abs=1e-12) or (math.isnan(a[key]) and math.isnan(b[key])), key
    assert local.alert == on_dask.alert and local.reasons == on_dask.reasons
