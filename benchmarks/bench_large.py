"""Large-data benchmark (`make bench-large`): streamed exact and binned reports, confusion throughput,
a 20-class report, a 2-worker Dask LocalCluster against one process, and scikit-learn for reference.

It writes its own seeded Parquet data to a temporary directory, then runs every measurement in a
fresh subprocess, so each peak RSS printed (the process's ``ru_maxrss``; for Dask also each
worker's, read with ``client.run``) belongs to that job alone. A watchdog kills a job whose RSS
passes ``--mem-limit-gib`` (the machine is shared): such a job is reported as "killed at the
limit", which for scikit-learn is the size at which it runs out of the allowed memory.
Not a test: nothing is asserted; targets are printed next to the figures.

Usage: python benchmarks/bench_large.py [--rows 100000000] [--mc-rows 20000000] [--classes 20]
       [--jobs confusion,exact,exact_one_thread,binned,multiclass,dask,sklearn] [--sklearn-rows 10000000 30000000 100000000]
       [--dir DIR] [--keep] [--json OUT]
Smoke test: python benchmarks/bench_large.py --rows 2000000 --mc-rows 200000 --sklearn-rows 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

GIB = 1 << 30
WATCH_SECONDS = 1.0  # how often the watchdog samples a job's memory
SEED = 20260301


def fmt_bytes(n: float | None) -> str:
    return "-" if n is None else f"{n / GIB:.2f} GiB" if n >= GIB / 4 else f"{n / (1 << 20):.0f} MiB"


def peak_rss() -> int:
    """Peak resident set size of this process in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def cpu_seconds() -> float:
    """User + system CPU time of this process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def tree_cpu() -> dict[int, float]:
    """User + system CPU seconds so far of this process and every process under it, by pid: for
    the Dask job the client (with the scheduler), the nannies, the workers and the Prefect API
    server the flow started."""
    import psutil

    out = {}
    me = psutil.Process()
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        out[proc.pid] = t.user + t.system
    return out


# ------------------------------------------------------------------------------------------------
# Data (seeded, written in chunks so generation itself stays small)
# ------------------------------------------------------------------------------------------------

def write_binary(root: Path, rows: int, rows_per_file: int = 5_000_000) -> None:
    """label int8 (prevalence 0.3), score float32 = sigmoid of a noisy logit, weight float32 (gamma)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    rows_per_file = min(rows_per_file, max(rows // 4, 1))
    for i, start in enumerate(range(0, rows, rows_per_file)):
        n = min(rows_per_file, rows - start)
        y = rng.random(n, dtype=np.float32) < 0.3
        logit = rng.standard_normal(n, dtype=np.float32)
        logit += np.where(y, np.float32(1.1), np.float32(-1.1))
        score = (1.0 / (1.0 + np.exp(-logit))).astype(np.float32)
        weight = rng.gamma(2.0, 0.5, n).astype(np.float32)
        table = pa.table({"label": y.astype(np.int8), "score": score, "weight": weight})
        pq.write_table(table, root / f"part-{i:04d}.parquet", row_group_size=1 << 20)


def write_multiclass(root: Path, rows: int, k: int, rows_per_file: int = 2_000_000) -> None:
    """label int16 over k classes of unequal prevalence, per-class float32 softmax scores score_<c>."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED + 1)
    prevalence = 1.0 / np.arange(1, k + 1) ** 0.8
    prevalence /= prevalence.sum()
    rows_per_file = min(rows_per_file, max(rows // 4, 1))
    chunk = 500_000
    for i, start in enumerate(range(0, rows, rows_per_file)):
        n_file = min(rows_per_file, rows - start)
        tables = []
        for c0 in range(0, n_file, chunk):
            n = min(chunk, n_file - c0)
            y = rng.choice(k, size=n, p=prevalence)
            logits = rng.standard_normal((n, k), dtype=np.float32)
            logits[np.arange(n), y] += np.float32(2.0)
            np.exp(logits, out=logits)
            logits /= logits.sum(axis=1, keepdims=True)
            cols = {"label": y.astype(np.int16)}
            cols.update({f"score_{c}": np.ascontiguousarray(logits[:, c]) for c in range(k)})
            tables.append(pa.table(cols))
        pq.write_table(pa.concat_tables(tables), root / f"part-{i:04d}.parquet", row_group_size=500_000)


# ------------------------------------------------------------------------------------------------
# Jobs (each runs in its own subprocess: `bench_large.py --job NAME --data DIR ...`)
# ------------------------------------------------------------------------------------------------

def job_confusion(data: Path, args) -> dict:
    from metrics_core.dataset import Columns, scan_stats

    t0 = time.perf_counter()
    stats = scan_stats(data, "binary", Columns(), confusion_only=True)
    seconds = time.perf_counter() - t0
    m = stats.confusion.matrix
    return {"seconds": seconds, "rows": stats.n_rows, "rows_per_s": stats.n_rows / seconds,
            "tp": int(m[1, 1]), "fp": int(m[0, 1])}


def _binary_report(stats) -> dict:
    import metrics_core as mc

    report = mc.binary_from_stats(stats)
    peak_metrics = peak_rss()
    curves = report.curves  # computed too: the report includes the exact ROC/PR/gain/lift
    return {"auroc": report.metrics["auroc"], "average_precision": report.metrics["average_precision"],
            "log_loss": report.metrics["log_loss"], "f1": report.metrics["f1"],
            "auroc_error_bound": report.metrics.get("auroc_error_bound"), "roc_points": int(curves["roc"]["x"].size),
            "peak_rss_after_metrics_bytes": peak_metrics}


def job_exact(data: Path, args) -> dict:
    from metrics_core.dataset import Columns, scan_stats

    threads = 1 if args.job == "exact_one_thread" else None  # None: the scan's default (2 threads)
    t0 = time.perf_counter()
    stats = scan_stats(data, "binary", Columns(weight="weight"), batch_rows=args.batch_rows, threads=threads)
    t_scan, peak_scan = time.perf_counter() - t0, peak_rss()
    out = _binary_report(stats)
    seconds = time.perf_counter() - t0
    sc = stats.scores
    return {"seconds": seconds, "scan_seconds": t_scan, "rows": stats.n_rows, "rows_per_s": stats.n_rows / seconds,
            "distinct_scores": int(sc.scores.size), "peak_rss_after_statistics_bytes": peak_scan,
            "statistic_bytes": int(sc.scores.nbytes + sc.pos.nbytes + sc.neg.nbytes), **out}


def job_binned(data: Path, args) -> dict:
    from metrics_core.dataset import Columns, scan_stats

    t0 = time.perf_counter()
    stats = scan_stats(data, "binary", Columns(weight="weight"), bins=args.bins, batch_rows=args.batch_rows)
    out = _binary_report(stats)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "rows": stats.n_rows, "rows_per_s": stats.n_rows / seconds, "bins": args.bins, **out}


def job_multiclass(data: Path, args) -> dict:
    import metrics_core as mc
    from metrics_core.dataset import Columns, scan_stats

    from metrics_core.dataset import parts_of

    parts = None
    if args.mc_subset_rows:  # the first files only
        parts, rows = [], 0
        for p in parts_of(data):
            if rows >= args.mc_subset_rows:
                break
            parts.append(p)
            rows += p.n_rows
    t0 = time.perf_counter()
    # the subset job scans in one pass (all K exact statistics at once) to show what that costs
    stats = scan_stats(data, "multiclass", Columns(), labels=list(range(args.classes)),
                       batch_rows=args.mc_batch_rows, bins=args.bins if args.mc_binned else None, parts=parts,
                       by_class=False if parts is not None else None)
    report = mc.multiclass_from_stats(stats)
    seconds = time.perf_counter() - t0
    distinct = sum(int(sc.pos.size) for sc in stats.scores)
    return {"seconds": seconds, "rows": stats.n_rows, "rows_per_s": stats.n_rows / seconds,
            "classes": args.classes, "distinct_scores_all_classes": distinct,
            "statistic_bytes": sum(int(sc.pos.nbytes + sc.neg.nbytes + (sc.scores if hasattr(sc, "scores") else sc.edges).nbytes)
                                   for sc in stats.scores),
            "auroc_error_bound": report.metrics.get("auroc_error_bound"),
            "accuracy": report.metrics["accuracy"], "auroc_ovr_macro": report.metrics["auroc_ovr_macro"],
            "log_loss": report.metrics["log_loss"]}


def job_dask(data: Path, args) -> dict:
    from distributed import Client, get_task_stream

    from metrics_core.dataset import Columns
    from flows.compute_stats import compute_stats
    from flows.runners import api_for, local_cluster

    def worker_peak():
        import resource as r

        return r.getrusage(r.RUSAGE_SELF).ru_maxrss * 1024

    t0 = time.perf_counter()
    with local_cluster() as cluster, Client(cluster) as client, api_for("dask"):
        t_cluster = time.perf_counter() - t0
        address = cluster.scheduler_address
        # warm-up on one small partition (worker imports of prefect/metrics_core), timed apart
        first = sorted(data.glob("*.parquet"))[0]
        t1 = time.perf_counter()
        compute_stats(first, "binary", Columns(weight="weight"), runner=address, bins=10)
        t_warm = time.perf_counter() - t1
        worker_pids = set(client.run(os.getpid).values())
        cpu_before = tree_cpu()
        t2 = time.perf_counter()
        with get_task_stream(client) as stream:
            stats = compute_stats(data, "binary", Columns(weight="weight"), runner=address,
                                  target_rows=args.target_rows or None, batch_rows=args.batch_rows)
        t_flow = time.perf_counter() - t2
        # the map phase: from the first partition task's start to the last one's end
        spans = [ss for d in stream.data if str(d["key"]).startswith("partition_stats")
                 for ss in d["startstops"] if ss["action"] == "compute"]
        map_seconds = max(ss["stop"] for ss in spans) - min(ss["start"] for ss in spans) if spans else None
        out = _binary_report(stats)
        seconds = time.perf_counter() - t2
        cpu_after = tree_cpu()
        workers = client.run(worker_peak)
    used = {pid: cpu_after[pid] - cpu_before.get(pid, 0.0) for pid in cpu_after}
    me = os.getpid()
    cpu = sum(used.values())
    split = {"client": used.get(me, 0.0), "workers": sum(v for k, v in used.items() if k in worker_pids),
             "others": sum(v for k, v in used.items() if k != me and k not in worker_pids)}
    return {"seconds": seconds, "flow_seconds": t_flow, "map_seconds": map_seconds, "cluster_start_seconds": t_cluster,
            "warmup_seconds": t_warm, "rows": stats.n_rows, "rows_per_s": stats.n_rows / seconds,
            "cpu_seconds_all_processes": cpu, "cpu_seconds_split": split, "worker_peak_rss": {k: int(v) for k, v in workers.items()}, **out}


def job_sklearn(data: Path, args) -> dict:
    import pyarrow.dataset as pads
    from sklearn import metrics as m

    t0 = time.perf_counter()
    table = pads.dataset(data, format="parquet").head(args.sklearn_n, columns=["label", "score", "weight"])
    y = table["label"].to_numpy()
    s = table["score"].to_numpy()
    w = table["weight"].to_numpy()
    del table
    t_load = time.perf_counter() - t0
    t1 = time.perf_counter()
    pred = (s >= 0.5).astype(np.int8)
    m.confusion_matrix(y, pred, sample_weight=w)
    m.precision_recall_fscore_support(y, pred, average="binary", sample_weight=w, zero_division=np.nan)
    m.matthews_corrcoef(y, pred, sample_weight=w)
    m.cohen_kappa_score(y, pred, sample_weight=w)
    auroc = m.roc_auc_score(y, s, sample_weight=w)
    ap = m.average_precision_score(y, s, sample_weight=w)
    m.roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    m.precision_recall_curve(y, s, sample_weight=w)
    ll = m.log_loss(y, s, sample_weight=w)
    m.brier_score_loss(y, s, sample_weight=w)
    seconds = time.perf_counter() - t1
    return {"seconds": seconds, "load_seconds": t_load, "rows": int(y.size), "rows_per_s": y.size / seconds,
            "auroc": auroc, "average_precision": ap, "log_loss": ll}


JOBS = {"confusion": job_confusion, "exact": job_exact, "exact_one_thread": job_exact, "binned": job_binned, "multiclass": job_multiclass,
        "multiclass_binned": job_multiclass, "multiclass_subset": job_multiclass, "dask": job_dask,
        "sklearn": job_sklearn}


def _scan_default(name: str):
    """A default of :func:`metrics_core.dataset.scan_stats`: the benchmark reads as a command does."""
    import inspect

    from metrics_core.dataset import scan_stats

    return inspect.signature(scan_stats).parameters[name].default


def run_child(args) -> None:
    import metrics_core

    metrics_core.significance  # noqa: B018 - imported lazily by the first report: before the clock, as the others
    base, cpu0 = peak_rss(), cpu_seconds()
    args.mc_binned = args.job == "multiclass_binned"
    if args.job != "multiclass_subset":
        args.mc_subset_rows = 0
    result = JOBS[args.job](Path(args.data), args)
    result["peak_rss_bytes"] = peak_rss()
    result.setdefault("cpu_seconds", cpu_seconds() - cpu0)
    result["rss_after_imports_bytes"] = base
    print("RESULT " + json.dumps(result), flush=True)


# ------------------------------------------------------------------------------------------------
# Parent: data, one subprocess per job with an RSS watchdog, summary
# ------------------------------------------------------------------------------------------------

def run_job(name: str, data: Path, args, **extra) -> dict:
    import psutil

    cmd = [sys.executable, __file__, "--job", name, "--data", str(data), "--classes", str(args.classes),
           "--bins", str(args.bins), "--batch-rows", str(args.batch_rows), "--mc-batch-rows",
           str(args.mc_batch_rows), "--target-rows", str(args.target_rows), "--mc-subset-rows",
           str(args.mc_subset_rows)]
    for k, v in extra.items():
        cmd += [f"--{k.replace('_', '-')}", str(v)]
    limit = int(args.mem_limit_gib * GIB)
    from classwatch.cli import ALLOCATOR_ENV, NUMPY_ENV  # each job is one fresh process, as a `classwatch` command is

    env = {**NUMPY_ENV, **ALLOCATOR_ENV, **os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "WARNING"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    ps = psutil.Process(proc.pid)
    peak_tree, killed = 0, False
    while proc.poll() is None:
        try:
            procs = [ps] + ps.children(recursive=True)
            rss = {p.pid: p.memory_info().rss for p in procs}
            peak_tree = max(peak_tree, sum(rss.values()))
            if max(rss.values()) > limit:
                killed = True
                for p in reversed(procs):
                    p.kill()
        except psutil.Error:
            pass
        # Once a second: polling /proc ten times a second slowed the 100M-row exact job it watched
        # (15.2-16.8 s against 12.8-13.9 s run alone, 14.1-14.8 s polled once a second; 2026-11-26).
        time.sleep(WATCH_SECONDS)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    if killed:
        return {"killed_at_limit_bytes": limit, "wall_seconds": wall}
    if proc.returncode != 0 or not lines:
        return {"error": (err or out).strip().splitlines()[-1:] or ["exit code %s" % proc.returncode],
                "wall_seconds": wall}
    result = json.loads(lines[-1][len("RESULT "):])
    result["wall_seconds"] = wall
    result["process_tree_peak_rss_sampled_bytes"] = peak_tree
    return result


def line(label: str, r: dict, target: str = "") -> str:
    if "killed_at_limit_bytes" in r:
        return f"{label:<44} KILLED at the {fmt_bytes(r['killed_at_limit_bytes'])} RSS limit after {r['wall_seconds']:.0f} s"
    if "error" in r:
        return f"{label:<44} FAILED: {r['error']}"
    cpu = r.get("cpu_seconds_all_processes", r.get("cpu_seconds"))
    text = (f"{label:<44} {r['seconds']:8.1f} s  {r['rows_per_s'] / 1e6:7.2f} M rows/s  "
            f"peak RSS {fmt_bytes(r['peak_rss_bytes'])}" + (f"  CPU {cpu:.0f} s" if cpu is not None else ""))
    return text + (f"   [{target}]" if target else "")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=100_000_000, help="rows of the binary dataset")
    p.add_argument("--mc-rows", type=int, default=20_000_000, help="rows of the multiclass dataset")
    p.add_argument("--classes", type=int, default=20)
    p.add_argument("--bins", type=int, default=10_000, help="equal score bins of the binned report")
    p.add_argument("--batch-rows", type=int, default=_scan_default("batch_rows"),
                   help="rows read per batch (default: the scan's, which `classwatch evaluate --batch-rows` "
                        "also uses; until 2026-11-26 this benchmark read 4,000,000, 10-30%% slower here)")
    p.add_argument("--mc-batch-rows", type=int, default=1_000_000)
    p.add_argument("--target-rows", type=int, default=0, help="rows per Dask task (0: the flow's default, "
                   "2 tasks per worker)")
    p.add_argument("--mc-subset-rows", type=int, default=2_000_000,
                   help="rows of the multiclass_subset job (exact multiclass in one pass on the first files)")
    p.add_argument("--jobs", default="confusion,exact,exact_one_thread,binned,multiclass,multiclass_binned,"
                                     "multiclass_subset,dask,sklearn")
    p.add_argument("--sklearn-rows", type=int, nargs="*", default=None,
                   help="row counts for scikit-learn (default 10%%, 30%% and 100%% of --rows)")
    p.add_argument("--mem-limit-gib", type=float, default=12.0, help="kill a job whose RSS passes this")
    p.add_argument("--dir", type=Path, default=None, help="data directory (default: a temporary one)")
    p.add_argument("--keep", action="store_true", help="keep the generated data")
    p.add_argument("--json", type=Path, default=None, help="write every figure to this JSON file")
    p.add_argument("--job", help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    p.add_argument("--sklearn-n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--mc-binned", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.job:
        run_child(args)
        return

    jobs = [j.strip() for j in args.jobs.split(",") if j.strip()]
    root = args.dir or Path(tempfile.mkdtemp(prefix="classwatch-bench-"))
    bin_dir, mc_dir = root / f"binary-{args.rows}", root / f"multiclass-{args.mc_rows}-{args.classes}"
    results: dict = {"rows": args.rows, "mc_rows": args.mc_rows, "classes": args.classes, "cpus": os.cpu_count(),
                     "load_average_at_start": os.getloadavg()}
    try:
        t0 = time.perf_counter()
        if not bin_dir.exists():
            write_binary(bin_dir, args.rows)
        if any(j.startswith("multiclass") for j in jobs) and not mc_dir.exists():
            write_multiclass(mc_dir, args.mc_rows, args.classes)
        results["data_seconds"] = time.perf_counter() - t0
        size = sum(f.stat().st_size for f in bin_dir.glob("*.parquet"))
        print(f"data in {root} ({results['data_seconds']:.0f} s): binary {args.rows:,} rows, {fmt_bytes(size)} Parquet"
              + (f"; multiclass {args.mc_rows:,} rows x {args.classes} classes"
                 if any(j.startswith("multiclass") for j in jobs) else ""),
              flush=True)
        for job in jobs:
            if job == "sklearn":
                sizes = args.sklearn_rows or sorted({max(args.rows // 10, 1), max(args.rows * 3 // 10, 1), args.rows})
                results["sklearn"] = {}
                for n in sizes:
                    r = run_job("sklearn", bin_dir, args, sklearn_n=n)
                    results["sklearn"][str(n)] = r
                    print(line(f"scikit-learn, {n:,} rows (in memory, weighted)", r), flush=True)
                    if "killed_at_limit_bytes" in r:
                        break
                continue
            data = mc_dir if job.startswith("multiclass") else bin_dir
            r = run_job(job, data, args)
            results[job] = r
            label, target = {
                "confusion": ("confusion counts only (streamed)", "target >= 20 M rows/s"),
                "exact": ("exact weighted report (streamed)", "target <= 15 s at 100M rows, < 4 GiB"),
                "exact_one_thread": ("exact weighted report, one scan thread", "the single-core reference of Dask"),
                "binned": (f"binned weighted report, {args.bins} bins", "target < 1 GiB"),
                "multiclass": (f"{args.classes}-class exact report (one class at a time)", "target < 4 GiB"),
                "multiclass_binned": (f"{args.classes}-class binned report, {args.bins} bins", "target < 4 GiB"),
                "multiclass_subset": (f"{args.classes}-class exact in ONE pass, first {args.mc_subset_rows:,} rows",
                                      "for comparison"),
                "dask": ("exact weighted report, Dask 2 workers", "client process"),
            }[job]
            print(line(label, r, target), flush=True)
            if job == "dask" and "worker_peak_rss" in r:
                for addr, rss in r["worker_peak_rss"].items():
                    print(f"{'':<44} worker {addr}: peak RSS {fmt_bytes(rss)}")
                print(f"{'':<44} cluster start {r['cluster_start_seconds']:.1f} s, warm-up {r['warmup_seconds']:.1f} s "
                      "(not in the time above)")
        summarize(results)
    finally:
        if args.json:
            args.json.write_text(json.dumps(results, indent=2, default=str))
        if not args.keep and args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


def summarize(results: dict) -> None:
    exact, dask, binned = results.get("exact"), results.get("dask"), results.get("binned")
    if exact and "seconds" in exact:
        print(f"exact: {exact['distinct_scores']:,} distinct scores, statistic {fmt_bytes(exact['statistic_bytes'])}; "
              f"peak RSS after the statistics {fmt_bytes(exact['peak_rss_after_statistics_bytes'])}, after the metrics "
              f"{fmt_bytes(exact['peak_rss_after_metrics_bytes'])}, after the curves {fmt_bytes(exact['peak_rss_bytes'])}; "
              f"AUROC {exact['auroc']:.6f}")
    for key in ("multiclass", "multiclass_binned", "multiclass_subset"):
        r = results.get(key)
        if r and "seconds" in r:
            print(f"{key}: {r['rows']:,} rows, {r['distinct_scores_all_classes']:,} (score, class) entries"
                  + (" after folding" if key == "multiclass" else "") + ", statistic "
                  f"{fmt_bytes(r['statistic_bytes'])}, AUROC macro {r['auroc_ovr_macro']:.6f}"
                  + (f" (error bound {r['auroc_error_bound']:.1e})" if r.get("auroc_error_bound") else ""))
    if exact and binned and "seconds" in exact and "seconds" in binned:
        diff = abs(binned["auroc"] - exact["auroc"])
        print(f"binned AUROC {binned['auroc']:.6f}: |error| {diff:.2e} within its bound {binned['auroc_error_bound']:.2e}: "
              f"{diff <= binned['auroc_error_bound']}; binned log loss {binned['log_loss']:.12f} "
              f"(relative difference to the exact one {abs(binned['log_loss'] / exact['log_loss'] - 1):.1e}: the rows' sums)")
    # Dask's workers scan on one thread each: its reference is the one-thread scan when measured.
    single = results.get("exact_one_thread") if "seconds" in results.get("exact_one_thread", {}) else exact
    if single and dask and "seconds" in single and "seconds" in dask:
        name = "one process, one thread" if single is not exact else "one process"
        print(f"Dask 2 workers vs {name}: {single['seconds'] / dask['seconds']:.2f}x faster "
              f"(target >= 1.6x for the map); CPU {dask['cpu_seconds_all_processes']:.0f} s vs "
              f"{single['cpu_seconds']:.0f} s ({dask['cpu_seconds_all_processes'] / single['cpu_seconds']:.2f}x, "
              f"target <= 1.5x); same AUROC: {dask['auroc'] == single['auroc']}, "
              f"same log loss: {dask['log_loss'] == single['log_loss']}")
        if dask.get("map_seconds"):
            print(f"  statistics: {name} scan {single['scan_seconds']:.1f} s, Dask flow {dask['flow_seconds']:.1f} s "
                  f"({single['scan_seconds'] / dask['flow_seconds']:.2f}x), of which the map tasks "
                  f"{dask['map_seconds']:.1f} s ({single['scan_seconds'] / dask['map_seconds']:.2f}x the scan); "
                  f"report on the client {dask['seconds'] - dask['flow_seconds']:.1f} s "
                  f"(one process {single['seconds'] - single['scan_seconds']:.1f} s)")
        if dask.get("cpu_seconds_split"):
            print("  Dask CPU: " + ", ".join(f"{k} {v:.1f} s" for k, v in dask["cpu_seconds_split"].items())
                  + " (client: the flow, the scheduler and the report; others: nannies and the Prefect API server)")
    print(f"load average at start {results['load_average_at_start']}, now {os.getloadavg()} "
          f"(on {results['cpus']} CPUs shared with other work)")
    from classwatch.cli import ALLOCATOR_ENV, NUMPY_ENV

    print("jobs ran with " + ", ".join(f"{k}={os.environ.get(k, v)}" for k, v in {**NUMPY_ENV, **ALLOCATOR_ENV}.items())
          + " (the classwatch command's setting)")


if __name__ == "__main__":
    main()
