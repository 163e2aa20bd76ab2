"""Confidence intervals from statistics: Wilson for proportions, a seeded percentile bootstrap
that resamples the statistics (not the rows) for everything else (ISO 4213 clause 7).

Wilson intervals use each metric's own denominator (precision: tp + fp, recall: tp + fn, ...).
The bootstrap draws multinomial counts over the cells of a ConfusionCounts (equivalent to
resampling rows for every confusion metric) and over the cells of a ScoreCounts coarsened to at
most ``MAX_BOOT_BINS`` score bins (so 1,000 replicates at 10M rows take well under a second);
the coarsening shift of AUROC / AP is added back, so intervals are centred on the exact value.
Weighted statistics are resampled as counts of ``n_rows`` rows with probabilities proportional
to the weights, then rescaled to the total weight, and Wilson intervals use the effective count
``weight * n_rows / total_weight`` (an approximation, documented in docs/metrics.md).

``n_rows`` is the number of rows of positive weight (the update steps drop rows of weight 0),
never the sum of the weights: multiplying every weight by a constant changes no interval, and a
row of weight 0 is an absent row. (Kish's effective n, (sum w)^2 / sum w^2, would also be
scale-free but needs one more statistic and shrinks intervals of unequal weights differently
from the binary path; the row count is what both paths use.)
"""

from __future__ import annotations

import numpy as np

from metrics_core import formulas as f
from metrics_core.compute import binary_confusion_metrics, multiclass_confusion_metrics
from metrics_core.counts import BinnedScoreCounts, ScoreCounts, fold_negative_runs
from metrics_core.curves import ranking_areas
from metrics_core.losses import loss_terms
from metrics_core.significance.proportions import wilson, z_critical

__all__ = ["MAX_BOOT_BINS", "METRIC_RANGES", "class_auroc_replicates", "coarsen", "metric_range", "replicate_interval",
           "report_intervals", "score_replicates", "wilson"]

#: Score bins of the coarsened ScoreCounts that the bootstrap resamples.
MAX_BOOT_BINS = 512
NO_INTERVAL = ("n", "tp", "fp", "fn", "tn")
#: The metrics of :func:`score_replicates` (a binary report's score metrics).
SCORE_REPLICATES = ("auroc", "average_precision", "auprc_trapezoid", "log_loss", "brier")
_SNAP = 2.0 ** 40  # resolution of the conditional cell probabilities of a multinomial draw


def _percentile(reps: np.ndarray, level: float) -> tuple[float, float]:
    reps = np.asarray(reps, dtype=np.float64)
    ok = reps[~np.isnan(reps)]
    if ok.size == 0:
        return float("nan"), float("nan")
    alpha = (1.0 - level) / 2.0
    # Infinite replicates (e.g. KL divergence): interpolating inf - inf would give nan.
    method = "linear" if np.isfinite(ok).all() else "nearest"
    lo, hi = np.quantile(ok, [alpha, 1.0 - alpha], method=method)
    return float(lo), float(hi)


#: Count-based metrics outside [0, 1], and their range (every other count-based metric is a rate in [0, 1]).
METRIC_RANGES = {"mcc": (-1.0, 1.0), "cohen_kappa": (-1.0, 1.0), "cccsmf_accuracy": (-np.inf, 1.0),
                 "kl_divergence": (0.0, np.inf), "n": (0.0, np.inf), "tp": (0.0, np.inf),
                 "fp": (0.0, np.inf), "fn": (0.0, np.inf), "tn": (0.0, np.inf)}


def metric_range(metric: str) -> tuple[float, float]:
    """The range of a count-based metric (:data:`METRIC_RANGES`; a rate's (0, 1) otherwise)."""
    return METRIC_RANGES.get(metric, (0.0, 1.0))


