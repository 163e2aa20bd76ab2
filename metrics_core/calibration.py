"""Calibration from mergeable statistics: ECE/MCE (fixed/equal-mass bins), reliability diagrams, Brier decomposition."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from metrics_core.counts import FoldedScoreCounts, ScoreCounts
from metrics_core.errors import InputError

__all__ = ["TOP_LABEL", "CalibrationCounts", "CalibrationSet", "Reliability", "calibration_set", "reliability",
           "bin_edges", "brier_decomposition", "calibration_metrics", "STRATEGIES", "N_BINS", "FINE_BINS"]

#: The two binnings: fixed-width bins over [0, 1] and equal-mass (quantile) bins.
STRATEGIES = ("uniform", "quantile")
#: Default number of reliability bins (coarse bins).
N_BINS = 10
#: Default number of fine, fixed-width bins a streamed statistic keeps over [0, 1].
FINE_BINS = 1000

_FIELDS = ("n", "s", "s2", "y", "sy")


@dataclass(frozen=True)
class CalibrationCounts:
    """Sums per score 'atom' of one probability target: the mergeable statistic of calibration.

    An atom is either a fine fixed-width bin of [0, 1] (streamed, mergeable: ``exact`` False) or a
    distinct score (from exact :class:`~metrics_core.counts.ScoreCounts`: ``exact`` True). For each
    atom it holds the (weighted) row count ``n``, the sums of the score ``s``, of its square ``s2``,
    of the 0/1 outcome ``y`` and of score x outcome ``sy``: enough for every reliability bin's mean
    score and observed frequency and for the Brier score and its decomposition, exactly.

    Parameters
    ----------
    keys : numpy.ndarray, shape (A,)
        Ascending position of each atom, used to put it into a reliability bin: the fine bin's
        centre, or the distinct score.
    n, s, s2, y, sy : numpy.ndarray of float64, shape (A,)
        The sums above.
    exact : bool
        True when every atom is one distinct score.
    outside : int
        Rows whose score was outside [0, 1] (not probabilities: every calibration value is nan).

    Merge (:meth:`merge`) adds the sums of fine-binned statistics with the same bins.

    Examples
    --------
    >>> c = CalibrationCounts.from_arrays([1, 0, 1], [0.9, 0.2, 0.7], fine_bins=10)
    >>> float(c.merge(c).n.sum()), float(c.y.sum())
    (6.0, 2.0)
    """

    keys: np.ndarray
    n: np.ndarray
    s: np.ndarray
    s2: np.ndarray
    y: np.ndarray
    sy: np.ndarray
    exact: bool = False
    outside: int = 0

    @classmethod
    def from_arrays(cls, y_true01, y_score, *, fine_bins: int = FINE_BINS, sample_weight=None) -> "CalibrationCounts":
        """Fine fixed-width bins over [0, 1] (bin ``b`` = ``[b/B, (b+1)/B)``, the last closed).

        Parameters
        ----------
        y_true01 : array_like of bool or 0/1
            The outcome (1 = the event whose probability the score is).
        y_score : array_like of float
            Predicted probabilities; scores outside [0, 1] are counted in ``outside`` (and clipped).
        fine_bins : int
            Number of fine bins B.
        sample_weight : array_like, optional
            Row weights.

        Returns
        -------
        CalibrationCounts
        """
        y = np.asarray(y_true01).astype(bool)
        s = np.asarray(y_score, dtype=np.float64)
        outside = int(np.count_nonzero((s < 0) | (s > 1)))
        idx = np.clip((s * fine_bins).astype(np.int64), 0, fine_bins - 1)  # floor for s >= 0
        idx[s < 0] = 0
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        ws = s if w is None else w * s
        yi, wy = idx[y], (None if w is None else w[y])
        sums = [np.bincount(idx, weights=w, minlength=fine_bins).astype(np.float64),
                np.bincount(idx, weights=ws, minlength=fine_bins), np.bincount(idx, weights=ws * s, minlength=fine_bins),
                np.bincount(yi, weights=wy, minlength=fine_bins).astype(np.float64),
                np.bincount(yi, weights=ws[y], minlength=fine_bins)]
        return cls(_centres(fine_bins), *sums, exact=False, outside=outside)

    @classmethod
    def from_score_counts(cls, sc: ScoreCounts) -> "CalibrationCounts":
        """Exact atoms from exact score counts (one atom per distinct score).

        Parameters
        ----------
        sc : ScoreCounts
            Exact (not folded) positive-class score counts.

        Returns
        -------
        CalibrationCounts
            ``exact`` True; ``outside`` counts the rows with a score outside [0, 1].

        Raises
        ------
        InputError
            For :class:`~metrics_core.counts.FoldedScoreCounts` (their score sums are lost).
        """
        if isinstance(sc, FoldedScoreCounts):
            raise InputError("calibration: folded score counts have lost their score sums; compute calibration "
                             "from unfolded statistics (CalibrationCounts.from_arrays or a scan with by_class=False).")
        x = np.asarray(sc.scores, dtype=np.float64)
        pos, n = sc.pos.astype(np.float64), (sc.pos + sc.neg).astype(np.float64)
        outside = int(n[(x < 0) | (x > 1)].sum())
        return cls(x, n, x * n, x * x * n, pos, x * pos, exact=True, outside=outside)

    def merge(self, other: "CalibrationCounts") -> "CalibrationCounts":
        """The sums of both parts (fine-binned statistics over the same bins).

        Parameters
        ----------
        other : CalibrationCounts

        Returns
        -------
        CalibrationCounts

        Raises
        ------
        InputError
            When either is exact or the bins differ.
        """
        if self.exact or other.exact or not np.array_equal(self.keys, other.keys):
            raise InputError("calibration: only fine-binned statistics over the same bins merge; "
                             f"got {self.keys.size} and {other.keys.size} atoms (exact: {self.exact}, {other.exact}).")
        return CalibrationCounts(self.keys, *(getattr(self, f) + getattr(other, f) for f in _FIELDS),
                                 exact=False, outside=self.outside + other.outside)

    @property
    def total(self) -> float:
        """The number (or weight) of rows."""
        return float(self.n.sum())

    @property
    def valid(self) -> bool:
        """Rows exist and every score was a probability."""
        return self.outside == 0 and self.total > 0


def _centres(b: int) -> np.ndarray:
    return (np.arange(b) + 0.5) / b


def _order_statistics(keys: np.ndarray, n: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``numpy.percentile(rows, 100 q)`` (linear interpolation) from atoms with row counts ``n``."""
    keep = n > 0
    keys, n = keys[keep], n[keep]
    cum = np.cumsum(n)
    total = cum[-1]
    h = q * (total - 1)
    lo = np.floor(h)
    at = lambda i: keys[np.minimum(np.searchsorted(cum, i, side="right"), keys.size - 1)]  # noqa: E731
    return at(lo) + (h - lo) * (at(lo + 1) - at(lo))


