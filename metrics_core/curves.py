"""Threshold-free binary metrics and curves from ScoreCounts (ISO 4213 6.3.6-6.3.9).

All work on the distinct scores, never on rows. Conventions follow scikit-learn: ROC from
(0, 0) with first threshold +inf (``roc_curve(drop_intermediate=False)``); PR points ordered as
``precision_recall_curve`` and ending at (recall 0, precision 1); ties are one point.
"""

from __future__ import annotations

import warnings
import weakref
from dataclasses import dataclass

import numpy as np

from metrics_core._score_kernels import one_row_each
from metrics_core.counts import BinnedScoreCounts, FoldedScoreCounts, ScoreCounts
from metrics_core.formulas import ratio
from metrics_core.losses import BLOCK, binned_losses, exact_loss_sums
from metrics_core.threads import in_ranges

_NOT_PROBABILITIES = ("Scores outside [0, 1] are not probabilities: log_loss and brier are nan "
                      "(ranking metrics are still computed).")


_LAST: list = [None]  # (weak reference to a ScoreCounts, its float64 (tps, fps)): the last one asked for


def _cumulative(sc: ScoreCounts):
    """float64 cumulative (tps, fps) of ``sc``'s thresholds, highest first: computed once for the
    ROC, PR, gain and lift curves of one statistic (float cumulative sums of tens of millions of
    scores are the curves' main cost). Integer counts give the same values as an integer sum
    (exact below 2**53). The cache holds the last statistic only, and is emptied when it dies."""
    last = _LAST[0]
    if last is not None and last[0]() is sc:
        return last[1]
    # One contiguous reversed float64 copy each, summed in place: two arrays, not four.
    tps = np.flip(sc.pos).astype(np.float64, order="C")
    fps = np.flip(sc.neg).astype(np.float64, order="C")
    np.cumsum(tps, out=tps)
    np.cumsum(fps, out=fps)
    _LAST[0] = (weakref.ref(sc, lambda _: _LAST.__setitem__(0, None)), (tps, fps))
    return tps, fps


def ranking_areas(pos, neg, *, one_row_per_score: bool = False, threads: int = 1) -> dict:
    """AUROC, average precision and the trapezoid area under PR, in one pass over the distinct scores.

    Parameters
    ----------
    pos, neg : array-like
        Positive and negative counts (or weights) per distinct score, scores ascending on the
        last axis; leading axes are independent tables (e.g. bootstrap replicates or classes).
    one_row_per_score : bool
        The caller knows that every score holds exactly one counted row
        (:attr:`ScoreCounts.one_row_per_score`): 1-D blocks skip checking it. The result is the
        same either way.
    threads : int
        Threads that share the blocks of 1-D integer counts; the result is the same for any number.

    Returns
    -------
    dict
        ``auroc``, ``average_precision``, ``auprc_trapezoid``: floats for 1-D input, arrays of
        the leading shape otherwise. nan when a class is absent (AUROC: P = 0 or N = 0) or
        there are no positives (AP, trapezoid).

    Notes
    -----
    ISO/IEC TS 4213 6.3.6-6.3.9. With thresholds at the distinct scores, highest first, and
    cumulative counts tps/fps:

    - ``auroc`` = sum_k neg_k (2 tps_k - pos_k) / (2 P N): P(positive scored higher) + 1/2
      P(tie), the Mann-Whitney U / (P N) (Hanley & McNeil 1982); exact integer arithmetic when
      unweighted and 1-D;
    - ``average_precision`` = sum_k pos_k precision_k / P (scikit-learn's step-wise sum);
    - ``auprc_trapezoid`` = trapezoid rule over the PR points starting at (recall 0, precision 1).

    A 1-D input is processed in blocks of ``BLOCK`` distinct scores so that temporaries stay
    small.

    Examples
    --------
    >>> areas = ranking_areas(np.array([0, 1, 1]), np.array([1, 1, 0]))
    >>> areas["auroc"], round(areas["average_precision"], 4)
    (0.875, 0.8333)
    """
    pos = np.asarray(pos)
    neg = np.asarray(neg)
    if pos.ndim == 1:
        return _areas_1d(pos, neg, one_row_per_score, threads)
    shape = pos.shape[:-1]
    pos_d = np.flip(pos, axis=-1).astype(np.float64)
    neg_d = np.flip(neg, axis=-1).astype(np.float64)
    tps = np.cumsum(pos_d, axis=-1)
    fps = np.cumsum(neg_d, axis=-1)
    auc_num = (neg_d * (2 * tps - pos_d)).sum(axis=-1)
    predicted = tps + fps
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = tps / predicted  # then 0/0 -> 0: 10x faster than a masked division
    precision[predicted == 0] = 0.0
    ap = (pos_d * precision).sum(axis=-1)
    previous = np.concatenate((np.ones(shape)[..., None], precision[..., :-1]), axis=-1)
    trap = (pos_d * (precision + previous)).sum(axis=-1)
    p_total = tps[..., -1] if pos.shape[-1] else np.zeros(shape)
    n_total = fps[..., -1] if pos.shape[-1] else np.zeros(shape)
    return {"auroc": ratio(auc_num, 2 * p_total * n_total), "average_precision": ratio(ap, p_total),
            "auprc_trapezoid": ratio(trap, 2 * p_total)}


