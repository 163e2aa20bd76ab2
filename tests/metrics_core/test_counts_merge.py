"""ScoreCounts.merge (the fast merge) against the straightforward definition.

Oracle: the union of the distinct scores with the counts of equal scores added, written the plain
way (np.unique + np.add.at, the original implementation). Both paths of the merge are drawn:
disjoint ranges (concatenation) and overlapping ones (SciPy's sparse addition on packed keys and
complex counts, metrics_core._score_kernels.PackedScoreCounts), at every size ratio, with
negative scores and with arbitrary float weights, whose sums depend on the order of addition.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics_core._score_kernels import PackedScoreCounts
from metrics_core.counts import ScoreCounts


def oracle(a: ScoreCounts, b: ScoreCounts) -> ScoreCounts:
    scores = np.concatenate((a.scores, b.scores))
    distinct, inverse = np.unique(scores, return_inverse=True)
    dtype = np.float64 if (a.weighted or b.weighted) else np.int64
    pos, neg = np.zeros(distinct.size, dtype), np.zeros(distinct.size, dtype)
    np.add.at(pos, inverse, np.concatenate((a.pos, b.pos)).astype(dtype))
    np.add.at(neg, inverse, np.concatenate((a.neg, b.neg)).astype(dtype))
    return ScoreCounts(distinct, pos, neg)


@st.composite
def score_counts(draw, lo: float, hi: float, max_size: int):
    n = draw(st.integers(0, max_size))
    if n == 0:
        return ScoreCounts.empty(draw(st.booleans()))
    y = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    s = np.array(draw(st.lists(st.sampled_from(np.round(np.linspace(lo, hi, 41), 3).tolist()), min_size=n,
                               max_size=n)))
    w = None
    if draw(st.booleans()):
        weights = st.sampled_from([0.25, 0.5, 1.0, 2.75]) if draw(st.booleans()) else st.floats(1e-3, 1e3)
        w = np.array(draw(st.lists(weights, min_size=n, max_size=n)))
    return ScoreCounts.from_arrays(y, s, w)


RANGES = st.sampled_from([(-1.0, 1.0), (0.0, 0.5), (0.5, 1.0), (2.0, 3.0)])


@settings(max_examples=100, deadline=None)
@given(st.data(), RANGES, RANGES, st.sampled_from([3, 60, 400]))
def test_merge_equals_union_with_added_counts(data, range_a, range_b, big):
    a = data.draw(score_counts(*range_a, max_size=big))
    b = data.draw(score_counts(*range_b, max_size=6))
    for x, y in ((a, b), (b, a)):
        got, want = x.merge(y), oracle(x, y)
        for name in ("scores", "pos", "neg"):
            g, w = getattr(got, name), getattr(want, name)
            assert g.dtype == w.dtype and np.array_equal(g, w), name


def test_both_zeros_are_one_score_and_negative_scores_keep_their_order():
    """Statistics made by hand may hold -0.0: it meets 0.0 as one score, and negatives sort below it."""
    a = ScoreCounts(np.array([-2.5, -1e-300, -0.0, 0.75]), np.array([1, 0, 2, 1]), np.array([0, 1, 0, 0]))
    b = ScoreCounts(np.array([-3.0, -2.5, 0.0, 5e-324]), np.array([0, 1, 1, 0]), np.array([1, 1, 0, 1]))
    m = a.merge(b)
    assert m.scores.tolist() == [-3.0, -2.5, -1e-300, 0.0, 5e-324, 0.75]
    assert m.pos.tolist() == [0, 2, 0, 3, 0, 1] and m.neg.tolist() == [1, 1, 1, 0, 1, 0]
    assert not np.signbit(m.scores[3])


def test_packed_merge_drops_only_entries_without_rows():
    """The sparse sum keeps no zero value: an entry with pos = neg = 0 (never made by from_arrays) goes."""
    a = PackedScoreCounts.of(ScoreCounts(np.array([0.1, 0.2]), np.array([0.0, 1.5]), np.array([0.0, 0.0])))
    b = PackedScoreCounts.of(ScoreCounts(np.array([0.2, 0.3]), np.array([0.0, 0.0]), np.array([2.0, 0.5])))
    scores, pos, neg = PackedScoreCounts.unpack([a.merge(b)])
    assert scores.tolist() == [0.2, 0.3] and pos.tolist() == [1.5, 0.0] and neg.tolist() == [2.0, 0.5]
