"""metrics_core.threads: in-memory kernels on several threads give exactly the one-thread results.

Real inputs only reach the threaded paths above PARALLEL_MIN (a million elements), so these
tests lower it to 1 and compare each kernel and the whole reports, bit for bit, against the
same call inside one_kernel_thread().
"""

from __future__ import annotations

import sys
import threading
import warnings

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import metrics_core as mc
from metrics_core import _score_kernels as kernels
from metrics_core import curves, losses
from metrics_core import threads as th
from metrics_core.counts import ScoreCounts
from metrics_core.dataset.parallel import ordered_map


@pytest.fixture
def many_threads(monkeypatch):
    """Every kernel call is 'large': threaded with CLASSWATCH_SCAN_THREADS threads."""
    monkeypatch.setattr(th, "PARALLEL_MIN", 1)
    monkeypatch.setattr(kernels, "_SPLIT_MIN", 1)  # the sort split in pieces too

    def use(n: int) -> None:
        monkeypatch.setenv("CLASSWATCH_SCAN_THREADS", str(n))
    return use


def _same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        x, y = np.asarray(a[key], dtype=float), np.asarray(b[key], dtype=float)
        assert np.array_equal(x, y, equal_nan=True), key


def _inputs(draw_seed: int, n: int, decimals: int | None, kind: str):
    rng = np.random.default_rng(draw_seed)
    y = rng.random(n) < 0.3
    s = np.clip(rng.normal(0.4 + 0.2 * y, 0.25), 0, 1)
    if decimals is not None:
        s = np.round(s, decimals)
    if kind == "float32":
        s = s.astype(np.float32)
    elif kind == "signed":
        s = s - 0.5
    return y, s


# The fixture only sets the thread count, which each example sets again: safe to share.
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 3000), decimals=st.sampled_from([None, 1, 3]),
       kind=st.sampled_from(["float64", "float32", "signed"]), threads=st.integers(2, 5),
       weighted=st.booleans())
def test_score_counts_on_threads_equal_one_thread(many_threads, seed, n, decimals, kind, threads, weighted):
    many_threads(threads)
    y, s = _inputs(seed, n, decimals, kind)
    w = np.random.default_rng(seed + 1).integers(0, 4, n).astype(float) if weighted else None
    with th.one_kernel_thread():
        one = ScoreCounts.from_arrays(y, s, w)
    assert th.kernel_threads(n + 1) == threads
    many = ScoreCounts.from_arrays(y, s, w)
    for a, b in ((one.scores, many.scores), (one.pos, many.pos), (one.neg, many.neg)):
        assert a.dtype == b.dtype
        assert np.array_equal(a, b)


@pytest.mark.parametrize("decimals", [None, 2])  # distinct scores (the all-distinct path) and ties
@pytest.mark.parametrize("threads", [2, 3])
def test_binary_report_on_threads_equals_one_thread(many_threads, decimals, threads):
    many_threads(threads)
    y, s = _inputs(7, 20_000, decimals, "float64")
    with th.one_kernel_thread():
        one = mc.binary_report(y, s)
        one_metrics, one_roc = one.metrics, one.curves["roc"]
    many = mc.binary_report(y, s)
    _same(one_metrics, many.metrics)
    _same(one_roc, many.curves["roc"])


@pytest.mark.parametrize("threads", [2, 3])
def test_multiclass_report_on_threads_equals_one_thread(many_threads, threads):
    many_threads(threads)
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(4), 5000)
    y = np.array([rng.choice(4, p=row) for row in p])
    with th.one_kernel_thread():
        one = mc.multiclass_report(y, y_score=p).metrics
    _same(one, mc.multiclass_report(y, y_score=p).metrics)


def test_scores_outside_zero_one_still_warn_from_the_callers_line(many_threads):
    """The losses run on the caller's thread, so their warning is raised where it was before."""
    many_threads(2)
    y, s = _inputs(1, 500, None, "signed")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = mc.binary_report(y, s)
    assert np.isnan(report.metrics["log_loss"])
    assert any("not probabilities" in str(w.message) for w in caught)


def test_ordered_map_runs_each_item_with_one_kernel_thread(many_threads):
    many_threads(4)
    seen = list(ordered_map(lambda _: th.kernel_threads(10**9), range(6), threads=2))
    assert seen == [1] * 6
    assert list(ordered_map(lambda _: th.kernel_threads(10**9), range(2), threads=1)) == [1, 1]
    assert th.kernel_threads(10**9) == 4  # the caller's own setting is back


def test_kernel_threads_small_inputs_and_the_serial_block():
    assert th.kernel_threads(th.PARALLEL_MIN - 1) == 1
    assert th.kernel_threads(th.PARALLEL_MIN) == th.default_threads()
    with th.one_kernel_thread():
        with th.one_kernel_thread():
            pass
        assert th.kernel_threads(th.PARALLEL_MIN) == 1  # a nested block leaves the outer one on
    assert th.kernel_threads(th.PARALLEL_MIN) == th.default_threads()


@pytest.mark.parametrize("size, threads", [(0, 3), (1, 3), (2, 5), (10, 3), (1001, 2)])
def test_in_ranges_covers_the_range_once_in_order(size, threads):
    parts = th.in_ranges(lambda b, e: (b, e, threading.get_ident()), size, threads)
    assert [p[0] for p in parts][0] == 0 and parts[-1][1] == size
    assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
    assert len(parts) == max(1, min(threads, size))