def _areas_1d(pos: np.ndarray, neg: np.ndarray, one_row_per_score: bool = False, threads: int = 1) -> dict:
    """:func:`ranking_areas` of one table, in blocks of ``BLOCK`` scores (highest first) with reused buffers.

    Integer counts keep the AUROC numerator exact (Python int); float sums are per block
    (numpy's pairwise sum) and then added block by block. Each block is first copied highest
    score first into a contiguous buffer (a cumulative sum over a reversed view is 5x slower),
    and precision is a plain division with the 0/0 entries set to 0 afterwards (a masked
    ``where=`` division is 10x slower). A block of counted scores holding one row each takes
    :func:`_one_row_block`, which gives the same sums bit for bit. Integer counts share the
    blocks among ``threads`` threads (:func:`_area_blocks`); the blocks' sums are added in
    block order, so the result is the same for any number.
    """
    exact = pos.dtype.kind in "iu" and neg.dtype.kind in "iu"
    blocks = -(-pos.shape[-1] // BLOCK)
    parts = in_ranges(lambda first, last: _area_blocks(pos, neg, first, last, exact, one_row_per_score),
                      blocks, threads if exact else 1)
    auc_num = 0 if exact else 0.0
    ap = trap = 0.0
    for sums, _ in parts:
        for block_auc, block_ap, block_trap in sums:
            auc_num = auc_num + block_auc
            ap = ap + block_ap
            trap = trap + block_trap
    tp0, fp0 = parts[-1][1]
    p_total, n_total = float(tp0), float(fp0)
    if exact:
        p_i, n_i = int(tp0), int(fp0)
        auroc = auc_num / (2 * p_i * n_i) if p_i and n_i else float("nan")
    else:
        auroc = ratio(auc_num, 2 * p_total * n_total)
    return {"auroc": auroc, "average_precision": ratio(ap, p_total), "auprc_trapezoid": ratio(trap, 2 * p_total)}


def _area_blocks(pos: np.ndarray, neg: np.ndarray, first: int, last: int, exact: bool, one_row_per_score: bool):
    """``([(auc numerator, ap sum, trapezoid sum) of each block], (tp, fp) below the last)`` of the
    blocks ``first`` to ``last - 1`` counted from the highest scores.

    A later range starts from the counts above it, summed as integers (so only for integer
    counts), and from the precision at its first score's upper neighbour, ``tp / (tp + fp)``
    or 0 without rows: the values the blocks above would have handed on, bit for bit.
    """
    size = pos.shape[-1]
    m = min(max(size, 1), BLOCK)
    ctype = np.int64 if exact else np.float64
    buffers = _AreaBuffers(*(np.empty(m, ctype) for _ in range(5)), *(np.empty(m) for _ in range(4)),
                           np.empty(m, bool), np.arange(1, m + 1, dtype=np.float64) if exact else None)
    top = size - first * BLOCK
    tp0 = fp0 = ctype(0)
    prev = 1.0
    if first:
        tp0, fp0 = np.int64(np.sum(pos[top:], dtype=np.int64)), np.int64(np.sum(neg[top:], dtype=np.int64))
        prev = float(tp0) / float(tp0 + fp0) if tp0 + fp0 else 0.0
    sums = []
    for end in range(top, max(size - last * BLOCK, 0), -BLOCK):
        begin = max(0, end - BLOCK)
        k = end - begin
        if one_row_per_score or one_row_each(pos[begin:end], neg[begin:end], buffers.tmp[:k], buffers.zero[:k]):
            parts = _one_row_block(pos[begin:end], tp0, fp0, prev, buffers)
        else:
            parts = _counted_block(pos[begin:end], neg[begin:end], tp0, fp0, prev, exact, buffers)
        block_auc, block_ap, block_trap, tp0, fp0, prev = parts
        sums.append((block_auc, block_ap, block_trap))
    return sums, (tp0, fp0)


@dataclass(frozen=True)
class _AreaBuffers:
    """Block-sized work arrays of :func:`_areas_1d` (counts' dtype, then float64), reused block after block."""

    pos: np.ndarray
    neg: np.ndarray
    tps: np.ndarray
    fps: np.ndarray
    tmp: np.ndarray
    predicted: np.ndarray
    precision: np.ndarray
    pos_f: np.ndarray
    work: np.ndarray
    zero: np.ndarray
    ranks: np.ndarray | None  # 1, 2, ..., BLOCK as float64 (integer counts only)


def _block_pr_sums(pos_f, precision, prev, work):
    """The block's average-precision and trapezoid sums (pos_f may be integer counts)."""
    ap = np.multiply(pos_f, precision, out=work).sum()
    work[0] = precision[0] + prev
    np.add(precision[1:], precision[:-1], out=work[1:])
    return ap, np.multiply(pos_f, work, out=work).sum()


def _counted_block(pos, neg, tp0, fp0, prev, exact: bool, b: _AreaBuffers):
    """``(auc numerator, ap sum, trapezoid sum, tp, fp, last precision)`` of one block (ascending slices)."""
    k = pos.size
    pos_d, neg_d, tps, fps, tmp = b.pos[:k], b.neg[:k], b.tps[:k], b.fps[:k], b.tmp[:k]
    predicted, precision, work = b.predicted[:k], b.precision[:k], b.work[:k]
    pos_d[:] = pos[::-1]
    neg_d[:] = neg[::-1]
    np.cumsum(pos_d, out=tps)
    tps += tp0
    np.cumsum(neg_d, out=fps)
    fps += fp0
    np.multiply(tps, 2, out=tmp)
    tmp -= pos_d
    if exact:
        auc = int(np.multiply(neg_d, tmp, out=tmp).sum())
        np.add(tps, fps, out=tmp)
        predicted[:] = tmp
        pos_f = b.pos_f[:k]
        pos_f[:] = pos_d
    else:
        auc = np.multiply(neg_d, tmp, out=tmp).sum()
        np.add(tps, fps, out=predicted)
        pos_f = pos_d
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(tps, predicted, out=precision)
    zero = b.zero[:k]
    if np.equal(predicted, 0, out=zero).any():
        precision[zero] = 0.0
    ap, trap = _block_pr_sums(pos_f, precision, prev, work)
    return auc, ap, trap, tps[-1], fps[-1], precision[-1]


def _one_row_block(pos, tp0, fp0, prev, b: _AreaBuffers):
    """:func:`_counted_block` of integer counts holding one row per score (``neg = 1 - pos``).

    Then the k-th score from the top has ``tp0 + fp0 + k`` rows at or above it (no cumulative
    sum of the negatives, no zero division), and its AUROC term ``neg (2 tps - pos)`` is
    ``2 tps`` at a negative: the block's numerator is ``2 (sum(tps) - sum(pos tps))``, where
    the block's ``q`` positives have ``tps`` = tp0 + 1, ..., tp0 + q, so ``sum(pos tps)`` is
    ``q tp0 + q (q + 1) / 2`` (no pass). Every value equals :func:`_counted_block`'s (integers,
    and floats below 2**53 converted exactly).
    """
    k = pos.size
    pos_d, tps, predicted, precision = b.pos[:k], b.tps[:k], b.predicted[:k], b.precision[:k]
    pos_d[:] = pos[::-1]
    np.cumsum(pos_d, out=tps)
    q = int(tps[-1])
    tps += tp0
    auc = 2 * (int(tps.sum()) - (q * int(tp0) + q * (q + 1) // 2))
    np.add(b.ranks[:k], float(tp0 + fp0), out=predicted)
    np.divide(tps, predicted, out=precision)
    ap, trap = _block_pr_sums(pos_d, precision, prev, b.work[:k])
    tp = tps[-1]
    return auc, ap, trap, tp, tp0 + fp0 + k - tp, precision[-1]


def auroc_from_counts(pos, neg):
    """AUROC from counts per distinct score (ascending): the ``auroc`` of :func:`ranking_areas`.

    Parameters
    ----------
    pos, neg : array-like
        Positive and negative counts per distinct score, scores ascending on the last axis.

    Returns
    -------
    float or numpy.ndarray
        P(positive scored higher) + 1/2 P(tie) (Hanley & McNeil 1982); nan when P or N is 0.

    Examples
    --------
    >>> auroc_from_counts(np.array([0, 1, 1]), np.array([1, 1, 0]))
    0.875
    """
    return ranking_areas(pos, neg)["auroc"]


def average_precision_from_counts(pos, neg):
    """Average precision from counts per distinct score (ascending), as :func:`ranking_areas`.

    Parameters
    ----------
    pos, neg : array-like
        Positive and negative counts per distinct score, scores ascending on the last axis.

    Returns
    -------
    float or numpy.ndarray
        sum_k pos_k precision_k / P (scikit-learn's ``average_precision_score``); nan when
        P = 0.

    Examples
    --------
    >>> round(average_precision_from_counts(np.array([0, 1, 1]), np.array([1, 1, 0])), 4)
    0.8333
    """
    return ranking_areas(pos, neg)["average_precision"]


def roc_curve(sc: ScoreCounts):
    """ROC curve: (fpr, tpr, thresholds), thresholds at the distinct scores, highest first.

    Parameters
    ----------
    sc : ScoreCounts
        Exact score counts.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        False and true positive rates from (0, 0) with threshold +inf (scikit-learn's
        ``roc_curve(drop_intermediate=False)``; ISO/IEC TS 4213 6.3.6); tpr is nan everywhere
        without positives, fpr without negatives.

    Examples
    --------
    >>> sc = ScoreCounts.from_arrays(np.array([0, 1, 1]), np.array([0.2, 0.6, 0.9]))
    >>> [a.tolist() for a in roc_curve(sc)]
    [[0.0, 0.0, 0.0, 1.0], [0.0, 0.5, 1.0, 1.0], [inf, 0.9, 0.6, 0.2]]
    """
    tps, fps = _cumulative(sc)
    return _rate(fps), _rate(tps), _descending_thresholds(sc)


def _rate(cumulative: np.ndarray) -> np.ndarray:
    """``[0, cumulative / total]``, nan throughout when the total (the last entry) is 0 or absent."""
    out = np.empty(cumulative.size + 1)  # written once (not filled first): page faults cost more than division
    if cumulative.size and cumulative[-1] != 0:
        out[0] = 0.0
        np.divide(cumulative, cumulative[-1], out=out[1:])
    else:
        out.fill(np.nan)
    return out


def pr_curve(sc: ScoreCounts):
    """Precision-recall curve: (recall, precision, thresholds) as scikit-learn orders them.

    Parameters
    ----------
    sc : ScoreCounts
        Exact score counts.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        Thresholds ascend over the distinct scores; the last point is (recall 0, precision 1)
        and gets threshold +inf so that the three arrays have equal length
        (``thresholds[:-1]`` equals scikit-learn's ``precision_recall_curve``; ISO/IEC TS 4213
        6.3.8). With no positives recall is 1 everywhere, as in scikit-learn; a 0/0 precision
        is 0.

    Examples
    --------
    >>> sc = ScoreCounts.from_arrays(np.array([0, 1, 1]), np.array([0.2, 0.6, 0.9]))
    >>> [a.tolist() for a in pr_curve(sc)][:2]
    [[1.0, 1.0, 0.5, 0.0], [0.6666666666666666, 1.0, 1.0, 1.0]]
    """
    tps, _ = _cumulative(sc)
    n = tps.size
    # Written in place into the outputs (reversed views): at tens of millions of scores every
    # temporary array is a fresh mapping whose page faults cost more than the arithmetic.
    recall, thresholds = np.empty(n + 1), np.empty(n + 1)
    p = tps[-1] if n else 0.0
    if p:
        np.divide(tps, p, out=recall[n - 1::-1] if n else recall[:0])
    else:
        recall[:n] = 1.0
    recall[n] = 0.0
    thresholds[:n] = sc.scores
    thresholds[n] = np.inf
    return recall, _precision(sc), thresholds


def _precision(sc: ScoreCounts) -> np.ndarray:
    """The precision array of :func:`pr_curve` (thresholds ascending, then 1 at +inf; 0/0 is 0)."""
    tps, fps = _cumulative(sc)
    n = tps.size
    precision = np.zeros(n + 1)
    ascending = precision[n - 1::-1] if n else precision[:0]
    # In blocks through one cache-sized buffer: a whole-size tps + fps would be one more fresh
    # array (180 MB and its page faults at 22.5M distinct scores).
    denominator = np.empty(min(n, BLOCK))
    for begin in range(0, n, BLOCK):
        end = min(begin + BLOCK, n)
        d = np.add(tps[begin:end], fps[begin:end], out=denominator[:end - begin])
        np.divide(tps[begin:end], d, out=ascending[begin:end], where=d != 0)
    precision[n] = 1.0
    return precision


def gain_curve(sc: ScoreCounts):
    """Cumulative gain curve: (fraction of rows predicted positive, TPR, thresholds), from (0, 0).

    Parameters
    ----------
    sc : ScoreCounts
        Exact score counts.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        Thresholds from +inf down the distinct scores; the fraction is nan for an empty
        statistic and the TPR nan without positives (ISO/IEC TS 4213 6.3.9).

    Examples
    --------
    >>> sc = ScoreCounts.from_arrays(np.array([0, 1, 1, 0]), np.array([0.2, 0.6, 0.9, 0.1]))
    >>> [a.tolist() for a in gain_curve(sc)][:2]
    [[0.0, 0.25, 0.5, 0.75, 1.0], [0.0, 0.5, 1.0, 1.0, 1.0]]
    """
    return _fractions(sc), _rate(_cumulative(sc)[0]), _descending_thresholds(sc)


def _fractions(sc: ScoreCounts) -> np.ndarray:
    """The x of :func:`gain_curve`: ``[0, (tps + fps) / total]``, nan throughout for an empty statistic."""
    tps, fps = _cumulative(sc)
    frac = np.empty(tps.size + 1)
    if tps.size and tps[-1] + fps[-1]:
        frac[0] = 0.0
        np.add(tps, fps, out=frac[1:])
        frac[1:] /= frac[-1]
    else:
        frac.fill(np.nan)
    return frac


def _descending_thresholds(sc: ScoreCounts) -> np.ndarray:
    """``[+inf, scores highest first]``: the thresholds of the ROC, gain and lift curves."""
    out = np.empty(sc.scores.size + 1)
    out[0] = np.inf
    out[1:] = sc.scores[::-1]
    return out


def lift_curve(sc: ScoreCounts):
    """Lift curve: (fraction predicted positive, TPR / fraction, thresholds).

    Parameters
    ----------
    sc : ScoreCounts
        Exact score counts.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        The :func:`gain_curve` points without the first: lift at fraction 0 is 0/0
        (undefined). nan where the gain is nan.

    Examples
    --------
    >>> sc = ScoreCounts.from_arrays(np.array([0, 1, 1, 0]), np.array([0.2, 0.6, 0.9, 0.1]))
    >>> lift_curve(sc)[1].tolist()
    [2.0, 2.0, 1.3333333333333333, 1.0]
    """
    return lift_of_gain(*gain_curve(sc), sc=sc)


def lift_of_gain(frac: np.ndarray, tpr: np.ndarray, thresholds: np.ndarray, *, sc: ScoreCounts | None = None):
    """The lift curve from the arrays of :func:`gain_curve` (views of them but the lift itself).

    Parameters
    ----------
    frac, tpr, thresholds : numpy.ndarray
        :func:`gain_curve` of one statistic.
    sc : ScoreCounts, optional
        That statistic. A :class:`~metrics_core.counts.FoldedScoreCounts` (a class-at-a-time
        scan's) gets back the points of the folded-away scores it kept (``lift_depths``). Along
        a folded run the ROC, PR and gain curves are straight, the lift is not (TPR / depth with
        the TPR fixed): without them a class of prevalence 0.1 drew a straight line from
        (0.1, 10) to (1, 1), 5.5 at depth 0.5 where the curve is 2.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        As :func:`lift_curve`. A point added for a folded statistic has the threshold nan: the
        fold kept only each run's lowest score.

    Examples
    --------
    >>> lift_of_gain(np.array([0.0, 0.5, 1.0]), np.array([0.0, 1.0, 1.0]), np.array([np.inf, 0.9, 0.1]))[1].tolist()
    [2.0, 1.0]
    """
    x, lift, t = frac[1:], np.asarray(ratio(tpr[1:], frac[1:]), float).reshape(-1), thresholds[1:]
    depths = getattr(sc, "lift_depths", None) if isinstance(sc, FoldedScoreCounts) else None
    if depths is None or not depths.size or not x.size:
        return x, lift, t
    tps, fps = _cumulative(sc)
    added = depths / (tps[-1] + fps[-1])
    at = np.searchsorted(x, added)  # inside a run: the run's end point has its TPR
    return (np.insert(x, at, added), np.insert(lift, at, tpr[1:][np.minimum(at, x.size - 1)] / added),
            np.insert(np.asarray(t, np.float64), at, np.nan))


def probability_losses(sc: ScoreCounts | BinnedScoreCounts, threads: int = 1):
    """Log loss and Brier score of exact counts (:func:`~metrics_core.losses.exact_loss_sums`) or binned ones.

    Parameters
    ----------
    sc : ScoreCounts or BinnedScoreCounts
        Exact score counts, whose scores must be probabilities of the positive class; or binned
        counts with their rows' loss sums (:attr:`BinnedScoreCounts.losses`): the same values
        as the exact counts of the same rows, up to the order of the sums.
    threads : int
        Threads that share the exact counts' blocks; the result is the same for any number.

    Returns
    -------
    (float, float)
        ``(log_loss, brier)``; both nan with a RuntimeWarning when a score is outside [0, 1],
        and nan for an empty statistic.

    Notes
    -----
    log loss = -sum(pos log p + neg log(1 - p)) / total with p the score through
    :func:`metrics_core.losses.clip_probability` (as scikit-learn 1.9 clips it); Brier (1950)
    score = sum(pos (1 - s)^2 + neg s^2) / total. Scores holding one row each sum their
    logarithms through :func:`metrics_core.losses.log_sum` (one logarithm per 16 scores).

    Examples
    --------
    >>> sc = ScoreCounts.from_arrays(np.array([0, 1]), np.array([0.2, 0.6]))
    >>> [round(x, 4) for x in probability_losses(sc)]
    [0.367, 0.1]
    """
    if isinstance(sc, BinnedScoreCounts):
        return _binned_losses(sc)
    s = sc.scores
    if s.size and (s[0] < 0 or s[-1] > 1):
        warnings.warn(_NOT_PROBABILITIES, RuntimeWarning, stacklevel=3)
        return float("nan"), float("nan")
    ll, brier = exact_loss_sums(s, sc.pos, sc.neg, one_row_per_score=sc.one_row_per_score, threads=threads)
    total = float(s.size) if sc.one_row_per_score else float(sc.pos.sum() + sc.neg.sum())
    return ratio(ll, total), ratio(brier, total)


def _binned_losses(sc: BinnedScoreCounts):
    """(log_loss, brier) of a binned statistic from its loss sums; nan with a warning when not probabilities."""
    if sc.losses is None or np.isnan(sc.losses).any():
        warnings.warn(_NOT_PROBABILITIES if sc.losses is not None else
                      "These binned counts carry no loss sums (built without losses=True): log_loss and brier "
                      "are nan.", RuntimeWarning, stacklevel=4)
        return float("nan"), float("nan")
    return binned_losses(sc.losses, float(sc.pos.sum() + sc.neg.sum()))


def thin(x, y, thresholds, max_points: int = 1000):
    """At most ``max_points`` points of a curve for plotting and logging, evenly along its path.

    Parameters
    ----------
    x, y : array-like
        The curve's coordinates (nan treated as 0 for the path length).
    thresholds : array-like
        The threshold of each point.
    max_points : int
        Most points kept.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        The kept points (first and last always kept), unchanged when there are at most
        ``max_points``. Areas are always computed from the full statistic, never from a
        thinned curve.

    Examples
    --------
    >>> x = np.linspace(0, 1, 5000)
    >>> [a.size for a in thin(x, x ** 2, x, max_points=100)]
    [100, 100, 100]
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.size <= max_points:
        return x, y, np.asarray(thresholds)
    fx = np.nan_to_num(x)
    fy = np.nan_to_num(y)
    span_y = np.ptp(fy) or 1.0
    span_x = np.ptp(fx) or 1.0
    step = np.hypot(np.diff(fx) / span_x, np.diff(fy) / span_y)
    path = np.concatenate(([0.0], np.cumsum(step)))
    targets = np.linspace(0.0, path[-1], max_points)
    idx = np.unique(np.concatenate(([0, x.size - 1], np.searchsorted(path, targets).clip(0, x.size - 1))))
    if idx.size > max_points:
        idx = idx[np.linspace(0, idx.size - 1, max_points).round().astype(int)]
    return x[idx], y[idx], np.asarray(thresholds)[idx]
