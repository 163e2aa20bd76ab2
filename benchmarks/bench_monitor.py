"""Benchmark: monitor_period on a 20,000-row and a 1M-row period in one warm process, split into data, Prefect and MLflow.

Writes a reference window and a delivery per size (10 classes, per-class scores, prices,
weights) as Parquet into a temporary folder, then, per size, times

1. the row work alone (the task functions without Prefect: plan, one pass over reference and
   current, tests and decision),
2. the MLflow work alone (the logged-period lookup, then parent + period run, tables, series,
   time-series plot),
3. the whole flow through Prefect (ephemeral API unless PREFECT_API_URL), warm (``force=True``;
   one cold call first starts the local API and is reported apart),

and reports Prefect overhead = warm flow - (row work on the critical path + MLflow). Printed,
not asserted. Run: python benchmarks/bench_monitor.py [--profile ROWS] [--segments] [--rows ROWS] (use a fresh
PREFECT_HOME); ``--segments`` times each size without and with 50 retailers watched as segments,
interleaved, in wall and CPU time, and their ratio (with ``--profile``: profiles the segments case).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

K = 10
PERIOD = "2024-06"
SIZES = ((20_000, 20_000), (1_000_000, 200_000))  # (period rows, reference rows)
#: Run only when asked for (``--rows 10000000``): minutes, and a few GB to write the data.
LARGE_SIZES = ((10_000_000, 2_000_000),)


#: Retailers of the segments case (``--segments``): every row has one, drawn uniformly.
N_SEGMENTS = 50


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
                  "retailer": np.char.add("shop_", rng.integers(0, N_SEGMENTS, n).astype(str)),
                  "period": [period] * n}).write_parquet(path, row_group_size=131_072)


def make_spec(tmp: Path, rows: int, reference_rows: int, segments: bool = False):
    """The spec of a size's data (written once); ``segments``: the same data, watching its 50 retailers."""
    from tasks.config.spec import load_spec

    folder = tmp / f"rows-{rows}"
    if not folder.exists():
        (folder / "deliveries").mkdir(parents=True)
        write_period(folder / "reference.parquet", reference_rows, 0, "2024-01")
        write_period(folder / "deliveries" / f"{PERIOD}.parquet", rows, 1, PERIOD, shift=0.15)
    return load_spec({"name": f"bench-{rows}" + ("-segments" if segments else ""),
                      "labels": [f"class_{j}" for j in range(K)],
                      "data": {"reference": str(folder / "reference.parquet"),
                               "current": str(folder / "deliveries" / "{period}.parquet")},
                      "columns": {"segments": ["retailer"] if segments else []},
                      "mlflow": {"experiment": "bench", "tracking_uri": f"sqlite:///{tmp / 'mlflow.db'}"},
                      "n_boot": 500})


def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def timed_cpu(fn, *args):
    """``fn(*args)``, its wall time and its CPU time (every thread of the process: the scan's, Prefect's)."""
    c0 = time.process_time()
    out, wall = timed(fn, *args)
    return out, wall, time.process_time() - c0


def one_round(spec) -> tuple:
    """One round of the parts without Prefect, then the whole flow: (flow's result, wall times, CPU times)."""
    from flows.monitor_period import monitor_period
    from flows.runners import in_process_runs
    from tasks.log import log_period
    from tasks.monitor import assess_against_reference, monitoring_history, open_store, plan_period, scan_source_stats

    def mlflow(plan, a):
        store = open_store(spec)
        log_period.fn(spec, store, plan, a, monitoring_history.fn(spec, store, PERIOD))

    plan, *t_plan = timed_cpu(plan_period.fn, spec, PERIOD)
    ref, *t_ref = timed_cpu(scan_source_stats.fn, spec, plan.reference, plan.ref_layout)
    cur, *t_cur = timed_cpu(scan_source_stats.fn, spec, plan.current, plan.cur_layout, plan.current_filter)
    a, *t_assess = timed_cpu(assess_against_reference.fn, spec, ref, cur)
    _, *t_mlflow = timed_cpu(mlflow, plan, a)
    with in_process_runs():  # as `classwatch monitor` runs it
        out, *t_flow = timed_cpu(monitor_period, spec, PERIOD, None, True)
    parts = (t_plan, t_ref, t_cur, t_assess, t_mlflow, t_flow)
    return out, tuple(p[0] for p in parts), tuple(p[1] for p in parts)


def with_heartbeat(spec, rounds: int) -> float:
    """The warm flow called bare, with Prefect's flow-run heartbeat thread: the engine joins that
    thread when a flow ends, and it sleeps in steps of 1 s (flows.runners.in_process_runs)."""
    from flows.monitor_period import monitor_period

    return float(np.median([timed(monitor_period, spec, PERIOD, None, True)[1] for _ in range(rounds)]))


TARGET_S = {20_000: 1, 1_000_000: 3}  # a warm monitored period, on a quiet machine (docs/large-data.md)


