"""Per-period monitoring statistics (mergeable, one pass) and the retraining alert decision (SPEC "Alerts").

What is watched per model and period (ONS Annexes E, F): class prevalence on labels (where
present) and on predictions, the distribution of each class's score, and the price distribution
of each predicted class. A period is summarised by :class:`PeriodStats`: counts per class and
fixed-bin histograms of scores and log prices, so statistics of batches, files or Dask partitions
merge by addition and a 1M-row period is read once. :func:`compare` turns a reference and a
current summary into tests (statistic, p-value, effect size); :func:`decide_alert` corrects
their p-values together and raises the alert when a rejected test's effect passes its practical
threshold, or when the headline metric's lower interval bound is under its floor.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from metrics_core import drift
from metrics_core.counts import BinnedScoreCounts, ConfusionCounts, ScoreCounts
from metrics_core.dataset import check_batch, file_error, iter_batches, open_dataset
from metrics_core.errors import InputError, bad_rows
from metrics_core.significance import TestResult
from metrics_core.stats import BinaryStats, MulticlassStats

__all__ = ["DEFAULTS", "Bins", "PeriodStats", "Alert", "update", "scan_period", "compare", "decide_alert",
           "headline_check", "KINDS", "price_impact_binned"]

#: Default alert policy (tasks.config.spec.AlertPolicy documents the reasoning behind each number).
DEFAULTS: dict[str, Any] = {"alpha": 0.05, "correction": "bh", "prevalence_change": 0.02, "psi": 0.1,
                            "score_shift": 0.02, "price_change": 0.10, "metric_drop": 0.05, "level": 0.95}

#: Test-name prefix -> the policy field holding its practical threshold.
KINDS = {"prevalence_label": "prevalence_change", "prevalence_pred": "prevalence_change",
         "class_mix_label": "psi", "class_mix_pred": "psi", "score": "score_shift", "price": "price_change"}

#: Most classes for which the per-cell price histograms (Annex E) are kept (memory K x K x bins).
MAX_CELL_CLASSES = 30

#: Fewest rows of a class (in reference and current) for its price distribution to be tested.
MIN_PRICE_ROWS = 20


@dataclass(frozen=True)
class Bins:
    """Fixed bins shared by every period: ``score_bins`` equal-width bins over ``score_range`` and
    log10-price bins over ``price_range``, each with one overflow bin below and one above.

    >>> b = Bins(score_bins=4)
    >>> b.score_index(np.array([-0.1, 0.0, 0.3, 1.0, 1.2])).tolist()
    [0, 1, 2, 4, 5]
    """

    score_bins: int = 1000
    score_range: tuple[float, float] = (0.0, 1.0)
    price_bins_per_decade: int = 500
    price_range: tuple[float, float] = (0.01, 1e6)

    @property
    def n_price_bins(self) -> int:
        lo, hi = (math.log10(x) for x in self.price_range)
        return int(round((hi - lo) * self.price_bins_per_decade))

    @staticmethod
    def _index(x: np.ndarray, lo: float, hi: float, n: int) -> np.ndarray:
        """0 = below lo, 1..n regular bins (the last closed), n + 1 = above hi."""
        idx = np.floor((x - lo) * (n / (hi - lo))).astype(np.int64) + 1
        np.clip(idx, 0, n + 1, out=idx)
        idx[x == hi] = n
        return idx

    def score_index(self, scores: np.ndarray) -> np.ndarray:
        return self._index(scores, *self.score_range, self.score_bins)

    def price_index(self, price: np.ndarray) -> np.ndarray:
        lo, hi = (math.log10(x) for x in self.price_range)
        return self._index(np.log10(price), lo, hi, self.n_price_bins)

    def score_points(self) -> np.ndarray:
        """A representative value per bin: regular bin centres; overflow bins at the range ends."""
        lo, hi = self.score_range
        w = (hi - lo) / self.score_bins
        return np.concatenate(([lo], lo + w * (np.arange(self.score_bins) + 0.5), [hi]))

    def price_points(self) -> np.ndarray:
        """Bin centres in log10 price (overflow bins at the range ends)."""
        lo, hi = (math.log10(x) for x in self.price_range)
        n = self.n_price_bins
        return np.concatenate(([lo], lo + (hi - lo) / n * (np.arange(n) + 0.5), [hi]))

    def score_edges(self) -> np.ndarray:
        return np.linspace(*self.score_range, self.score_bins + 1)


def _add(a, b):
    if a is None or b is None:
        if a is not None or b is not None:
            raise InputError("Cannot merge period statistics where one part has a column (labels, scores or "
                             "prices) and the other does not; the schema changed between parts.")
        return None
    return a + b


@dataclass(frozen=True)
class PeriodStats:
    """Mergeable summary of one period (or reference window): the sufficient statistic of monitoring.

    ``labels`` is the class list (binary: ``[negative, positive]``); ``label_counts`` and
    ``pred_counts`` count rows per class (labels None when the data has none); ``score_counts``
    is ``(S, score_bins + 2)``: one histogram per score column (multiclass: ``score_<class>`` in
    label order; binary: the positive-class score), ``price_counts`` ``(K, price bins + 2)`` of
    log10 prices per predicted class; ``weight_by_pred`` sums the row weights (expenditure) per
    predicted class; ``performance`` the confusion counts (binary: with binned scores) when
    labels exist; ``price_cells`` ``(K label, K predicted, price bins + 2)`` the log10 price
    histogram of every confusion cell (labels and prices present, at most ``MAX_CELL_CLASSES``
    classes), from which :func:`price_impact_binned` compares errors with labelled positives.
    Merge = element-wise sum (bins and labels must agree).
    """

    task: str
    labels: np.ndarray
    bins: Bins
    n_rows: int
    pred_counts: np.ndarray
    label_counts: np.ndarray | None = None
    score_counts: np.ndarray | None = None
    price_counts: np.ndarray | None = None
    weight_by_pred: np.ndarray | None = None
    performance: BinaryStats | MulticlassStats | None = None
    overflow: dict = field(default_factory=dict)
    price_cells: np.ndarray | None = None

    def merge(self, other: "PeriodStats") -> "PeriodStats":
        if self.bins != other.bins or self.task != other.task or not np.array_equal(self.labels, other.labels):
            raise InputError("Cannot merge period statistics with different class lists, tasks or bins.")
        perf = None
        if self.performance is not None or other.performance is not None:
            if self.performance is None or other.performance is None:
                raise InputError("Cannot merge period statistics with and without labels.")
            perf = self.performance.merge(other.performance)
        overflow = {k: self.overflow.get(k, 0) + other.overflow.get(k, 0) for k in {*self.overflow, *other.overflow}}
        return PeriodStats(self.task, self.labels, self.bins, self.n_rows + other.n_rows,
                           self.pred_counts + other.pred_counts, _add(self.label_counts, other.label_counts),
                           _add(self.score_counts, other.score_counts), _add(self.price_counts, other.price_counts),
                           _add(self.weight_by_pred, other.weight_by_pred), perf, overflow,
                           _add(self.price_cells, other.price_cells))

    @property
    def has_labels(self) -> bool:
        return self.label_counts is not None

    def prevalence(self, source: str = "pred") -> np.ndarray:
        """Share of rows per class on ``"label"`` or ``"pred"`` (nan without labels)."""
        counts = self.pred_counts if source == "pred" else self.label_counts
        if counts is None or self.n_rows == 0:
            return np.full(self.labels.size, np.nan)
        return counts / self.n_rows

    def score_distribution(self, s: int) -> ScoreCounts | None:
        """Score column ``s`` as a ScoreCounts at the bin points (empty bins dropped)."""
        if self.score_counts is None:
            return None
        c = self.score_counts[s]
        keep = c > 0
        return ScoreCounts(self.bins.score_points()[keep], c[keep], np.zeros(int(keep.sum()), np.int64))

    def price_distribution(self, j: int) -> ScoreCounts | None:
        """log10 prices of predicted class ``j`` as a ScoreCounts at the bin points."""
        if self.price_counts is None:
            return None
        c = self.price_counts[j]
        keep = c > 0
        return ScoreCounts(self.bins.price_points()[keep], c[keep], np.zeros(int(keep.sum()), np.int64))

    def score_names(self) -> list:
        """Class whose score each score histogram holds."""
        if self.score_counts is None:
            return []
        return [self.labels[1]] if self.task == "binary" else list(self.labels)


def update(task: str, labels: np.ndarray, bins: Bins, pred_idx: np.ndarray, *, label_idx: np.ndarray | None = None,
           scores: np.ndarray | None = None, price: np.ndarray | None = None, weight: np.ndarray | None = None,
           threshold: float = 0.5) -> PeriodStats:
    """The statistics of one batch (the 'update' step): class indices, scores (N x S), prices, weights.

    ``pred_idx``/``label_idx`` index ``labels``; binary scores are the positive-class score (N x 1).

    >>> s = update("binary", np.array([0, 1]), Bins(score_bins=10), np.array([0, 1, 1]),
    ...            label_idx=np.array([0, 1, 0]), scores=np.array([[0.2], [0.9], [0.6]]))
    >>> s.pred_counts.tolist(), s.label_counts.tolist(), int(s.score_counts.sum())
    ([1, 2], [2, 1], 3)
    """
    k = labels.size
    n = pred_idx.size
    pred_counts = np.bincount(pred_idx, minlength=k).astype(np.int64)
    label_counts = None if label_idx is None else np.bincount(label_idx, minlength=k).astype(np.int64)
    overflow: dict = {}
    score_counts = None
    if scores is not None:
        s_cols = scores.shape[1]
        width = bins.score_bins + 2
        idx = bins.score_index(scores) + np.arange(s_cols) * width
        score_counts = np.bincount(idx.ravel(), minlength=s_cols * width).reshape(s_cols, width).astype(np.int64)
        overflow["scores_outside_range"] = int(score_counts[:, 0].sum() + score_counts[:, -1].sum())
    price_counts = weight_by_pred = price_cells = None
    if price is not None:
        width = bins.n_price_bins + 2
        pidx = bins.price_index(price)
        if label_idx is not None and k <= MAX_CELL_CLASSES:
            cell = (label_idx * k + pred_idx) * width + pidx
            price_cells = np.bincount(cell, minlength=k * k * width).reshape(k, k, width).astype(np.int64)
            price_counts = price_cells.sum(axis=0)
        else:
            price_counts = np.bincount(pidx + pred_idx * width, minlength=k * width).reshape(k, width).astype(np.int64)
        overflow["prices_outside_range"] = int(price_counts[:, 0].sum() + price_counts[:, -1].sum())
    if weight is not None:
        weight_by_pred = np.bincount(pred_idx, weights=weight, minlength=k)
    perf = None
    if label_idx is not None:
        conf = ConfusionCounts.from_indices(label_idx, pred_idx, labels)
        if task == "binary":
            sc = None if scores is None else BinnedScoreCounts.from_arrays(label_idx == 1, scores[:, 0],
                                                                           bins.score_edges())
            perf = BinaryStats(conf, sc, n, threshold)
        else:
            perf = MulticlassStats(conf, None, None, n)
    return PeriodStats(task, labels, bins, n, pred_counts, label_counts, score_counts, price_counts,
                       weight_by_pred, perf, overflow, price_cells)


def _indices(arr: pa.Array, labels: np.ndarray, path, column: str, batch: pa.RecordBatch, first_row: int
             ) -> np.ndarray:
    value_set = pa.array(labels.tolist())
    try:
        idx = pc.index_in(arr, value_set=value_set.cast(arr.type))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        idx = pc.index_in(arr.cast(pa.string()), value_set=pa.array([str(x) for x in labels.tolist()]))
    if idx.null_count:
        check_batch(batch, path, label=column, labels=labels.tolist(), first_row=first_row)
        mask = np.asarray(idx.is_null())
        raise bad_rows(f"{path}: column {column!r}", f"value not in the class list {labels.tolist()!r}", mask,
                       arr.to_numpy(zero_copy_only=False), "Add the class to the spec's labels or drop these rows.")
    return np.asarray(idx.to_numpy(zero_copy_only=False), dtype=np.int64)


def scan_period(source, task: str, labels: Sequence, bins: Bins = Bins(), *, label: str | None = None,
                prediction: str | None = None, scores: Sequence[str] = (), price: str | None = None,
                weight: str | None = None, threshold: float = 0.5, filter=None, batch_rows: int = 262_144,
                progress: Callable[[int], None] | None = None) -> PeriodStats:
    """:class:`PeriodStats` of a dataset in ONE pass over its batches (metrics_core.dataset).

    Column roles are passed explicitly (None / empty = absent): ``label`` (optional: monitoring
    works without labels), ``prediction`` (else derived: binary ``score >= threshold``,
    multiclass argmax of the score columns), ``scores`` (binary: one column, the positive class;
    multiclass: one per class in ``labels`` order), ``price`` (> 0) and ``weight``. Every batch is
    validated first (:func:`metrics_core.dataset.check_batch`): null labels, labels outside the
    class list, null/NaN/infinite scores, bad weights and prices are an InputError naming the file,
    column, number of rows and an example. An empty selection is an InputError too.
    """
    labels = np.asarray(list(labels))
    if task not in ("binary", "multiclass"):
        raise InputError(f"task: expected 'binary' or 'multiclass', got {task!r}.")
    if task == "binary" and labels.size != 2:
        raise InputError(f"labels: a binary task needs [negative, positive], got {labels.tolist()!r}.")
    scores = list(scores)
    if prediction is None and not scores:
        raise InputError("Monitoring needs a prediction column or score columns; the column map names neither "
                         "(or the data has neither).")
    if task == "multiclass" and scores and len(scores) != labels.size:
        raise InputError(f"scores: one score column per class is needed ({labels.size}), got {len(scores)}.")
    needed = [c for c in (label, prediction, price, weight) if c] + scores
    ds = open_dataset(source)
    out: PeriodStats | None = None
    last_path, first_row = None, 0
    for path, batch in iter_batches(ds, needed, filter=filter, batch_rows=batch_rows):
        if path != last_path:
            last_path, first_row = path, 0
        checks = dict(label=label, scores=scores, weight=weight, prediction=prediction)
        try:
            check_batch(batch, path, columns_needed=needed, first_row=first_row, **checks)
        except InputError as bad:  # count the bad rows of the whole file, not of this batch
            raise file_error(bad, ds, path, needed, filter=filter, batch_rows=batch_rows, **checks) from None
        try:
            label_idx = None if label is None else _indices(batch.column(label), labels, path, label, batch,
                                                            first_row)
            pred_idx = None if prediction is None else _indices(batch.column(prediction), labels, path, prediction,
                                                                batch, first_row)
        except InputError as bad:  # a value outside the class list: count the whole file too
            column = bad.bad_rows[0] if hasattr(bad, "bad_rows") else None
            raise file_error(bad, ds, path, needed, filter=filter, batch_rows=batch_rows, label=column,
                             labels=labels.tolist()) from None
        s = None
        if scores:
            s = np.column_stack([np.asarray(batch.column(c).to_numpy(zero_copy_only=False), dtype=np.float64)
                                 for c in scores])
        if prediction is None:  # derived from the scores
            pred_idx = (s[:, 0] >= threshold).astype(np.int64) if task == "binary" else np.argmax(s, axis=1)
        p = None
        if price is not None:
            arr = batch.column(price)
            p = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64) if not arr.null_count else None
            bad = np.asarray(arr.is_null()) if p is None else ~(np.isfinite(p) & (p > 0))
            if bad.any():
                values = arr.to_numpy(zero_copy_only=False)
                raise bad_rows(f"{path}: column {price!r} (rows {first_row}-{first_row + batch.num_rows - 1} of "
                               "the file)", "null, NaN, infinite or non-positive price", bad, values,
                               "Prices must be > 0; drop these rows or fix the price extraction.")
        w = None if weight is None else np.asarray(batch.column(weight).to_numpy(zero_copy_only=False), np.float64)
        part = update(task, labels, bins, pred_idx, label_idx=label_idx, scores=s, price=p, weight=w,
                      threshold=threshold)
        out = part if out is None else out.merge(part)
        first_row += batch.num_rows
        if progress is not None:
            progress(batch.num_rows)
    if out is None:
        where = source if not isinstance(source, (pa.Table,)) else "table"
        raise InputError(f"{where}: no rows{' for ' + str(filter) if filter is not None else ''} (empty period). "
                         "Check the data path and the period; nothing was logged.")
    return out


# ---------------------------------------------------------------- tests
def _median_log(sc: ScoreCounts) -> float:
    """Median of a binned distribution: the point of the bin holding the middle row (bin width
    0.002 in log10 price by default, i.e. within 0.5 % of the exact median)."""
    cum = np.cumsum(sc.counts)
    return float(sc.scores[int(np.searchsorted(cum, cum[-1] / 2.0, side="left"))])


def _fmt_label(x) -> str:
    return str(x.item() if hasattr(x, "item") else x)


def compare(reference: PeriodStats, current: PeriodStats) -> dict[str, TestResult]:
    """The monitoring tests of a period against the reference window, by name.

    - ``prevalence_label:<c>`` / ``prevalence_pred:<c>``: two-proportion z-test of class c's
      share (labels / predictions; binary: the positive class only); effect = current minus
      reference share.
    - ``class_mix_label`` / ``class_mix_pred`` (3+ classes): chi-squared homogeneity test of the
      class counts; effect = PSI of the class distribution.
    - ``score:<c>``: two-sample KS on the binned score distribution of class c; effect =
      Wasserstein-1 distance in score units (mean absolute shift); details: PSI over 10
      reference deciles, means.
    - ``price:<c>``: KS on the binned log prices of predicted class c (both with at least
      ``MIN_PRICE_ROWS`` rows); effect = relative price shift ``10**W - 1`` signed by the change of
      the mean log price, W the Wasserstein-1 distance of the log10 prices: a uniform 15 % rise
      gives 0.15. Unlike the median, it does not jump between the modes of a multimodal price
      distribution (pack sizes); medians and the geometric-mean change are in the details.
    """
    if not np.array_equal(reference.labels, current.labels) or reference.bins != current.bins:
        raise InputError("reference and current: statistics over different class lists or bins.")
    tests: dict[str, TestResult] = {}
    names = [_fmt_label(x) for x in reference.labels]
    classes = [1] if reference.task == "binary" else range(reference.labels.size)
    for source in ("label", "pred"):
        ref = reference.label_counts if source == "label" else reference.pred_counts
        cur = current.label_counts if source == "label" else current.pred_counts
        if ref is None or cur is None:
            continue
        n1, n2 = int(ref.sum()), int(cur.sum())
        if reference.labels.size > 2:
            chi = drift.chi_squared_counts(ref, cur)
            ps = drift.psi(dict(zip(names, ref.tolist())), dict(zip(names, cur.tolist()))).statistic
            tests[f"class_mix_{source}"] = dataclasses.replace(
                chi, effect_size=ps, effect_name="PSI of the class distribution",
                details={**chi.details, "cramers_v": chi.effect_size})
        for j in classes:
            tests[f"prevalence_{source}:{names[j]}"] = drift.two_proportion_z(int(ref[j]), n1, int(cur[j]), n2)
    for s, cls in enumerate(reference.score_names() if current.score_counts is not None else []):
        r, c = reference.score_distribution(s), current.score_distribution(s)
        ks = drift.ks(r, c)
        w1 = drift.wasserstein(r, c, threshold=None).statistic
        ps = drift.psi(r, c, bins=10, threshold=None).statistic
        mean_r = float(np.dot(r.scores, r.counts) / r.total)
        mean_c = float(np.dot(c.scores, c.counts) / c.total)
        tests[f"score:{_fmt_label(cls)}"] = dataclasses.replace(
            ks, effect_size=w1, effect_name="Wasserstein-1 distance of the scores",
            details={**ks.details, "ks_d": ks.statistic, "psi": ps, "mean_reference": mean_r, "mean_current": mean_c})
    if reference.price_counts is not None and current.price_counts is not None:
        for j in range(reference.labels.size):
            if reference.price_counts[j].sum() < MIN_PRICE_ROWS or current.price_counts[j].sum() < MIN_PRICE_ROWS:
                continue
            r, c = reference.price_distribution(j), current.price_distribution(j)
            ks = drift.ks(r, c)
            w1 = drift.wasserstein(r, c, threshold=None).statistic
            shift = float(np.dot(c.scores, c.counts) / c.total - np.dot(r.scores, r.counts) / r.total)
            m_r, m_c = 10 ** _median_log(r), 10 ** _median_log(c)
            tests[f"price:{names[j]}"] = dataclasses.replace(
                ks, effect_size=math.copysign(10 ** w1 - 1.0, shift), effect_name="relative price shift",
                details={**ks.details, "ks_d": ks.statistic, "median_reference": m_r, "median_current": m_c,
                         "geometric_mean_change": 10 ** shift - 1.0})
    return tests


def _points(bins: Bins, counts: np.ndarray) -> ScoreCounts:
    keep = counts > 0
    return ScoreCounts(bins.price_points()[keep], counts[keep], np.zeros(int(keep.sum()), np.int64))


def price_impact_binned(stats: PeriodStats, alpha: float = 0.05) -> pl.DataFrame | None:
    """ONS Annex E from statistics: prices of each class's errors against its labelled positives.

    The binned twin of :func:`metrics_core.price.price_impact` (same groups and columns, no index
    bias: monitoring has no base-period prices): for class c, labelled positives L (label c),
    false positives (predicted c, label not c), false negatives (label c, predicted not c) and
    classified positives (predicted c), from ``price_cells``. Each group is compared with L by KS
    on the binned log prices (BH-adjusted over the table) and by its median price. Empty groups
    give nan. None without per-cell price statistics (no labels or prices).
    """
    cells = stats.price_cells
    if cells is None:
        return None
    rows = []
    for c in range(stats.labels.size):
        labelled = cells[c].sum(axis=0)
        groups = {"false_positive": cells[:, c].sum(axis=0) - cells[c, c], "false_negative": labelled - cells[c, c],
                  "classified_positive": cells[:, c].sum(axis=0)}
        ref = _points(stats.bins, labelled) if labelled.sum() else None
        ref_median = 10 ** _median_log(ref) if ref is not None else math.nan
        for group, counts in groups.items():
            n = int(counts.sum())
            d = p = median = math.nan
            if n and ref is not None:
                cur = _points(stats.bins, counts)
                res = drift.ks(ref, cur)
                d, p, median = res.statistic, res.p_value, 10 ** _median_log(cur)
            rows.append({"class": _fmt_label(stats.labels[c]), "group": group, "n": n, "n_labelled": int(labelled.sum()),
                         "ks_statistic": float(d), "ks_p_value": float(p), "median": float(median),
                         "labelled_median": float(ref_median), "median_difference": float(median - ref_median)})
    table = pl.DataFrame(rows)
    pv = table["ks_p_value"].to_numpy()
    ok = np.isfinite(pv)
    adjusted = np.full(pv.size, np.nan)
    if ok.any():
        from metrics_core.significance import correct

        adjusted[ok] = correct(pv[ok], "bh", alpha).p_adjusted
    return table.insert_column(6, pl.Series("ks_p_adjusted", adjusted))


# ---------------------------------------------------------------- decision
@dataclass(frozen=True)
class Alert:
    """The decision for one period: ``alert`` (retrain or not), ``reasons`` (sentences),
    ``table`` (one row per test: p-values corrected together, threshold, drift verdict) and
    ``figures`` (name -> effect, for the event payload)."""

    alert: bool
    reasons: list[str]
    table: pl.DataFrame
    figures: dict[str, float]


def _policy(policy: Any, key: str):
    if policy is None:
        return DEFAULTS[key]
    value = policy.get(key) if isinstance(policy, Mapping) else getattr(policy, key, None)
    return DEFAULTS[key] if value is None else value


def headline_check(metric: str, value: float, interval: tuple[float, float] | None, floor: float | None
                   ) -> dict | None:
    """The performance bound of SPEC "Alerts": fails when the lower interval bound is under ``floor``.

    Returns None without a floor or a value, else ``{"metric", "value", "low", "high", "floor",
    "fails"}`` (nan bounds: the point value is compared instead).

    >>> headline_check("balanced_accuracy", 0.81, (0.78, 0.84), 0.80)["fails"]
    True
    """
    if floor is None or value is None or not np.isfinite(value):
        return None
    low, high = interval if interval is not None else (math.nan, math.nan)
    bound = low if np.isfinite(low) else value
    return {"metric": metric, "value": float(value), "low": float(low), "high": float(high), "floor": float(floor),
            "fails": bool(bound < floor)}


def _reason(name: str, row: dict, test: TestResult) -> str:
    kind, _, cls = name.partition(":")
    d = test.details
    tail = f"p_adj={row['p_adjusted']:.2g}"
    if kind.startswith("prevalence"):
        what = "labels" if kind.endswith("label") else "predictions"
        p1, p2 = d.get("p_reference", math.nan), d.get("p_current", math.nan)
        verb = "rose" if p2 > p1 else "fell"
        return (f"prevalence of {cls!r} ({what}) {verb} from {p1:.1%} to {p2:.1%} "
                f"({(p2 - p1) * 100:+.1f} points, threshold {row['threshold'] * 100:g}; {tail})")
    if kind.startswith("class_mix"):
        what = "labels" if kind.endswith("label") else "predictions"
        return f"class distribution ({what}) shifted: PSI {row['effect_size']:.3f} >= {row['threshold']:g} ({tail})"
    if kind == "score":
        return (f"scores of {cls!r} shifted: mean {d.get('mean_reference', math.nan):.3f} -> "
                f"{d.get('mean_current', math.nan):.3f}, Wasserstein {row['effect_size']:.3f} >= "
                f"{row['threshold']:g} ({tail})")
    if kind == "price":
        verb = "rose" if row["effect_size"] > 0 else "fell"
        return (f"prices of {cls!r} {verb} {abs(row['effect_size']):.1%} (median {d.get('median_reference', math.nan):.2f}"
                f" -> {d.get('median_current', math.nan):.2f}, threshold {row['threshold']:.0%}; {tail})")
    return f"{name}: {row['verdict']}"


def decide_alert(tests: Mapping[str, TestResult], policy: Any = None, headline: dict | None = None) -> Alert:
    """Retrain or not: SPEC "Alerts" as a pure function.

    All p-values of the period are corrected together (``policy.correction`` at
    ``policy.alpha``, :func:`metrics_core.drift.drift_table`); a test alerts when it rejects AND
    ``|effect| >= threshold``, the threshold chosen by the test's kind (:data:`KINDS`: absolute
    prevalence change, PSI of the class mix, Wasserstein shift of scores, relative median price
    change). The performance bound alerts when ``headline["fails"]`` (see :func:`headline_check`).
    ``policy`` is any object or mapping with those fields (tasks.config.spec.AlertPolicy); missing ones
    take :data:`DEFAULTS`.

    >>> t = {"prevalence_pred:a": drift.two_proportion_z(1000, 10000, 1500, 10000)}
    >>> a = decide_alert(t)
    >>> a.alert, a.reasons[0][:47]
    (True, "prevalence of 'a' (predictions) rose from 10.0%")
    """
    thresholds = {}
    for name in tests:
        kind = name.partition(":")[0]
        if kind not in KINDS:
            raise InputError(f"tests: unknown test kind {kind!r} in {name!r}; expected one of {sorted(KINDS)}.")
        thresholds[name] = float(_policy(policy, KINDS[kind]))
    schema = {"name": pl.String, "test": pl.String, "statistic": pl.Float64, "p_value": pl.Float64,
              "p_adjusted": pl.Float64, "effect_size": pl.Float64, "effect_name": pl.String,
              "threshold": pl.Float64, "drift": pl.Boolean, "verdict": pl.String}
    table = drift.drift_table(dict(tests), thresholds, _policy(policy, "correction"), _policy(policy, "alpha")) \
        if tests else pl.DataFrame(schema=schema)
    reasons, figures = [], {}
    rows = [r for r in table.iter_rows(named=True) if r["drift"]]
    rows.sort(key=lambda r: -abs(r["effect_size"]) / r["threshold"])  # strongest first
    for row in rows:
        reasons.append(_reason(row["name"], row, tests[row["name"]]))
        figures[row["name"]] = row["effect_size"]
    if headline is not None and headline.get("fails"):
        bound = "lower bound" if np.isfinite(headline["low"]) else "value"
        reasons.append(f"{headline['metric']} {bound} {headline['low'] if bound == 'lower bound' else headline['value']:.3f} "
                       f"is under the floor {headline['floor']:.3f} (value {headline['value']:.3f})")
        figures[f"{headline['metric']}_low"] = headline["low"]
    return Alert(bool(reasons), reasons, table, figures)
