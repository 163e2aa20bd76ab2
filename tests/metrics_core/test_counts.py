"""Mergeable statistics: merge of parts == one pass.

Hypothesis splits the rows into arbitrary partitions and merges their statistics in an arbitrary
order (a permuted left fold and a balanced tree). Counts are compared for identity: unweighted counts
are int64 and weights are dyadic (multiples of 1/4), so every sum is exact in float64 whatever the
order; arbitrary float weights are compared to 1e-12. Reports from merged statistics
(mc.binary_from_stats / mc.multiclass_from_stats) equal the report on all rows.
"""

from __future__ import annotations

import warnings
from functools import reduce

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm
from test_common import close
from test_undefined import record_undefined

import metrics_core as mc
from metrics_core.counts import fold_negative_runs
from metrics_core.curves import ranking_areas, roc_curve
from metrics_core.multilabel import multilabel_from_stats, multilabel_stats
from metrics_core.undefined import UndefinedMetricWarning

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SCORES = [-7.5, -1.0, -0.25, -0.0, 0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 3.0]


@st.composite
def rows(draw, min_size: int = 1, max_size: int = 40, signed: bool = True, weights: str | None = None):
    """(y01, scores, weights or None, partition id per row, merge order seed)."""
    n = draw(st.integers(min_size, max_size))
    y = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    pool = SCORES if signed else [s for s in SCORES if 0 <= s <= 1]
    if draw(st.booleans()):
        pool = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True))  # heavy ties
    s = np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)), dtype=float)
    kind = weights or draw(st.sampled_from(["none", "dyadic", "float"]))
    w = None
    if kind == "dyadic":
        w = np.array(draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))) / 4.0
    elif kind == "float":
        w = np.array(draw(st.lists(st.floats(0.01, 10, allow_subnormal=False), min_size=n, max_size=n)))
    parts = draw(st.integers(1, 6))
    part = np.array(draw(st.lists(st.integers(0, parts - 1), min_size=n, max_size=n)))
    return y, s, w, part, draw(st.integers(0, 2**32 - 1)), kind


def _split(part: np.ndarray, *arrays):
    """Non-empty partitions of the given arrays (None stays None)."""
    out = []
    for p in np.unique(part):
        sel = part == p
        out.append(tuple(None if a is None else a[sel] for a in arrays))
    return out


def _merge_all(stats: list, seed: int, how: str):
    order = np.random.default_rng(seed).permutation(len(stats))
    items = [stats[i] for i in order]
    if how == "fold":
        return reduce(lambda a, b: a.merge(b), items)
    while len(items) > 1:  # balanced tree, as a Dask reduction would
        items = [items[i].merge(items[i + 1]) if i + 1 < len(items) else items[i] for i in range(0, len(items), 2)]
    return items[0]


def _assert_same_counts(got, want, exact: bool, fields=("scores", "pos", "neg")):
    for name in fields:
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype, name
        if exact:
            np.testing.assert_array_equal(a, b, err_msg=name)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=0, err_msg=name)


