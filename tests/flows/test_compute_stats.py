"""Statistics through Prefect on a real 2-worker Dask LocalCluster.

Streamed (one process), in-memory and Dask results are compared for identity on the same Parquet
directory; weights are dyadic so every sum is exact whatever the partitioning and merge tree.
"""

from __future__ import annotations

import math
import os

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import metrics_core as mc
from metrics_core.counts import FoldedScoreCounts, fold_negative_runs
from metrics_core.dataset import Columns, scan_stats
from classwatch.cli import ALLOCATOR_ENV
from flows.compute_stats import compute_stats
from flows.runners import local_cluster, task_runner
from tasks.config.spec import dask_address

# The allocator variables of the shell, read at collection: before a classwatch command run in this
# process by another test (CliRunner) sets the command's own (ALLOCATOR_ENV), or a nanny sets Dask's.
SHELL_MALLOC_TRIM = {k: os.environ.get(k) for k in ALLOCATOR_ENV}["MALLOC_TRIM_THRESHOLD_"]

CLASSES = [10, 20, 30]


def _tables(rng):
    """Five files: ordinary x3, one EMPTY, one holding only class 20 (binary: only positives)."""
    out = []
    for n, only in ((4000, None), (0, None), (1500, 20), (3000, None), (2500, None)):
        k = len(CLASSES)
        y = rng.integers(0, k, n) if only is None else np.full(n, CLASSES.index(only))
        logits = rng.standard_normal((n, k)) + 1.5 * np.eye(k)[y]
        p = (np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)).astype(np.float32)
        cols = {"label": np.array(CLASSES)[y], "binary_label": (y == 1).astype(np.int8),
                "score": p[:, 1], "weight": (rng.integers(1, 13, n) / 4).astype(np.float32)}
        cols.update({f"score_{c}": p[:, j] for j, c in enumerate(CLASSES)})
        out.append(pa.table(cols))
    return out


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("scale")
    tables = _tables(np.random.default_rng(11))
    for i, t in enumerate(tables):
        pq.write_table(t, root / f"part-{i}.parquet", row_group_size=500)
    return root, pa.concat_tables(tables)


@pytest.mark.slow
def test_local_cluster_worker_settings(cluster):
    """Dask's nanny would set MALLOC_TRIM_THRESHOLD_ (23% slower exact scans), the worker's profiler
    costs the map tasks about 10%, and 64 MiB shards a copy on receipt (see WORKER_CONFIG)."""
    from distributed import Client

    with Client(cluster) as client:
        env = client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
        threads = client.run(lambda: os.environ.get("OMP_NUM_THREADS"))
        profiling = client.run(lambda dask_worker: dask_worker.periodic_callbacks.get("profile") is not None)
        shards = client.run(lambda: __import__("distributed.comm.tcp", fromlist=["TCP"]).TCP.max_shard_size)
    assert set(profiling.values()) == {False}
    if "DASK_DISTRIBUTED__COMM__SHARD" not in os.environ:
        assert set(shards.values()) == {1 << 30}  # a statistic's arrays travel whole, not in 64 MiB shards
    if SHELL_MALLOC_TRIM is not None:
        pytest.skip("MALLOC_TRIM_THRESHOLD_ is set in the environment of the test run: workers inherit it")
    assert len(env) == 2 and set(env.values()) == {None}
    assert set(threads.values()) == {"1"}  # the rest of Dask's worker environment is kept


def _same(a: dict, b: dict, float_sums=()):
    assert a.keys() == b.keys()
    for k in a:
        if k in float_sums:
            assert a[k] == pytest.approx(b[k], rel=1e-12), k
        else:
            assert a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])), (k, a[k], b[k])


def test_runner_strings():
    assert dask_address("dask://127.0.0.1:8786") == "tcp://127.0.0.1:8786"
    assert dask_address("tcp://h:1") == "tcp://h:1"
    assert type(task_runner("local")).__name__ == "ThreadPoolTaskRunner"
    assert task_runner("dask://h:8786").address == "tcp://h:8786"
    runner = task_runner("dask", {"n_workers": 3})
    assert runner.cluster_class is local_cluster and runner.cluster_kwargs == {"n_workers": 3}
    # results come straight from the workers of our own cluster and of a scheduler on this machine
    assert runner.client_kwargs["direct_to_workers"] is True
    assert task_runner("dask://127.0.0.1:8786").client_kwargs["direct_to_workers"] is True
    assert "direct_to_workers" not in task_runner("dask://10.0.0.5:8786").client_kwargs  # Dask's default
    with dask.config.set({"distributed.client.direct-to-workers": False}):  # the user's setting wins
        assert "direct_to_workers" not in task_runner("tcp://127.0.0.1:8786").client_kwargs
        assert "direct_to_workers" not in task_runner("dask").client_kwargs
    with pytest.raises(mc.InputError, match="dask://HOST:PORT"):
        dask_address("spark://x")


