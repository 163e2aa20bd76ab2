"""metrics_core.monitoring.scan_period: its batches go through the dataset's one batch loop and equal update(); its
errors name column, count and row; a row of weight 0 names no class; scores on the wrong scale warn."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from monitoring_data import LABELS, _binary_percent, _frame, _with_new_class, period_arrays

import metrics_core as mc
from metrics_core import monitoring as mon
from metrics_core.errors import InputError

COLUMNS = dict(label="label", prediction="prediction", weight="weight")


def _rows(n: int = 3_000, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    classes = np.array(["a", "b", "c"])
    y = rng.integers(0, 3, n)
    pred = np.where(rng.random(n) < 0.8, y, rng.integers(0, 3, n))
    s = rng.dirichlet(np.ones(3), n)
    return pa.table({"label": classes[y], "prediction": classes[pred], "weight": rng.random(n) * 10,
                     "price": np.exp(rng.normal(0, 1, n)), **{f"score_{c}": s[:, j] for j, c in enumerate(classes)}})


@pytest.mark.parametrize("in_memory", [False, True])
def test_a_row_of_weight_zero_outside_the_class_list_is_no_row(tmp_path, in_memory):
    """As in memory and in the evaluation scans: validated, then left out; it is no new class either."""
    table = pa.table({"label": ["a", "b", "x", "a"], "prediction": ["a", "b", "y", "b"],
                      "weight": [1.0, 1.0, 0.0, 2.0]})
    path = tmp_path / "ref.parquet"
    pq.write_table(table, path)
    source = table if in_memory else path
    for open_classes in (False, True):
        stats = mon.scan_period(source, "multiclass", ["a", "b"], **COLUMNS, open_classes=open_classes)
        assert stats.n_rows == 3 and stats.label_counts.tolist() == [2, 1] and stats.new_classes == {}
    # a row of weight 0 inside the class list is still a monitored row (weight is expenditure here)
    kept = mon.scan_period(source, "multiclass", ["a", "b", "x", "y"], **COLUMNS)
    assert kept.n_rows == 4
    positive = table.set_column(2, "weight", pa.array([1.0, 1.0, 0.5, 2.0]))
    pq.write_table(positive, path)
    with pytest.raises(InputError, match=r"column 'label': label not in the class list \['a', 'b'\] in 1 row"):
        mon.scan_period(positive if in_memory else path, "multiclass", ["a", "b"], **COLUMNS)


def test_the_statistics_do_not_depend_on_the_threads_and_progress_counts_every_batch(tmp_path):
    path = tmp_path / "p.parquet"
    pq.write_table(_rows(), path, row_group_size=500)
    kw = dict(**COLUMNS, price="price", scores=["score_a", "score_b", "score_c"], batch_rows=400,
              bins=mon.Bins(score_bins=100, price_bins_per_decade=20))
    one = mon.scan_period(path, "multiclass", ["a", "b", "c"], threads=1, **kw)
    seen: list[int] = []
    three = mon.scan_period(path, "multiclass", ["a", "b", "c"], threads=3, progress=seen.append, **kw)
    assert repr(one) == repr(three) and one.n_rows == 3_000
    assert sum(seen) == 3_000 and len(seen) > 1 and max(seen) <= 400


@pytest.mark.parametrize("segments, batches", [((), [262_144, 262_144, 75_712]), (("retailer",), [524_288, 75_712])])
def test_a_scan_reads_larger_batches_by_default_when_it_watches_segments(tmp_path, segments, batches):
    """Each segment of a batch costs a fixed part: with segments the default batch is twice as large
    (the run spec's monitor.batch_size passes None unless set); a batch size given is kept."""
    n = 600_000
    rng = np.random.default_rng(0)
    table = pa.table({"label": np.array(["a", "b"])[rng.integers(0, 2, n)], "retailer": rng.integers(0, 3, n)})
    path = tmp_path / "p.parquet"
    pq.write_table(table.append_column("prediction", table["label"]), path)
    for batch_rows, expected in ((None, batches), (200_000, [200_000, 200_000, 200_000])):
        seen: list[int] = []
        stats = mon.scan_period(path, "binary", ["a", "b"], label="label", prediction="prediction", segments=segments,
                                batch_rows=batch_rows, progress=seen.append, threads=1)
        assert seen == expected and stats.n_rows == n


def test_a_bad_row_is_named_by_file_and_counted_over_the_file_on_threads(tmp_path):
    table = _rows(1_000)
    weight = table["weight"].to_numpy().copy()
    weight[[150, 900]] = -1.0
    pq.write_table(table.set_column(2, "weight", pa.array(weight)), tmp_path / "bad.parquet")
    with pytest.raises(InputError, match=r"bad\.parquet: column 'weight': negative, NaN or infinite weight in 2 "
                                         r"row\(s\) of the file, e\.g\. row 150"):
        mon.scan_period(tmp_path / "bad.parquet", "multiclass", ["a", "b", "c"], **COLUMNS, batch_rows=100,
                        threads=2)


# ---------------------------------------------------------------- scan_period on files
def _write(tmp_path, n=2_000, seed=0, **columns_override):
    y, pred, s, price = period_arrays(n, seed)
    frame = pl.DataFrame({"label": LABELS[y], "prediction": LABELS[pred], "price": price,
                          **{f"score_{c}": s[:, j] for j, c in enumerate(LABELS)}})
    frame = frame.with_columns(**columns_override) if columns_override else frame
    path = tmp_path / f"p{seed}.parquet"
    frame.write_parquet(path)
    return path, (y, pred, s, price)


def _scan(path, **kw):
    args = dict(label="label", prediction="prediction", scores=[f"score_{c}" for c in LABELS], price="price")
    args.update(kw)
    return mon.scan_period(path, "multiclass", LABELS, mon.Bins(), batch_rows=700, **args)


def test_scan_period_equals_update(tmp_path):
    path, (y, pred, s, price) = _write(tmp_path)
    st = _scan(path)
    direct = mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, scores=s, price=price)
    np.testing.assert_array_equal(st.score_counts, direct.score_counts)
    np.testing.assert_array_equal(st.price_cells, direct.price_cells)
    assert st.n_rows == 2_000