def _areas(sc: mc.ScoreCounts, n_rows: int) -> dict:
    """auroc / average_precision / auprc_trapezoid of a ScoreCounts through the public compute step."""
    conf = mc.ConfusionCounts(np.zeros((2, 2), dtype=sc.pos.dtype), np.array([0, 1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m = mc.binary_from_stats(mc.BinaryStats(conf, sc, n_rows)).metrics
    return {k: m[k] for k in ("auroc", "average_precision", "auprc_trapezoid")}


@pytest.mark.parametrize("how", ["fold", "tree"])
@given(data=rows())
@SETTINGS
def test_score_counts_merge_equals_one_pass(how, data):
    y, s, w, part, seed, kind = data
    whole = mc.ScoreCounts.from_arrays(y, s, w)
    merged = _merge_all([mc.ScoreCounts.from_arrays(*p) for p in _split(part, y, s, w)], seed, how)
    _assert_same_counts(merged, whole, exact=kind != "float")
    assert np.all(np.diff(merged.scores) > 0), "distinct ascending scores"
    a, b = _areas(merged, len(y)), _areas(whole, len(y))
    for key in a:
        assert close(a[key], b[key], rtol=0, atol=1e-12), (key, a[key], b[key])
    # and the one-pass AUROC / AP are scikit-learn's
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk_auc = skm.roc_auc_score(y, s, sample_weight=w)
        sk_ap = skm.average_precision_score(y, s, sample_weight=w) if y.any() else np.nan
    assert close(b["auroc"], sk_auc) and close(b["average_precision"], sk_ap)


@given(data=rows(max_size=80), piece=st.integers(1, 5))
@SETTINGS
def test_merge_piece_by_piece_equals_one_piece(data, piece):
    """Large merges go by score ranges (ScoreCounts.merge ``piece``): bit for bit the one-piece merge."""
    y, s, w, part, _, _ = data
    left, right = part % 2 == 0, part % 2 == 1
    a = mc.ScoreCounts.from_arrays(y[left], s[left], None if w is None else w[left])
    b = mc.ScoreCounts.from_arrays(y[right], s[right], None if w is None else w[right])
    for x, z in ((a, b), (b, a)):
        _assert_same_counts(x.merge(z, piece=piece), x._merge_runs(z), exact=True)


@pytest.mark.parametrize("how", ["fold", "tree"])
@given(data=rows(), k=st.integers(1, 4))
@SETTINGS
def test_confusion_counts_merge_equals_one_pass(how, data, k):
    y, s, w, part, seed, kind = data
    rng = np.random.default_rng(seed)
    t = rng.integers(0, k, len(y))
    p = rng.integers(0, k, len(y))
    labels = np.arange(k)
    whole = mc.ConfusionCounts.from_indices(t, p, labels, w)
    merged = _merge_all([mc.ConfusionCounts.from_indices(a, b, labels, c) for a, b, c in _split(part, t, p, w)],
                        seed, how)
    _assert_same_counts(merged, whole, exact=kind != "float", fields=("matrix",))
    np.testing.assert_array_equal(merged.labels, labels)


def test_negative_zero_and_zero_are_one_score():
    """-0.0 and 0.0 are the same score in one pass (unweighted and weighted) and after a merge."""
    y = np.array([1, 0, 1, 0])
    s = np.array([-0.0, 0.0, 0.0, -0.0])
    for w in (None, np.array([1.0, 2.0, 0.5, 0.25])):
        one = mc.ScoreCounts.from_arrays(y, s, w)
        assert one.scores.tolist() == [0.0]
        merged = mc.ScoreCounts.from_arrays(y[:2], s[:2], None if w is None else w[:2]).merge(
            mc.ScoreCounts.from_arrays(y[2:], s[2:], None if w is None else w[2:]))
        assert merged.scores.size == 1 and merged.n_pos == one.n_pos and merged.n_neg == one.n_neg


def test_empty_partition_is_the_identity_of_merge():
    """A Dask partition or Parquet batch may have no rows: its statistic merges as a no-op."""
    y, s = np.array([1, 0, 1]), np.array([0.2, 0.4, 0.9])
    empty = mc.ScoreCounts.from_arrays(np.array([], dtype=bool), np.array([], dtype=float))
    whole = mc.ScoreCounts.from_arrays(y, s)
    _assert_same_counts(whole.merge(empty), whole, exact=True)
    _assert_same_counts(empty.merge(whole), whole, exact=True)


# --------------------------------------------------------------------------------------------------
# binned score counts
# --------------------------------------------------------------------------------------------------
@given(data=rows(signed=False, weights="none"),
       edges=st.lists(st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.6, 0.8, 0.95, 1.0]), min_size=2,
                      max_size=6, unique=True))
@SETTINGS
def test_binned_auroc_within_its_error_bound(data, edges):
    y, s, w, part, seed, _ = data
    edges = np.sort(np.array(edges))
    whole = mc.BinnedScoreCounts.from_arrays(y, s, edges)
    merged = _merge_all([mc.BinnedScoreCounts.from_arrays(a, b, edges) for a, b, _ in _split(part, y, s, w)],
                        seed, "fold")
    _assert_same_counts(merged, whole, exact=True, fields=("edges", "pos", "neg"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exact = skm.roc_auc_score(y, s)
    r, reasons = record_undefined(lambda: mc.binary_report(y.astype(int), y_score=s, bins=edges))
    bound = r.metrics["auroc_error_bound"]
    if np.isnan(bound):
        assert reasons["auroc_error_bound"].startswith("only one class present")
    assert close(bound, whole.auroc_error_bound(), rtol=0, atol=0)
    if np.isnan(exact):
        assert np.isnan(r.metrics["auroc"]) and np.isnan(bound)
    else:
        assert abs(r.metrics["auroc"] - exact) <= bound + 1e-12


@given(edges=st.one_of(
           st.integers(1, 3000).map(lambda b: np.linspace(0.0, 1.0, b + 1)),
           st.tuples(st.integers(1, 500), st.floats(-50, 50), st.floats(1e-6, 100)).map(
               lambda t: np.linspace(t[1], t[1] + t[2], t[0] + 1)),
           st.lists(st.floats(-1e6, 1e6, allow_subnormal=False), min_size=2, max_size=40, unique=True).map(
               lambda e: np.sort(np.array(e))),
           st.sampled_from([np.array([-np.inf, 0.5, np.inf]), np.array([0.0, 1e-300, 1.0]),
                            np.array([-1e308, 0.0, 1e308])])),
       seed=st.integers(0, 2**32 - 1))
@SETTINGS
def test_bin_index_is_searchsorted(edges, seed):
    """The guessed-and-checked bins are searchsorted's, for equal and unequal edges, on the edges, one ulp
    either side, and outside them."""
    from metrics_core.counts import bin_index

    rng = np.random.default_rng(seed)
    finite = edges[np.isfinite(edges)]
    on = rng.choice(finite, 200)
    u = rng.uniform(-0.1, 1.1, 300)
    s = np.concatenate(((1 - u) * finite[0] + u * finite[-1], on, np.nextafter(on, -np.inf),
                        np.nextafter(on, np.inf), [-1e308, 1e308, 0.0, -0.0]))
    s = s[np.isfinite(s)]
    want = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, edges.size - 2)
    np.testing.assert_array_equal(bin_index(edges, s), want)


@pytest.mark.parametrize("positives_high", [True, False])
def test_binned_error_bound_is_attained(positives_high):
    """All rows in one bin [0.1, 0.2): exactly AUROC 1 (or 0), binned 1/2, bound p n / (2 p n) = 1/2."""
    y = np.array([1, 1, 1, 0, 0])
    s = np.where(y == 1, 0.19, 0.11) if positives_high else np.where(y == 1, 0.11, 0.19)
    with pytest.warns(UndefinedMetricWarning, match=r"precision: no predicted positives"):  # all below 0.5
        r = mc.binary_report(y, y_score=s, bins=[0.0, 0.1, 0.2, 1.0])
    assert r.metrics["auroc"] == 0.5
    assert r.metrics["auroc_error_bound"] == 0.5
    assert abs(r.metrics["auroc"] - skm.roc_auc_score(y, s)) == r.metrics["auroc_error_bound"]


def test_binned_error_bound_is_tight_with_partial_ties():
    """Bin [0, .5) holds 2 positives and 1 negative (pairs 2), bin [.5, 1] 1 positive, 3 negatives (pairs 3):
    bound = (2*1 + 1*3) / (2 * 3 * 4) = 5/24; ordering each bin's positives above its negatives attains it."""
    y = np.array([1, 1, 0, 1, 0, 0, 0])
    s = np.array([0.4, 0.4, 0.1, 0.9, 0.6, 0.6, 0.6])
    r = mc.binary_report(y, y_score=s, bins=[0.0, 0.5, 1.0])
    assert close(r.metrics["auroc_error_bound"], 5 / 24)
    assert close(skm.roc_auc_score(y, s) - r.metrics["auroc"], 5 / 24)


@given(data=rows(signed=True),
       edges=st.lists(st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.6, 0.8, 0.95, 1.0]), min_size=2,
                      max_size=6, unique=True))
