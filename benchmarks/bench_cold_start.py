"""Benchmark: cold starts of a one-period `classwatch monitor`, each with a new Prefect home, optionally under CPU load.

Each try runs ``classwatch monitor --spec SPEC --period 2024-01`` in a new process with a fresh
``PREFECT_HOME`` (so Prefect's embedded API creates its database first, as on a new machine, in a
container or a CI job) and a fresh SQLite MLflow store, and records the wall time of the
command, the embedded API's start-up time (as the command prints it: "Embedded Prefect API ready
after X s") and whether it failed.
``--load`` keeps every core busy with one CPU-bound process per core, as in issue 12.

Run: python benchmarks/bench_cold_start.py [N=20] [--load] [--keep]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

PERIOD = "2024-01"
READY = re.compile(r"Embedded Prefect API ready after ([0-9.]+) s")
TIMEOUT = 900  # s, one command; the embedded API's own allowance is 300 s


def write_project(root: Path, rows: int = 2_000, seed: int = 0) -> Path:
    """A binary reference window and one delivery (label, score, prediction, price) and their spec."""
    rng = np.random.default_rng(seed)
    (root / "deliveries").mkdir(parents=True, exist_ok=True)

    def frame(n: int) -> pl.DataFrame:
        label = (rng.random(n) < 0.3).astype(np.int64)
        score = np.clip(rng.normal(0.3 + 0.4 * label, 0.15), 0, 1)
        price = np.exp(rng.normal(1 + 0.5 * label, 0.3))
        return pl.DataFrame({"label": label, "score": score, "prediction": (score >= 0.5).astype(np.int64),
                             "price": price})

    frame(rows).write_parquet(root / "reference.parquet")
    frame(rows).write_parquet(root / "deliveries" / f"{PERIOD}.parquet")
    spec = root / "spec.yaml"
    spec.write_text("name: cold-start\ntask: binary\nlabels: [0, 1]\nn_boot: 50\ncolumns:\n  weight: null\n"
                    "data:\n  reference: reference.parquet\n  current: deliveries/{period}.parquet\n"
                    f"mlflow:\n  experiment: cold-start\n  tracking_uri: sqlite:///{root / 'mlflow.db'}\n")
    return spec


@contextmanager
def cpu_load(n: int | None = None):
    """One busy-looping process per core (or ``n``) for the block; each stopped by its own id."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n or os.cpu_count() or 1)]
    try:
        yield procs
    finally:
        for p in procs:
            p.send_signal(signal.SIGKILL)
            p.wait()


@dataclass
class ColdStart:
    """One try: exit code, wall time, the embedded API's start-up time it printed (None if not printed)."""

    returncode: int
    seconds: float
    api_seconds: float | None
    output: str

    @property
    def failed(self) -> bool:
        return self.returncode != 0

    @property
    def timed_out(self) -> bool:
        return "Timed out while attempting to connect" in self.output


def cold_start(spec: Path, home: Path, period: str = PERIOD, env: dict | None = None) -> ColdStart:
    """``classwatch monitor --spec SPEC --period PERIOD`` with a new Prefect home ``home``, timed."""
    exe = Path(sys.executable).parent / "classwatch"
    environ = {**os.environ, **(env or {}), "PREFECT_HOME": str(home), "COLUMNS": "200"}
    for name in ("PREFECT_API_URL", "MLFLOW_TRACKING_URI", "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"):
        environ.pop(name, None)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([str(exe), "monitor", "--spec", str(spec), "--period", period], env=environ,
                              cwd=spec.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=TIMEOUT)
        returncode, output = proc.returncode, proc.stdout
    except subprocess.TimeoutExpired as exc:
        returncode, output = -9, (exc.stdout or b"").decode(errors="replace") + f"\n(killed after {TIMEOUT} s)"
    seconds = time.perf_counter() - t0
    ready = READY.search(output)
    api = float(ready.group(1)) if ready else None
    return ColdStart(returncode, seconds, api, output)


def run(n: int, load: bool, keep: bool = False) -> list[ColdStart]:
    root = Path(tempfile.mkdtemp(prefix="cw-cold-"))
    results = []
    try:
        spec = write_project(root / "project")
        with cpu_load() if load else nullcontext():
            for i in range(n):
                (root / "project" / "mlflow.db").unlink(missing_ok=True)
                r = cold_start(spec, root / f"home-{i}")
                results.append(r)
                api = f"{r.api_seconds:5.1f}" if r.api_seconds is not None else "    -"
                print(f"{i + 1:3d}/{n}  command {r.seconds:6.1f} s  embedded API {api} s  "
                      f"{'FAILED (exit %d)' % r.returncode if r.failed else 'ok'}", flush=True)
                if r.failed:
                    print("      " + r.output.strip().replace("\n", "\n      ")[-1500:], flush=True)
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=20, help="cold starts to try (default 20)")
    parser.add_argument("--load", action="store_true", help="one busy process per core while trying")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    print(f"{args.n} cold starts of a one-period `classwatch monitor`, new PREFECT_HOME each, "
          f"{os.cpu_count()} cores{', every core busy' if args.load else ''}")
    results = run(args.n, args.load, args.keep)
    times = [r.seconds for r in results if not r.failed]
    apis = [r.api_seconds for r in results if r.api_seconds is not None and not r.failed]
    print(f"failures: {sum(r.failed for r in results)} of {len(results)} "
          f"({sum(r.timed_out for r in results)} start-up time-outs)")
    if times:
        print(f"command:      median {statistics.median(times):.1f} s, min {min(times):.1f}, max {max(times):.1f}")
    if apis:
        print(f"embedded API: median {statistics.median(apis):.1f} s, min {min(apis):.1f}, max {max(apis):.1f}")


if __name__ == "__main__":
    main()