@pytest.mark.parametrize("threads", [1, 2])
def test_side_thread_and_in_background_return_and_raise_as_a_plain_call(threads, monkeypatch):
    with th.side_thread(threads) as submit:
        ok = submit(sorted, [3, 1, 2])
        bad = submit(int, "x")
    assert ok.result() == [1, 2, 3]
    with pytest.raises(ValueError):
        bad.result()
    monkeypatch.setenv("CLASSWATCH_SCAN_THREADS", str(threads))  # in_background: the same, started at once
    ok, bad = th.in_background(sorted, [3, 1, 2]), th.in_background(int, "x")
    assert ok.result() == [1, 2, 3]
    with pytest.raises(ValueError):
        bad.result()


# Scores at the edges of the key orders: zeros of both signs, subnormals, the smallest normal,
# probabilities' ends, values whose keys pass 2**63 (sorted unsigned) and the largest double.
_EDGES = [0.0, -0.0, 5e-324, 1e-310, 2.0**-1022, 1e-300, 2.0**-52, 0.5, 1 - 2.0**-53, 1.0, 1.5, 2.0, 1e300,
          np.finfo(np.float64).max]


# The fixture's settings are the same in every example: safe to share.
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 400), edges=st.integers(0, 60),
       ties=st.sampled_from([None, 1, 3]), float32=st.booleans(), threads=st.integers(2, 5))
def test_sort_in_pieces_equals_one_sort(monkeypatch, seed, n, edges, ties, float32, threads):
    """The selection + sort of each piece gives exactly numpy's sort of the whole key array, for
    every key order (float64, int64 and unsigned views, 32-bit keys), ties and edge values."""
    monkeypatch.setattr(kernels, "_SPLIT_MIN", 1)
    monkeypatch.setattr(th, "PARALLEL_MIN", 1)
    monkeypatch.setenv("CLASSWATCH_SCAN_THREADS", str(threads))
    rng = np.random.default_rng(seed)
    s = rng.random(n) if ties is None else np.round(rng.random(n), ties)
    s = np.abs(np.concatenate((s, rng.choice(_EDGES, edges))))
    if float32:  # (the largest doubles as the largest float32)
        s = np.minimum(s, np.finfo(np.float32).max).astype(np.float32)
    rng.shuffle(s)
    y = rng.random(s.size) < 0.4
    utype = np.uint32 if float32 else np.uint64
    key, sort_as = kernels._packed_keys(s, y, utype, 1)
    kernels._sort_in_pieces(key if sort_as is None else key.view(sort_as), threads)
    assert np.array_equal(key, np.sort(kernels._packed_keys(s, y, utype, 1)[0]))
    with th.one_kernel_thread():
        one = ScoreCounts.from_arrays(y, s)
    many = ScoreCounts.from_arrays(y, s)
    for a, b in ((one.scores, many.scores), (one.pos, many.pos), (one.neg, many.neg)):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 300), block=st.integers(1, 40), threads=st.integers(2, 5),
       counts=st.sampled_from(["one_row", "mixed", "zeros", "uint8", "weighted"]))
def test_areas_and_losses_shared_among_threads_equal_one_thread(monkeypatch, seed, n, block, threads, counts):
    """Blocks shared among threads (one-row and counted blocks, zero-count entries, small unsigned
    counts, weights) give the one-thread areas and loss sums bit for bit."""
    monkeypatch.setattr(curves, "BLOCK", block)
    monkeypatch.setattr(losses, "BLOCK", block)
    rng = np.random.default_rng(seed)
    scores = np.unique(np.concatenate((rng.choice([0.0, 2.0**-53, 0.5, 1 - 2.0**-53, 1.0], 3), rng.random(n))))
    pos = (rng.random(scores.size) < 0.3).astype(np.int64)
    neg = 1 - pos
    if counts != "one_row":  # some scores with both classes or several rows, some (not "mixed") with none
        many = rng.random(scores.size) < 0.2
        pos[many] += rng.integers(0, 3, int(many.sum()))
        neg[many] += rng.integers(0, 3, int(many.sum()))
        if counts != "mixed":
            pos[rng.random(scores.size) < 0.1] = 0
            neg[rng.random(scores.size) < 0.1] = 0
    if counts == "uint8":
        pos, neg = pos.astype(np.uint8), neg.astype(np.uint8)
    elif counts == "weighted":
        pos, neg = pos * rng.gamma(2.0, size=scores.size), neg * rng.gamma(2.0, size=scores.size)
    one_row = counts == "one_row"
    want = curves.ranking_areas(pos, neg, one_row_per_score=one_row)
    got = curves.ranking_areas(pos, neg, one_row_per_score=one_row, threads=threads)
    _same(want, got)
    want = losses.exact_loss_sums(scores, pos, neg, one_row_per_score=one_row)
    assert losses.exact_loss_sums(scores, pos, neg, one_row_per_score=one_row, threads=threads) == want


def test_packed_keys_equal_the_one_pass_build(many_threads):
    many_threads(3)
    y, s = _inputs(5, 1001, 3, "float64")
    expected = (s.view(np.uint64) << np.uint64(1)) | y.astype(np.uint64)
    key, sort_as = kernels._packed_keys(s, y, np.uint64, 3)
    assert np.array_equal(key, expected)
    assert sort_as is kernels._key_order(expected.min(), expected.max())


def test_a_polars_half_imported_by_another_thread_is_no_polars_object(monkeypatch):
    """While one thread imports polars, ``sys.modules`` holds a module without its classes yet; an
    argument checked meanwhile on another thread is not a polars object (it raised AttributeError:
    partially initialized module 'polars' has no attribute 'Series')."""
    import types

    from metrics_core._validate import check_weights, to_numpy

    monkeypatch.setitem(sys.modules, "polars", types.ModuleType("polars"))
    assert to_numpy(pa.array([1.0, 2.0]), "sample_weight").tolist() == [1.0, 2.0]
    assert check_weights(pa.array([0.5, 2.0]), 2).tolist() == [0.5, 2.0]