@SETTINGS
def test_binned_log_loss_and_brier_are_those_of_the_rows(data, edges):
    """Binned counts sum each row's log loss and squared error in its bin, so the binned log loss and
    Brier score are scikit-learn's on the rows for any edges, merged over any partition; a score outside
    [0, 1] makes both nan with a warning, as in the exact report."""
    y, s, w, part, seed, _ = data
    edges = np.sort(np.array(edges))
    whole = mc.BinnedScoreCounts.from_arrays(y, s, edges, w, losses=True)
    merged = _merge_all([mc.BinnedScoreCounts.from_arrays(a, b, edges, c, losses=True)
                         for a, b, c in _split(part, y, s, w)], seed, "tree")
    np.testing.assert_allclose(merged.losses, whole.losses, rtol=1e-12, atol=1e-12)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = mc.binary_from_stats(mc.binary_stats(y.astype(int), y_score=s, sample_weight=w, bins=edges)).metrics
    if s.min() < 0 or s.max() > 1:
        assert np.isnan(r["log_loss"]) and np.isnan(r["brier"])
        assert any("not probabilities: log_loss and brier are nan" in str(c.message) for c in caught)
        return
    yi = y.astype(int)
    assert close(r["log_loss"], skm.log_loss(yi, s, sample_weight=w, labels=[0, 1]), rtol=1e-12, atol=1e-12)
    assert close(r["brier"], skm.brier_score_loss(yi, s, sample_weight=w, pos_label=1), rtol=1e-12, atol=1e-12)


