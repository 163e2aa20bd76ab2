"""Monitoring per segment: per-segment statistics in the scan's pass, the segments' tests and their summary.

A segment is the rows of one value of a watched column (``retailer=shop_07``). Each batch's rows
are split by segment with one sort of the column's codes (no loop over rows), and each segment
gets the same :func:`~metrics_core.monitoring.period.update` as the whole batch, so a segment's
statistics merge across batches, files and threads as the period's do
(:attr:`PeriodStats.segments <metrics_core.monitoring.period.PeriodStats>`). Every test kind then
runs within each segment against the same segment of the reference, and all of a period's tests,
whole and per segment, are corrected together (:func:`~metrics_core.monitoring.decide_alert`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from metrics_core.monitoring.decision import Alert, Headline
from metrics_core.monitoring.kinds import TestKey, run_tests_of
from metrics_core.monitoring.bins import Bins
from metrics_core.monitoring.period import PeriodStats, class_name, update
from metrics_core.monitoring.sample import merged as merged_samples
from metrics_core.monitoring.sparse import SparseCounts, add_into, added

__all__ = ["MIN_SEGMENT_ROWS", "SEGMENT_BOOT", "MISSING", "SegmentTests", "segment_update", "merge_segments",
           "merge_into", "dense_segments", "segment_tests", "segment_metrics", "segment_table"]

#: Rows a segment needs in the period AND in the same segment of the reference to be tested. Under
#: it a prevalence of 10 % rests on fewer than 10 rows, below the normal approximation's rule of
#: 5 expected successes and failures for most classes, and the score and price histograms are
#: mostly empty: the tests would be undefined or noisy, and every one of them costs correction
#: power from the period's other tests. A smaller segment is named once in the notes, not tested.
MIN_SEGMENT_ROWS = 200

#: Bootstrap replicates of a segment's intervals and of its reference's calibration map (the whole
#: period's use the run spec's ``n_boot`` and 100). A segment's tests repeat the period's 50 times
#: over; 50 replicates put a standard error (the headline test's, read off the interval) within
#: about 10 % of its value (relative error sqrt(1 / (2 (B - 1)))), which moves the test's p-value
#: little next to the correction over the period's thousands of tests, at a fraction of the cost.
SEGMENT_BOOT = 50

#: The segment value given to a row whose segment column is null.
MISSING = "(missing)"

#: Most segments a note names before "and N more".
_NOTE_NAMES = 10


def _codes(column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Per row, the index of its value in the returned value names (nulls: :data:`MISSING`)."""
    enc = pc.dictionary_encode(column)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks() if enc.num_chunks != 1 else enc.chunk(0)
    names = [class_name(v) for v in enc.dictionary.to_pylist()]
    codes = enc.indices
    if codes.null_count:
        codes = pc.fill_null(codes, len(names))
        names.append(MISSING)
    return np.asarray(codes.to_numpy(zero_copy_only=False), dtype=np.int64), names