def replicate_interval(point, reps, level: float, bounds: tuple[float, float] = (-np.inf, np.inf)):
    """Interval of an estimate from B replicates of it: ``point +/- t(B - 1) s_B``, clipped to ``bounds``.

    Parameters
    ----------
    point : float or numpy.ndarray
        The point estimate (one per column of ``reps`` beyond the first axis).
    reps : numpy.ndarray, shape (B, ...)
        Its replicates (bootstrap draws); nan and infinite ones are left out, column by column.
    level : float
        Two-sided level.
    bounds : (float, float)
        The range of the quantity (:func:`metric_range`).

    Returns
    -------
    (low, high) : floats, or arrays of ``point``'s shape
        ``point -/+ t_(1+level)/2, B-1 * s_B``, ``s_B`` the standard deviation of the B finite
        replicates (divisor B - 1), clipped to ``bounds``; (point, point) when the replicates
        agree; nan where the point is not finite or fewer than 2 replicates are.

    Notes
    -----
    The standard interval with the bootstrap standard error (Efron & Tibshirani 1993, *An
    Introduction to the Bootstrap*), which needs far fewer replicates than the tail percentiles
    of a percentile interval (they find 50 to 200 replicates enough for a standard error, and ask
    about 1,000 for percentiles). With B replicates the standard error is itself estimated, so
    the normal quantile becomes Student's t with B - 1 degrees of freedom: when the error of the
    point, truth - point, is N(0, sigma^2) and the replicates are B normal draws of spread sigma
    independent of it, (truth - point) / s_B follows t(B - 1) exactly (Student 1908), and the
    interval covers at its level whatever B is. On the label-lag simulations (100 replicates, 240
    periods per kind) the 2.5/97.5 % percentiles covered five-class stable accuracy in 85 % of
    seeds 0-39 and 93 % overall; this interval, 5 % wider on average, 90 % and 95 %
    (docs/label-lag.md).

    Examples
    --------
    >>> reps = np.array([0.80, 0.82, 0.84, 0.86, 0.88])
    >>> [round(x, 4) for x in replicate_interval(0.84, reps, 0.95)]
    [0.7522, 0.9278]
    >>> replicate_interval(0.99, reps + 0.12, 0.95, (0.0, 1.0))[1], replicate_interval(0.5, reps[:1], 0.95)
    (1.0, (nan, nan))
    """
    from scipy.special import stdtrit  # loaded on first use: the report's own paths never need it

    point = np.asarray(point, dtype=np.float64)
    reps = np.asarray(reps, dtype=np.float64)
    ok = np.isfinite(reps)
    b = ok.sum(axis=0)
    mean = np.where(ok, reps, 0.0).sum(axis=0) / np.maximum(b, 1)
    sd = np.sqrt((np.where(ok, reps - mean, 0.0) ** 2).sum(axis=0) / np.maximum(b - 1, 1))
    half = stdtrit(np.maximum(b - 1, 1), 0.5 + level / 2.0) * sd
    bad = (b < 2) | ~np.isfinite(point)
    lo = np.where(bad, np.nan, np.maximum(point - half, bounds[0]))
    hi = np.where(bad, np.nan, np.minimum(point + half, bounds[1]))
    return (float(lo), float(hi)) if lo.ndim == 0 else (lo, hi)