def test_binned_report_on_edges_at_the_distinct_scores_is_the_exact_report():
    """One bin per distinct score: the binned statistic holds what the exact one holds, so every metric
    and interval (the bootstrap of the log loss and Brier score included) is the exact report's."""
    rng = np.random.default_rng(7)
    s = rng.choice(np.linspace(0.02, 0.98, 40), 3000)
    y = (rng.random(3000) < s).astype(int)
    w = rng.integers(1, 5, 3000) / 2.0
    edges = np.append(np.unique(s), 1.0)
    exact = mc.binary_report(y, y_score=s, sample_weight=w)
    binned = mc.binary_report(y, y_score=s, sample_weight=w, bins=edges)
    assert set(binned.metrics) == set(exact.metrics) | {"auroc_error_bound"}
    for key, value in exact.metrics.items():
        assert close(binned.metrics[key], value, rtol=1e-12, atol=1e-15), key
    for key, (lo, hi) in exact.intervals.items():
        got = binned.intervals[key]
        assert close(got[0], lo, rtol=1e-9, atol=1e-12) and close(got[1], hi, rtol=1e-9, atol=1e-12), (key, got)


def test_binned_counts_merge_only_with_the_same_parts():
    a = mc.BinnedScoreCounts.from_arrays([1, 0], [0.9, 0.2], [0.0, 0.5, 1.0], losses=True)
    b = mc.BinnedScoreCounts.from_arrays([1, 0], [0.9, 0.2], [0.0, 0.5, 1.0])
    with pytest.raises(ValueError, match="with and without loss sums"):
        a.merge(b)
    conf = mc.ConfusionCounts(np.array([[1, 0], [0, 1]]), np.array([0, 1]))
    with pytest.warns(RuntimeWarning, match="carry no loss sums"), \
            pytest.warns(UndefinedMetricWarning, match="log_loss, brier: binned counts without loss sums"):
        assert np.isnan(mc.binary_from_stats(mc.BinaryStats(conf, b, 2)).metrics["log_loss"])


