"""`classwatch evaluate` of a weighted directory in a fresh process: the scan's worker threads and the modules they import."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import metrics_core as mc

EXE = Path(sys.executable).parent / "classwatch"
RUNS = 3  # the crash came every time; three runs show it is not a matter of luck


def _weighted_directory(root: Path, task: str) -> pa.Table:
    """Three Parquet files of weighted rows (float64 scores: the weighted sort that loads polars)."""
    rng = np.random.default_rng(32)
    root.mkdir(parents=True)
    tables = []
    for i in range(3):
        n = 1500
        if task == "binary":
            score = rng.random(n)
            t = pa.table({"label": (rng.random(n) < score).astype(np.int64), "score": score})
        else:
            scores = rng.dirichlet(np.ones(3), n)
            labels = (scores.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1)
            t = pa.table({"label": labels, **{f"score_{k}": scores[:, k] for k in range(3)}})
        t = t.append_column("weight", pa.array(rng.uniform(0.5, 2.0, n)))
        pq.write_table(t, root / f"part-{i}.parquet")
        tables.append(t)
    return pa.concat_tables(tables)


def _in_memory(full: pa.Table, task: str):
    w = full["weight"].to_numpy()
    if task == "binary":
        return mc.binary_report(full["label"].to_numpy(), full["score"].to_numpy(), sample_weight=w)
    scores = np.column_stack([full[f"score_{k}"].to_numpy() for k in range(3)])
    return mc.multiclass_report(full["label"].to_numpy(), y_score=scores, labels=[0, 1, 2], sample_weight=w)


@pytest.mark.slow
@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_a_weighted_directory_evaluates_in_a_fresh_process_every_time(tmp_path, task):
    """Each run is a new process, where polars is not loaded yet: it was first imported by one scan
    thread while another looked it up, and every run exited 1 with "partially initialized module
    'polars' has no attribute 'Series'"."""
    root = tmp_path / "deliveries"
    full = _weighted_directory(root, task)
    expected = _in_memory(full, task).metrics
    for run in range(RUNS):
        out = tmp_path / f"run{run}.json"
        done = subprocess.run([str(EXE), "evaluate", str(root), "--task", task, "--weight-column", "weight",
                               "--batch-rows", "1000", "--n-boot", "50", "--no-plots", "--json", str(out)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"run {run}: {done.stdout}{done.stderr}"
        metrics = json.loads(out.read_text())["metrics"]
        assert json.loads(out.read_text())["n_rows"] == full.num_rows
        assert metrics["auroc" if task == "binary" else "auroc_ovr_macro"] == pytest.approx(
            expected["auroc" if task == "binary" else "auroc_ovr_macro"], rel=1e-12)


_WORKER_IMPORTS = """
import sys, threading
first_on_a_worker = []

def hook(event, args):
    if event == "import" and threading.current_thread() is not threading.main_thread():
        first_on_a_worker.append(args[0])

sys.addaudithook(hook)
from metrics_core.contract import Columns
from metrics_core.dataset import scan_stats
task, root = sys.argv[1], sys.argv[2]
scan_stats(root, task, Columns(weight="weight"), batch_rows=1000, threads=2)
print(sorted(set(first_on_a_worker)))
"""


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_no_module_is_first_imported_on_a_scan_thread(tmp_path, task):
    """The cause: every module the scan's threads need (polars for the weighted sort, SciPy's sparse
    merge) is imported on the scan's own thread before its workers start."""
    root = tmp_path / "deliveries"
    _weighted_directory(root, task)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_WORKER_IMPORTS), task, str(root)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout
