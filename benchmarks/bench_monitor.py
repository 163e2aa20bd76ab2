"""Benchmark: monitor_period on a 1M-row period, and how much of it is Prefect and MLflow overhead.

Writes a 200,000-row reference window and a 1,000,000-row delivery (10 classes, per-class
scores, prices, weights) as Parquet into a temporary folder, then times

1. the row work alone (the task functions without Prefect: plan, one pass over reference and
   current, tests and decision),
2. the MLflow logging alone (parent + child run, tables, series, time-series plot),
3. the whole flow through Prefect (ephemeral API unless PREFECT_API_URL), twice: cold (the
   first call starts the local API) and warm (``force=True``),

and reports Prefect overhead = warm flow - (row work + MLflow). Run: python benchmarks/bench_monitor.py
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

K = 10


def write_period(path: Path, n: int, seed: int, period: str, shift: float = 0.0) -> None:
    rng = np.random.default_rng(seed)
    prior = 1 / np.arange(1, K + 1)
    prior[3] += shift
    prior /= prior.sum()
    y = rng.choice(K, size=n, p=prior)
    logits = rng.standard_normal((n, K)).astype(np.float64)
    logits[np.arange(n), y] += 2.4
    s = np.exp(logits - logits.max(axis=1, keepdims=True))
    s /= s.sum(axis=1, keepdims=True)
    names = np.array([f"class_{j}" for j in range(K)])
    price = np.linspace(1, 8, K)[y] * np.exp(0.3 * rng.standard_normal(n))
    pl.DataFrame({"label": names[y], **{f"score_class_{j}": s[:, j] for j in range(K)},
                  "prediction": names[s.argmax(axis=1)], "price": price, "weight": price * 2.0,
                  "period": [period] * n}).write_parquet(path, row_group_size=131_072)


def main(rows: int, reference_rows: int) -> None:
    from flows.monitor_period import log_monitoring, monitor_period
    from tasks.monitor import assess, plan_period, summarise
    from tasks.config.spec import load_spec

    tmp = Path(tempfile.mkdtemp(prefix="bench-monitor-"))
    t = time.perf_counter()
    write_period(tmp / "reference.parquet", reference_rows, 0, "2024-01")
    (tmp / "deliveries").mkdir()
    write_period(tmp / "deliveries" / "2024-06.parquet", rows, 1, "2024-06", shift=0.15)
    print(f"data written in {time.perf_counter() - t:.1f} s: {tmp}")
    spec = load_spec({"name": "bench", "labels": [f"class_{j}" for j in range(K)],
                      "data": {"reference": str(tmp / "reference.parquet"),
                               "current": str(tmp / "deliveries" / "{period}.parquet")},
                      "mlflow": {"experiment": "bench", "tracking_uri": f"sqlite:///{tmp / 'mlflow.db'}"},
                      "n_boot": 500})
    # warm the imports and the MLflow store once (not part of any figure)
    from tasks.store.mlflow import client, experiment_id

    experiment_id(client(spec.tracking_uri()), "bench")

    def timed(fn, *args):
        t0 = time.perf_counter()
        out = fn(*args)
        return out, time.perf_counter() - t0

    params = spec.model_dump(mode="json")
    cold_out, cold = timed(monitor_period, params, "2024-06", None, True)
    runs = []
    for _ in range(4):  # interleaved rounds; the first warms imports and caches and is dropped
        plan, t_plan = timed(plan_period.fn, spec, "2024-06")
        ref, t_ref = timed(summarise.fn, spec, plan.reference, plan.ref_layout)
        cur, t_cur = timed(summarise.fn, spec, plan.current, plan.cur_layout, plan.current_filter)
        a, t_assess = timed(assess.fn, spec, ref, cur)
        _, t_mlflow = timed(log_monitoring.fn, spec, plan, a, True)
        warm_out, t_flow = timed(monitor_period, params, "2024-06", None, True)
        runs.append((t_plan, t_ref, t_cur, t_assess, t_mlflow, t_flow))
    t_plan, t_ref, t_cur, t_assess, mlflow_s, warm_s = (float(x) for x in np.median(np.array(runs[1:]), axis=0))
    sequential = t_plan + t_ref + t_cur + t_assess
    critical = t_plan + max(t_ref, t_cur) + t_assess  # the flow runs both passes concurrently
    assert cold_out["alert"] and warm_out["alert"], warm_out["reasons"]
    prefect = warm_s - critical - mlflow_s
    print(f"\nmonitor_period, {rows:,}-row period against a {reference_rows:,}-row reference "
          f"({K} classes: per-class scores, prices), medians of 3 rounds:")
    rows_out = [
        ("plan (metadata, schema check)", t_plan),
        (f"reference pass ({reference_rows:,} rows)", t_ref),
        (f"current pass ({rows:,} rows, {rows / t_cur / 1e6:.2f} M rows/s)", t_cur),
        ("tests, intervals, Annex E, decision", t_assess),
        ("row work, sequential sum", sequential),
        ("row work, critical path (passes concurrent)", critical),
        ("MLflow logging (parent, child, 4 tables, series, plot)", mlflow_s),
        ("whole flow through Prefect, warm", warm_s),
        ("Prefect overhead = flow - critical path - MLflow", prefect),
        ("whole flow, cold (starts the local Prefect API)", cold),
    ]
    for name, value in rows_out:
        print(f"  {name:<58} {value:6.2f} s")
    print(f"  shares of the warm flow: row work {critical / warm_s:.0%}, MLflow {mlflow_s / warm_s:.0%}, "
          f"Prefect {prefect / warm_s:.0%}")
    print(f"  alert: {warm_out['alert']} ({len(warm_out['reasons'])} reasons: {warm_out['reasons'][0][:70]}...)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--reference-rows", type=int, default=200_000)
    args = parser.parse_args()
    main(args.rows, args.reference_rows)