def test_scan_period_errors_name_column_count_and_example(tmp_path):
    path, _ = _write(tmp_path, seed=1, score_c2=pl.when(pl.int_range(pl.len()) % 500 == 7).then(float("nan"))
                     .otherwise(pl.col("score_c2")))
    # rows 7, 507, 1007 and 1507 of 2,000, read in batches of 700: the count covers the whole file
    with pytest.raises(InputError, match=r"'score_c2'.*NaN score.*in 4 row\(s\) of the file.*e\.g\. row 7"):
        _scan(path)
    path, _ = _write(tmp_path, seed=2, price=pl.when(pl.int_range(pl.len()) == 3).then(-1.0)
                     .otherwise(pl.col("price")))
    with pytest.raises(InputError, match=r"'price'.*in 1 row\(s\), e\.g\. row 3 = -1\.0"):
        _scan(path)
    with pytest.raises(InputError, match=r"missing column.*'weight'"):
        _scan(path, weight="weight")
    path, _ = _write(tmp_path, seed=3, label=pl.when(pl.int_range(pl.len()).is_in([5, 1500])).then(pl.lit("zz"))
                     .otherwise(pl.col("label")))  # two batches of 700 apart
    with pytest.raises(InputError, match=r"'label'.*not in the class list.*2 row\(s\) of the file.*row 5.*zz"):
        _scan(path)


def test_scan_period_empty_selection(tmp_path):
    import pyarrow.dataset as pads

    path, _ = _write(tmp_path, seed=4)
    with pytest.raises(InputError, match="no rows.*empty period"):
        _scan(path, filter=pads.field("label") == "nope")


def test_new_class_counts_merge_across_batches(tmp_path):
    """Files read in batches: the per-class counts add up to those of one pass over the rows."""
    cur, _ = _frame(3_000, 33)
    bad = _with_new_class(cur, [5, 800, 2999], [5, 1500], name="c_x")
    bad = _with_new_class(bad, [], [10, 2000], name="c_y")
    path = tmp_path / "new.parquet"
    bad.write_parquet(path)
    st = _scan(path, open_classes=True)
    assert st.new_classes == {"c_x": (4, 3, 2), "c_y": (2, 0, 2)} and st.n_rows == 3_000 - 6
    whole = mon.scan_period(bad.to_arrow(), "multiclass", LABELS, label="label", prediction="prediction",
                            scores=[f"score_{c}" for c in LABELS], price="price", open_classes=True)
    np.testing.assert_array_equal(st.score_counts, whole.score_counts)
    assert whole.new_classes == st.new_classes


