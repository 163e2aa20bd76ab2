"""ScoreCounts.merge (issue 7 performance rewrite) against the straightforward definition.

Oracle: the union of the distinct scores with the counts of equal scores added, written the plain
way (np.unique + np.add.at, the original implementation). Every path of the merge is drawn:
disjoint ranges (concatenation), a small statistic into a large one (binary-search insertion)
and similar sizes (stable sort of the two runs).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

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
        w = np.array(draw(st.lists(st.sampled_from([0.25, 0.5, 1.0, 2.75]), min_size=n, max_size=n)))
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