@pytest.mark.slow
@pytest.mark.parametrize("weight", [None, "weight"])
def test_binary_dask_equals_streamed_and_in_memory(prefect_harness, cluster, data_dir, weight):
    root, full = data_dir
    columns = Columns(label="binary_label", weight=weight)
    w = None if weight is None else full[weight].to_numpy()
    in_memory = mc.binary_report(full["binary_label"].to_numpy(), full["score"].to_numpy(), sample_weight=w)
    streamed = scan_stats(root, "binary", columns, batch_rows=700)
    progress = []
    on_dask = compute_stats(root, "binary", columns, runner=f"dask://{cluster.scheduler_address[6:]}",
                            target_rows=1000, fan_in=3, progress=lambda d, t: progress.append((d, t)))
    assert progress[-1] == (full.num_rows, full.num_rows) and len(progress) >= 10  # many partitions
    for stats in (streamed, on_dask):
        _same(mc.binary_from_stats(stats).metrics, in_memory.metrics)
        for name in ("scores", "pos", "neg"):
            assert np.array_equal(getattr(stats.scores, name), getattr(in_memory.stats.scores, name))


@pytest.mark.slow
def test_the_result_is_gathered_from_the_workers_not_through_the_scheduler(prefect_harness, cluster, data_dir):
    """The scheduler forwards results in pickle protocol 4, copying every array (2.3-3.5 s for the
    100M-row benchmark's statistic): the client of a local scheduler asks the workers directly."""
    root, _ = data_dir
    calls = []
    handlers = cluster.scheduler.handlers
    original = handlers["gather"]

    def counted(*args, **kwargs):
        calls.append(kwargs.get("keys"))
        return original(*args, **kwargs)

    handlers["gather"] = counted
    try:
        stats = compute_stats(root, "binary", Columns(label="binary_label"), runner=cluster.scheduler_address,
                              target_rows=1000)
    finally:
        handlers["gather"] = original
    assert stats.n_rows > 0 and calls == []


@pytest.mark.slow
@pytest.mark.parametrize("weight", [None, "weight"])
def test_multiclass_dask_equals_streamed_and_in_memory(prefect_harness, cluster, data_dir, weight):
    root, full = data_dir
    columns = Columns(weight=weight)
    ys = np.column_stack([full[f"score_{c}"].to_numpy() for c in CLASSES])
    w = None if weight is None else full[weight].to_numpy()
    in_memory = mc.multiclass_report(full["label"].to_numpy(), y_score=ys, sample_weight=w)
    streamed = scan_stats(root, "multiclass", columns, batch_rows=900)
    on_dask = compute_stats(root, "multiclass", columns, runner=cluster.scheduler_address, target_rows=2000)
    assert on_dask.confusion.labels.tolist() == CLASSES  # the class list came from a partition-labels map
    # exact multiclass maps over the classes too: one class-scores task per class, folded
    assert all(isinstance(sc, FoldedScoreCounts) for sc in on_dask.scores)
    for stats in (streamed, on_dask):
        # the multiclass log loss is a float sum over rows (LossSums): equal up to rounding
        _same(mc.multiclass_from_stats(stats).metrics, in_memory.metrics, float_sums=("log_loss",))
        for a, b in zip(stats.scores, in_memory.stats.scores):
            if isinstance(a, FoldedScoreCounts):  # the streamed scan goes one class at a time
                b = fold_negative_runs(b)
            assert np.array_equal(a.scores, b.scores) and np.array_equal(a.pos, b.pos) and np.array_equal(a.neg, b.neg)


@pytest.mark.slow
def test_binned_on_dask_equals_binned_streamed(prefect_harness, cluster, data_dir):
    root, _ = data_dir
    columns = Columns(label="binary_label")
    streamed = scan_stats(root, "binary", columns, bins=50)
    on_dask = compute_stats(root, "binary", columns, bins=50, runner=cluster.scheduler_address, target_rows=1500)
    assert np.array_equal(streamed.scores.pos, on_dask.scores.pos)
    assert np.array_equal(streamed.scores.neg, on_dask.scores.neg)


@pytest.mark.slow
def test_a_bad_partition_fails_with_its_file_named(prefect_harness, cluster, data_dir, tmp_path):
    root, full = data_dir
    for f in root.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    bad = full.slice(0, 600)
    score = bad["score"].to_numpy().copy()
    score[[5, 250]] = np.nan
    bad = bad.set_column(bad.schema.get_field_index("score"), "score", pa.array(score))
    pq.write_table(bad, tmp_path / "part-9-bad.parquet")
    with pytest.raises(mc.InputError) as err:
        compute_stats(tmp_path, "binary", Columns(label="binary_label"), runner=cluster.scheduler_address,
                      target_rows=1000)
    msg = str(err.value)
    assert "part-9-bad.parquet" in msg and "'score'" in msg and "2 row(s)" in msg and "row 5" in msg


@pytest.mark.slow
def test_local_runner_runs_the_same_flow(prefect_harness, data_dir):
    root, full = data_dir
    in_memory = mc.binary_report(full["binary_label"].to_numpy(), full["score"].to_numpy())
    stats = compute_stats(root, "binary", Columns(label="binary_label"), runner="local", batch_rows=1000)
    _same(mc.binary_from_stats(stats).metrics, in_memory.metrics)


@pytest.mark.slow
def test_dask_runner_starts_its_own_local_cluster(prefect_harness, data_dir):
    """`--runner dask`: prefect-dask creates (and closes) a LocalCluster of 2 worker processes."""
    root, full = data_dir
    in_memory = mc.binary_report(full["binary_label"].to_numpy(), full["score"].to_numpy())
    stats = compute_stats(root, "binary", Columns(label="binary_label"), runner="dask")  # default task sizes
    _same(mc.binary_from_stats(stats).metrics, in_memory.metrics)