def bin_edges(cc: CalibrationCounts, n_bins: int = N_BINS, strategy: str = "uniform") -> np.ndarray:
    """The ``n_bins + 1`` reliability bin edges: fixed-width over [0, 1] or row quantiles.

    Parameters
    ----------
    cc : CalibrationCounts
        The statistic (quantiles are of its atoms: exact for exact atoms, within one fine bin else).
    n_bins : int
        Number of bins.
    strategy : {"uniform", "quantile"}
        Fixed-width or equal-mass bins (scikit-learn's ``calibration_curve`` strategies).

    Returns
    -------
    numpy.ndarray
        Edges; equal-mass edges may repeat when scores tie (the bin between is empty).
    """
    if strategy not in STRATEGIES:
        raise InputError(f"strategy: expected one of {STRATEGIES}, got {strategy!r}.")
    if n_bins < 1:
        raise InputError(f"n_bins: expected at least 1 bin, got {n_bins}.")
    if strategy == "uniform":
        return np.linspace(0.0, 1.0, n_bins + 1)
    return _order_statistics(cc.keys, cc.n, np.linspace(0.0, 1.0, n_bins + 1))


@dataclass(frozen=True)
class Reliability:
    """Reliability-diagram data and calibration errors of one target and binning.

    ``edges`` (B + 1), and per bin ``count`` (rows or weight), ``mean_score`` and ``observed``
    (frequency of the outcome; both nan in an empty bin). ``ece`` = sum over bins of
    count/N x |observed - mean_score|; ``mce`` = the largest |observed - mean_score| over
    non-empty bins.
    """

    strategy: str
    edges: np.ndarray
    count: np.ndarray
    mean_score: np.ndarray
    observed: np.ndarray
    ece: float
    mce: float

    def as_frame(self) -> pl.DataFrame:
        """One row per bin: bin, lower, upper, count, mean_score, observed."""
        return pl.DataFrame({"bin": np.arange(self.count.size), "lower": self.edges[:-1], "upper": self.edges[1:],
                             "count": self.count, "mean_score": self.mean_score, "observed": self.observed})


