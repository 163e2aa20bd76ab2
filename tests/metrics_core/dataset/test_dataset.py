"""Streaming statistics over Arrow datasets: streamed report == in-memory report.

The oracle is metrics_core's own in-memory report on the concatenated rows (itself checked against
scikit-learn in test_oracle_*). Counts are int64 and the weights are dyadic (multiples of 1/4), so
every sum is exact whatever the batch boundaries and merge order: equality is exact, key by key.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.dataset as pads
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from flow_data import multiclass_scores
from hypothesis import given, settings
from hypothesis import strategies as st

import metrics_core as mc
from metrics_core.counts import FoldedScoreCounts, fold_negative_runs
from metrics_core.curves import auroc_from_counts
from metrics_core.dataset import (
    BucketedScoreMerger,
    Columns,
    TreeMerger,
    check_batch,
    dataset_class_rows,
    class_labels,
    iter_batches,
    merge_tree,
    open_dataset,
    partition_groups,
    parts_of,
    scan_partial,
    scan_stats,
    schema_changes,
    schema_of,
)

PERIODS = ["2026-01", "2026-02", "2026-03", "2026-04"]
CLASSES = ["a", "b", "c", "d"]


def _binary_table(rng, n: int, only: int | None = None) -> pa.Table:
    y = rng.random(n) < 0.35 if only is None else np.full(n, bool(only))
    logit = np.where(y, 0.8, -0.8) + rng.standard_normal(n)
    score = (1 / (1 + np.exp(-logit))).astype(np.float32)
    score[: n // 3] = np.round(score[: n // 3], 2)  # ties inside and across files
    return pa.table({"id": np.arange(n, dtype=np.int64), "label": y.astype(np.int8), "score": score,
                     "prediction": (score >= 0.4).astype(np.int8),
                     "weight": (rng.integers(1, 9, n) / 4).astype(np.float32)})


def _multiclass_table(rng, n: int, only: str | None = None) -> pa.Table:
    k = len(CLASSES)
    y = rng.integers(0, k, n) if only is None else np.full(n, CLASSES.index(only))
    logits = rng.standard_normal((n, k)) + 1.2 * np.eye(k)[y]
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    cols = {"label": np.array(CLASSES)[y], "weight": rng.integers(1, 5, n) / 2.0}
    cols.update({f"score_{c}": p[:, j].astype(np.float32) for j, c in enumerate(CLASSES)})
    return pa.table(cols)


def _write_dir(root, tables) -> None:
    for period, table in zip(PERIODS, tables):
        (root / f"period={period}").mkdir(parents=True)
        pq.write_table(table, root / f"period={period}" / "part-0.parquet", row_group_size=700)


@pytest.fixture(scope="module")
def binary_dir(tmp_path_factory):
    """Four monthly files: ordinary, EMPTY, ONE CLASS only (positives), ordinary."""
    rng = np.random.default_rng(7)
    root = tmp_path_factory.mktemp("binary")
    tables = [_binary_table(rng, 3000), _binary_table(rng, 0), _binary_table(rng, 1200, only=1),
              _binary_table(rng, 2500)]
    _write_dir(root, tables)
    return root, pa.concat_tables(tables)


@pytest.fixture(scope="module")
def multiclass_dir(tmp_path_factory):
    """Four files with string classes: ordinary, EMPTY, only class 'c', ordinary."""
    rng = np.random.default_rng(8)
    root = tmp_path_factory.mktemp("multiclass")
    tables = [_multiclass_table(rng, 2000), _multiclass_table(rng, 0), _multiclass_table(rng, 900, only="c"),
              _multiclass_table(rng, 1800)]
    _write_dir(root, tables)
    return root, pa.concat_tables(tables)


def assert_same_metrics(streamed: dict, in_memory: dict, float_sums: tuple = ()) -> None:
    """Every key identical; keys in ``float_sums`` are sums of per-row floats (the multiclass
    log loss is a LossSums of -log p over rows), whose rounding depends on the batch boundaries."""
    assert streamed.keys() == in_memory.keys()
    for key, value in in_memory.items():
        other = streamed[key]
        if key in float_sums:
            assert other == pytest.approx(value, rel=1e-12, abs=0), key
            continue
        assert other == value or (math.isnan(other) and math.isnan(value)), (key, other, value)


def assert_same_counts(a, b) -> None:
    for name in ("scores", "pos", "neg"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name


@pytest.mark.parametrize("threads", [1, 3])  # batch statistics on threads merge in the same order
@pytest.mark.parametrize("weight", [None, "weight"])
@pytest.mark.parametrize("batch_rows", [333, 1_000_000])
def test_binary_streamed_equals_in_memory(binary_dir, weight, batch_rows, threads):
    root, full = binary_dir
    stats = scan_stats(root, "binary", Columns(weight=weight), batch_rows=batch_rows, use_prediction=False,
                       threads=threads)
    w = None if weight is None else full[weight].to_numpy()
    expected = mc.binary_report(full["label"].to_numpy(), full["score"].to_numpy(), sample_weight=w, n_boot=20)
    got = mc.binary_from_stats(stats, n_boot=20)
    assert_same_metrics(got.metrics, expected.metrics)
    assert_same_counts(stats.scores, expected.stats.scores)
    assert stats.confusion.labels.tolist() == expected.stats.confusion.labels.tolist() == [0, 1]
    assert stats.n_rows == full.num_rows
    for curve in ("roc", "pr"):
        assert np.array_equal(got.curves[curve]["y"], expected.curves[curve]["y"], equal_nan=True)


def test_binary_prediction_column_decides_the_confusion(binary_dir):
    root, full = binary_dir
    stats = scan_stats(root, "binary", batch_rows=1000)  # the prediction column exists: used as y_pred
    expected = mc.binary_report(full["label"].to_numpy(), full["score"].to_numpy(), full["prediction"].to_numpy())
    assert_same_metrics(mc.binary_from_stats(stats).metrics, expected.metrics)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("by_class", [False, True])
@pytest.mark.parametrize("weight", [None, "weight"])
def test_multiclass_streamed_equals_in_memory(multiclass_dir, weight, by_class, threads):
    """One pass, and one pass per class (whose statistics are folded), both equal the in-memory report."""
    root, full = multiclass_dir
    stats = scan_stats(root, "multiclass", Columns(weight=weight), batch_rows=500, by_class=by_class, threads=threads)
    ys = np.column_stack([full[f"score_{c}"].to_numpy() for c in CLASSES])
    w = None if weight is None else full[weight].to_numpy()
    expected = mc.multiclass_report(full["label"].to_numpy(), y_score=ys, sample_weight=w, n_boot=40)
    got = mc.multiclass_from_stats(stats, n_boot=40)
    assert stats.confusion.labels.tolist() == CLASSES
    assert_same_metrics(got.metrics, expected.metrics, float_sums=("log_loss",))
    for a, b in zip(stats.scores, expected.stats.scores):
        assert isinstance(a, FoldedScoreCounts) == by_class
        assert_same_counts(a, fold_negative_runs(b) if by_class else b)
    assert got.per_class.equals(expected.per_class)
    assert got.intervals["auroc_ovr_macro"] == expected.intervals["auroc_ovr_macro"]


@pytest.mark.parametrize("by_class", [False, True])
@pytest.mark.parametrize("label_type, names, labels", [
    (pa.float64(), ["score_0", "score_1", "score_2"], None),  # pandas' float classes, sklearn's integer names
    (pa.float64(), ["score_0", "score_1", "score_2"], [0.0, 1.0, 2.0]),
    (pa.int64(), ["score_0.0", "score_1.0", "score_2.0"], None),
    (pa.int64(), ["score_0.0", "score_1.0", "score_2.0"], [0, 1, 2]),
])
def test_number_classes_find_their_score_columns_written_either_way(tmp_path, label_type, names, labels, by_class):
    """The class 1.0 reads score_1 and the class 1 score_1.0, with the metrics of matching names."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 600)
    proba = rng.dirichlet(np.ones(3), 600)
    table = pa.table({"label": pa.array(y).cast(label_type), **dict(zip(names, proba.T))})
    pq.write_table(table, tmp_path / "f.parquet")
    stats = scan_stats(tmp_path, "multiclass", labels=labels, by_class=by_class)
    expected = mc.multiclass_report(y, y_score=proba, n_boot=0)
    assert stats.confusion.labels.tolist() == [0, 1, 2]
    assert_same_metrics(mc.multiclass_from_stats(stats, n_boot=0).metrics, expected.metrics, float_sums=("log_loss",))


