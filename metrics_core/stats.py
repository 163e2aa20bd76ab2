"""The per-task bundles of mergeable statistics that a report is computed from."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from metrics_core.counts import BinnedScoreCounts, ConfusionCounts, ScoreCounts


@dataclass(frozen=True)
class LossSums:
    """Sum and sum of squares of a per-row loss with the (weighted) row total; merges by addition.

    Used for the multiclass log loss, whose per-row value -log p(true class) depends on K scores,
    so no per-class score statistic can give it. The mean is the log loss; the sum of squares
    gives its central-limit interval.

    Parameters
    ----------
    total : float
        Sum over rows of weight x loss (nan once a score was outside [0, 1]).
    total_sq : float
        Sum over rows of weight x loss^2.
    weight : float
        Sum of the row weights (the number of rows when unweighted).

    Examples
    --------
    >>> a, b = LossSums(1.0, 1.0, 2.0), LossSums(3.0, 5.0, 2.0)
    >>> a.merge(b), a.merge(b).mean
    (LossSums(total=4.0, total_sq=6.0, weight=4.0), 1.0)
    """

    total: float = 0.0
    total_sq: float = 0.0
    weight: float = 0.0

    def merge(self, other: "LossSums") -> "LossSums":
        """The sums of two parts of the rows: each field added.

        Parameters
        ----------
        other : LossSums

        Returns
        -------
        LossSums
        """
        return LossSums(self.total + other.total, self.total_sq + other.total_sq, self.weight + other.weight)

    @property
    def mean(self) -> float:
        """Weighted mean loss ``total / weight``; nan when the weight is 0 (no rows)."""
        return self.total / self.weight if self.weight else float("nan")


def _merge_optional(a, b, merge=None):
    if a is None or b is None:
        if a is not None or b is not None:
            raise ValueError("Cannot merge statistics with and without an optional part (scores or weighted twin).")
        return None
    return merge(a, b) if merge is not None else a.merge(b)


def _merge_binary_confusion(a: ConfusionCounts, b: ConfusionCounts) -> ConfusionCounts:
    """Add two [negative, positive] confusions; a partition without negatives has label None."""
    neg_a, pos_a = a.labels
    neg_b, pos_b = b.labels
    if pos_a != pos_b or (neg_a is not None and neg_b is not None and neg_a != neg_b):
        raise ValueError(f"Cannot merge binary statistics over different labels: {a.labels.tolist()} vs "
                         f"{b.labels.tolist()}.")
    labels = np.array([neg_a if neg_a is not None else neg_b, pos_a], dtype=object)
    return ConfusionCounts(a.matrix + b.matrix, labels)


@dataclass(frozen=True)
class BinaryStats:
    """Everything a binary report is computed from; merge = merge of each part.

    Parameters
    ----------
    confusion : ConfusionCounts
        2 x 2 confusion at the threshold, labels ``[negative, positive]``; the negative label is
        None while no row of the part held it (it is filled in by a merge that meets it).
    scores : ScoreCounts, BinnedScoreCounts or None
        Exact or binned score counts; None without scores (no threshold-free metrics then).
    n_rows : int
        Number of rows (unweighted), for interval widths.
    threshold : float
        A row is predicted positive when its score >= threshold; parts must agree.
    weighted_confusion : ConfusionCounts or None
        The same confusion weighted by a second column (e.g. expenditure), counted in the same
        pass, for the ``weighted/<key>`` twin of every count-based metric.

    Examples
    --------
    >>> from metrics_core.report import binary_stats
    >>> a = binary_stats([0, 1], y_score=[0.2, 0.7])
    >>> b = binary_stats([1, 1], y_score=[0.4, 0.9])
    >>> a.merge(b).confusion.matrix.tolist(), a.merge(b).n_rows
    ([[1, 0], [1, 2]], 4)
    """

    confusion: ConfusionCounts
    scores: ScoreCounts | BinnedScoreCounts | None
    n_rows: int
    threshold: float = 0.5
    weighted_confusion: ConfusionCounts | None = None

    def merge(self, other: "BinaryStats") -> "BinaryStats":
        """The statistics of the rows of both parts.

        Confusions add (over the same labels), score counts merge (:meth:`ScoreCounts.merge`),
        row counts add.

        Parameters
        ----------
        other : BinaryStats
            Statistics of other rows, at the same threshold, with the same optional parts.

        Returns
        -------
        BinaryStats

        Raises
        ------
        ValueError
            Different thresholds, positive labels, or one part with scores (or a twin) and one without.
        """
        if self.threshold != other.threshold:
            raise ValueError("Cannot merge binary statistics computed at different thresholds.")
        twin = _merge_optional(self.weighted_confusion, other.weighted_confusion, _merge_binary_confusion)
        return BinaryStats(_merge_binary_confusion(self.confusion, other.confusion),
                           _merge_optional(self.scores, other.scores),
                           self.n_rows + other.n_rows, self.threshold, twin)


@dataclass(frozen=True)
class MulticlassStats:
    """Everything a multiclass report is computed from; merge = merge of each part.

    Parameters
    ----------
    confusion : ConfusionCounts
        K x K confusion over the labels.
    scores : tuple of ScoreCounts or BinnedScoreCounts, or None
        One-vs-rest score counts per class (None without scores, or after the first pass of a
        class-at-a-time scan).
    log_loss : LossSums or None
        Summed per-row log loss (None without scores).
    n_rows : int
        Number of rows (unweighted).
    weighted_confusion : ConfusionCounts or None
        As in :class:`BinaryStats`.

    Examples
    --------
    >>> from metrics_core.report import multiclass_stats
    >>> a = multiclass_stats(["a", "b"], ["a", "a"], labels=["a", "b", "c"])
    >>> b = multiclass_stats(["c"], ["c"], labels=["a", "b", "c"])
    >>> a.merge(b).confusion.matrix.tolist()
    [[1, 0, 0], [1, 0, 0], [0, 0, 1]]
    """

    confusion: ConfusionCounts
    scores: tuple | None
    log_loss: LossSums | None
    n_rows: int
    weighted_confusion: ConfusionCounts | None = None

    def merge(self, other: "MulticlassStats") -> "MulticlassStats":
        """The statistics of the rows of both parts: confusions add, per-class score counts merge,
        log-loss sums add.

        Parameters
        ----------
        other : MulticlassStats
            Statistics of other rows over the same labels, with the same optional parts.

        Returns
        -------
        MulticlassStats

        Raises
        ------
        ValueError
            One part with scores and one without.
        InputError
            Different labels.
        """
        if (self.scores is None) != (other.scores is None):
            raise ValueError("Cannot merge statistics with scores and statistics without scores.")
        scores = None if self.scores is None else tuple(a.merge(b) for a, b in zip(self.scores, other.scores))
        return MulticlassStats(self.confusion.merge(other.confusion), scores,
                               _merge_optional(self.log_loss, other.log_loss), self.n_rows + other.n_rows,
                               _merge_optional(self.weighted_confusion, other.weighted_confusion))


@dataclass(frozen=True)
class MultilabelStats:
    """Everything a multilabel report is computed from; merge = addition of every part.

    Parameters
    ----------
    label_confusion : numpy.ndarray, shape (L, 2, 2)
        Per-label confusion ``[[tn, fp], [fn, tp]]``.
    labels : numpy.ndarray
        The L label names.
    sample_sums : dict
        Name (jaccard, precision, recall, f1, exact_match) -> ``(sum over defined rows, sum of
        squares, number of defined rows)`` of the example-based per-row values.
    n_rows : int
        Number of rows.

    Examples
    --------
    >>> from metrics_core.multilabel import multilabel_stats
    >>> a = multilabel_stats([[1, 0]], [[1, 1]])
    >>> b = multilabel_stats([[0, 1]], [[0, 1]])
    >>> a.merge(b).sample_sums["exact_match"], a.merge(b).n_rows
    ((1.0, 1.0, 2.0), 2)
    """

    label_confusion: np.ndarray
    labels: np.ndarray
    sample_sums: dict = field(default_factory=dict)
    n_rows: int = 0

    def merge(self, other: "MultilabelStats") -> "MultilabelStats":
        """The statistics of the rows of both parts: confusions, sums and row counts added.

        Parameters
        ----------
        other : MultilabelStats
            Statistics of other rows over the same labels.

        Returns
        -------
        MultilabelStats
        """
        sums = {k: tuple(a + b for a, b in zip(self.sample_sums[k], other.sample_sums[k])) for k in self.sample_sums}
        return MultilabelStats(self.label_confusion + other.label_confusion, self.labels, sums,
                               self.n_rows + other.n_rows)