# --------------------------------------------------------------------------------------------------
# reports from merged statistics
# --------------------------------------------------------------------------------------------------
def _same_metrics(got: dict, want: dict):
    assert got.keys() == want.keys()
    bad = [f"{k}: {got[k]!r} vs {want[k]!r}" for k in want if not close(got[k], want[k], rtol=1e-12, atol=1e-12)]
    assert bad == []


@given(data=rows(), with_pred=st.booleans(), threshold=st.sampled_from([0.0, 0.25, 0.5, 1.0]))
@SETTINGS
def test_binary_report_from_merged_stats(data, with_pred, threshold):
    y, s, w, part, seed, _ = data
    yi = y.astype(int)
    pred = (np.random.default_rng(seed).uniform(size=len(y)) < 0.5).astype(int) if with_pred else None
    kw = dict(threshold=threshold)
    parts = [mc.binary_stats(a, y_score=b, y_pred=c, sample_weight=d, **kw)
             for a, b, c, d in _split(part, yi, s, pred, w)]
    merged, merged_reasons = record_undefined(lambda: mc.binary_from_stats(
        _merge_all(parts, seed, "fold"), beta=2.0, cost_matrix=[[0, 1], [3, 0]]))
    whole, whole_reasons = record_undefined(lambda: mc.binary_report(
        yi, y_score=s, y_pred=pred, sample_weight=w, beta=2.0, cost_matrix=[[0, 1], [3, 0]], **kw))
    _same_metrics(merged.metrics, whole.metrics)
    assert merged_reasons == whole_reasons  # the same undefined metrics, for the same reasons
    for name in whole.curves:
        for part_name in ("x", "y", "thresholds"):
            np.testing.assert_allclose(merged.curves[name][part_name], whole.curves[name][part_name], rtol=1e-12,
                                       atol=1e-12, equal_nan=True)


@given(data=rows(signed=False), k=st.integers(2, 4), with_pred=st.booleans())
@SETTINGS
def test_multiclass_report_from_merged_stats(data, k, with_pred):
    _, _, w, part, seed, _ = data
    n = len(part)
    rng = np.random.default_rng(seed)
    labels = list("pqrs"[:k])
    t = np.array(labels)[rng.integers(0, k, n)]
    raw = rng.integers(0, 3, (n, k)) + 0.5
    score = raw / raw.sum(axis=1, keepdims=True)
    pred = np.array(labels)[rng.integers(0, k, n)] if with_pred else None
    parts = [mc.multiclass_stats(a, b, y_score=c, labels=labels, sample_weight=d)
             for a, b, c, d in _split(part, t, pred, score, w)]
    merged, merged_reasons = record_undefined(lambda: mc.multiclass_from_stats(
        _merge_all(parts, seed, "tree"), beta=0.5, cost_matrix=np.eye(k)))
    whole, whole_reasons = record_undefined(lambda: mc.multiclass_report(
        t, pred, y_score=score, labels=labels, sample_weight=w, beta=0.5, cost_matrix=np.eye(k)))
    _same_metrics(merged.metrics, whole.metrics)
    assert merged_reasons == whole_reasons
    assert merged.per_class.equals(whole.per_class) or np.allclose(
        merged.per_class.drop("class").to_numpy(), whole.per_class.drop("class").to_numpy(), rtol=1e-12,
        equal_nan=True)


