"""Benchmark: 1,000 numeric input features watched for drift on millions of rows (one scan pass each side, then the tests).

Writes one Parquet file of ``--file-rows`` rows x ``--features`` float64 features (plus a
prediction) into a temporary folder, and a delivery folder that links it as many times as
``--rows`` needs (the rows are read and decoded each time, as distinct files would be; the page
cache holds the one file), then times

1. the reference's scan (:func:`metrics_core.monitoring.scan_period` with ``features=``),
2. the delivery's scan, the same pass with the last feature shifted by 0.2 standard deviations,
3. the tests and the decision (:func:`metrics_core.monitoring.assess_stats`): a KS and
   Wasserstein test per feature, the domain classifier, all corrected together,

with the peak extra resident memory, and prints the peers' published figures beside ours:
Evidently issue #1526 (a drift report of 3M rows x 1,000 columns: about 6 hours) and issue #763
(100 columns of 356k rows: 23 minutes). Printed, not asserted.

Run: python benchmarks/bench_features.py [--rows 3000000] [--reference-rows 1000000]
(``--rows 1000000`` on a busy machine, and say that the figure is extrapolated).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from _common import _RssSampler, fmt_bytes

PEERS = (("Evidently #1526: drift report, 3M rows x 1,000 columns", 3_000_000, 1000, 6 * 3600.0),
         ("Evidently #763: 100 columns x 356k rows", 356_000, 100, 23 * 60.0))


def write_file(path: Path, rows: int, features: int, shift: float, seed: int) -> None:
    """One Parquet file of ``rows`` rows: ``f0000`` ... standard normal (the last one shifted), a prediction."""
    rng = np.random.default_rng(seed)
    writer = None
    step = 50_000
    for lo in range(0, rows, step):
        n = min(step, rows - lo)
        x = rng.standard_normal((n, features))
        x[:, -1] += shift
        cols = {f"f{j:04d}": x[:, j] for j in range(features)}
        cols["prediction"] = np.where(rng.random(n) < 0.3, "b", "a")
        table = pa.table(cols)
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema, compression="none")
        writer.write_table(table, row_group_size=step)
    writer.close()


def linked(folder: Path, source: Path, copies: int) -> Path:
    folder.mkdir()
    for i in range(copies):
        os.link(source, folder / f"part-{i:03d}.parquet")
    return folder


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--reference-rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=1000)
    ap.add_argument("--file-rows", type=int, default=100_000)
    ap.add_argument("--batch-rows", type=int, default=16_384)
    args = ap.parse_args()

    from metrics_core.monitoring import assess_stats, scan_period

    names = [f"f{j:04d}" for j in range(args.features)]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        write_file(tmp / "ref.parquet", args.file_rows, args.features, 0.0, 0)
        write_file(tmp / "cur.parquet", args.file_rows, args.features, 0.2, 1)
        print(f"wrote 2 files of {args.file_rows:,} rows x {args.features:,} features in "
              f"{time.perf_counter() - t0:.1f} s")
        ref = linked(tmp / "reference", tmp / "ref.parquet", -(-args.reference_rows // args.file_rows))
        cur = linked(tmp / "delivery", tmp / "cur.parquet", -(-args.rows // args.file_rows))
        kw = dict(prediction="prediction", features=names, batch_rows=args.batch_rows)
        timings, cpu = {}, {}
        with _RssSampler() as mem:
            for name, folder in (("reference", ref), ("delivery", cur)):
                t0, c0 = time.perf_counter(), time.process_time()
                stats = scan_period(str(folder), "binary", ["a", "b"], **kw)
                timings[name] = (time.perf_counter() - t0, stats.n_rows)
                cpu[name] = time.process_time() - c0
                if name == "reference":
                    ref_stats = stats
                else:
                    cur_stats = stats
            t0, c0 = time.perf_counter(), time.process_time()
            out = assess_stats(ref_stats, cur_stats, report_options={"n_boot": 0})
            timings["tests"] = (time.perf_counter() - t0, out.metrics["n_tests"])
            cpu["tests"] = time.process_time() - c0
    print(f"\n{args.features:,} numeric features, batches of {args.batch_rows:,} rows, "
          f"{os.cpu_count()} cores (CLASSWATCH_SCAN_THREADS={os.environ.get('CLASSWATCH_SCAN_THREADS', 'default')})")
    for name, (secs, n) in timings.items():
        unit = "tests" if name == "tests" else "rows"
        print(f"  {name:<10} {secs:8.1f} s wall {cpu[name]:8.1f} s CPU   {n:>12,} {unit}")
    total = sum(s for s, _ in timings.values())
    scan = timings["delivery"][0]
    per_row = scan / timings["delivery"][1]
    print(f"  total      {total:8.1f} s   peak extra memory {fmt_bytes(mem.extra)}")
    cpu_row = cpu["delivery"] / timings["delivery"][1]
    print(f"  the delivery's scan: {per_row * 1e6:.2f} us a row of {args.features:,} features "
          f"-> {per_row * 3_000_000 / 60:.1f} min for 3M rows")
    # on a machine shared with other work the wall time is the machine's, the CPU time is ours
    print(f"  its CPU time: {cpu_row * 1e6:.2f} us a row -> {cpu_row * 3_000_000 / 60:.1f} CPU-min for 3M rows, "
          f"{cpu_row * 3_000_000 / 60 / max(1, min(2, os.cpu_count() or 1)):.1f} min on 2 idle cores")
    print(f"  alert: {out.alert}; first reason: {out.reasons[0].text if out.reasons else '-'}")
    print("\npeers' published figures (their hardware, not measured here):")
    for label, rows, cols, secs in PEERS:
        ours = per_row * rows * cols / args.features + timings["tests"][0] * cols / args.features
        print(f"  {label}: {secs / 60:,.0f} min; classwatch's scan and tests at that size: {ours / 60:.1f} min")


if __name__ == "__main__":
    main()