def test_a_binary_period_predicted_by_a_probability_threshold_on_percent_scores_warns():
    """Monitoring's predicted class from threshold 0.5 on scores in percent: nearly every row is
    'positive' in both windows, so nothing alerts; the scan says so (mc.ThresholdScaleWarning)."""
    import warnings

    table, s = _binary_percent()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stats = mon.scan_period(table, "binary", [0, 1], label="label", scores=["score"], where="deliveries")
    said = [w.message for w in caught if isinstance(w.message, mc.ThresholdScaleWarning)]
    assert len(said) == 1 and said[0].share == pytest.approx((s >= 0.5).mean(), abs=0)
    assert f"deliveries: {int(((s < 0) | (s > 1)).sum()):,} of 3,000 rows have scores outside [0, 1]" in str(said[0])
    assert stats.pred_counts[1] == (s >= 0.5).sum()
    for quiet in (dict(scores=["score"], threshold=50.0), dict(scores=["score"], prediction="prediction")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mon.scan_period(table, "binary", [0, 1], label="label", **quiet)
        assert not [w for w in caught if isinstance(w.message, mc.MisreadInputWarning)], quiet
    probabilities, p = _binary_percent(scale=1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mon.scan_period(probabilities, "binary", [0, 1], label="label", scores=["score"])
    assert not [w for w in caught if isinstance(w.message, mc.MisreadInputWarning)]
    # The other way round: a percentage threshold on probabilities predicts every row negative.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stats = mon.scan_period(probabilities, "binary", [0, 1], label="label", scores=["score"], threshold=70.0,
                                where="deliveries")
    said = [w.message for w in caught if isinstance(w.message, mc.ThresholdScaleWarning)]
    assert len(said) == 1 and said[0].share == 0.0 and stats.pred_counts[1] == 0 == (p >= 70).sum()
    assert "deliveries: all 3,000 rows score in [0, 1], probabilities, but the threshold 70 is outside" in str(said[0])
    assert "use 0.7" in str(said[0])


def test_an_in_memory_period_with_decimal_scores_has_the_statistics_of_its_floats():
    """Monitoring tables read in memory follow the same decimal rule as files (contract.decimals_as_floats)."""
    import pyarrow.compute as pc

    table, s = _binary_percent(scale=1.0)
    rounded = pa.array(np.round(s, 4))
    floats = table.set_column(1, "score", rounded)
    decimals = table.set_column(1, "score", pc.cast(pc.cast(rounded, pa.string()), pa.decimal128(6, 4)))
    a, b = (mon.scan_period(t, "binary", [0, 1], label="label", scores=["score"]) for t in (floats, decimals))
    assert np.array_equal(a.score_counts, b.score_counts) and np.array_equal(a.pred_counts, b.pred_counts)
    assert a.performance.confusion.matrix.tolist() == b.performance.confusion.matrix.tolist()


def _same(a, b, where="stats", rtol=1e-12):
    """Every field, array, mapping and sequence of two statistics: counts, integers and text exactly, float
    sums (of scores, weights, prices) to rounding, 1e-12 relative (the merge tree adds them in another order;
    ``rtol=0``: to the last bit)."""
    import dataclasses

    assert type(a) is type(b), where
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}", rtol)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-300 if rtol else 0, err_msg=where)
        else:
            assert np.array_equal(a, b), where
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]", rtol)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]", rtol)
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=rtol, abs=0) or (np.isnan(a) and np.isnan(b)), where
    elif hasattr(a, "__dict__") and type(a).__eq__ is object.__eq__:
        _same(vars(a), vars(b), where, rtol)
    else:
        assert a == b, where


