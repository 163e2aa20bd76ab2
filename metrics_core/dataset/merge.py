"""Merging streams of statistics: balanced merge trees, bucketed exact score merges, partial statistics."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Sequence

import numpy as np

from metrics_core._score_kernels import PackedScoreCounts
from metrics_core.contract import binary_classes
from metrics_core.counts import ConfusionCounts, ScoreCounts
from metrics_core.stats import BinaryStats, MulticlassStats

__all__ = ["BucketedScoreMerger", "PartialStats", "TreeMerger", "exact_score_counts", "merge_tree",
           "release_free_memory"]


class TreeMerger:
    """Merge a stream of statistics pairwise like a binary counter: each statistic takes part in
    about log2(n) merges of statistics of similar size, instead of n merges into one that grows.

    Any object with ``.merge(other)`` works; the merge order is deterministic (left before right).

    Examples
    --------
    >>> class Text(str):
    ...     def merge(self, other):
    ...         return Text(self + other)
    >>> m = TreeMerger()
    >>> for ch in "abcde":
    ...     m.push(Text(ch))
    >>> m.result()
    'abcde'
    """

    def __init__(self):
        self._stack: list[tuple[int, object]] = []

    def push(self, stats) -> None:
        """Add the next statistic (merged with equal-level ones on the stack)."""
        level = 0
        while self._stack and self._stack[-1][0] == level:
            _, left = self._stack.pop()
            stats = left.merge(stats)
            level += 1
        self._stack.append((level, stats))

    def result(self):
        """The merge of everything pushed (None when nothing was)."""
        if not self._stack:
            return None
        _, out = self._stack.pop()
        while self._stack:
            _, left = self._stack.pop()
            out = left.merge(out)
        return out


def merge_tree(stats: Iterable):
    """Merge statistics in a balanced tree (see :class:`TreeMerger`).

    Parameters
    ----------
    stats : iterable
        Objects with ``.merge(other)``.

    Returns
    -------
    The merged statistic, or None when there are none.

    Examples
    --------
    >>> merge_tree([]) is None
    True
    """
    merger = TreeMerger()
    for s in stats:
        merger.push(s)
    return merger.result()


class BucketedScoreMerger:
    """Merge a stream of exact :class:`~metrics_core.counts.ScoreCounts` as independent merge trees
    over score ranges ("buckets"), concatenated at the end.

    Why: merging two large statistics allocates several arrays of their size. Above glibc's mmap
    threshold (32 MB at most) every such array is a fresh mapping whose pages the kernel must
    fault in and zero, and on this VM that kernel time was half of an exact scan's CPU. Buckets
    keep every merge small, so memory is reused: a 50M-row weighted scan went from 12.9-16.7 s
    (system time 5.8-8.9 s) to 8.7-9.5 s (2.0-2.4 s), and its peak RSS from 2.3 to 1.7 GiB.

    The bucket edges are quantiles of the distinct scores of the first non-empty statistic
    (``min(buckets, size // min_bucket)`` buckets, so small data keeps one). Every push reaches
    every bucket (as a slice, empty or not), so each bucket merges in the same tree order as a
    single :class:`TreeMerger` would, and equal scores always share a bucket: the result is
    identical to :func:`merge_tree` of the same statistics. Each slice is packed once
    (:class:`~metrics_core._score_kernels.PackedScoreCounts`, the form SciPy's sparse addition
    merges) and unpacked once at the end, instead of at every merge: a 100M-row weighted scan
    went from 32 to 24 s on one thread (2026-11-26, benchmarks/RESULTS.md).

    With ``threads`` > 1 the buckets are split into that many groups of neighbouring buckets,
    each merged on a thread of its own, in push order: every bucket still merges in the same
    order, so the result does not depend on the number of threads. A push waits until the
    previous one is merged, so at most two statistics are held besides the merged ones.

    Parameters
    ----------
    buckets : int
        Most buckets.
    min_bucket : int
        Fewest distinct scores of the first statistic per bucket.
    threads : int
        Threads merging bucket groups (1: on the caller's thread).

    Examples
    --------
    >>> m = BucketedScoreMerger(buckets=4, min_bucket=1)
    >>> for s in ([0.1, 0.9], [0.5, 0.9]):
    ...     m.push(ScoreCounts.from_arrays(np.array([True, False]), np.array(s)))
    >>> m.result().scores.tolist()
    [0.1, 0.5, 0.9]
    """

    def __init__(self, buckets: int = 64, min_bucket: int = 50_000, threads: int = 1):
        self.buckets, self.min_bucket, self.threads = buckets, min_bucket, threads
        self._edges: np.ndarray | None = None
        self._mergers: list[TreeMerger] = []
        self._pending: list = []  # empty statistics pushed before the edges are known
        self._pools: list = []  # one single-thread executor per bucket group (threads > 1)
        self._groups: list = []  # bucket index ranges of the groups
        self._inflight: list = []  # futures of the last push

    def push(self, sc) -> None:
        """Add the next statistic."""
        if self._edges is None:
            if sc.scores.size == 0:
                self._pending.append(sc)
                return
            r = max(1, min(self.buckets, sc.scores.size // self.min_bucket))
            self._edges = np.unique(sc.scores[(np.arange(1, r) * sc.scores.size) // r])
            self._mergers = [TreeMerger() for _ in range(self._edges.size + 1)]
            for early in self._pending:
                self._push(early)
        self._push(sc)

    def _push(self, sc) -> None:
        cut = np.concatenate(([0], np.searchsorted(sc.scores, self._edges), [sc.scores.size]))

        def push_range(first: int, stop: int) -> None:
            for b in range(first, stop):
                a, z = cut[b], cut[b + 1]
                self._mergers[b].push(PackedScoreCounts.of(type(sc)(sc.scores[a:z], sc.pos[a:z], sc.neg[a:z])))

        if self.threads <= 1 or len(self._mergers) == 1:
            push_range(0, len(self._mergers))
            return
        if not self._pools:
            from concurrent.futures import ThreadPoolExecutor

            bounds = np.linspace(0, len(self._mergers), min(self.threads, len(self._mergers)) + 1).astype(int)
            self._groups = list(zip(bounds[:-1], bounds[1:]))
            self._pools = [ThreadPoolExecutor(1, thread_name_prefix="classwatch-merge") for _ in self._groups]
        self._wait()
        self._inflight = [pool.submit(push_range, a, z) for pool, (a, z) in zip(self._pools, self._groups)]

    def _wait(self) -> None:
        """Wait for the last push's merges (raising their error, if any)."""
        inflight, self._inflight = self._inflight, []
        for future in inflight:
            future.result()

    def result(self):
        """The merge of everything pushed (None when nothing was)."""
        if self._edges is None:
            return merge_tree(self._pending)
        try:
            self._wait()
        finally:
            for pool in self._pools:
                pool.shutdown()
            self._pools = []
        parts = [m.result() for m in self._mergers]
        self._mergers = []
        return ScoreCounts(*PackedScoreCounts.unpack(parts))


def exact_score_counts(scores) -> list:
    """The exact score statistics of a ``scores`` field, as a list.

    Parameters
    ----------
    scores : ScoreCounts, tuple of ScoreCounts, binned counts or None
        The ``scores`` of :class:`~metrics_core.stats.BinaryStats` or
        :class:`~metrics_core.stats.MulticlassStats`.

    Returns
    -------
    list of ScoreCounts
        Binary: one; multiclass: K; binned or no scores: empty.
    """
    if isinstance(scores, ScoreCounts):
        return [scores]
    if isinstance(scores, tuple) and scores and isinstance(scores[0], ScoreCounts):
        return list(scores)
    return []


def release_free_memory() -> None:
    """Hand the heap's free pages back to the OS (glibc ``malloc_trim``; a no-op elsewhere).

    The bucketed merges (:class:`BucketedScoreMerger`) work in arrays small enough to be reused
    from the heap, which is what makes them fast; after the scan that heap is mostly free but
    still resident. Without this, the curves of a 100M-row report (fresh mappings of about 2 GB)
    came on top of it: 4.11 GiB peak RSS against 3.46 GiB before the buckets.

    Returns
    -------
    None
    """
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def relabel(counts: ConfusionCounts | None, labels) -> ConfusionCounts | None:
    """The same counts over other label names.

    Parameters
    ----------
    counts : ConfusionCounts or None
    labels : array-like
        The new names, one per class in the order of the matrix.

    Returns
    -------
    ConfusionCounts or None
        None stays None.
    """
    return None if counts is None else ConfusionCounts(counts.matrix, labels)


@dataclass(frozen=True)
class PartialStats:
    """Statistics of some rows before the binary class names are settled: merge, then :meth:`finish`.

    A binary batch (or partition) holding one class cannot know the name of the other one, so its
    confusion is kept with the role labels ``[0, 1]`` (negative, positive) and the label values
    seen are carried along; :meth:`finish` names the classes once everything is merged. For
    multiclass statistics the class list is fixed up front and ``seen`` stays empty.

    Examples
    --------
    >>> from metrics_core.report import binary_stats
    >>> a = PartialStats(binary_stats([1, 1], y_pred=[1, 0]), frozenset({"yes"}))
    >>> a.merge(a).finish("yes").confusion.labels.tolist()
    ['not yes', 'yes']
    """

    stats: BinaryStats | MulticlassStats
    seen: frozenset = frozenset()

    def merge(self, other: "PartialStats") -> "PartialStats":
        """The statistics of both parts."""
        return PartialStats(self.stats.merge(other.stats), self.seen | other.seen)

    def finish(self, pos_label=1, labels: Sequence | None = None) -> BinaryStats | MulticlassStats:
        """The final statistics; binary: labels ``[negative, positive]`` as the in-memory report names them.

        Parameters
        ----------
        pos_label
            The positive class.
        labels : sequence, optional
            The binary class list (names the negative class even when no row holds it).

        Returns
        -------
        BinaryStats or MulticlassStats

        Raises
        ------
        InputError
            More than two classes seen, or a positive class that is not among them
            (:func:`metrics_core.contract.binary_classes`).
        """
        if not isinstance(self.stats, BinaryStats):
            return self.stats
        names = binary_classes(sorted(self.seen, key=str), pos_label, where="label")
        if labels is not None:
            names = binary_classes(list(labels), pos_label, where="labels")
        names = np.array(names, dtype=object if isinstance(names[1], str) else None)
        return replace(self.stats, confusion=relabel(self.stats.confusion, names),
                       weighted_confusion=relabel(self.stats.weighted_confusion, names))
