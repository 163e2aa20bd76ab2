"""Command start-up (`make bench`): `classwatch --help` and `classwatch evaluate` of a 1,000-row CSV, end to end.

Each command runs as a new process, as a user starts it (imports, the report, its five PNGs, the
interpreter's exit), several times in a row; the median and the range are printed against issue
15's targets (1 s and 3 s). No peer: scikit-learn has no command line. Not a test: nothing is
asserted, the machines are shared and noisy.
Usage: python benchmarks/bench_cli.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

COMMAND = [sys.executable, "-m", "classwatch"]


def write_csv(path: Path, n: int = 1_000, seed: int = 0) -> None:
    """A binary CSV: label 0/1 (prevalence 0.3), score with 4 decimals."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.3
    s = np.clip(rng.normal(0.3 + 0.4 * y, 0.2), 0, 1)
    path.write_text("label,score\n" + "".join(f"{int(a)},{b:.4f}\n" for a, b in zip(y, s)))


def timed(args: list[str], runs: int) -> list[float]:
    """Wall seconds of ``runs`` runs of the command (after one untimed run: bytecode, disk cache)."""
    subprocess.run(COMMAND + args, check=True, capture_output=True)
    seconds = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(COMMAND + args, check=True, capture_output=True)
        seconds.append(time.perf_counter() - t0)
    return seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="classwatch-bench-cli-") as tmp:
        data = Path(tmp) / "small.csv"
        write_csv(data)
        print("\ncommand start-up, end to end (a new process each run)")
        for label, argv, target in (
                ("classwatch --help", ["--help"], 1.0),
                ("classwatch evaluate, 1,000 rows, 5 PNGs", ["evaluate", str(data), "--task", "binary",
                                                            "--out-dir", str(Path(tmp) / "plots")], 3.0)):
            s = timed(argv, args.runs)
            print(f"  {label:<40} median {statistics.median(s):5.2f} s  (range {min(s):.2f}-{max(s):.2f} s, "
                  f"{len(s)} runs)   [target <= {target:g} s]")


if __name__ == "__main__":
    main()
