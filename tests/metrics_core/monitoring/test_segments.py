"""metrics_core.monitoring.segments: per-segment statistics equal a scan of the segment's rows, segment tests are
corrected with the period's, name their segment, and a small or new segment is noted once, not tested."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from monitoring_data import LABELS, _frame

from metrics_core import monitoring as mon
from metrics_core.errors import InputError
from metrics_core.monitoring.segments import MIN_SEGMENT_ROWS, MISSING

SCORES = [f"score_{c}" for c in LABELS]
COLUMNS = dict(label="label", prediction="prediction", scores=SCORES, price="price")


def _table(n: int, seed: int, n_seg: int = 6) -> pa.Table:
    frame, _ = _frame(n, seed)
    rng = np.random.default_rng(seed + 77)
    shops = np.array([f"shop_{i}" for i in range(n_seg)], dtype=object)[rng.integers(0, n_seg, n)]
    shops[rng.random(n) < 0.01] = None
    return frame.with_columns(retailer=pl.Series(shops, dtype=pl.String)).to_arrow()


def _assert_same(a: mon.PeriodStats, b: mon.PeriodStats) -> None:
    assert a.n_rows == b.n_rows
    for name in ("pred_counts", "label_counts", "score_counts", "price_counts", "price_cells", "score_by_pred",
                 "positives_by_pred"):
        assert type(getattr(a, name)) is np.ndarray and np.array_equal(getattr(a, name), getattr(b, name)), name
    np.testing.assert_array_equal(a.performance.confusion.matrix, b.performance.confusion.matrix)


@pytest.mark.parametrize("batch_rows", [1_111, 10_000])
def test_each_segment_equals_a_scan_of_its_rows_in_batches_and_files(tmp_path, batch_rows):
    """One pass in small batches (or one batch a file) over two files: every segment's statistics equal a
    separate scan of the rows of its value (nulls: the '(missing)' segment), in dense arrays (a batch's are
    sparse), and the whole period is unchanged by watching segments."""
    table = _table(6_000, 1)
    for i, part in enumerate((table.slice(0, 2_500), table.slice(2_500))):
        pq.write_table(part, tmp_path / f"part{i}.parquet")
    stats = mon.scan_period(tmp_path, "multiclass", LABELS, **COLUMNS, segments=["retailer"], batch_rows=batch_rows)
    _assert_same(stats, mon.scan_period(table, "multiclass", LABELS, **COLUMNS))
    values = table.column("retailer").to_pylist()
    assert set(stats.segments) == {("retailer", v or MISSING) for v in values}
    for (_, value), seg in stats.segments.items():
        keep = pa.array([(v or MISSING) == value for v in values])
        _assert_same(seg, mon.scan_period(table.filter(keep), "multiclass", LABELS, **COLUMNS))
    assert sum(s.n_rows for s in stats.segments.values()) == stats.n_rows


def test_rows_sorted_by_segment_give_batches_of_one_segment_and_the_same_statistics(tmp_path):
    """Batches holding one segment each (rows sorted by it): the running total, which the scan adds
    to in place, never shares an array with a segment's statistics (a batch's whole period is then
    that one segment's), so neither counts another's rows."""
    table = _table(2_000, 3, n_seg=2).sort_by("retailer")
    pq.write_table(table, tmp_path / "sorted.parquet")
    stats = mon.scan_period(tmp_path / "sorted.parquet", "multiclass", LABELS, **COLUMNS, segments=["retailer"],
                            batch_rows=400)
    _assert_same(stats, mon.scan_period(table, "multiclass", LABELS, **COLUMNS))
    np.testing.assert_array_equal(stats.price_counts, stats.price_cells.sum(axis=0))  # counted apart, same sums
    values = table.column("retailer").to_pylist()
    for (_, value), seg in stats.segments.items():
        _assert_same(seg, mon.scan_period(table.filter(pa.array([(v or MISSING) == value for v in values])),
                                          "multiclass", LABELS, **COLUMNS))


def test_a_missing_segment_column_is_an_error_naming_it():
    """It names the column, its near miss and where segments are set (columns.segments), and no
    column-map role that does not exist (Columns(segment=...), columns.segment)."""
    with pytest.raises(InputError, match="retailr") as err:
        mon.scan_period(_table(500, 2), "multiclass", LABELS, **COLUMNS, segments=["retailr"])
    text = str(err.value)
    assert "'retailr' (segment)" in text and "near miss of 'retailr'" in text and "columns.segments" in text
    assert "Columns(segment" not in text and "columns.segment " not in text and "segment role" not in text


def _period(n: int, seed: int, n_seg: int = 50, shifted: int | None = None, rise: float = 0.0,
            weights=None, labels: bool = True) -> mon.PeriodStats:
    """A 4-class period of labels and predictions (85 % right) in ``n_seg`` retailers; in retailer
    ``shifted`` class c3's prevalence rises by ``rise`` (the others scaled down)."""
    prior = np.array([0.4, 0.3, 0.2, 0.1])
    rng = np.random.default_rng(seed)
    seg = rng.choice(n_seg, size=n, p=weights)
    priors = np.tile(prior, (n_seg, 1))
    if shifted is not None:
        priors[shifted] = prior * (1 - prior[3] - rise) / (1 - prior[3])
        priors[shifted, 3] = prior[3] + rise
    y = (rng.random(n)[:, None] > priors.cumsum(axis=1)[seg]).sum(axis=1)
    pred = np.where(rng.random(n) < 0.85, y, rng.integers(0, 4, n))
    labels4, bins = np.array(["c0", "c1", "c2", "c3"]), mon.Bins(score_bins=10)
    lab = y if labels else None
    whole = mon.update("multiclass", labels4, bins, pred, label_idx=lab)
    segs = {("retailer", f"shop_{s:02d}"): mon.update("multiclass", labels4, bins, pred[seg == s],
                                                      label_idx=None if lab is None else lab[seg == s])
            for s in range(n_seg)}
    return dataclasses.replace(whole, segments=segs)


