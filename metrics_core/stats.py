"""The per-task bundles of mergeable statistics that a report is computed from."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from metrics_core.counts import BinnedScoreCounts, ConfusionCounts, ScoreCounts


@dataclass(frozen=True)
class LossSums:
    """Sum and sum of squares of a per-row loss with the (weighted) row total: mergeable by addition.

    Used for the multiclass log loss, whose per-row value depends on K scores.
    """

    total: float = 0.0
    total_sq: float = 0.0
    weight: float = 0.0

    def merge(self, other: "LossSums") -> "LossSums":
        return LossSums(self.total + other.total, self.total_sq + other.total_sq, self.weight + other.weight)

    @property
    def mean(self) -> float:
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
    """2 x 2 confusion at the threshold (labels ``[negative, positive]``), the score counts
    (exact or binned; None without scores) and the number of rows. Merge = merge of each part.

    ``weighted_confusion`` is the same confusion weighted by a second column (e.g. expenditure),
    counted in the same pass, for the weighted twin of every count-based metric (None without).
    """

    confusion: ConfusionCounts
    scores: ScoreCounts | BinnedScoreCounts | None
    n_rows: int
    threshold: float = 0.5
    prob_scores: bool = True  # False once any score fell outside [0, 1]
    weighted_confusion: ConfusionCounts | None = None

    def merge(self, other: "BinaryStats") -> "BinaryStats":
        if self.threshold != other.threshold:
            raise ValueError("Cannot merge binary statistics computed at different thresholds.")
        twin = _merge_optional(self.weighted_confusion, other.weighted_confusion, _merge_binary_confusion)
        return BinaryStats(_merge_binary_confusion(self.confusion, other.confusion),
                           _merge_optional(self.scores, other.scores),
                           self.n_rows + other.n_rows, self.threshold, self.prob_scores and other.prob_scores, twin)


@dataclass(frozen=True)
class MulticlassStats:
    """K x K confusion, one-vs-rest score counts per class (None without scores), the summed
    log loss and the number of rows. Merge = merge of each part. ``weighted_confusion`` as in
    :class:`BinaryStats`."""

    confusion: ConfusionCounts
    scores: tuple | None
    log_loss: LossSums | None
    n_rows: int
    prob_scores: bool = True
    weighted_confusion: ConfusionCounts | None = None

    def merge(self, other: "MulticlassStats") -> "MulticlassStats":
        if (self.scores is None) != (other.scores is None):
            raise ValueError("Cannot merge statistics with scores and statistics without scores.")
        scores = None if self.scores is None else tuple(a.merge(b) for a, b in zip(self.scores, other.scores))
        return MulticlassStats(self.confusion.merge(other.confusion), scores,
                               _merge_optional(self.log_loss, other.log_loss), self.n_rows + other.n_rows,
                               self.prob_scores and other.prob_scores,
                               _merge_optional(self.weighted_confusion, other.weighted_confusion))


@dataclass(frozen=True)
class MultilabelStats:
    """Per-label 2 x 2 confusion ``(L, 2, 2)`` and example-based sums over rows.

    ``sample_sums`` maps a name (jaccard, precision, recall, f1, exact_match) to
    ``(sum over defined rows, sum of squares, number of defined rows)``. Merge = addition.
    """

    label_confusion: np.ndarray
    labels: np.ndarray
    sample_sums: dict = field(default_factory=dict)
    n_rows: int = 0

    def merge(self, other: "MultilabelStats") -> "MultilabelStats":
        sums = {k: tuple(a + b for a, b in zip(self.sample_sums[k], other.sample_sums[k])) for k in self.sample_sums}
        return MultilabelStats(self.label_confusion + other.label_confusion, self.labels, sums,
                               self.n_rows + other.n_rows)
