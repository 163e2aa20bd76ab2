"""The sort and area kernels (metrics_core._score_kernels, metrics_core.curves) against plain references.

The fast paths (one sort without a per-row label array, reused block buffers, plain divisions)
must give exactly the values of the straightforward computations they replaced: counts equal to
np.unique's, areas bit-identical to the earlier blocked implementation (kept below as the
reference), and AUROC / AP equal to scikit-learn's within float rounding.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as skm

import metrics_core as mc
from metrics_core import _score_kernels as kernels
from metrics_core import curves
from metrics_core.counts import ScoreCounts
from metrics_core.formulas import ratio


def _unique_counts(s, y, w=None):
    """Reference ScoreCounts: np.unique + bincount, scores as float64."""
    scores, inv = np.unique(np.asarray(s, dtype=np.float64), return_inverse=True)
    wt = np.ones(len(s)) if w is None else w
    pos = np.bincount(inv, weights=wt * y, minlength=scores.size)
    neg = np.bincount(inv, weights=wt * ~y, minlength=scores.size)
    if w is None:
        return scores, pos.astype(np.int64), neg.astype(np.int64)
    keep = pos + neg > 0
    return scores[keep], pos[keep], neg[keep]


def _reference_areas(pos, neg, block):
    """The blocked ranking_areas as it was before the buffer rewrite (1-D), for bit-identity."""
    exact = pos.dtype.kind in "iu" and neg.dtype.kind in "iu"
    auc_num = 0 if exact else np.zeros(())
    ap, trap, prev = np.zeros(()), np.zeros(()), np.ones(())
    tp0 = np.zeros((), dtype=pos.dtype if exact else np.float64)
    fp0 = np.zeros((), dtype=neg.dtype if exact else np.float64)
    for end in range(pos.size, 0, -block):
        begin = max(0, end - block)
        pos_d, neg_d = np.flip(pos[begin:end]), np.flip(neg[begin:end])
        if not exact:
            pos_d, neg_d = pos_d.astype(np.float64), neg_d.astype(np.float64)
        tps, fps = np.cumsum(pos_d) + tp0, np.cumsum(neg_d) + fp0
        if exact:
            auc_num += int(np.dot(neg_d, 2 * tps - pos_d))
        else:
            auc_num = auc_num + (neg_d * (2 * tps - pos_d)).sum()
        predicted = (tps + fps).astype(np.float64)
        precision = np.divide(tps, predicted, out=np.zeros(predicted.shape), where=predicted != 0)
        pos_f = pos_d.astype(np.float64)
        ap = ap + (pos_f * precision).sum()
        trap = trap + (pos_f * (precision + np.concatenate(([prev], precision[:-1])))).sum()
        tp0, fp0, prev = tps[-1], fps[-1], precision[-1]
    p_total, n_total = float(tp0), float(fp0)
    if exact:
        auroc = auc_num / (2 * int(tp0) * int(fp0)) if tp0 and fp0 else float("nan")
    else:
        auroc = ratio(auc_num, 2 * p_total * n_total)
    return {"auroc": auroc, "average_precision": ratio(ap, p_total), "auprc_trapezoid": ratio(trap, 2 * p_total)}


def _scores(kind, n, rng):
    s = rng.random(n)
    return {"distinct": s, "ties": np.round(s, 2), "few": rng.integers(0, 3, n).astype(np.float64),
            "float32": s.astype(np.float32), "one_tie": np.concatenate((s[:-1], s[:1])),
            "constant": np.full(n, 0.25)}[kind]


KINDS = ["distinct", "ties", "few", "float32", "one_tie", "constant"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("weighted", [False, True])
def test_packed_counts_equal_unique_counts_across_blocks(monkeypatch, kind, weighted):
    monkeypatch.setattr(kernels, "_BLOCK", 37)  # many blocks, some all-distinct, some not
    rng = np.random.default_rng(hash(kind) % 2**32)
    for n in (1, 2, 36, 38, 500):
        s, y = _scores(kind, n, rng), rng.random(n) < 0.3
        w = rng.gamma(2.0, size=n) * (rng.random(n) > 0.1) if weighted else None
        got = kernels.packed_counts(s, y, w)
        want = _unique_counts(s, y, w)
        for g, e in zip(got, want):
            assert g.dtype == e.dtype
            if weighted:
                np.testing.assert_allclose(g, e, rtol=1e-12)
            else:
                np.testing.assert_array_equal(g, e)


def test_packed_counts_all_positive_or_all_negative_runs():
    s = np.array([0.5, 0.5, 0.5, 0.1, 0.9, 0.9])
    for y in (np.ones(6, bool), np.zeros(6, bool), np.array([1, 0, 1, 0, 0, 1], bool)):
        got = kernels.packed_counts(s, y)
        for g, e in zip(got, _unique_counts(s, y)):
            np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("weighted", [False, True])
def test_ranking_areas_bit_identical_to_the_reference(monkeypatch, kind, weighted):
    monkeypatch.setattr(curves, "BLOCK", 64)
    rng = np.random.default_rng(7)
    for n in (1, 63, 64, 65, 1000):
        s, y = _scores(kind, n, rng), rng.random(n) < 0.4
        sc = ScoreCounts.from_arrays(y, s, rng.gamma(2.0, size=n) if weighted else None)
        got = curves.ranking_areas(sc.pos, sc.neg)
        want = _reference_areas(sc.pos, sc.neg, 64)
        for key in want:
            assert np.array_equal(got[key], want[key], equal_nan=True), (key, n, got[key], want[key])


def test_ranking_areas_zero_count_entries_and_integer_dtypes():
    cases = [(np.array([1, 2, 0, 0]), np.array([3, 0, 0, 0])), (np.array([1, 0, 0, 2]), np.array([3, 0, 0, 1])),
             (np.array([1, 3], np.uint8), np.array([2, 0], np.uint8)), (np.zeros(0, np.int64), np.zeros(0, np.int64)),
             (np.array([255, 0], np.uint8), np.array([2, 1], np.uint8))]  # 255 + 2 wraps to 1 in uint8
    for pos, neg in cases:
        got, want = curves.ranking_areas(pos, neg), _reference_areas(pos, neg, curves.BLOCK)
        for key in want:
            assert np.array_equal(got[key], want[key], equal_nan=True), (key, pos, neg)


def test_ranking_areas_of_replicate_tables_equal_each_row():
    rng = np.random.default_rng(3)
    pos, neg = rng.integers(0, 4, (5, 200)), rng.integers(0, 4, (5, 200))
    pos[0, -3:] = neg[0, -3:] = 0  # zero entries at the top: precision 0/0 -> 0
    table = curves.ranking_areas(pos, neg)
    for i in range(5):
        row = _reference_areas(pos[i].astype(np.float64), neg[i].astype(np.float64), 10**6)
        for key in row:
            np.testing.assert_allclose(table[key][i], row[key], rtol=1e-14)


@pytest.mark.parametrize("kind", ["distinct", "ties", "float32"])
def test_binary_report_areas_and_losses_against_scikit_learn(kind):
    rng = np.random.default_rng(11)
    n = 200_000
    y = (rng.random(n) < 0.3).astype(np.int8)
    s = _scores(kind, n, rng)
    s = np.clip(s + 0.3 * y, 0, 1).astype(s.dtype)
    r = mc.binary_report(y, s)
    s64 = s.astype(np.float64)
    assert r.metrics["auroc"] == pytest.approx(skm.roc_auc_score(y, s64), abs=1e-15)
    assert r.metrics["average_precision"] == pytest.approx(skm.average_precision_score(y, s64), abs=1e-14)
    assert r.metrics["log_loss"] == pytest.approx(skm.log_loss(y, s64), rel=1e-12)
    assert r.metrics["brier"] == pytest.approx(skm.brier_score_loss(y, s64), rel=1e-12)
    assert r.metrics["tp"] == np.sum((s64 >= 0.5) & (y == 1))


def test_curves_share_one_cumulative_sum_per_statistic_and_never_mix_statistics():
    rng = np.random.default_rng(5)
    a = ScoreCounts.from_arrays(rng.random(300) < 0.4, np.round(rng.random(300), 2))
    b = ScoreCounts.from_arrays(rng.random(200) < 0.6, rng.random(200), rng.gamma(2.0, size=200))
    first = [f(a) for f in (curves.roc_curve, curves.pr_curve, curves.gain_curve, curves.lift_curve)]
    for sc in (b, a):  # another statistic in between, then the first again
        fpr, tpr, thr = curves.roc_curve(sc)
        want = skm.roc_curve(*_rows(sc)[:2],
                             sample_weight=_rows(sc)[2], drop_intermediate=False)
        np.testing.assert_allclose(fpr, want[0], rtol=1e-12)
        np.testing.assert_allclose(tpr, want[1], rtol=1e-12)
    again = [f(a) for f in (curves.roc_curve, curves.pr_curve, curves.gain_curve, curves.lift_curve)]
    for c1, c2 in zip(first, again):
        for x, y in zip(c1, c2):
            assert np.array_equal(x, y, equal_nan=True)


def _rows(sc):
    """One weighted row per (score, label) cell of a ScoreCounts: labels, scores, weights."""
    y = np.concatenate((np.ones(sc.scores.size, int), np.zeros(sc.scores.size, int)))
    s = np.concatenate((sc.scores, sc.scores))
    w = np.concatenate((sc.pos, sc.neg)).astype(np.float64)
    keep = w > 0
    return y[keep], s[keep], w[keep]


@pytest.mark.parametrize("extra, order", [
    ([], np.float64), ([1.0, 1.4999999999999998], np.float64), ([2.0**-1022], np.float64),  # normal doubles
    ([0.0], np.int64), ([5e-324], np.int64), ([1.5], np.int64), ([1.9999999999999998], np.int64),
    ([2.0], None), ([7.0, 0.0], None),  # keys from 2**63 on: unsigned
], ids=["probabilities", "up_to_1.5", "smallest_normal", "zero", "subnormal", "1.5", "below_2", "2", "7_and_0"])
def test_keys_sorted_as_doubles_or_signed_only_when_they_order_so(monkeypatch, extra, order):
    monkeypatch.setattr(kernels, "_CHUNK", 64)  # the out-of-range key in a later chunk
    rng = np.random.default_rng(7)
    s = np.concatenate((rng.random(300) * 0.9 + 0.05, extra, rng.random(100)))
    y = rng.random(s.size) < 0.4
    for threads in (1, 2):
        key, sort_as = kernels._packed_keys(s, y, np.uint64, threads)
        assert sort_as is order
        np.testing.assert_array_equal(kernels._sort_keys(key.copy(), None, sort_as)[0], np.sort(key))
    for got, want in zip(kernels.packed_counts(s, y), _unique_counts(s, y)):
        np.testing.assert_array_equal(got, want)


def test_float32_keys_sort_as_themselves():
    key, sort_as = kernels._packed_keys(np.array([0.25, 0.5], np.float32), np.array([True, False]), np.uint32, 1)
    assert sort_as is None and key.dtype == np.uint32


@pytest.mark.parametrize("n", [1, 1000, 200_000])
def test_weighted_32_bit_key_sort_is_the_stable_sort(n):
    """The packed (key, row) sort of 32-bit keys carries the weights in the stable order, so the
    weight sums of tied scores add up in row order, as the two-column sort did (bit-identical)."""
    rng = np.random.default_rng(n)
    key = rng.integers(0, max(n // 10, 2), n).astype(np.uint32)  # many ties
    w = rng.gamma(2.0, size=n)
    got_key, got_w = kernels._sort_keys(key.copy(), w)
    order = np.argsort(key, kind="stable")
    np.testing.assert_array_equal(got_key, key[order])
    np.testing.assert_array_equal(got_w, w[order])


@pytest.mark.parametrize("case", ["mixed", "no_positives", "no_negatives", "one_row", "weighted"])
def test_report_curves_equal_the_curve_functions(case):
    """The report shares equal arrays between its curves (views); every value is still the one
    :func:`roc_curve`, :func:`pr_curve`, :func:`gain_curve` and :func:`lift_curve` give."""
    from metrics_core.report import _curve_dict

    rng = np.random.default_rng(5)
    n = 1 if case == "one_row" else 300
    y = {"no_positives": np.zeros(n, bool), "no_negatives": np.ones(n, bool)}.get(case, rng.random(n) < 0.4)
    sc = ScoreCounts.from_arrays(y, np.round(rng.random(n), 2), rng.gamma(2.0, size=n) if case == "weighted" else None)
    got = _curve_dict(sc)
    for name, fn in (("roc", curves.roc_curve), ("pr", curves.pr_curve), ("gain", curves.gain_curve),
                     ("lift", curves.lift_curve)):
        for key, want in zip(("x", "y", "thresholds"), fn(sc)):
            np.testing.assert_array_equal(got[name][key], want, err_msg=f"{name} {key}")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("weighted", [False, True])
def test_one_row_per_score_is_set_exactly_when_every_score_holds_one_row(kind, weighted):
    """ScoreCounts.from_arrays tells the kernels that every score holds one counted row only when it
    does (distinct unweighted scores, also of mixed signs); merges, weights and ties leave it unknown."""
    from metrics_core.counts import ScoreCounts

    rng = np.random.default_rng(11)
    for n in (0, 1, 2, 500):
        s, y = _scores(kind, n, rng), rng.random(n) < 0.3
        for scores in (s, s - 0.5):
            w = rng.gamma(2.0, size=n) if weighted else None
            sc = ScoreCounts.from_arrays(y, scores, w)
            counted = not weighted and sc.pos.size > 0 and bool(np.all(sc.pos + sc.neg == 1))
            assert sc.one_row_per_score == counted, (kind, weighted, n)
            assert not sc.merge(ScoreCounts.from_arrays(y[:1], scores[:1] + 2.0)).one_row_per_score
    assert ScoreCounts.from_arrays(np.array([True, False]), np.array([0.2, 0.7])).one_row_per_score


@pytest.mark.parametrize("shift", [0.0, 0.5], ids=["probabilities", "mixed signs"])
def test_kernels_told_one_row_per_score_give_the_checked_results(shift):
    """The flag only skips the per-block check: the same areas and loss sums, bit for bit, over 3 blocks."""
    from metrics_core.counts import ScoreCounts
    from metrics_core.curves import probability_losses, ranking_areas
    from metrics_core.losses import BLOCK, exact_loss_sums

    rng = np.random.default_rng(12)
    n = 2 * BLOCK + 777
    sc = ScoreCounts.from_arrays(rng.random(n) < 0.4, rng.random(n) - shift)
    assert sc.one_row_per_score and sc.scores.size == n
    assert ranking_areas(sc.pos, sc.neg, one_row_per_score=True) == ranking_areas(sc.pos, sc.neg)
    assert exact_loss_sums(sc.scores, sc.pos, sc.neg, one_row_per_score=True) == \
        exact_loss_sums(sc.scores, sc.pos, sc.neg)
    unknown = ScoreCounts(sc.scores, sc.pos, sc.neg)
    assert not unknown.one_row_per_score and unknown == sc
    if not shift:
        assert probability_losses(sc) == probability_losses(unknown)