SMALL_SHOP = np.r_[np.full(7, 0.95 / 49), 0.05, np.full(42, 0.95 / 49)]  # shop_07: 5 % of the rows


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_prevalence_rise_within_one_retailer_alerts_and_names_it(seed):
    """+20 points of one class in a retailer of 5 % of the rows (+1 point overall, under the 2-point
    threshold): the whole-period test does not alert, the retailer's does, and the reason names it."""
    ref = _period(200_000, 100 + seed, weights=SMALL_SHOP)
    cur = _period(100_000, seed, weights=SMALL_SHOP, shifted=7, rise=0.20)
    a = mon.assess_stats(ref, cur, None, report_options={"n_boot": 0})
    assert a.alert and all(r.key.segment for r in a.reasons)  # the whole period's tests do not alert
    assert a.reasons[0].text.startswith("retailer=shop_07: prevalence of 'c3' (labels) rose")
    # false discoveries are kept to a share of the discoveries (the default correction controls the FDR)
    named = [r.key.segment_text for r in a.reasons]
    assert named.count("retailer=shop_07") >= 0.8 * len(named)
    table = a.tables["segments.json"]
    assert table.row(0, named=True)["segment"] == "retailer=shop_07" and table["alert"].sum() >= 2
    assert a.metrics["segments/tested"] == 50 and a.metrics["segments/alerting"] == len(set(named))
    assert a.metrics["segments/prevalence_label_worst_effect"] == pytest.approx(0.20, abs=0.03)
    # corrected together: the segment's p-value is adjusted over every test of the period, whole and per segment
    row = a.decision.table.filter(pl.col("name") == "prevalence_label:c3@retailer=shop_07").row(0, named=True)
    assert a.decision.table.height > 50 * 9 and row["p_adjusted"] > row["p_value"]
    # and only the whole period's tests are logged one by one
    assert not [k for k in a.metrics if "@" in k]


def test_twelve_stable_months_with_fifty_segments_raise_at_most_one_false_alarm():
    """Stable months (predictions only, about 570 tests a month, corrected together): at most one alerts."""
    ref = _period(200_000, 0, labels=False)
    alerts = [mon.assess_stats(ref, _period(100_000, 1000 + m, labels=False)).alert for m in range(12)]
    assert sum(alerts) <= 1


