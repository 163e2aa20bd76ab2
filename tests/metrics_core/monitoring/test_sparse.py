"""metrics_core.monitoring.sparse: a sparse histogram holds bincount's counts, and every sum of sparse and
dense histograms equals numpy's sum of the dense ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics_core.monitoring.sparse import SparseCounts, add_into, added, dense, histogram

SHAPES = st.sampled_from([(1,), (7,), (3, 5), (2, 3, 40)])


@st.composite
def rows(draw, shape=None):
    """A shape and per-row flat bin indices into it: few rows (sorted: SORT_BELOW) or many (counted)."""
    shape = shape or draw(SHAPES)
    size = int(np.prod(shape))
    n = draw(st.integers(0, 4 * size))
    seed = draw(st.integers(0, 2**32 - 1))
    return shape, np.random.default_rng(seed).integers(0, size, n)


@settings(max_examples=150, deadline=None)
@given(rows())
def test_a_sparse_histogram_holds_bincounts_counts(found):
    shape, flat = found
    full = histogram(flat, shape)
    h = histogram(flat, shape, sparse=True)
    assert isinstance(h, SparseCounts) and h.shape == shape
    assert full.dtype == h.counts.dtype == h.index.dtype == np.int64
    assert np.array_equal(full, np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape))
    assert np.array_equal(h.dense(), full)
    assert (np.diff(h.index) > 0).all() and (h.counts > 0).all()  # ascending, unique, non-empty bins only


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_every_sum_of_sparse_and_dense_histograms_is_numpys_sum(data):
    shape, a = data.draw(rows())
    _, b = data.draw(rows(shape))
    want = histogram(a, shape) + histogram(b, shape)
    for sparse_a in (False, True):
        for sparse_b in (False, True):
            x, y = histogram(a, shape, sparse_a), histogram(b, shape, sparse_b)
            got = added(x, y)
            assert isinstance(got, SparseCounts) == (sparse_a and sparse_b)
            assert np.array_equal(dense(got), want) and dense(got).dtype == np.int64
            acc = histogram(a, shape)
            assert add_into(acc, y) is acc and np.array_equal(acc, want)
            if sparse_a:  # an operand is never changed
                assert np.array_equal(x.dense(), histogram(a, shape))


def test_histograms_of_unlike_shapes_do_not_add():
    a = histogram(np.array([0, 1]), (2, 3), sparse=True)
    for b in (histogram(np.array([0]), (3, 2)), histogram(np.array([0]), (3, 2), sparse=True)):
        with pytest.raises(ValueError, match="shapes"):
            added(a, b)
        with pytest.raises(ValueError, match="shapes"):
            add_into(np.zeros((2, 2), np.int64), b)