@given(data=rows(weights="none"), n_labels=st.integers(1, 4))
@SETTINGS
def test_multilabel_report_from_merged_stats(data, n_labels):
    _, _, _, part, seed, _ = data
    rng = np.random.default_rng(seed)
    t = (rng.uniform(size=(len(part), n_labels)) < 0.4).astype(int)
    p = (rng.uniform(size=(len(part), n_labels)) < 0.4).astype(int)
    parts = [multilabel_stats(a, b) for a, b in _split(part, t, p)]
    merged, merged_reasons = record_undefined(lambda: multilabel_from_stats(_merge_all(parts, seed, "fold")))
    whole, whole_reasons = record_undefined(lambda: mc.multilabel_report(t, p))
    _same_metrics(merged.metrics, whole.metrics)
    assert merged_reasons == whole_reasons


@pytest.mark.parametrize("labels", [(0, 1), (3, 7), ("no", "yes"), ("zz", "aa")])
def test_binary_partitions_missing_a_class_merge(labels):
    """Streaming / Dask: one partition holds only positives, another only negatives. Their statistics
    must merge (same label order) into the statistics of all rows, for any label values."""
    neg, pos = labels
    y = np.array([pos, pos, neg, neg, pos])
    s = np.array([0.9, 0.6, 0.3, 0.7, 0.2])
    parts = [mc.binary_stats(y[:2], y_score=s[:2], pos_label=pos), mc.binary_stats(y[2:4], y_score=s[2:4],
                                                                                   pos_label=pos),
             mc.binary_stats(y[4:], y_score=s[4:], pos_label=pos)]
    merged = mc.binary_from_stats(reduce(lambda a, b: a.merge(b), parts))
    _same_metrics(merged.metrics, mc.binary_report(y, y_score=s, pos_label=pos).metrics)


@given(data=rows())
@SETTINGS
def test_folding_negative_runs_keeps_auroc_ap_and_the_roc_vertices(data):
    """fold_negative_runs (the class-at-a-time scan's final step) against scikit-learn: AUROC and AP
    unchanged (AUROC identical for integer counts), every vertex of the ROC curve kept, idempotent."""
    y, s, w, _, _, kind = data
    full = mc.ScoreCounts.from_arrays(y, s, w)
    folded = fold_negative_runs(full)
    assert folded.scores.size <= 2 * int((full.pos > 0).sum()) + 1
    assert folded.n_neg == pytest.approx(full.n_neg, rel=1e-12)
    assert folded.n_pos == pytest.approx(full.n_pos, rel=1e-12)
    areas, folded_areas = ranking_areas(full.pos, full.neg), ranking_areas(folded.pos, folded.neg)
    assert close(folded_areas["average_precision"], areas["average_precision"], 1e-12)
    if kind == "none":  # integer arithmetic: the very same AUROC
        assert folded_areas["auroc"] == areas["auroc"] or np.isnan(areas["auroc"]) and np.isnan(folded_areas["auroc"])
    else:
        assert close(folded_areas["auroc"], areas["auroc"], 1e-12)
    if 0 < y.sum() < y.size:
        assert close(folded_areas["auroc"], skm.roc_auc_score(y, s, sample_weight=w), 1e-12)
    if kind != "float":  # corners of the full ROC curve (in exact counts), by the turn of each point
        fps = np.concatenate(([0], np.cumsum(full.neg[::-1])))
        tps = np.concatenate(([0], np.cumsum(full.pos[::-1])))
        turn = (fps[1:-1] - fps[:-2]) * (tps[2:] - tps[1:-1]) - (tps[1:-1] - tps[:-2]) * (fps[2:] - fps[1:-1])
        thresholds = np.concatenate(([np.inf], full.scores[::-1]))
        corners = set(thresholds[1:-1][turn != 0].tolist()) | {thresholds[-1]}
        assert corners <= set(roc_curve(folded)[2].tolist())
    again = fold_negative_runs(folded)
    assert all(np.array_equal(getattr(again, a), getattr(folded, a)) for a in ("scores", "pos", "neg"))
    with pytest.raises(mc.InputError, match="can no longer be merged"):
        folded.merge(full)