def test_a_new_or_small_segment_is_noted_once_and_not_tested():
    ref = _period(20_000, 5, n_seg=5)
    cur = _period(20_000, 6, n_seg=5)
    ref = dataclasses.replace(ref, segments={k: v for k, v in ref.segments.items() if k[1] != "shop_04"})
    tiny = _period(MIN_SEGMENT_ROWS - 1, 7, n_seg=1)
    cur = dataclasses.replace(cur, segments={**cur.segments, ("retailer", "tiny"): tiny,
                                             ("channel", "web"): cur.segments[("retailer", "shop_00")]})
    ref = dataclasses.replace(ref, segments={**ref.segments, ("retailer", "tiny"): tiny})
    a = mon.assess_stats(ref, cur, None, report_options={"n_boot": 0})
    notes = a.decision.notes
    absent = [n for n in notes if "absent from the reference" in n]
    assert len(absent) == 1 and "retailer=shop_04" in absent[0] and "channel=web" in absent[0]
    assert sum("retailer=tiny" in n for n in notes) == 1
    tested = {s for s in a.tables["segments.json"]["segment"]}
    assert tested == {f"retailer=shop_0{i}" for i in range(4)} and a.metrics["segments/tested"] == 4


def test_a_reference_segments_headline_is_remembered_with_its_own_values():
    """The reference segments' headline values and intervals are remembered by content: a second period
    against the same reference reads them, with the values a fresh report gives; other options, another key."""
    from metrics_core.intervals import report_intervals
    from metrics_core.monitoring import assess

    assess._REFERENCE_HEADLINES.clear()
    ref, cur = _period(20_000, 5, n_seg=4), _period(10_000, 6, n_seg=4, shifted=1, rise=0.1)
    first = mon.assess_stats(ref, cur, None, report_options={"n_boot": 50})
    again = mon.assess_stats(ref, cur, None, report_options={"n_boot": 50})
    assert len(assess._REFERENCE_HEADLINES) == 4 and again.decision.table.equals(first.decision.table)
    seg, opts, m = ref.segments[("retailer", "shop_01")], {"level": 0.95, "n_boot": 50}, "balanced_accuracy"
    fresh = assess._report(seg, opts)
    assert assess._reference_headline(seg, m, opts) == (fresh.metrics[m], report_intervals(fresh, (m,))[m])
    assess._reference_headline(seg, m, {**opts, "seed": 1})
    assert len(assess._REFERENCE_HEADLINES) == 5


def test_assess_period_with_segments_on_tables():
    ref, cur = (_table(n, seed).select(["label", "prediction", "retailer"]) for n, seed in ((6_000, 3), (3_000, 4)))
    a = mon.assess_period(ref, cur, segments=["retailer"], report_options={"n_boot": 0})
    plain = mon.assess_period(ref, cur, report_options={"n_boot": 0})
    assert a.metrics["segments/tested"] == 6  # the '(missing)' segment is under MIN_SEGMENT_ROWS
    assert any("retailer=(missing)" in n for n in a.decision.notes)
    whole = a.decision.table.filter(~pl.col("name").str.contains("@"))
    assert whole["name"].to_list() == plain.decision.table["name"].to_list()
    assert (whole["p_adjusted"] >= plain.decision.table["p_adjusted"] - 1e-12).all()  # more tests, no laxer


def test_merging_many_segments_equals_merging_them_one_by_one():
    """merge_segments sums the histograms in place: bit for bit the pairwise merges' values (weighted
    rows too), and a part without prices is the merge's error."""
    import functools

    from metrics_core.monitoring.segments import merge_segments

    frame, _ = _frame(3_000, 4)
    rng = np.random.default_rng(4)
    t = frame.with_columns(weight=pl.Series(rng.random(3_000) * 3)).to_arrow()
    parts = [mon.scan_period(t.slice(i, 500), "multiclass", LABELS, **COLUMNS, weight="weight")
             for i in range(0, 3_000, 500)]
    one_by_one, at_once = functools.reduce(mon.PeriodStats.merge, parts), merge_segments(parts)
    _assert_same(at_once, one_by_one)
    assert at_once.price_counts.sum() > 0 and np.array_equal(at_once.weight_by_pred, one_by_one.weight_by_pred)
    with pytest.raises(InputError):
        merge_segments([*parts, dataclasses.replace(parts[0], price_counts=None)])


def test_the_segments_tests_run_together_equal_each_segments_own_tests():
    from metrics_core.monitoring.kinds import run_tests, run_tests_of

    ref, cur = _period(40_000, 5, n_seg=4), _period(20_000, 6, n_seg=4, shifted=1, rise=0.1)
    pairs = [(ref.segments[k], cur.segments[k]) for k in sorted(ref.segments)]
    together = run_tests_of(pairs)
    alone = [run_tests(r, c) for r, c in pairs]
    assert [list(t) for t in together] == [list(t) for t in alone] and len(together[0]) > 5
    assert all(str(a[k]) == str(b[k]) for a, b in zip(together, alone) for k in a)