def _coarse(cc: CalibrationCounts, edges: np.ndarray) -> np.ndarray:
    """Reliability bin of each atom: scikit-learn's ``searchsorted(edges[1:-1], score)`` (bins closed on
    the right; a score on an inner edge goes to the lower bin)."""
    return np.searchsorted(edges[1:-1], cc.keys, side="left")


def _sums(cc: CalibrationCounts, edges: np.ndarray) -> dict[str, np.ndarray]:
    idx = _coarse(cc, edges)
    nb = edges.size - 1
    return {f: np.bincount(idx, weights=getattr(cc, f), minlength=nb) for f in _FIELDS}


def reliability(cc: CalibrationCounts, n_bins: int = N_BINS, strategy: str = "uniform") -> Reliability:
    """Reliability diagram and expected / maximum calibration error of one target.

    Parameters
    ----------
    cc : CalibrationCounts
        The target's statistic (binary: the positive-class score; multiclass: one class's score
        one-vs-rest, or the top-label confidence).
    n_bins : int
        Number of reliability bins.
    strategy : {"uniform", "quantile"}
        Fixed-width bins over [0, 1] or equal-mass bins (:func:`bin_edges`).

    Returns
    -------
    Reliability
        Per bin: count, mean score, observed frequency; ``ece`` = sum_b (n_b / N) |o_b - s_b|
        (Naeini et al. 2015; torchmetrics' ``CalibrationError(norm="l1")``), ``mce`` = max_b
        |o_b - s_b| over non-empty bins (``norm="max"``). Mean score and observed frequency per
        non-empty bin equal scikit-learn's ``calibration_curve`` (``prob_pred``, ``prob_true``)
        for exact statistics; fine-binned ones put each fine bin (width 1/B) whole into one
        reliability bin: exact for fixed-width edges on the fine grid, within one fine bin for
        equal-mass edges. Everything is nan without rows or with a score outside [0, 1].

    Examples
    --------
    >>> r = reliability(CalibrationCounts.from_arrays([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.3]), n_bins=2)
    >>> r.count.tolist(), r.observed.tolist(), round(r.ece, 4)
    ([2.0, 2.0], [0.0, 1.0], 0.175)
    """
    edges = bin_edges(cc, n_bins, strategy) if cc.total > 0 else np.linspace(0, 1, n_bins + 1)
    t = _sums(cc, edges)
    count = t["n"]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean, obs = t["s"] / count, t["y"] / count
    if not cc.valid:
        nan = np.full(n_bins, np.nan)
        return Reliability(strategy, edges, count, nan, nan.copy(), float("nan"), float("nan"))
    gap = np.abs(obs - mean)
    full = count > 0
    ece = float(np.sum(count[full] * gap[full]) / count.sum())
    return Reliability(strategy, edges, count, mean, obs, ece, float(gap[full].max()))


def brier_decomposition(cc: CalibrationCounts, n_bins: int = N_BINS, strategy: str = "uniform") -> dict[str, float]:
    """The Brier score and its Murphy (1973) decomposition over reliability bins.

    Parameters
    ----------
    cc : CalibrationCounts
        The target's statistic.
    n_bins : int
        Number of reliability bins.
    strategy : {"uniform", "quantile"}
        The binning (:func:`bin_edges`).

    Returns
    -------
    dict
        ``brier`` = mean (s - y)^2 (exact, any binning), ``reliability`` = sum_b n_b (s_b - o_b)^2 / N,
        ``resolution`` = sum_b n_b (o_b - o)^2 / N, ``uncertainty`` = o (1 - o), and
        ``within_bin`` = brier - (reliability - resolution + uncertainty). Murphy's identity
        brier = REL - RES + UNC holds exactly only when each bin holds one score value; with
        bins, the difference is the within-bin variance of the scores minus twice their
        within-bin covariance with the outcome (Stephenson, Coelho and Jolliffe 2008), reported
        as ``within_bin`` (small: of the order of the squared bin width). All nan without rows
        or with a score outside [0, 1].

    Examples
    --------
    >>> d = brier_decomposition(CalibrationCounts.from_arrays([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.3]), n_bins=2)
    >>> round(d["brier"], 4), round(d["reliability"] - d["resolution"] + d["uncertainty"] + d["within_bin"], 4)
    (0.0375, 0.0375)
    """
    keys = ("brier", "reliability", "resolution", "uncertainty", "within_bin")
    if not cc.valid:
        return dict.fromkeys(keys, float("nan"))
    total = cc.total
    brier = float((cc.s2.sum() - 2 * cc.sy.sum() + cc.y.sum()) / total)
    t = _sums(cc, bin_edges(cc, n_bins, strategy))
    full = t["n"] > 0
    n, mean, obs = t["n"][full], t["s"][full] / t["n"][full], t["y"][full] / t["n"][full]
    base = cc.y.sum() / total
    rel = float(np.sum(n * (mean - obs) ** 2) / total)
    res = float(np.sum(n * (obs - base) ** 2) / total)
    unc = float(base * (1 - base))
    return dict(zip(keys, (brier, rel, res, unc, brier - (rel - res + unc))))