def test_watching_segments_leaves_the_period_statistics_of_a_scan_without_them(tmp_path, monkeypatch):
    """Up to ``MERGE_ROWS_PER_SEGMENT`` rows a segment, a batch's statistics with segments are its own
    update: the period's (weights' and calibration sums, the labelled sample's design sums) are those of a
    scan without segments to the last bit. Over it they are the merge of the segments': the same to
    rounding (the labelled sample's design sums still to the last bit: a segment holds none, and the
    batch's are its own), and the segments' own statistics the same either way."""
    from flow_data import LABELS, scored_rows

    n, rng = 3000, np.random.default_rng(7)
    rows = scored_rows(n, 4, "2024-01")
    on = rng.random(n) < 0.6
    rows = rows.with_columns(weight=pl.Series(rng.random(n) * 7),
                             design_weight=pl.Series(rng.choice([1 / 0.6, 2.7, 4 / 3], n)),
                             label=pl.when(pl.Series(on)).then(pl.col("label")).otherwise(None),
                             retailer=pl.Series(rng.choice([f"shop_{i}" for i in range(5)], n)))
    path = tmp_path / "period.parquet"
    rows.write_parquet(path, row_group_size=1_000)
    kw = dict(label="label", prediction="prediction", scores=[f"score_{c}" for c in LABELS], price="price",
              weight="weight", partial_labels=True, design_weight="design_weight", batch_rows=1_000, threads=1,
              bins=mon.Bins(score_bins=100, price_bins_per_decade=20))
    plain = mon.scan_period(path, "multiclass", LABELS, **kw)
    own = mon.scan_period(path, "multiclass", LABELS, segments=["retailer"], **kw)
    _same(dataclasses.replace(own, segments={}), plain, rtol=0)
    assert plain.weight_by_pred.sum() > 0 and plain.calibration is not None and plain.sample is not None
    monkeypatch.setattr("metrics_core.monitoring.scan.MERGE_ROWS_PER_SEGMENT", 0)
    merged = mon.scan_period(path, "multiclass", LABELS, segments=["retailer"], **kw)
    _same(dataclasses.replace(merged, segments={}), plain)
    _same(merged.sample, plain.sample, rtol=0)
    _same(merged.segments, own.segments, rtol=0)
    assert all(seg.sample is None and seg.label_counts is not None for seg in own.segments.values())


def test_a_period_scanned_by_partition_groups_and_merged_in_a_tree_is_the_one_pass(tmp_path):
    """The map and merge of a distributed monitoring scan (Dask, Spark: one ``scan_period(parts=...)`` per
    group of :func:`metrics_core.dataset.partition_groups`, merged in a tree) with segments, input features
    and a labelled sample with design weights: the local stream's statistics (counts exactly)."""
    from flow_data import LABELS, scored_rows

    from metrics_core.dataset import merge_tree, partition_groups

    n, rng = 4000, np.random.default_rng(5)
    rows = scored_rows(n, 3, "2024-01")
    pred = np.array([LABELS.index(p) for p in rows["prediction"]])
    rates = np.where(pred >= 4, 0.5, 0.125)
    on = rng.random(n) < rates
    rows = rows.with_columns(
        weight=pl.Series(rng.integers(1, 9, n) / 4), design_weight=pl.Series(1 / rates),
        label=pl.when(pl.Series(on)).then(pl.col("label")).otherwise(None),
        retailer=pl.Series(rng.choice(["shop_0", "shop_1", "shop_2"], n)),
        pack_size=pl.Series(rng.choice([0.25, 0.5, 1.0, 2.0], n) * rng.integers(1, 7, n)),
        title=pl.Series([f"brand {b} item {t}" for b, t in zip(rng.integers(0, 30, n), rng.integers(0, 200, n))]))
    path = tmp_path / "period.parquet"
    rows.write_parquet(path, row_group_size=300)
    kw = dict(label="label", prediction="prediction", scores=[f"score_{c}" for c in LABELS], price="price",
              weight="weight", partial_labels=True, design_weight="design_weight", segments=["retailer"],
              features=["pack_size", "title"], batch_rows=300, bins=mon.Bins(score_bins=100, price_bins_per_decade=20))
    whole = mon.scan_period(path, "multiclass", LABELS, threads=1, **kw)
    groups, total = partition_groups(path, tasks=5)
    assert total == n and len(groups) == 5 and [p for g in groups for p in g][0].row_groups[0] == 0
    merged = merge_tree(mon.scan_period(path, "multiclass", LABELS, threads=1, parts=g, **kw) for g in groups)
    assert merged.n_rows == n and merged.segments and merged.features is not None and merged.sample is not None
    _same(merged, whole)