def report(spec, rows: int, reference_rows: int, rounds: int) -> None:
    runs = [one_round(spec) for _ in range(rounds + 1)][1:]  # the first round warms caches and is dropped
    bare = with_heartbeat(spec, rounds)
    out = runs[-1][0]
    t_plan, t_ref, t_cur, t_assess, mlflow_s, warm_s = (float(x) for x in np.median([r[1] for r in runs], axis=0))
    critical = t_plan + max(t_ref, t_cur) + t_assess  # the flow runs both passes concurrently
    prefect = warm_s - critical - mlflow_s
    print(f"\nmonitor_period, {rows:,}-row period against a {reference_rows:,}-row reference "
          f"({K} classes: per-class scores, prices), medians of {rounds} warm rounds:")
    for name, value in [
        ("plan (metadata, schema check)", t_plan),
        (f"reference pass ({reference_rows:,} rows)", t_ref),
        (f"current pass ({rows:,} rows, {rows / t_cur / 1e6:.2f} M rows/s)", t_cur),
        ("tests, intervals, Annex E, decision", t_assess),
        ("data: row work, critical path (passes concurrent)", critical),
        ("MLflow (lookup, parent, child, tables, series, plot)", mlflow_s),
        ("Prefect overhead = flow - data - MLflow", prefect),
        (f"whole flow through Prefect, warm, as the CLI runs it [target <= {TARGET_S.get(rows, '-')} s]", warm_s),
        ("  the same called bare (with the flow-run heartbeat)", bare),
    ]:
        print(f"  {name:<58} {value:6.2f} s")
    print(f"  shares of the warm flow: data {critical / warm_s:.0%}, MLflow {mlflow_s / warm_s:.0%}, "
          f"Prefect {prefect / warm_s:.0%}")
    first = out.reasons[0].text if out.reasons else ""
    print(f"  alert: {out.alert} ({len(out.reasons)} reasons: {first[:70]}...)")


def segments_ratio(tmp: Path, rows: int, reference_rows: int, rounds: int) -> None:
    """The same period without and with its 50 retailers watched as segments, the two interleaved
    round by round (a shared machine's load then weighs on both alike): each part's median wall and
    CPU time, and the median of the rounds' ratios (the goal: at most 2x)."""
    specs = {s: make_spec(tmp, rows, reference_rows, s) for s in (False, True)}
    for s in (False, True):  # a warm-up round each: caches (the calibration maps), imports, the Prefect API
        one_round(specs[s])
    walls, cpus = {False: [], True: []}, {False: [], True: []}
    for _ in range(rounds):
        for s in (False, True):
            _, wall, cpu = one_round(specs[s])
            walls[s].append(wall)
            cpus[s].append(cpu)
    names = ("plan", "reference pass", "current pass", "tests and decision", "MLflow", "whole flow, warm")
    print(f"\nsegments: {rows:,}-row period, {reference_rows:,}-row reference, {N_SEGMENTS} retailers, "
          f"{rounds} interleaved warm rounds (medians: none -> {N_SEGMENTS} segments; median of the rounds' ratios), "
          f"load average {os.getloadavg()[0]:.1f}:")
    for clock, t in (("wall", walls), ("CPU", cpus)):
        none, seg = np.asarray(t[False]), np.asarray(t[True])
        ratio = np.median(seg / np.maximum(none, 1e-9), axis=0)
        for i, name in enumerate(names):
            print(f"  {clock:<4} {name:<22} {np.median(none[:, i]):7.2f} s -> {np.median(seg[:, i]):7.2f} s  "
                  f"{ratio[i]:5.2f}x")


def profile(spec, top: int = 30) -> None:
    from flows.monitor_period import monitor_period

    prof = cProfile.Profile()
    prof.enable()
    monitor_period(spec, PERIOD, None, True)
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(top)


def main(rounds: int, profile_rows: int | None, segments: bool = False, sizes=SIZES) -> None:
    from flows.monitor_period import monitor_period

    tmp = Path(tempfile.mkdtemp(prefix="bench-monitor-"))
    try:  # the data (166 MB; 2 GB at 10M rows) and its MLflow store go with the run
        t = time.perf_counter()
        specs = {rows: make_spec(tmp, rows, ref) for rows, ref in sizes}
        print(f"data written in {time.perf_counter() - t:.1f} s: {tmp}")
        _, cold = timed(monitor_period, specs[sizes[0][0]], PERIOD, None, True)
        print(f"first flow call, cold (imports, starts the local Prefect API): {cold:.2f} s")
        if profile_rows:  # with --segments: the period watching its 50 retailers
            spec = make_spec(tmp, profile_rows, dict(SIZES + LARGE_SIZES)[profile_rows], segments)
            monitor_period(spec, PERIOD, None, True)
            profile(spec)
        elif segments:
            for rows, ref in sizes:
                segments_ratio(tmp, rows, ref, rounds)
        else:
            for rows, ref in sizes:
                report(specs[rows], rows, ref, rounds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", type=int, default=None, metavar="ROWS",
                        help="Profile one warm flow of this size (20000 or 1000000) instead of timing.")
    parser.add_argument("--segments", action="store_true",
                        help=f"Time each size without and with its {N_SEGMENTS} retailers as segments (the ratio).")
    parser.add_argument("--rows", type=int, nargs="*", default=None, metavar="ROWS",
                        help="Only these period sizes (of 20000, 1000000 and, only when named, 10000000).")
    args = parser.parse_args()
    main(args.rounds, args.profile, args.segments,
         tuple(s for s in SIZES + LARGE_SIZES if s[0] in (args.rows or [])) or SIZES)
