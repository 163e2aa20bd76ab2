"""Sort-free score counts of tie-heavy scores: each row looked up among the distinct scores of a sample."""

from __future__ import annotations

import numpy as np

from metrics_core.threads import in_ranges

#: Fewest rows for the lookup: below it the sort is fast enough that the sample does not pay.
MIN_ROWS = 1 << 18
_PROBE = 1 << 12  # rows of the first, cheap sample: distinct scores skip the lookup after it
_PROBE_DISTINCT = 0.9  # most distinct scores per probed row that may still be tie-heavy
_SAMPLE = 1 << 16  # rows of the sample whose distinct scores make the table
_TIED = 0.25  # tie-heavy: at most one distinct score per four sampled rows
_SHARED = 0.125  # most distinct scores that may share a table cell with another
_TABLE_BITS = 18  # the lookup table has about 2**18 cells (2 MiB: it stays in cache)
_CHUNK = 1 << 16  # rows per step: the temporaries stay in cache


def _sample_distinct(s: np.ndarray, rows: int, most: float) -> np.ndarray | None:
    """The distinct scores of about ``rows`` evenly spaced rows, or None when they are more than
    ``most`` of the rows sampled."""
    sample = s[::max(1, s.size // rows)]
    d = np.unique(sample)
    return d if d.size <= most * sample.size else None


def _table(d: np.ndarray, itype):
    """``(table, base, shift)`` over the signed bits of the scores, or None when more than
    ``_SHARED`` of the scores share a cell: ``table[(bits - base) >> shift]``, clipped to the
    table, is twice the index in ``d`` of the only distinct score whose bits fall in that cell;
    ``2 * d.size`` (no score) for a cell of none or of several. The first cell, where bits below
    every positive score of ``d`` land, holds a score of 0 when ``d`` has one."""
    positive = d[d > 0]
    bits = positive.view(itype).astype(np.int64)
    if not bits.size:
        return np.array([0 if d.size else 2 * d.size, 2 * d.size]), itype(0), itype(0)
    span = int(bits[-1]) - int(bits[0]) + 1
    shift = max(0, span.bit_length() - _TABLE_BITS)
    base = int(bits[0]) - (1 << shift)  # one cell below the smallest positive score: the zeros' cell
    table = np.full(((int(bits[-1]) - base) >> shift) + 1, 2 * d.size, dtype=np.intp)
    cell, first, count = np.unique((bits - base) >> shift, return_index=True, return_counts=True)
    alone = count == 1
    if positive.size - np.count_nonzero(alone) > _SHARED * d.size:  # scores far apart: most rows would miss
        return None
    table[cell[alone]] = 2 * (first[alone] + (d.size - positive.size))
    if d[0] == 0:
        table[0] = 0
    return table, itype(base), itype(shift)


def tied_counts(scores: np.ndarray, y: np.ndarray, threads: int = 1):
    """Positive and negative row counts of tie-heavy scores without sorting the rows.

    When an evenly spaced sample of the rows holds at most one distinct score per four rows,
    each row's score is looked up among the sample's distinct scores: a table over the high bits
    of the scores gives the only candidate of a row's cell, and the row is counted there
    (``bincount`` of ``2 * index + label``) when the candidate equals its score. The rows
    without an equal candidate (a score the sample missed, or a cell holding several distinct
    scores) are returned apart, for the sort. Scores too far apart for the table (an eighth of
    them sharing cells) are left to the sort too. Exact: every row is either counted at a score it
    equals (bit for bit) or returned. The ranges run on ``threads`` threads; counts do not depend on them.

    Parameters
    ----------
    scores : numpy.ndarray of float32 or float64
        Non-negative finite scores (as :func:`metrics_core._score_kernels.packed_counts` takes).
    y : numpy.ndarray of bool
        True for the positive rows.
    threads : int
        Threads for the row ranges.

    Returns
    -------
    tuple or None
        ``(distinct scores as float64, positives, negatives, missed rows)``: the scores (of the
        sample, ascending) that counted rows, their int64 counts, and the int64 positions of
        the rows not counted. None when the scores are not tie-heavy (nothing was counted).

    Examples
    --------
    >>> s = np.tile([0.25, 0.5, 0.75], 100_000)
    >>> d, pos, neg, missed = tied_counts(s, s > 0.6)
    >>> d.tolist(), pos.tolist(), neg.tolist(), missed.size
    ([0.25, 0.5, 0.75], [0, 0, 100000], [100000, 100000, 0], 0)
    >>> tied_counts(np.linspace(0, 1, 300_000), np.zeros(300_000, bool)) is None
    True
    """
    if _sample_distinct(scores, _PROBE, _PROBE_DISTINCT) is None:
        return None
    d = _sample_distinct(scores, _SAMPLE, _TIED)
    if d is None:
        return None
    itype = np.int32 if scores.dtype == np.float32 else np.int64
    layout = _table(d, itype)
    if layout is None:
        return None
    table, base, shift = layout
    # Candidates twice over: table entries are 2 * index, so 2 * index + label is a row's cell
    # of the counts; the index d.size holds a candidate equal to no score (bits of a negative
    # NaN). Bits are compared, not values: a thread that treats subnormals as zero would find a
    # subnormal score equal to another. (+ 0.0: a sampled -0.0 is the candidate 0.0; a row of
    # -0.0 misses and the sort counts it at 0.0.)
    candidates = np.repeat(np.append(np.add(d, 0.0).view(itype), itype(-1)), 2)
    bits, m = scores.view(itype), d.size

    def count(begin: int, end: int):
        counts = np.zeros(2 * m + 2, dtype=np.int64)
        missed = []
        size = min(_CHUNK, end - begin)
        cell_b, idx_b = np.empty(size, itype), np.empty(size, np.intp)
        value_b, equal_b = np.empty(size, itype), np.empty(size, bool)
        for first in range(begin, end, _CHUNK):
            stop = min(first + _CHUNK, end)
            k = stop - first
            cell, idx, value, equal = cell_b[:k], idx_b[:k], value_b[:k], equal_b[:k]
            # -0.0 (the sign bit) wraps to the top: a miss, which the sort counts at 0.0
            np.subtract(bits[first:stop], base, out=cell)
            np.right_shift(cell, shift, out=cell)
            np.take(table, cell, out=idx, mode="clip")  # below the range: the zeros' cell
            np.take(candidates, idx, out=value, mode="clip")
            if not np.equal(value, bits[first:stop], out=equal).all():
                miss = np.flatnonzero(~equal)
                idx[miss] = 2 * m  # counted in the two extra cells, left out below
                missed.append(miss + first)
            idx += y[first:stop]
            counts += np.bincount(idx, minlength=2 * m + 2)
        return counts, missed

    parts = in_ranges(count, scores.size, threads)
    counts = parts[0][0]
    for c, _ in parts[1:]:
        counts += c
    pos, neg = counts[1:2 * m:2], counts[0:2 * m:2]
    kept = np.flatnonzero(pos + neg)
    missed = [x for _, ms in parts for x in ms]
    missed = np.concatenate(missed) if missed else np.empty(0, np.int64)
    # + 0.0: a sampled -0.0 is the score 0.0, as the packed keys make it
    return np.add(d[kept], 0.0, dtype=np.float64), pos[kept], neg[kept], missed