#: The name of the multiclass top-label target (:attr:`CalibrationSet.top_label`) in metrics, tests
#: and tables: no class may bear it (:func:`calibration_set`).
TOP_LABEL = "top_label"


@dataclass(frozen=True)
class CalibrationSet:
    """The calibration statistics of one report or period: one target per score column and the top label.

    ``names`` are the classes whose probability each of ``targets`` holds (binary: the positive
    class only; multiclass: every class, one-vs-rest); ``top_label`` (multiclass) is the
    confidence of the predicted class against "the prediction was right". Merge adds each part.
    """

    names: tuple[str, ...]
    targets: tuple[CalibrationCounts, ...]
    top_label: CalibrationCounts | None = None

    def merge(self, other: "CalibrationSet") -> "CalibrationSet":
        """Both parts' statistics (same names, same fine bins).

        Parameters
        ----------
        other : CalibrationSet

        Returns
        -------
        CalibrationSet
        """
        if self.names != other.names or (self.top_label is None) != (other.top_label is None):
            raise InputError(f"calibration: cannot merge statistics of classes {list(self.names)[:10]} and "
                             f"{list(other.names)[:10]}.")
        top = None if self.top_label is None else self.top_label.merge(other.top_label)
        return CalibrationSet(self.names, tuple(a.merge(b) for a, b in zip(self.targets, other.targets)), top)


def calibration_set(task: str, names, label_idx: np.ndarray, scores: np.ndarray, *, pred_idx: np.ndarray | None = None,
                    fine_bins: int = FINE_BINS, sample_weight=None) -> CalibrationSet:
    """Fine-binned calibration statistics of a batch (the 'update' step).

    Parameters
    ----------
    task : {"binary", "multiclass"}
        The task.
    names : sequence of str
        The class names in index order (binary: ``[negative, positive]``).
    label_idx : numpy.ndarray of int, shape (N,)
        The true class index of each row.
    scores : numpy.ndarray, shape (N, S)
        Binary: the positive-class score (S = 1); multiclass: one column per class.
    pred_idx : numpy.ndarray of int, optional
        Multiclass predicted class (its score is the top-label confidence); default the argmax.
    fine_bins : int
        Fine bins over [0, 1].
    sample_weight : array_like, optional
        Row weights.

    Returns
    -------
    CalibrationSet

    Raises
    ------
    InputError
        Multiclass, when a class is named :data:`TOP_LABEL` (its results and the top label's would
        share one name).
    """
    names = [str(x) for x in names]
    if task != "binary" and TOP_LABEL in names:
        raise InputError(f"calibration: a class is named {TOP_LABEL!r}, the name of the multiclass top-label "
                         "calibration target (the predicted class's score against 'the prediction was right'): the two "
                         "would share one name in the metrics, tests and tables, and one would hide the other. Rename "
                         "that class in the label and prediction columns (and in labels: of the run spec).")
    label_idx = np.asarray(label_idx)
    scores = np.asarray(scores, dtype=np.float64)
    scores = scores.reshape(len(label_idx), scores.shape[-1] if scores.ndim == 2 else -1)  # (0, S): no labelled row
    kw = dict(fine_bins=fine_bins, sample_weight=sample_weight)
    if task == "binary":
        return CalibrationSet((names[1],), (CalibrationCounts.from_arrays(label_idx == 1, scores[:, 0], **kw),))
    pred = scores.argmax(axis=1) if pred_idx is None else np.asarray(pred_idx)
    conf = scores[np.arange(pred.size), pred]
    if sample_weight is None:  # every column (and the top label) in one bincount per sum
        cols = np.column_stack((scores, conf))
        hits = np.column_stack((label_idx[:, None] == np.arange(scores.shape[1]), pred == label_idx))
        counts = _columns(hits, cols, fine_bins)
        return CalibrationSet(tuple(names), tuple(counts[:-1]), counts[-1])
    targets = tuple(CalibrationCounts.from_arrays(label_idx == j, scores[:, j], **kw) for j in range(scores.shape[1]))
    top = CalibrationCounts.from_arrays(pred == label_idx, conf, **kw)
    return CalibrationSet(tuple(names), targets, top)


