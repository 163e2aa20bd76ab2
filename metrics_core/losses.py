"""The per-row losses of binary probability scores (log loss, squared error) summed per score or per bin."""

from __future__ import annotations

import math

import numpy as np

from metrics_core._score_kernels import one_row_each
from metrics_core.formulas import ratio
from metrics_core.threads import in_ranges

BLOCK = 1 << 16  # distinct scores per block of the curves' and losses' kernels: temporaries stay in cache
_EPS = np.finfo(np.float64).eps  # the clipping of every log loss (clip_probability)
_GROUP = 512  # factors per product in log_sum: 512 mantissas in [0.5, 1) multiply to >= 2**-512, no underflow
_MANTISSA_BITS = np.int64(0x000FFFFFFFFFFFFF)
_HALF_EXPONENT = np.int64(0x3FE0000000000000)  # the exponent field of the doubles in [0.5, 1)
# Probabilities per product in log_sum(probabilities=True): 16 values >= 2**-52 multiply to
# >= 2**-832, a normal double.
_PROBABILITY_GROUP = 16


def _own_class_probability(p: np.ndarray, positive: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``p`` where ``positive``, else ``1 - p`` (rather than log1p(-p): scikit-learn builds its 1 - p
    column the same way), written into ``out``: the probability of the class the rows hold."""
    np.subtract(1.0, p, out=out)
    np.copyto(out, p, where=positive)
    return out


def clip_probability(s, out=None):
    """Scores clipped to [eps, 1 - eps], eps the float64 machine epsilon, as scikit-learn 1.9's log loss
    clips them: the one clipping of every log loss in metrics_core (binary, binned, multiclass, baselines).

    >>> clip_probability(np.array([0.0, 0.5, 1.0])).tolist() == [2.0 ** -52, 0.5, 1 - 2.0 ** -52]
    True
    """
    return np.clip(s, _EPS, 1 - _EPS, out=out)


def loss_terms(scores: np.ndarray, pos, neg) -> np.ndarray:
    """(4, n) loss sums of ``pos`` positive and ``neg`` negative (weighted) rows at each score.

    The rows, in this order (also that of :attr:`metrics_core.counts.BinnedScoreCounts.losses`):
    ``pos * -log p``, ``neg * -log(1 - p)`` (the log loss, ``p`` the score through
    :func:`clip_probability`), ``pos * (1 - s)^2`` and ``neg * s^2`` (the Brier score's squared
    errors). The scores must be in [0, 1].

    Parameters
    ----------
    scores : numpy.ndarray
        Probabilities of the positive class.
    pos, neg : array-like
        Positive and negative counts or weights at each score (a row: its weight and 0).

    Returns
    -------
    numpy.ndarray of float64, shape (4, n)

    Examples
    --------
    >>> loss_terms(np.array([0.5]), np.array([2]), np.array([1]))[:, 0].round(4).tolist()
    [1.3863, 0.6931, 0.5, 0.25]
    """
    p = clip_probability(scores)
    return np.stack((pos * -np.log(p), neg * -np.log(1.0 - p), pos * (1 - scores) ** 2, neg * scores * scores))


def binned_loss_sums(y: np.ndarray, s: np.ndarray, cell: np.ndarray, bins: int, w: np.ndarray | None) -> np.ndarray:
    """(4, bins) sums of :func:`loss_terms` of the rows in each bin; all nan when a score is outside [0, 1].

    Parameters
    ----------
    y : numpy.ndarray of bool
        True for the positive rows.
    s : numpy.ndarray of float64
        The rows' scores.
    cell : numpy.ndarray of int
        Each row's bin, plus ``bins`` for a positive row (the negatives' bins first).
    bins : int
        Number of bins.
    w : numpy.ndarray, optional
        Row weights.

    Returns
    -------
    numpy.ndarray of float64, shape (4, bins)

    Examples
    --------
    >>> sums = binned_loss_sums(np.array([True, False]), np.array([0.5, 0.5]), np.array([3, 1]), 2, None)
    >>> sums[:, 1].round(4).tolist()
    [0.6931, 0.6931, 0.25, 0.25]
    """
    if s.size and (s.min() < 0 or s.max() > 1):
        return np.full((4, bins), np.nan)
    # A row holds one class: one logarithm and one square per row (loss_terms' other two are 0).
    # The logarithms are summed, then negated (-sum(x) is sum(-x) exactly): one pass less.
    p = clip_probability(s)
    log_own = _own_class_probability(p, y, np.empty_like(p))
    np.log(log_own, out=log_own)
    squared = np.subtract(s, y)  # (s - 1)^2 is (1 - s)^2 exactly
    np.square(squared, out=squared)
    if w is not None:
        log_own *= w
        squared *= w
    # (astype: numpy's bincount of no rows is int64 even with weights; a batch may hold no labelled row)
    ll = np.bincount(cell, weights=log_own, minlength=2 * bins).astype(np.float64, copy=False)
    np.subtract(0.0, ll, out=ll)  # (0 - 0 is +0.0: an empty bin sums to 0.0, not -0.0)
    sq = np.bincount(cell, weights=squared, minlength=2 * bins).astype(np.float64, copy=False)
    return np.stack((ll[bins:], ll[:bins], sq[bins:], sq[:bins]))


def binned_losses(losses: np.ndarray, total) -> tuple[float, float]:
    """``(log_loss, brier)`` from per-bin :func:`binned_loss_sums` and the (weighted) row total; nan without rows."""
    return ratio(losses[0].sum() + losses[1].sum(), total), ratio(losses[2].sum() + losses[3].sum(), total)


def log_sum(q: np.ndarray, probabilities: bool = False) -> float:
    """``sum(log(q))`` of positive normal float64 values from their mantissas and exponents; ``q`` is overwritten.

    Each ``q = m 2**e`` with ``m`` in [0.5, 1) (``frexp``, read from the bits), so
    ``sum(log q) = sum over groups of 512 of log(prod m) + ln 2 * sum(e)``: the exponents add
    exactly as integers, and one logarithm per 512 values replaces one per value (numpy's
    float64 ``log`` is scalar libm code on AVX2, 8 ns a value; the bit operations and the
    products are vector code). A product of 512 mantissas is at least ``2**-512`` and carries a
    relative rounding error of at most 511 units in the last place (5.7e-14, the absolute error
    of its logarithm), the size of the rounding of the 512 logarithms it replaces (tests
    compare it with ``math.fsum`` of the logarithms).

    With ``probabilities``, every value is in [2**-52, 1] (a probability through
    :func:`clip_probability`, or its complement): then products of 16 values themselves are
    normal doubles (>= 2**-832), and one logarithm per 16 values needs no mantissas (two
    passes over ``q`` instead of five; ``q`` is left as it is). Each product carries at most 15
    roundings, 480 units in the last place per 512 values: the bound above holds. Fewer than
    512 values take the mantissa path all the same, so that small statistics keep the values
    they had before this path existed, bit for bit.

    Parameters
    ----------
    q : numpy.ndarray of float64, contiguous
        Positive normal values (>= 2**-1022, finite), e.g. clipped probabilities. Overwritten
        with their mantissas (unless ``probabilities`` and at least 512 values).
    probabilities : bool
        Every value is in [2**-52, 1] (not checked: the caller's clipping guarantees it).

    Returns
    -------
    float
        0.0 for an empty array.

    Examples
    --------
    >>> q = np.array([0.25, 0.5, 3.0])
    >>> round(log_sum(q.copy()), 12) == round(float(np.log([0.25, 0.5, 3.0]).sum()), 12)
    True
    >>> math.isclose(log_sum(np.full(1024, 0.5), probabilities=True), 1024 * math.log(0.5))
    True
    """
    if probabilities and q.size >= _GROUP:
        grouped = q.size - q.size % _PROBABILITY_GROUP
        # Products down the columns of a (16, n/16) view, as below.
        products = np.multiply.reduce(q[:grouped].reshape(_PROBABILITY_GROUP, -1), axis=0)
        return float(np.log(products).sum()) + float(np.log(q[grouped:]).sum())
    bits = q.view(np.int64)
    exponents = int(np.right_shift(bits, 52).sum()) - 1022 * q.size  # biased exponent - 1022: frexp's e
    np.bitwise_and(bits, _MANTISSA_BITS, out=bits)
    np.bitwise_or(bits, _HALF_EXPONENT, out=bits)
    grouped = q.size - q.size % _GROUP
    # Products down the columns of a (512, n/512) view: each column one product, computed by
    # vector multiplications row after row.
    total = float(np.log(np.multiply.reduce(q[:grouped].reshape(_GROUP, -1), axis=0)).sum()) if grouped else 0.0
    return total + float(np.log(q[grouped:]).sum()) + exponents * math.log(2.0)


def exact_loss_sums(scores: np.ndarray, pos: np.ndarray, neg: np.ndarray, *,
                    one_row_per_score: bool = False, threads: int = 1) -> tuple[float, float]:
    """``(sum of the rows' -log p_own, sum of their squared errors)`` of exact score counts, in blocks of ``BLOCK``.

    The sums of :func:`loss_terms` over the distinct scores: ``pos * -log p + neg * -log(1 - p)``
    (``p`` through :func:`clip_probability`) and ``pos * (1 - s)^2 + neg * s^2``. A block whose
    scores each hold one counted row (distinct unweighted scores, the usual case of float64
    model scores) sums its logarithms with :func:`log_sum` (2.5 times as fast at 10M scores); any
    other block takes one logarithm per score (two where a score holds both classes).

    Parameters
    ----------
    scores : numpy.ndarray of float64
        Distinct scores in [0, 1], ascending (as :class:`~metrics_core.counts.ScoreCounts` holds them).
    pos, neg : numpy.ndarray
        Positive and negative counts at each score (non-negative; int when counted, float when
        weighted).
    one_row_per_score : bool
        The caller knows that every score holds exactly one counted row
        (:attr:`~metrics_core.counts.ScoreCounts.one_row_per_score`): blocks skip checking it.
        The result is the same either way.
    threads : int
        Threads the blocks are shared among (contiguous runs of blocks); the blocks' sums are
        added in block order, so the result is the same for any number.

    Returns
    -------
    (float, float)
        Both 0.0 for no scores.

    Examples
    --------
    >>> [round(x, 4) for x in exact_loss_sums(np.array([0.2, 0.6]), np.array([0, 1]), np.array([1, 0]))]
    [0.734, 0.2]
    """
    blocks = -(-scores.size // BLOCK)
    parts = in_ranges(lambda b, e: _block_sums(scores, pos, neg, b * BLOCK, e * BLOCK, one_row_per_score),
                      blocks, threads)
    ll = brier = 0.0
    for sums in parts:  # block after block, in order: the same additions on any number of threads
        for block_ll, block_brier in sums:
            ll -= block_ll
            brier += block_brier
    return ll, brier


def _block_sums(scores, pos, neg, start: int, stop: int, one_row_per_score: bool) -> list[tuple[float, float]]:
    """``[(sum of log p_own, Brier sum), ...]`` of the blocks of ``BLOCK`` scores in ``[start, stop)``."""
    out = []
    size = min(scores.size, BLOCK)
    # Reused cache-sized buffers: fresh 10M-element temporaries cost more in page faults than in maths.
    p, own, work, posf, negf = (np.empty(size) for _ in range(5))
    rows = np.empty(size, dtype=np.int64)
    has_pos, flags = np.empty(size, dtype=bool), np.empty(size, dtype=bool)
    for begin in range(start, min(stop, scores.size), BLOCK):
        s = scores[begin:begin + BLOCK]
        m = s.size
        pb, ob, wb, hp, fb = p[:m], own[:m], work[:m], has_pos[:m], flags[:m]
        ps, ns = pos[begin:begin + m], neg[begin:begin + m]
        # Ascending scores: a block inside [eps, 1 - eps] has nothing to clip (all but the end blocks).
        pb = s if _EPS <= s[0] and s[-1] <= 1 - _EPS else clip_probability(s, out=pb)
        if one_row_per_score or one_row_each(ps, ns, rows[:m], fb):
            # A negative's |1 - p| is 1 - p and a positive's |0 - p| is p, exactly: the own class's
            # probability in two passes.
            np.abs(np.subtract(ns, pb, out=ob), out=ob)
            # (1 - s)^2 or s^2, exactly
            out.append((log_sum(ob, probabilities=True),
                        float(np.square(np.subtract(ps, s, out=wb), out=wb).sum())))
            continue
        _own_class_probability(pb, np.not_equal(ps, 0, out=hp), ob)  # p where the score has positives
        posb, negb = posf[:m], negf[:m]
        posb[:] = ps
        negb[:] = ns
        out.append(_counted_block_sums(s, pb, ob, wb, posb, negb, hp, fb))
    return out


def _counted_block_sums(s, p, log_own, work, pos, neg, has_pos, has_both) -> tuple[float, float]:
    """``(sum of pos log p + neg log(1 - p), Brier sum)`` of one block of counted scores (buffers overwritten).

    ``log_own`` holds the probability of each score's own class (p where it has positives);
    one logarithm per score, and the other one where a score holds both classes. Each product
    is the one of the two-log formula, or a zero count times a logarithm (-0.0 either way).
    """
    m = s.size
    np.log(log_own, out=log_own)
    # Products summed in place rather than BLAS dot: hundreds of small threaded BLAS calls stall.
    ll = float(np.multiply(pos, log_own, out=work).sum())
    np.multiply(neg, log_own, out=work)
    both = np.flatnonzero(np.logical_and(has_pos, neg, out=has_both))
    if both.size > m // 4:
        np.multiply(neg, np.log(np.subtract(1.0, p, out=work), out=work), out=work)
    elif both.size:
        work[both] = neg[both] * np.log(1.0 - p[both])
    ll += float(work.sum())
    brier = float(np.multiply(pos, np.square(np.subtract(1.0, s, out=work), out=work), out=work).sum())
    brier += float(np.multiply(neg, np.square(s, out=work), out=work).sum())
    return ll, brier