def segment_update(columns: dict[str, pa.Array], task: str, labels: np.ndarray, bins: Bins, pred_idx: np.ndarray, *,
                   label_idx: np.ndarray | None = None, scores: np.ndarray | None = None,
                   price: np.ndarray | None = None, weight: np.ndarray | None = None,
                   threshold: float = 0.5, design_weight: np.ndarray | None = None,
                   labelled_sample: bool = False) -> dict:
    """The statistics of each segment of one batch: ``(column, value)`` -> :class:`PeriodStats`.

    Parameters
    ----------
    columns : dict of str to pyarrow.Array
        The segment columns of the batch's rows (the rows ``pred_idx`` describes).
    task, labels, bins, pred_idx, label_idx, scores, price, weight, threshold, design_weight, labelled_sample
        As :func:`~metrics_core.monitoring.period.update`, for the batch's rows.

    Returns
    -------
    dict
        Per segment value met in the batch (text, :func:`class_name`; a null is :data:`MISSING`),
        the ``update`` of its rows, its histograms sparse and without the labelled sample's design
        statistics (``sample`` None: a segment is judged without labels whenever the period's are a
        sample). The rows are grouped by one stable sort of the value codes.

    Examples
    --------
    >>> out = segment_update({"shop": pa.array(["a", "b", "a", None])}, "binary", np.array([0, 1]),
    ...                      Bins(score_bins=10), np.array([0, 1, 1, 0]))
    >>> {k: v.pred_counts.tolist() for k, v in sorted(out.items())}
    {('shop', '(missing)'): [1, 0], ('shop', 'a'): [1, 1], ('shop', 'b'): [0, 1]}
    """
    out = {}
    for col, values in columns.items():
        codes, names = _codes(values)
        # numpy sorts 16-bit integers stably by radix: 5x faster than int64 codes, the same order
        order = np.argsort(codes.astype(np.uint16) if len(names) <= np.iinfo(np.uint16).max else codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
        # the rows in segment order, once: each segment's rows are then a slice (a view), in their batch order
        rows = {k: None if a is None else a[order] for k, a in (("pred_idx", pred_idx), ("label_idx", label_idx),
                ("scores", scores), ("price", price), ("weight", weight), ("design_weight", design_weight))}
        for j, name in enumerate(names):
            at = slice(bounds[j], bounds[j + 1])
            if at.start == at.stop:
                continue
            part = {k: None if a is None else a[at] for k, a in rows.items()}
            out[(col, name)] = update(task, labels, bins, threshold=threshold, labelled_sample=labelled_sample,
                                      sparse=True, design=False, **part)
    return out


#: The histograms of a period's statistics, a few MB each with segments (per class, per cell): a
#: segment's of a batch are sparse (:class:`~metrics_core.monitoring.sparse.SparseCounts`), and the
#: scan sums them in place into one dense array per segment (:func:`merge_into`).
_HISTOGRAMS = ("score_counts", "price_counts", "price_cells", "score_by_pred", "positives_by_pred")


def _own(h: np.ndarray | SparseCounts) -> np.ndarray:
    """A new dense array of the histogram ``h``."""
    return h.dense() if isinstance(h, SparseCounts) else np.array(h, order="C")


def _accumulate(acc: np.ndarray, v: np.ndarray | SparseCounts) -> np.ndarray:
    """``acc + v``, added in place into ``acc`` (an array of its own) when the type and shape allow."""
    same = isinstance(v, SparseCounts) or np.result_type(acc, v) == acc.dtype
    if same and np.shape(acc) == tuple(v.shape) and acc.flags.writeable and acc.flags.c_contiguous:
        return add_into(acc, v)
    return added(acc, v)  # as the merge adds them (a wider type, or the error of unlike shapes)


def merge_segments(parts: list[PeriodStats]) -> PeriodStats:
    """``functools.reduce(PeriodStats.merge, parts)``, the large histograms summed into one dense array each.

    The same values: each histogram holds the same integer sums, added in place (a segment's sparse
    histogram bin by bin) instead of into a new array per merge; with three parts or more the
    labelled samples are aggregated at once (:func:`~metrics_core.monitoring.sample.merged`, the same
    sums); everything else (and every check on the parts) is :meth:`PeriodStats.merge`'s. A large
    batch's statistics are the merge of its segments' (:data:`~metrics_core.monitoring.scan.MERGE_ROWS_PER_SEGMENT`).
    The result's histograms are dense and never a part's own arrays, so a scan may add to them in
    place (:func:`merge_into`).

    Examples
    --------
    >>> parts = [update("binary", np.array([0, 1]), Bins(score_bins=10), np.array([i % 2, 1]),
    ...                 scores=np.array([[0.1 * i], [0.9]]), sparse=i % 2 == 0) for i in range(4)]
    >>> a, b = merge_segments(parts), functools.reduce(PeriodStats.merge, parts)
    >>> bool(np.array_equal(a.score_counts, b.score_counts)) and a.pred_counts.tolist() == b.pred_counts.tolist()
    True
    """
    if len(parts) == 1:
        return replace(parts[0], **{f: _own(getattr(parts[0], f)) for f in _HISTOGRAMS
                                    if getattr(parts[0], f) is not None})
    summed = [f for f in _HISTOGRAMS if all(getattr(p, f) is not None for p in parts)]
    # the labelled samples' sparse cells in one aggregation rather than one sort per merge
    samples = {}
    if len(parts) >= 3 and all(p.sample is not None for p in parts):
        samples["sample"] = merged_samples([p.sample for p in parts])
    merged = functools.reduce(PeriodStats.merge, [replace(p, **dict.fromkeys(summed), **dict.fromkeys(samples))
                                                  for p in parts])
    sums = {}
    for f in summed:
        acc = _own(getattr(parts[0], f))
        for p in parts[1:]:
            acc = _accumulate(acc, getattr(p, f))
        sums[f] = acc
    return replace(merged, **sums, **samples)


def merge_into(total: PeriodStats, part: PeriodStats) -> PeriodStats:
    """``total.merge(part)``, the large histograms of ``total`` and of its segments added to in place.

    For a scan's running total: the same values as :meth:`PeriodStats.merge` (each histogram
    ``total + part``, element-wise), without a new array of a few MB per segment and batch; a sparse
    histogram of ``total`` becomes a dense one here, once. Each dense histogram array of ``total``
    and of its segments must be its own, shared with nothing else (a batch's statistics are:
    :func:`update` makes new arrays, :func:`merge_segments` never returns a part's); ``total`` must
    not be read afterwards.

    Examples
    --------
    >>> parts = [update("binary", np.array([0, 1]), Bins(score_bins=10), np.array([i % 2, 1]),
    ...                 scores=np.array([[0.1 * i], [0.9]])) for i in range(3)]
    >>> a = merge_into(parts[0].merge(parts[1]), parts[2])
    >>> b = functools.reduce(PeriodStats.merge, parts)
    >>> bool(np.array_equal(a.score_counts, b.score_counts)) and a.pred_counts.tolist() == b.pred_counts.tolist()
    True
    """
    summed = [f for f in _HISTOGRAMS if getattr(total, f) is not None and getattr(part, f) is not None]
    blank = dict.fromkeys(summed)
    merged = replace(total, **blank, segments={}).merge(replace(part, **blank, segments={}))
    sums = {}
    for f in summed:
        acc = getattr(total, f)
        sums[f] = _accumulate(_own(acc) if isinstance(acc, SparseCounts) else acc, getattr(part, f))
    segments = {k: merge_into(total.segments[k], part.segments[k]) if k in total.segments and k in part.segments
                else total.segments.get(k) or part.segments[k] for k in {**total.segments, **part.segments}}
    return replace(merged, **sums, segments=segments)


def dense_segments(stats: PeriodStats) -> PeriodStats:
    """``stats`` with every histogram dense, its segments' too (a scan's result: the statistics every
    test reads hold arrays; :class:`~metrics_core.monitoring.sparse.SparseCounts` live only in a scan)."""
    fix = {f: getattr(stats, f).dense() for f in _HISTOGRAMS if isinstance(getattr(stats, f), SparseCounts)}
    if stats.segments:
        fix["segments"] = {k: dense_segments(v) for k, v in stats.segments.items()}
    return replace(stats, **fix) if fix else stats


@dataclass(frozen=True)
class SegmentTests:
    """The tests of every tested segment (keys carry the segment), their headlines, the segments
    tested and the sentences on those not tested."""

    tests: dict = field(default_factory=dict)
    headlines: dict = field(default_factory=dict)
    tested: tuple = ()
    notes: tuple[str, ...] = ()


def _note(what: str, segments: list[tuple[tuple[str, str], str]]) -> str:
    """One sentence naming up to :data:`_NOTE_NAMES` segments and why they were not tested."""
    named = ", ".join(f"{c}={v} ({detail})" for (c, v), detail in segments[:_NOTE_NAMES])
    more = f" and {len(segments) - _NOTE_NAMES} more" if len(segments) > _NOTE_NAMES else ""
    return f"{len(segments)} segment(s) {what}, not tested: {named}{more}"


def segment_tests(reference: PeriodStats, current: PeriodStats,
                  extra: Callable[[PeriodStats, PeriodStats], tuple[dict, Headline | None]] | None = None,
                  min_rows: int = MIN_SEGMENT_ROWS) -> SegmentTests:
    """Every monitoring test within each segment of ``current`` against the same segment of ``reference``.

    Parameters
    ----------
    reference, current : PeriodStats
        Statistics scanned with the same segment columns (:attr:`PeriodStats.segments`).
    extra : callable, optional
        ``extra(reference_segment, current_segment) -> (tests, headline)``: the tests that need
        more than the two statistics (calibration) and the segment's headline (measured, or the
        label-lag estimate without labels; None for none).
    min_rows : int
        Rows a segment needs in both (:data:`MIN_SEGMENT_ROWS`).

    Returns
    -------
    SegmentTests
        Tests keyed ``TestKey(kind, class, (column, value))`` in segment order; the headline per
        tested segment; one note for the segments absent from the reference, one for those too
        small, one for the reference's segments without a row in the period (none when all were
        tested).
    """
    tests, headlines, tested = {}, {}, []
    absent, small = [], []
    for seg in sorted(current.segments):
        cur, ref = current.segments[seg], reference.segments.get(seg)
        if ref is None:
            absent.append((seg, f"{cur.n_rows:,} rows"))
        elif min(ref.n_rows, cur.n_rows) < min_rows:
            small.append((seg, f"{cur.n_rows:,} rows, {ref.n_rows:,} in the reference"))
        else:
            tested.append(seg)
    pairs = [(reference.segments[seg], current.segments[seg]) for seg in tested]
    extras = []

    def more() -> None:
        extras.extend(extra(ref, cur) if extra is not None else ({}, None) for ref, cur in pairs)

    # every segment's distribution tests on one set of threads, not one pool per segment; the
    # extra tests on this thread while the heavy distribution tests finish
    found_all = run_tests_of(pairs, meanwhile=more)
    for seg, found, (more_tests, head) in zip(tested, found_all, extras, strict=True):
        found.update(more_tests)
        tests.update((TestKey(k.kind, k.cls, seg), t) for k, t in found.items())  # (replace: 5 us a key)
        if head is not None:
            headlines[seg] = head
    gone = [(seg, f"{s.n_rows:,} rows in the reference") for seg, s in sorted(reference.segments.items())
            if seg not in current.segments]
    notes = [_note(what, segs) for what, segs in (("absent from the reference", absent),
                                                  (f"under {min_rows:,} rows in the period or the reference", small),
                                                  ("of the reference without a row in the period", gone)) if segs]
    return SegmentTests(tests, headlines, tuple(tested), tuple(notes))


def _ratio(effect: float | None, threshold: float | None) -> float:
    """|effect| over the practical threshold (inf at a threshold of 0; -1 when undefined)."""
    if effect is None or not math.isfinite(effect):
        return -1.0
    return abs(effect) / threshold if threshold else math.inf


def segment_table(decision: Alert, keys: dict[str, TestKey]) -> pl.DataFrame:
    """One row per segment test of the period's drift table, with its segment and kind, sorted by
    ``|effect| / threshold`` (largest first): the report page's and the run's segment table.

    ``keys`` maps the drift table's names to the segment tests' keys. Columns: ``segment``
    (``column=value``), ``test`` (the test's name without the segment), ``kind``,
    ``effect_size``, ``threshold``, ``effect_over_threshold``, ``p_value``, ``p_adjusted``
    (corrected with all of the period's tests) and ``alert``.
    """
    table = decision.table
    found = [keys.get(name) for name in table["name"].to_list()]
    at = [i for i, key in enumerate(found) if key is not None and key.segment]
    picked = table[at] if at else table.clear()
    seg_keys = [found[i] for i in at]
    effects, thresholds = picked["effect_size"].to_list(), picked["threshold"].to_list()
    schema = {"segment": pl.String, "test": pl.String, "kind": pl.String, "effect_size": pl.Float64,
              "threshold": pl.Float64, "effect_over_threshold": pl.Float64, "p_value": pl.Float64,
              "p_adjusted": pl.Float64, "alert": pl.Boolean}
    columns = {"segment": [k.segment_text for k in seg_keys], "test": [TestKey(k.kind, k.cls).name for k in seg_keys],
               "kind": [k.kind for k in seg_keys], "effect_size": effects, "threshold": thresholds,
               "effect_over_threshold": [_ratio(e, t) for e, t in zip(effects, thresholds)],
               "p_value": picked["p_value"].to_list(), "p_adjusted": picked["p_adjusted"].to_list(),
               "alert": [bool(d) for d in picked["drift"].to_list()]}
    return pl.DataFrame(columns, schema=schema).sort("effect_over_threshold", descending=True, maintain_order=True)


def segment_metrics(table: pl.DataFrame, found: SegmentTests) -> dict:
    """The summary of the segment tests for MLflow: a few keys, whatever the number of segments.

    Parameters
    ----------
    table : polars.DataFrame
        The segment table (:func:`segment_table`).
    found : SegmentTests
        The segments tested and the notes.

    Returns
    -------
    dict
        ``segments/tested`` (segments tested), ``segments/alerting`` (segments with at least one
        alerting test), and per test kind with segment tests ``segments/<kind>_worst_effect`` and
        ``segments/<kind>_worst_p_adj``: the effect and corrected p-value of the kind's segment
        test with the largest ``|effect| / threshold`` (nan when all are undefined).
    """
    out = {"segments/tested": float(len(found.tested)),
           "segments/alerting": float(table.filter(pl.col("alert"))["segment"].n_unique())}
    for kind in dict.fromkeys(table["kind"]):
        worst = table.filter(pl.col("kind") == kind).row(0, named=True)
        defined = worst["effect_over_threshold"] >= 0
        out[f"segments/{kind}_worst_effect"] = worst["effect_size"] if defined else math.nan
        out[f"segments/{kind}_worst_p_adj"] = worst["p_adjusted"] if defined else math.nan
    return out