def test_class_at_a_time_is_the_default_for_parquet_not_csv(multiclass_dir, tmp_path):
    """A folded statistic holds about 2 x prevalence of the distinct scores; CSV is scanned once."""
    root, full = multiclass_dir
    folded = scan_stats(root, "multiclass", batch_rows=500)
    single = scan_stats(root, "multiclass", batch_rows=500, by_class=False)
    assert all(isinstance(sc, FoldedScoreCounts) for sc in folded.scores)
    assert sum(sc.scores.size for sc in folded.scores) < 0.6 * sum(sc.scores.size for sc in single.scores)
    pacsv.write_csv(full, tmp_path / "all.csv")
    csv = scan_stats(tmp_path / "all.csv", "multiclass", batch_rows=500)
    assert not any(isinstance(sc, FoldedScoreCounts) for sc in csv.scores)
    # (CSV holds the float32 scores as decimal text, read back as float64: equal up to that rounding)
    got, expected = mc.multiclass_from_stats(csv).metrics, mc.multiclass_from_stats(folded).metrics
    assert got["accuracy"] == expected["accuracy"]
    assert got["auroc_ovr_macro"] == pytest.approx(expected["auroc_ovr_macro"], rel=1e-9)
    with pytest.raises(mc.InputError, match="folded .* can no longer be merged"):
        folded.merge(folded)