def _columns(hits: np.ndarray, s: np.ndarray, fine_bins: int) -> list[CalibrationCounts]:
    """:meth:`CalibrationCounts.from_arrays` of every column of (N, T) outcomes and scores, unweighted."""
    t = s.shape[1]
    idx = np.clip((s * fine_bins).astype(np.int64), 0, fine_bins - 1)
    idx[s < 0] = 0
    flat = (idx + np.arange(t) * fine_bins).ravel()
    sr, yr = s.ravel(), hits.ravel()
    fy = flat[yr]
    size = t * fine_bins
    sums = [np.bincount(flat, minlength=size).astype(np.float64), np.bincount(flat, sr, size),
            np.bincount(flat, sr * sr, size), np.bincount(fy, minlength=size).astype(np.float64),
            np.bincount(fy, sr[yr], size)]
    sums = [x.reshape(t, fine_bins) for x in sums]
    outside = ((s < 0) | (s > 1)).sum(axis=0)
    keys = _centres(fine_bins)
    return [CalibrationCounts(keys, *(x[j] for x in sums), exact=False, outside=int(outside[j])) for j in range(t)]


def calibration_metrics(cs: CalibrationSet, n_bins: int = N_BINS) -> tuple[dict[str, float], pl.DataFrame]:
    """Calibration metrics of a report: ECE/MCE in both binnings, Brier decomposition, per class.

    Parameters
    ----------
    cs : CalibrationSet
        The statistics (:func:`calibration_set`, merged; or exact, see
        :meth:`CalibrationCounts.from_score_counts`).
    n_bins : int
        Reliability bins.

    Returns
    -------
    (dict, polars.DataFrame)
        Metrics ``ece_uniform mce_uniform ece_quantile mce_quantile brier_reliability
        brier_resolution brier_uncertainty brier_within_bin`` (uniform = fixed-width bins,
        quantile = equal-mass bins). Binary: of the positive-class score. Multiclass: ECE/MCE of
        the top label (the confidence of the predicted class against its accuracy, as
        torchmetrics' multiclass ``CalibrationError``), ``ece_uniform_ovr_macro`` (mean of the
        one-vs-rest ECEs) and the Brier terms summed over the classes' one-vs-rest
        decompositions (the multiclass Brier score is the sum of the one-vs-rest ones); the
        decomposition is over fixed-width bins. The table has one row per target (class; and
        ``top_label``): ece/mce in both binnings, brier, reliability, resolution, uncertainty,
        within_bin. nan when a score is outside [0, 1].
    """
    rows = []
    targets = list(zip(cs.names, cs.targets)) + ([(TOP_LABEL, cs.top_label)] if cs.top_label is not None else [])
    for name, cc in targets:
        row = {"target": name}
        for strategy in STRATEGIES:
            r = reliability(cc, n_bins, strategy)
            row[f"ece_{strategy}"], row[f"mce_{strategy}"] = r.ece, r.mce
        row.update(brier_decomposition(cc, n_bins))
        rows.append(row)
    table = pl.DataFrame(rows)
    headline = rows[-1]  # binary: the positive class; multiclass: the top label
    out = {k: headline[k] for k in ("ece_uniform", "mce_uniform", "ece_quantile", "mce_quantile")}
    ovr = rows if cs.top_label is None else rows[:-1]
    for term in ("reliability", "resolution", "uncertainty", "within_bin"):
        out[f"brier_{term}"] = float(np.sum([r[term] for r in ovr]))
    if cs.top_label is not None:
        out["ece_uniform_ovr_macro"] = float(np.mean([r["ece_uniform"] for r in ovr]))
    return out, table
