"""`classwatch evaluate` at scale: streamed batches, --binned, --json, --runner, on a Parquet directory."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import metrics_core as mc
from classwatch.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A hive-partitioned directory of three months (one holding positives only); dyadic weights."""
    rng = np.random.default_rng(5)
    root = tmp_path_factory.mktemp("scale-cli") / "scores"
    tables = []
    for month, n, only_pos in (("2026-01", 3000, False), ("2026-02", 800, True), ("2026-03", 2200, False)):
        y = np.ones(n, bool) if only_pos else rng.random(n) < 0.3
        score = (1 / (1 + np.exp(-(np.where(y, 1.0, -1.0) + rng.standard_normal(n))))).astype(np.float32)
        t = pa.table({"label": y.astype(np.int8), "score": score, "weight": rng.integers(1, 8, n) / 4})
        (root / f"period={month}").mkdir(parents=True)
        pq.write_table(t, root / f"period={month}" / "part.parquet", row_group_size=500)
        tables.append(t)
    return root, pa.concat_tables(tables)


def evaluate(*args):
    return runner.invoke(app, ["evaluate", *map(str, args), "--n-boot", "100", "--no-plots"])


def read_json(path):
    return json.loads(path.read_text())


def test_json_has_the_in_memory_metrics_rows_time_and_memory(data, tmp_path):
    root, full = data
    out = tmp_path / "r.json"
    result = evaluate(root, "--task", "binary", "--weight-column", "weight", "--batch-rows", "1000", "--json", out)
    assert result.exit_code == 0, result.output
    payload = read_json(out)
    expected = mc.binary_report(full["label"].to_numpy(), full["score"].to_numpy(),
                                sample_weight=full["weight"].to_numpy()).metrics
    assert payload["n_rows"] == full.num_rows
    assert payload["seconds"] > 0 and payload["peak_rss_bytes"] > 10 * 2**20
    for key, value in expected.items():
        assert payload["metrics"][key] == (value if math.isfinite(value) else None), key


def test_a_decimal_score_file_reports_the_metrics_of_its_numbers_and_json_makes_its_folder(data, tmp_path):
    """A database export with DECIMAL scores and weights: the metrics of the same numbers as floats;
    ``--json`` into a folder that does not exist yet creates it (as ``--out-dir`` does)."""
    import pyarrow.compute as pc

    _, full = data
    rounded = {c: pa.array(np.round(full[c].to_numpy().astype(np.float64), 4)) for c in ("score", "weight")}
    exported = pa.table({"label": full["label"], **{c: pc.cast(pc.cast(v, pa.string()), pa.decimal128(9, 4))
                                                    for c, v in rounded.items()}})
    pq.write_table(exported, tmp_path / "export.parquet")
    out = tmp_path / "new" / "folder" / "r.json"
    result = evaluate(tmp_path / "export.parquet", "--task", "binary", "--weight-column", "weight", "--json", out)
    assert result.exit_code == 0, result.output
    expected = mc.binary_report(full["label"].to_numpy(), rounded["score"].to_numpy(),
                                sample_weight=rounded["weight"].to_numpy()).metrics
    for key, value in expected.items():
        assert read_json(out)["metrics"][key] == (value if math.isfinite(value) else None), key


def test_binned_reports_its_auroc_bound(data, tmp_path):
    root, full = data
    out = tmp_path / "b.json"
    result = evaluate(root, "--task", "binary", "--binned", "50", "--json", out)
    assert result.exit_code == 0, result.output
    metrics = read_json(out)["metrics"]
    exact = mc.binary_report(full["label"].to_numpy(), full["score"].to_numpy()).metrics["auroc"]
    assert 0 < metrics["auroc_error_bound"] < 0.05
    assert abs(metrics["auroc"] - exact) <= metrics["auroc_error_bound"]
    assert "auroc_error_bound" in result.stdout


def test_bad_runner_exits_2(data):
    root, _ = data
    result = evaluate(root, "--task", "binary", "--runner", "spark://host")  # a Spark master needs its port
    assert result.exit_code == 2 and "dask://HOST:PORT" in " ".join(result.output.split())


def closed_port() -> int:
    """A loopback port nothing listens on (bound once by the OS, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_scheduler_is_one_error_line_at_once(data, tmp_path):
    """Before: the embedded Prefect API started, Dask retried for 30 s, and a traceback ended it."""
    root, _ = data
    port = closed_port()
    result = evaluate(root, "--task", "binary", "--runner", f"dask://127.0.0.1:{port}", "--json", tmp_path / "r.json")
    text = " ".join(result.output.split())
    assert result.exit_code == 1, result.output
    assert f"Error: SchedulerUnreachable: the Dask scheduler tcp://127.0.0.1:{port} is unreachable" in text
    assert "--runner dask" in text and "Traceback" not in result.output and not (tmp_path / "r.json").exists()


def test_binned_multiclass_bounds_every_class(tmp_path):
    rng = np.random.default_rng(9)
    y = rng.integers(0, 3, 3000)
    p = rng.dirichlet(np.ones(3), 3000) * 0.8 + 0.2 * np.eye(3)[y]  # overlapping classes
    path = tmp_path / "mc.parquet"
    pq.write_table(pa.table({"label": y, **{f"score_{c}": p[:, c] for c in range(3)}}), path)
    out = tmp_path / "mc.json"
    result = evaluate(path, "--task", "multiclass", "--binned", "20", "--json", out)
    assert result.exit_code == 0, result.output
    binned = read_json(out)["metrics"]
    exact = mc.multiclass_report(y, y_score=p, labels=[0, 1, 2]).metrics
    # the bound is the largest per-class bound, so it bounds the error of the macro average too
    assert 0 < binned["auroc_error_bound"] < 0.1
    assert abs(binned["auroc_ovr_macro"] - exact["auroc_ovr_macro"]) <= binned["auroc_error_bound"]


@pytest.mark.slow
def test_dask_runner_gives_the_same_json(prefect_harness, data, tmp_path):
    root, _ = data
    local, dask = tmp_path / "local.json", tmp_path / "dask.json"
    assert evaluate(root, "--task", "binary", "--weight-column", "weight", "--json", local).exit_code == 0
    result = evaluate(root, "--task", "binary", "--weight-column", "weight", "--runner", "dask", "--json", dask)
    assert result.exit_code == 0, result.output
    assert read_json(dask)["metrics"] == read_json(local)["metrics"]
    assert read_json(dask)["n_rows"] == read_json(local)["n_rows"] == 6000