def test_class_at_a_time_reports_progress_over_every_pass(multiclass_dir):
    root, full = multiclass_dir
    seen = []
    scan_stats(root, "multiclass", batch_rows=1000, progress=lambda done, total: seen.append((done, total)))
    passes = 1 + len(CLASSES)
    assert seen[-1] == (full.num_rows * passes, full.num_rows * passes)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_multiclass_class_list_from_the_spec_fixes_the_order(multiclass_dir):
    root, full = multiclass_dir
    order = ["d", "c", "b", "a"]
    stats = scan_stats(root, "multiclass", labels=order)
    ys = np.column_stack([full[f"score_{c}"].to_numpy() for c in order])
    expected = mc.multiclass_report(full["label"].to_numpy(), y_score=ys, labels=order)
    assert_same_metrics(mc.multiclass_from_stats(stats).metrics, expected.metrics, float_sums=("log_loss",))
    assert class_labels(root).tolist() == CLASSES


def test_binary_string_labels_with_a_one_class_file(tmp_path):
    """A file holding only the positive class cannot name the negative one: merged by role."""
    rng = np.random.default_rng(3)
    tables = []
    for i, only in enumerate([None, "yes", None]):
        y = rng.random(400) < 0.5 if only is None else np.ones(400, bool)
        t = pa.table({"label": np.where(y, "yes", "no"), "score": rng.random(400)})
        pq.write_table(t, tmp_path / f"f{i}.parquet")
        tables.append(t)
    full = pa.concat_tables(tables)
    stats = scan_stats(tmp_path, "binary", pos_label="yes", batch_rows=150)
    expected = mc.binary_report(full["label"].to_numpy(), full["score"].to_numpy(), pos_label="yes")
    assert stats.confusion.labels.tolist() == ["no", "yes"]
    assert_same_metrics(mc.binary_from_stats(stats).metrics, expected.metrics)


def test_partitions_merged_in_any_tree_equal_one_scan(binary_dir):
    root, _ = binary_dir
    parts = parts_of(root, target_rows=1500)
    assert len(parts) > 4 and any(p.row_groups for p in parts)  # files split by row-group ranges
    assert sum(p.n_rows for p in parts) == 6700
    partials = [scan_partial(root, "binary", Columns(weight="weight"), parts=[p]) for p in parts]
    whole = scan_stats(root, "binary", Columns(weight="weight"))
    for merged in (merge_tree(partials), merge_tree(partials[::-1])):
        stats = merged.finish()
        assert_same_counts(stats.scores, whole.scores)
        assert np.array_equal(stats.confusion.matrix, whole.confusion.matrix)


