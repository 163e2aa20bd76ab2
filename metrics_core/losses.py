"""The per-row losses of binary probability scores (log loss, squared error) summed per score or per bin."""

from __future__ import annotations

import numpy as np

from metrics_core.formulas import ratio



def clip_probability(s, out=None):
    """Scores clipped to [eps, 1 - eps], eps the float64 machine epsilon, as scikit-learn 1.9's log loss
    clips them: the one clipping of every log loss in metrics_core (binary, binned, multiclass, baselines).

    >>> clip_probability(np.array([0.0, 0.5, 1.0])).tolist() == [2.0 ** -52, 0.5, 1 - 2.0 ** -52]
    True
    """
    eps = np.finfo(np.float64).eps
    return np.clip(s, eps, 1 - eps, out=out)


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
    log_own = np.subtract(1.0, p)  # the probability of the row's own class
    np.copyto(log_own, p, where=y)
    np.log(log_own, out=log_own)
    squared = np.subtract(s, y)  # (s - 1)^2 is (1 - s)^2 exactly
    np.square(squared, out=squared)
    if w is not None:
        log_own *= w
        squared *= w
    ll = np.bincount(cell, weights=log_own, minlength=2 * bins)
    np.subtract(0.0, ll, out=ll)  # (0 - 0 is +0.0: an empty bin sums to 0.0, not -0.0)
    sq = np.bincount(cell, weights=squared, minlength=2 * bins)
    return np.stack((ll[bins:], ll[:bins], sq[bins:], sq[:bins]))


def binned_losses(losses: np.ndarray, total) -> tuple[float, float]:
    """``(log_loss, brier)`` from per-bin :func:`binned_loss_sums` and the (weighted) row total; nan without rows."""
    return ratio(losses[0].sum() + losses[1].sum(), total), ratio(losses[2].sum() + losses[3].sum(), total)