def _multinomial(n, probs: np.ndarray, n_boot: int, rng) -> np.ndarray:
    """``n_boot`` multinomial draws per group as conditional binomials vectorised over replicates.

    ``probs`` is ``(G, C)`` (G independent groups of C cells) and ``n`` the ``(G,)`` row counts;
    returns ``(n_boot, G, C)``. Exact multinomial sampling with one vectorised binomial call per
    cell index instead of numpy's per-replicate loop over cells.
    """
    probs = np.atleast_2d(np.asarray(probs, dtype=np.float64))
    groups, cells = probs.shape
    out = np.empty((n_boot, groups, cells))
    remaining = np.broadcast_to(np.asarray(n, dtype=np.int64), (n_boot, groups)).copy()
    # The mass left before each cell, 1 - p_0 - ... - p_(j-1) subtracted in that order, and every
    # cell's conditional probability, found at once: the same float operations as cell by cell.
    mass_left = np.subtract.accumulate(np.concatenate([np.ones((groups, 1)), probs[:, :-1]], axis=1), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.clip(np.where(mass_left > 0, probs / mass_left, 0.0), 0.0, 1.0)
    # Snapped to multiples of 2**-40 (a shift < 1e-12): weights scaled by a constant give q's a few ulps
    # apart, and numpy's binomial branches at p = 0.5 and n p = 30, so an unsnapped q of 0.5 + 1 ulp
    # would draw another replicate. Snapped, every scale of the weights draws the same replicates.
    q = np.round(q * _SNAP) / _SNAP
    drawn = q[:, :-1].any(axis=0).tolist()  # numpy's binomial returns 0 at p = 0 without drawing: the same stream
    columns = np.ascontiguousarray(q.T)
    for j in range(cells - 1):
        if not drawn[j]:
            out[:, :, j] = 0.0
            continue
        draw = rng.binomial(remaining, columns[j])
        out[:, :, j] = draw
        remaining -= draw
    out[:, :, cells - 1] = remaining
    return out


def _resample(counts: np.ndarray, n_rows, n_boot: int, rng, groups: bool = False) -> np.ndarray:
    """``n_boot`` multinomial replicates of a count array, rescaled to its total.

    With ``groups`` the first axis holds independent count vectors (each its own ``n_rows``).
    """
    c = np.asarray(counts, dtype=np.float64)
    flat = c.reshape(c.shape[0], -1) if groups else c.reshape(1, -1)
    totals = flat.sum(axis=1)
    n = np.broadcast_to(np.asarray(n_rows, dtype=np.int64), totals.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        probs = np.where(totals[:, None] > 0, flat / totals[:, None], 0.0)
        scale = np.where(n > 0, totals / np.maximum(n, 1), 0.0)
    draws = _multinomial(n, probs, n_boot, rng) * scale[None, :, None]
    return draws.reshape((n_boot,) + c.shape)


def coarsen(sc: ScoreCounts, max_bins: int = MAX_BOOT_BINS, losses: np.ndarray | None = None):
    """Group consecutive distinct scores into at most ``max_bins`` bins of about equal mass.

    Parameters
    ----------
    sc : ScoreCounts
        Exact score counts, scores ascending.
    max_bins : int
        Most bins returned; cuts fall where the cumulative count passes multiples of 1/max_bins.
    losses : numpy.ndarray, shape (4, n), optional
        The loss sums of each entry of ``sc`` (:func:`metrics_core.losses.loss_terms`, or the
        non-empty bins' :attr:`~metrics_core.counts.BinnedScoreCounts.losses`): also return
        the per-bin mean losses.

    Returns
    -------
    tuple of six arrays
        ``(pos, neg, loss_pos, loss_neg, brier_pos, brier_neg)`` per bin: counts and the mean
        per-row log loss / squared error of the positives and negatives in the bin (None
        without ``losses``; nan for a bin without positives or negatives). Empty input gives
        empty counts.

    Examples
    --------
    >>> sc = ScoreCounts.from_arrays(np.array([0, 1, 1, 0]), np.array([0.1, 0.4, 0.8, 0.9]))
    >>> [b.tolist() for b in coarsen(sc, max_bins=2)[:2]]
    [[1.0, 1.0], [1.0, 1.0]]
    """
    cnt = sc.pos + sc.neg
    if cnt.size > max_bins:
        cum = np.cumsum(cnt, dtype=np.float64)
        cuts = np.searchsorted(cum, cum[-1] * np.arange(1, max_bins) / max_bins, side="right")
        starts = np.unique(np.concatenate(([0], cuts[cuts < cnt.size])))
    else:
        starts = np.arange(cnt.size)
    if not cnt.size:
        return (np.zeros(0),) * 2 + (None,) * 4
    bp = np.add.reduceat(sc.pos, starts).astype(np.float64)
    bn = np.add.reduceat(sc.neg, starts).astype(np.float64)
    if losses is None:
        return bp, bn, None, None, None, None
    lp, ln, sp, sn = (np.add.reduceat(row, starts) for row in losses)
    return bp, bn, f.ratio(lp, bp), f.ratio(ln, bn), f.ratio(sp, bp), f.ratio(sn, bn)


def score_replicates(sc, n_rows: int, n_boot: int, rng, prob: bool = True) -> dict:
    """Bootstrap replicates of auroc, average_precision, auprc_trapezoid, log_loss and brier.

    Parameters
    ----------
    sc : ScoreCounts or BinnedScoreCounts
        Score counts of all rows.
    n_rows : int
        Rows behind the statistic (the multinomial sample size of a replicate).
    n_boot : int
        Number of replicates.
    rng : numpy.random.Generator
        Random source.
    prob : bool
        Scores are probabilities: add log_loss and brier.

    Returns
    -------
    dict of str to numpy.ndarray
        ``(n_boot,)`` replicates per metric; nan where a replicate leaves the metric undefined
        (a class absent).

    Notes
    -----
    Percentile bootstrap (Efron & Tibshirani 1993) on the statistic: the counts of
    :func:`coarsen` bins are resampled multinomially, the areas come from
    :func:`metrics_core.curves.ranking_areas`, and the shift that the coarsening causes is
    added back so the replicates are centred on the exact value.

    Examples
    --------
    >>> sc = ScoreCounts.from_arrays(np.array([0, 1, 1, 0]), np.array([0.1, 0.4, 0.8, 0.9]))
    >>> score_replicates(sc, 4, 3, np.random.default_rng(0))["auroc"].shape
    (3,)
    """
    if isinstance(sc, BinnedScoreCounts):
        prob = prob and sc.losses is not None
        losses = sc.losses[:, (sc.pos + sc.neg) > 0] if prob else None  # the bins as_score_counts keeps
        sc = sc.as_score_counts()
    else:
        losses = loss_terms(sc.scores, sc.pos, sc.neg) if prob else None
    bp, bn, lp, ln, sp, sn = coarsen(sc, losses=losses)
    k = bp.size
    reps = _resample(np.concatenate((bp, bn)), n_rows, n_boot, rng)
    rp, rn = reps[:, :k], reps[:, k:]
    exact = ranking_areas(sc.pos, sc.neg)
    coarse = ranking_areas(bp, bn)
    reps = ranking_areas(rp, rn)
    # Intervals centred on the exact statistic: add back what the coarsening changed.
    out = {k: reps[k] + (exact[k] - coarse[k]) for k in reps}
    if prob:
        tot = rp.sum(-1) + rn.sum(-1)
        out["log_loss"] = f.ratio(rp @ np.nan_to_num(lp) + rn @ np.nan_to_num(ln), tot)
        out["brier"] = f.ratio(rp @ np.nan_to_num(sp) + rn @ np.nan_to_num(sn), tot)
    return out


def class_auroc_replicates(class_scores, n_boot: int, rng, n_rows: int | None = None) -> np.ndarray:
    """Bootstrap replicates of the one-vs-rest AUROC of each class, centred on the exact values.

    Parameters
    ----------
    class_scores : sequence of ScoreCounts or BinnedScoreCounts
        One-vs-rest score counts of each of the K classes.
    n_boot : int
        Number of replicates.
    rng : numpy.random.Generator
        Random source.
    n_rows : int, optional
        Rows of positive weight behind the statistics (``MulticlassStats.n_rows``): the
        multinomial sample size of every class's replicate, as in the binary path, so that
        scaling the weights changes nothing. None: the total count, which is the row count only
        for unweighted counts.

    Returns
    -------
    numpy.ndarray, shape (n_boot, K)
        Replicates; nan for a class without positives or negatives.

    Notes
    -----
    Each class's coarsened score counts (:func:`coarsen`) are resampled as one multinomial
    group. Exact counts are folded first (:func:`~metrics_core.counts.fold_negative_runs`): a
    one-pass and a class-at-a-time scan then give the same interval. The multinomial law of a
    folded cell is that of the sum of the cells it replaces.

    Examples
    --------
    >>> sc = ScoreCounts.from_arrays(np.array([0, 1, 1, 0]), np.array([0.1, 0.4, 0.8, 0.9]))
    >>> class_auroc_replicates([sc, sc], 5, np.random.default_rng(0)).shape
    (5, 2)
    """
    class_scores = [sc if isinstance(sc, BinnedScoreCounts) else fold_negative_runs(sc) for sc in class_scores]
    coarse = [coarsen(sc.as_score_counts() if isinstance(sc, BinnedScoreCounts) else sc)[:2]
              for sc in class_scores]
    width = max(bp.size for bp, _ in coarse)
    cells = np.zeros((len(coarse), 2 * width))
    for g, (bp, bn) in enumerate(coarse):
        cells[g, :bp.size] = bp
        cells[g, width:width + bn.size] = bn
    if n_rows is None:
        n_rows = np.array([int(round(c.sum())) for c in cells])
    reps = _resample(cells, n_rows, n_boot, rng, groups=True)
    auroc = ranking_areas(reps[..., :width], reps[..., width:])["auroc"]  # zero-padded bins add nothing
    exact = np.array([ranking_areas(sc.pos, sc.neg)["auroc"] for sc in class_scores], dtype=np.float64)
    coarse_auroc = ranking_areas(cells[:, :width], cells[:, width:])["auroc"]
    return auroc + (exact - coarse_auroc)


def _clt(total, total_sq, weight, n_rows, level, bounds=(-np.inf, np.inf)):
    """Normal (CLT) interval of a mean from its sum and sum of squares, clipped to ``bounds``."""
    if not weight or np.isnan(total):
        return float("nan"), float("nan")
    mean = total / weight
    var = max(total_sq / weight - mean * mean, 0.0)
    z = z_critical(level)
    half = z * np.sqrt(var / n_rows)
    return float(max(mean - half, bounds[0])), float(min(mean + half, bounds[1]))


def _wilson_map(tp, fp, fn, tn, scale, level, keys) -> dict:
    n = tp + fp + fn + tn
    table = {"accuracy": (tp + tn, n), "error_rate": (fp + fn, n), "precision": (tp, tp + fp),
             "recall": (tp, tp + fn), "specificity": (tn, tn + fp), "fpr": (fp, fp + tn), "fnr": (fn, fn + tp),
             "npv": (tn, tn + fn), "prevalence": (tp + fn, n)}
    return {out: wilson(table[src][0] * scale, table[src][1] * scale, level) for out, src in keys.items()}


def _wanted(keys, names) -> bool:
    """Whether any of ``names`` is asked for (``keys`` None: every metric is)."""
    return keys is None or any(k in keys for k in names)


def _binary_intervals(report, s, level, n_boot, rng, keys=None) -> tuple[dict, dict, dict]:
    """(Wilson intervals, bootstrap replicates, other intervals) of a binary report; with ``keys``,
    at least those metrics' (the score replicates, drawn after the confusion's, only when asked for)."""
    o = report.options
    m = s.confusion.matrix.astype(np.float64)
    total = m.sum()
    scale = s.n_rows / total if total else 1.0
    tn, fp, fn, tp = m.ravel()
    wil = _wilson_map(tp, fp, fn, tn, scale, level, {k: k for k in (
        "accuracy", "error_rate", "precision", "recall", "specificity", "fpr", "fnr", "npv", "prevalence")
        if _wanted(keys, (k,))})
    reps = binary_confusion_metrics(_resample(m, s.n_rows, n_boot, rng), o.get("beta", 1.0), o.get("cost_matrix"))
    if s.scores is not None and _wanted(keys, SCORE_REPLICATES):
        reps.update(score_replicates(s.scores, s.n_rows, n_boot, rng,
                                     not np.isnan(report.metrics.get("log_loss", np.nan))))
    return wil, reps, {}


def _multiclass_intervals(report, s, level, n_boot, rng, keys=None) -> tuple[dict, dict, dict]:
    """(Wilson intervals, bootstrap replicates, other intervals) of a multiclass report; with ``keys``,
    at least those metrics' (the AUROC replicates, drawn after the confusion's, only when asked for)."""
    o = report.options
    m = s.confusion.matrix.astype(np.float64)
    total = m.sum()
    scale = s.n_rows / total if total else 1.0
    tp = np.trace(m)
    wil = {k: wilson(tp * scale, total * scale, level) for k in ("accuracy", "precision_micro", "recall_micro")
           if _wanted(keys, (k,))}
    if _wanted(keys, ("error_rate",)):
        wil["error_rate"] = wilson((total - tp) * scale, total * scale, level)
    reps, _ = multiclass_confusion_metrics(_resample(m, s.n_rows, n_boot, rng), o.get("beta", 1.0),
                                           o.get("cost_matrix"), keys)
    out = {}
    if s.scores is not None and _wanted(keys, ("auroc_ovr_macro", "auroc_ovr_weighted")):
        per = class_auroc_replicates(s.scores, n_boot, rng, s.n_rows)
        support = m.sum(axis=1)
        reps["auroc_ovr_macro"], _ = f.nanmean_count(per)
        reps["auroc_ovr_weighted"], _ = f.nanmean_count(per, support)
    if s.scores is not None and _wanted(keys, ("log_loss",)):
        out["log_loss"] = _clt(s.log_loss.total, s.log_loss.total_sq, s.log_loss.weight, s.n_rows, level, (0.0, np.inf))
    return wil, reps, out


def _multilabel_intervals(report, s, level, n_boot, rng, keys=None) -> tuple[dict, dict, dict]:
    """(Wilson intervals, bootstrap replicates, CLT intervals of per-sample means) of a multilabel report."""
    m = s.label_confusion.astype(np.float64)
    fp, fn, tp = m[:, 0, 1], m[:, 1, 0], m[:, 1, 1]
    n_labels = m.shape[0]
    wil = {"hamming_loss": wilson((fp + fn).sum(), s.n_rows * n_labels, level),
           "precision_micro": wilson(tp.sum(), (tp + fp).sum(), level),
           "recall_micro": wilson(tp.sum(), (tp + fn).sum(), level)}
    k, _, n = s.sample_sums["exact_match"]
    wil["exact_match_ratio"] = wilson(k, n, level)
    out = {}
    for name in ("jaccard", "precision", "recall", "f1"):
        t, t2, d = s.sample_sums[name]
        out[f"{name}_samples"] = _clt(t, t2, d, d, level, (0.0, 1.0))
    rep = _resample(m, s.n_rows, n_boot, rng, groups=True)  # (B, L, 2, 2)
    rfp, rfn, rtp = rep[..., 0, 1], rep[..., 1, 0], rep[..., 1, 1]
    reps = {"f1_micro": f.fbeta(rtp.sum(-1), rfp.sum(-1), rfn.sum(-1))}
    for name, vals in (("precision", f.ratio(rtp, rtp + rfp)), ("recall", f.ratio(rtp, rtp + rfn)),
                       ("f1", f.fbeta(rtp, rfp, rfn))):
        reps[f"{name}_macro"], _ = f.nanmean_count(vals)
    return wil, reps, out


def report_intervals(report, keys=None) -> dict:
    """All confidence intervals of a report at ``report.options["level"]``.

    Parameters
    ----------
    report : Report
        A binary, multiclass or multilabel report; its options give ``level``, ``n_boot``,
        ``seed``, ``beta`` and ``cost_matrix``.
    keys : collection of str, optional
        Only these metrics' intervals (default all): the same values as in the full result, the
        other metrics' formulas, percentiles and the draws that come after the asked ones' left
        out (a segment's headline needs one).

    Returns
    -------
    dict of str to (float, float)
        Metric key -> (low, high), in the order of ``report.metrics``; keys without an interval
        (counts) are omitted; (nan, nan) where the metric is undefined (Wilson with a zero
        denominator, or every bootstrap replicate nan).

    Notes
    -----
    ISO/IEC TS 4213 clause 7: :func:`wilson` for proportions with each metric's own
    denominator, a seeded percentile bootstrap of the statistics for the others, a normal
    (central limit) interval for per-row means (multiclass log loss, per-sample multilabel
    metrics). See the module docstring for weighted data.

    Examples
    --------
    >>> from metrics_core import binary_report
    >>> r = binary_report([0, 1, 1, 0, 1], y_pred=[0, 1, 0, 0, 1], n_boot=50)
    >>> [round(x, 4) for x in report_intervals(r)["accuracy"]]
    [0.3755, 0.9638]
    """
    from metrics_core.stats import BinaryStats, MulticlassStats, MultilabelStats

    o = report.options
    level, n_boot = o.get("level", 0.95), o.get("n_boot", 1000)
    rng = np.random.default_rng(o.get("seed", 0))
    s = report.stats
    steps = {BinaryStats: _binary_intervals, MulticlassStats: _multiclass_intervals,
             MultilabelStats: _multilabel_intervals}
    step = next((fn for kind, fn in steps.items() if isinstance(s, kind)), None)
    if step is None:  # pragma: no cover - every report kind is handled above
        raise TypeError(f"No intervals for statistics of type {type(s).__name__}.")
    wil, reps, out = step(report, s, level, n_boot, rng, keys)
    for key, vals in reps.items():
        if key in NO_INTERVAL or key.startswith("n_undefined") or key not in report.metrics or (
                keys is not None and key not in keys):
            continue
        out[key] = _percentile(vals, level)
    out.update(wil)
    return {k: out[k] for k in report.metrics if k in out and (keys is None or k in keys)}