def test_partition_groups_cover_every_row_once_in_order(binary_dir, tmp_path):
    """The one plan of every distributed map: the known rows spread over ``tasks`` groups (large files cut at
    row groups), the empty file left out, a file of unknown size (CSV) a group of its own, nothing for no rows."""
    root, _ = binary_dir
    groups, total = partition_groups(root, tasks=4)
    flat = [p for g in groups for p in g]
    assert total == 6700 and sum(p.n_rows for p in flat) == 6700 and len(groups) == 4
    assert flat == parts_of(root, target_rows=-(-6700 // 4))  # dataset order, each part once
    assert partition_groups(root, target_rows=10_000)[0] == [parts_of(root)]  # one group of every file
    calls = []
    partition_groups(root, target_rows=1000, tasks=lambda: calls.append(1) or 2)
    assert calls == []  # the cluster is not asked when the size is given
    pacsv.write_csv(pa.table({"label": [1, 0]}), tmp_path / "a.csv")
    groups, total = partition_groups(tmp_path / "a.csv", tasks=2)
    assert total is None and len(groups) == 1 and groups[0][0].n_rows is None
    pq.write_table(pa.table({"label": pa.array([], pa.int64())}), tmp_path / "empty.parquet")
    assert partition_groups(tmp_path / "empty.parquet", tasks=2) == ([], 0)


def test_tree_merger_merges_left_to_right():
    class Cat:
        def __init__(self, s):
            self.s = s

        def merge(self, other):
            return Cat(self.s + other.s)

    merger = TreeMerger()
    for ch in "abcdefg":
        merger.push(Cat(ch))
    assert merger.result().s == "abcdefg"
    assert merge_tree([]) is None


@given(seed=st.integers(0, 2**32 - 1), n_batches=st.integers(1, 9), weighted=st.booleans(),
       empty_first=st.integers(0, 2), min_bucket=st.sampled_from([1, 3, 50]), threads=st.sampled_from([1, 2, 3]))
@settings(max_examples=60, deadline=None)
def test_bucketed_score_merger_equals_one_merge_tree(seed, n_batches, weighted, empty_first, min_bucket, threads):
    """Bit for bit, float weights included: same tree order per bucket, equal scores in one bucket,
    whether the bucket groups merge on the caller's thread or on threads of their own."""
    rng = np.random.default_rng(seed)
    batches = [mc.ScoreCounts.from_arrays(np.array([], bool), np.array([]), np.array([]) if weighted else None)
               for _ in range(empty_first)]
    for _ in range(n_batches):
        n = int(rng.integers(0, 400))
        s = np.round(rng.random(n), int(rng.integers(1, 4)))  # ties within and across batches
        batches.append(mc.ScoreCounts.from_arrays(rng.random(n) < 0.3, s, rng.random(n) * 3 if weighted else None))
    bucketed = BucketedScoreMerger(buckets=8, min_bucket=min_bucket, threads=threads)
    for sc in batches:
        bucketed.push(sc)
    got, expected = bucketed.result(), merge_tree(batches)
    assert_same_counts(got, expected)


@pytest.mark.parametrize("bins", [10, 100, np.linspace(0, 1, 1001)])
def test_binned_auroc_within_its_reported_bound(binary_dir, bins):
    root, full = binary_dir
    exact_report = mc.binary_from_stats(scan_stats(root, "binary", use_prediction=False))
    exact = exact_report.metrics["auroc"]
    binned = mc.binary_from_stats(scan_stats(root, "binary", bins=bins, batch_rows=800, use_prediction=False))
    bound = binned.metrics["auroc_error_bound"]
    assert 0 < bound < 0.5
    assert abs(binned.metrics["auroc"] - exact) <= bound
    for key in ("log_loss", "brier"):  # sums over the rows, not over the bins' edges
        assert binned.metrics[key] == pytest.approx(exact_report.metrics[key], rel=1e-12)
    # the binned confusion at the threshold is exact (0.5 is a bin edge)
    assert binned.metrics["tp"] == mc.binary_report(full["label"].to_numpy(), full["score"].to_numpy()).metrics["tp"]


def test_binned_multiclass_auroc_within_each_class_bound(multiclass_dir):
    root, _ = multiclass_dir
    exact = scan_stats(root, "multiclass")
    binned = scan_stats(root, "multiclass", bins=40, batch_rows=700)
    assert np.array_equal(binned.confusion.matrix, exact.confusion.matrix)
    for e, b in zip(exact.scores, binned.scores):
        bound = b.auroc_error_bound()
        assert 0 < bound < 0.5
        assert abs(auroc_from_counts(b.pos, b.neg) - auroc_from_counts(e.pos, e.neg)) <= bound


def test_binned_bound_shrinks_with_finer_bins(binary_dir):
    root, _ = binary_dir
    bounds = [mc.binary_from_stats(scan_stats(root, "binary", bins=b)).metrics["auroc_error_bound"]
              for b in (10, 100, 1000)]
    assert bounds[0] > bounds[1] > bounds[2]


def test_period_filter_reads_one_partition(binary_dir):
    root, full = binary_dir
    stats = scan_stats(root, "binary", filter=pads.field("period") == "2026-04", use_prediction=False)
    last = full.slice(6700 - 2500)
    expected = mc.binary_report(last["label"].to_numpy(), last["score"].to_numpy())
    assert_same_metrics(mc.binary_from_stats(stats).metrics, expected.metrics)
    with pytest.raises(mc.InputError, match="no rows to evaluate"):
        scan_stats(root, "binary", filter=pads.field("period") == "2026-02")


@pytest.mark.parametrize("fmt", ["arrow", "feather", "csv"])
def test_ipc_and_csv_files_stream_like_parquet(binary_dir, tmp_path, fmt):
    _, full = binary_dir
    # float64 scores: CSV stores decimal text, which round-trips float64 exactly (float32 would not)
    full = full.set_column(full.schema.get_field_index("score"), "score", full["score"].cast(pa.float64()))
    table = full.select(["label", "score"])
    path = tmp_path / f"data.{fmt}"
    if fmt == "csv":
        pacsv.write_csv(table, path)
    else:
        feather.write_feather(table, path)
    got = scan_stats(path, "binary", batch_rows=1000)
    expected = mc.binary_report(full["label"].to_numpy(), full["score"].to_numpy())
    assert_same_metrics(mc.binary_from_stats(got).metrics, expected.metrics)


@pytest.mark.parametrize("name, sep, decimal", [("data.tsv", "\t", "."), ("data.tsv.gz", "\t", "."),
                                                 ("data.csv", ";", ","), ("data.csv", "|", "."),
                                                 ("data.csv.gz", ";", ",")])
def test_tab_semicolon_and_decimal_comma_text_files_read_as_their_numbers(binary_dir, tmp_path, name, sep, decimal):
    """A .tsv is tab-separated (it was read as one comma-separated column); a CSV saved in a
    continental locale (``label;score`` and ``1;0,93``) is sniffed from its header and rows: the
    statistics equal those of the comma-separated file of the same rows."""
    import gzip

    _, full = binary_dir
    score = full["score"].cast(pa.float64()).to_numpy()
    lines = [sep.join(["label", "score", "weight"])] + [
        sep.join([str(int(y)), repr(float(s)).replace(".", decimal), repr(float(w)).replace(".", decimal)])
        for y, s, w in zip(full["label"].to_numpy(), score, full["weight"].to_numpy())]
    text = "\n".join(lines) + "\n"
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    got = scan_stats(path, "binary", Columns(weight="weight"), batch_rows=1000, use_prediction=False)
    expected = mc.binary_report(full["label"].to_numpy(), score, sample_weight=full["weight"].to_numpy())
    assert_same_metrics(mc.binary_from_stats(got).metrics, expected.metrics)


def test_progress_reports_rows_done_and_total(binary_dir):
    root, _ = binary_dir
    calls = []
    scan_stats(root, "binary", batch_rows=1000, progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (6700, 6700)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_iter_batches_bounds_batch_size_and_names_files(binary_dir):
    root, _ = binary_dir
    seen = [(path, b.num_rows) for path, b in iter_batches(root, ["label", "score"], batch_rows=1000)]
    assert max(n for _, n in seen) <= 1000
    assert sum(n for _, n in seen) == 6700
    assert {p.split("period=")[1][:7] for p, _ in seen} == {"2026-01", "2026-03", "2026-04"}  # empty file: none


# ------------------------------------------------------------------------------------------------
# Bad input: the error names the file, the column, the count and an example row
# ------------------------------------------------------------------------------------------------

def _bad_dir(tmp_path, rng, bad_table):
    good = _binary_table(rng, 500)
    pq.write_table(good, tmp_path / "a-good.parquet")
    pq.write_table(bad_table, tmp_path / "b-bad.parquet")
    return tmp_path


def test_nan_score_names_file_count_and_example_row(tmp_path):
    rng = np.random.default_rng(1)
    bad = _binary_table(rng, 300)
    score = bad["score"].to_numpy().copy()
    score[[17, 140, 141]] = np.nan
    bad = bad.set_column(bad.schema.get_field_index("score"), "score", pa.array(score))
    root = _bad_dir(tmp_path, rng, bad)
    # The count covers the whole file, not the failing batch (rows 0-99); on 3 threads the batch
    # statistics after the bad one may already be computed, and the first bad batch is still the one named.
    for batch_rows, threads in ((100, 1), (1000, 1), (100, 3)):
        with pytest.raises(mc.InputError) as err:
            scan_stats(root, "binary", batch_rows=batch_rows, use_prediction=False, threads=threads)
        msg = str(err.value)
        assert "b-bad.parquet" in msg and "'score'" in msg and "NaN" in msg
        assert "in 3 row(s) of the file, e.g. row 17: " in msg and "score=nan" in msg


def test_nan_in_one_class_score_column_is_caught_by_the_first_pass(tmp_path):
    rng = np.random.default_rng(3)
    pq.write_table(_multiclass_table(rng, 400), tmp_path / "a-good.parquet")
    bad = _multiclass_table(rng, 300)
    score = bad["score_c"].to_numpy().copy()
    score[[5, 250]] = np.nan
    bad = bad.set_column(bad.schema.get_field_index("score_c"), "score_c", pa.array(score))
    pq.write_table(bad, tmp_path / "b-bad.parquet")
    with pytest.raises(mc.InputError) as err:
        scan_stats(tmp_path, "multiclass", by_class=True)
    msg = str(err.value)
    assert "b-bad.parquet" in msg and "'score_c'" in msg and "2 row(s)" in msg and "row 5" in msg


@pytest.mark.parametrize("column,value,problem", [
    ("label", None, "null label"),
    ("weight", -1.0, "negative, NaN or infinite weight"),
    ("score", float("inf"), "infinite score"),
])
def test_bad_values_name_file_column_and_row(tmp_path, column, value, problem):
    rng = np.random.default_rng(2)
    bad = _binary_table(rng, 200)
    values = bad[column].to_pylist()
    values[123] = value
    bad = bad.set_column(bad.schema.get_field_index(column), column, pa.array(values, type=bad[column].type))
    root = _bad_dir(tmp_path, rng, bad)
    with pytest.raises(mc.InputError) as err:
        scan_stats(root, "binary", Columns(weight="weight"), use_prediction=False)
    msg = str(err.value)
    assert "b-bad.parquet" in msg and repr(column) in msg and problem in msg and "row 123" in msg


def test_label_outside_the_class_list(multiclass_dir):
    root, _ = multiclass_dir
    with pytest.raises(mc.InputError) as err:
        scan_stats(root, "multiclass", labels=["a", "b", "c", "d"][:3] + ["e"])
    assert "missing per-class score column" in str(err.value) and "score_e" in str(err.value)
    batch = pa.record_batch({"label": ["a", "z", "b", "z"]})
    with pytest.raises(mc.InputError, match=r"f\.parquet: column 'label': label not in the class list .* 2 row"):
        check_batch(batch, "f.parquet", label="label", labels=["a", "b"])


def test_more_than_two_classes_for_binary(tmp_path):
    for i, labels in enumerate([[0, 1], [1, 2]]):
        pq.write_table(pa.table({"label": labels * 10, "score": np.linspace(0, 1, 20)}), tmp_path / f"f{i}.parquet")
    with pytest.raises(mc.InputError, match=r"f1\.parquet: column 'label': a binary evaluation needs at most two "
                                            r"classes, found 3: \[0, 1, 2\]\. .* In rows 0-19 of the file: 1 in 10 "
                                            r"row\(s\) of column 'label' \(first: row 0\); 2 in 10 \(first: row 1\)\."):
        scan_stats(tmp_path, "binary")


@pytest.mark.parametrize("weight", [None, "weight"])
def test_a_third_class_inside_a_batch_is_named_by_column_count_and_first_row(tmp_path, weight):
    labels = np.array([0, 1] * 20, dtype=object)
    labels[[27, 33]] = 2  # two rows of a third class
    labels[5] = "maybe"  # on a row of weight 0, which is no row: its class is not counted (nor an error)
    weights = np.ones(40)
    weights[5] = 0.0
    table = pa.table({"label": labels.astype(str), "score": np.linspace(0, 1, 40), "weight": weights})
    pq.write_table(table, tmp_path / "f.parquet")
    columns = Columns(weight=weight)
    expected = (r"f\.parquet: column 'label': a binary evaluation needs at most two classes, found 3: \['0', '1', '2'\]"
                r"\. .* In rows 0-39 of the file: '0' in 20 row\(s\) of column 'label' \(first: row 0\); '1' in 17 "
                r"\(first: row 1\); '2' in 2 \(first: row 27\)\.")
    if weight is None:  # then the row of weight 0 is a row, and its class a fourth one
        expected = r"found 4: \['0', '1', '2', 'maybe'\].* 'maybe' in 1 \(first: row 5\)\."
    with pytest.raises(mc.InputError, match=expected):
        scan_stats(tmp_path, "binary", columns, pos_label="1", batch_rows=100)


def test_dataset_class_rows_counts_every_file_by_column_without_missing_or_weightless_rows(tmp_path):
    """The second pass behind a class-list error: rows of positive weight, by value and column,
    across files and batches, with the first row in its file; a missing label is not a class."""
    (tmp_path / "p").mkdir()
    pq.write_table(pa.table({"label": [0, None, 1, 0], "prediction": [0, 1, 1, 3],
                             "weight": [1.0, 1.0, 1.0, 1.0]}), tmp_path / "p" / "a.parquet")
    pq.write_table(pa.table({"label": [1, 2, 4, 2, 0], "prediction": [1, 0, 1, 1, 5],
                             "weight": [1.0, 2.0, 0.0, 1.0, None]}), tmp_path / "p" / "b.parquet")
    found = dataset_class_rows(tmp_path / "p", Columns(weight="weight"), batch_rows=2)
    # label 4 has weight 0 (no row); a null weight counts (as in a scan); prediction 3 and 5 are not labels
    assert found == ("0 in 3 row(s) of column 'label' (first: row 0 of a.parquet); 1 in 2 (first: row 2 of "
                     "a.parquet); 2 in 2 (first: row 1 of b.parquet); 3 in 1 row(s) of column 'prediction' "
                     "(first: row 3 of a.parquet); 5 in 1 (first: row 4 of b.parquet)")
    without_weight = dataset_class_rows(tmp_path / "p", Columns(prediction="none"))
    assert without_weight.endswith("; 4 in 1 (first: row 2 of b.parquet)") and "prediction" not in without_weight


def test_a_positive_class_missing_from_two_classes_is_named_by_file_and_column(tmp_path):
    pq.write_table(pa.table({"label": ["no", "yes"] * 5, "score": np.linspace(0, 1, 10)}), tmp_path / "f.parquet")
    with pytest.raises(mc.InputError, match=r"f\.parquet: column 'label': pos_label=1 is not one of the labels "
                                            r"\['no', 'yes'\]\. Pass pos_label="):
        scan_stats(tmp_path, "binary")


def test_missing_column_lists_the_columns(binary_dir):
    root, _ = binary_dir
    with pytest.raises(mc.InputError) as err:
        scan_stats(root, "binary", Columns(label="target"))
    assert "'target'" in str(err.value) and "'label'" in str(err.value) and "'score'" in str(err.value)


def test_missing_or_unknown_path(tmp_path):
    with pytest.raises(mc.InputError, match="no such file or directory"):
        open_dataset(tmp_path / "nope.parquet")
    (tmp_path / "x.txt").write_text("hello")
    with pytest.raises(mc.InputError, match="cannot tell the file format"):
        open_dataset(tmp_path / "x.txt")
    (tmp_path / "broken.parquet").write_text("not parquet")
    with pytest.raises(mc.InputError, match="broken.parquet"):
        scan_stats(tmp_path / "broken.parquet", "binary")


def test_schema_change_between_periods(binary_dir, tmp_path):
    root, full = binary_dir
    assert schema_changes(schema_of(root), schema_of(root)) == []
    changed = full.drop_columns(["score"]).append_column("score", full["score"].cast(pa.float64()))
    pq.write_table(changed, tmp_path / "next.parquet")
    changes = schema_changes(schema_of(root), schema_of(tmp_path / "next.parquet"))
    assert "column 'score' changed type: float -> double" in changes
    assert "column 'period' is missing (was string)" in changes


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_confusion_only_equals_the_full_confusion(binary_dir, multiclass_dir, task):
    root, _ = binary_dir if task == "binary" else multiclass_dir
    columns = Columns(weight="weight")
    full = scan_stats(root, task, columns, use_prediction=False, batch_rows=900)
    fast = scan_stats(root, task, columns, use_prediction=False, batch_rows=900, confusion_only=True)
    assert fast.scores is None
    assert np.array_equal(fast.confusion.matrix, full.confusion.matrix)
    assert fast.confusion.labels.tolist() == full.confusion.labels.tolist()


def test_confusion_only_still_rejects_nan_scores(tmp_path):
    t = pa.table({"label": np.array([0, 1, 1], np.int8), "score": np.array([0.2, np.nan, 0.9], np.float32)})
    pq.write_table(t, tmp_path / "f.parquet")
    with pytest.raises(mc.InputError, match=r"f\.parquet: column 'score': NaN score .* 1 row\(s\).*row 1"):
        scan_stats(tmp_path, "binary", confusion_only=True)


def test_directory_ignores_non_data_files(tmp_path):
    t = pa.table({"label": np.array([0, 1, 1, 0], np.int8), "score": np.array([0.1, 0.8, 0.6, 0.3], np.float32)})
    (tmp_path / "period=2026-05").mkdir()
    pq.write_table(t, tmp_path / "period=2026-05" / "part.parquet")
    (tmp_path / "README.txt").write_text("notes")
    (tmp_path / "_SUCCESS").write_text("")
    stats = scan_stats(tmp_path, "binary")
    assert stats.n_rows == 4 and "period" in schema_of(tmp_path).names
    feather.write_feather(t, tmp_path / "other.arrow")
    with pytest.raises(mc.InputError, match="mixes file formats"):
        open_dataset(tmp_path)


def _as_decimals(table: pa.Table, columns, digits: int = 4) -> tuple[pa.Table, pa.Table]:
    """The table with ``columns`` rounded to ``digits`` decimals, once as float64 and once as DECIMAL."""
    floats, decimals = table, table
    for c in columns:
        rounded = pa.array(np.round(table[c].to_numpy().astype(np.float64), digits))
        i = table.schema.get_field_index(c)
        floats = floats.set_column(i, c, rounded)
        decimals = decimals.set_column(i, c, pc.cast(pc.cast(rounded, pa.string()), pa.decimal128(12, digits)))
    return floats, decimals


@pytest.mark.parametrize("task, by_class", [("binary", None), ("multiclass", False), ("multiclass", True)])
def test_decimal_columns_read_as_the_float_column_of_the_same_numbers(binary_dir, multiclass_dir, tmp_path, task,
                                                                      by_class):
    """Scores and weights exported from a database as DECIMAL: the statistics equal those of a float64
    file holding the same numbers, exactly (Arrow's own decimal cast would be an ulp off: 0.1989 ->
    0.19890000000000002)."""
    _, full = binary_dir if task == "binary" else multiclass_dir
    scores = ["score"] if task == "binary" else [f"score_{c}" for c in CLASSES]
    floats, decimals = _as_decimals(full, [*scores, "weight"])
    assert pa.types.is_decimal(decimals.schema.field("weight").type)
    pq.write_table(floats, tmp_path / "floats.parquet", row_group_size=700)
    pq.write_table(decimals, tmp_path / "decimals.parquet", row_group_size=700)
    a, b = (scan_stats(tmp_path / f"{name}.parquet", task, Columns(weight="weight"), batch_rows=900,
                       use_prediction=False, by_class=by_class) for name in ("floats", "decimals"))
    report = mc.binary_from_stats if task == "binary" else mc.multiclass_from_stats
    assert_same_metrics(report(b, n_boot=0).metrics, report(a, n_boot=0).metrics)
    for x, y in zip([a.scores] if task == "binary" else a.scores, [b.scores] if task == "binary" else b.scores):
        assert_same_counts(x, y)


@pytest.mark.parametrize("make", [lambda v: pa.array(v, pa.decimal128(10, 4)),
                                  lambda v: pa.chunked_array([v[:3], v[3:]], pa.decimal128(10, 4)),
                                  lambda v: __import__("polars").Series(v, dtype=__import__("polars").Decimal(10, 4))])
def test_decimal_scores_in_memory_are_their_nearest_doubles(make):
    import decimal

    values = [decimal.Decimal(t) for t in ("0.1989", "0.7000", "0.0069", "0.3773", "0.9100", "0.5001")]
    y = np.array([0, 1, 0, 0, 1, 1])
    got = mc.binary_report(y, make(values), n_boot=0)
    expected = mc.binary_report(y, np.array([float(v) for v in values]), n_boot=0)
    assert_same_metrics(got.metrics, expected.metrics)
    assert got.stats.scores.scores.tolist() == sorted(float(v) for v in values)


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_zero_weight_rows_streamed_equal_absent_rows(tmp_path, task):
    y, s = multiclass_scores(n=120, seed=4)
    w = np.random.default_rng(5).integers(0, 3, 120).astype(float)
    if task == "binary":
        y = np.where(y == 1, "yes", "no")
        y[w == 0] = "maybe"  # a third class on zero-weight rows only
        frame = {"label": y, "score": s[:, 1], "w": w}
    else:
        s[w == 0] = [1.5, -0.25, -0.25]  # not probabilities (though summing to 1), on zero-weight rows only
        frame = {"label": y, **{f"score_{j}": s[:, j] for j in range(3)}, "w": w}
    pl.DataFrame(frame).write_parquet(tmp_path / "all.parquet")
    pl.DataFrame(frame).filter(pl.col("w") > 0).write_parquet(tmp_path / "kept.parquet")
    kw = dict(pos_label="yes") if task == "binary" else {}
    to_report = mc.binary_from_stats if task == "binary" else mc.multiclass_from_stats
    got = to_report(scan_stats(tmp_path / "all.parquet", task, Columns(weight="w"), batch_rows=50, **kw), n_boot=200)
    expected = to_report(scan_stats(tmp_path / "kept.parquet", task, Columns(weight="w"), batch_rows=50, **kw),
                         n_boot=200)
    assert got.metrics == pytest.approx(expected.metrics, rel=1e-12, nan_ok=True)
    assert got.intervals.keys() == expected.intervals.keys()
    for key, interval in expected.intervals.items():
        np.testing.assert_allclose(got.intervals[key], interval, rtol=1e-9, err_msg=key)
    if task == "multiclass":
        assert np.isfinite(got.metrics["log_loss"])
