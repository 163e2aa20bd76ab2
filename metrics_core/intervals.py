"""Confidence intervals from statistics: Wilson for proportions, a seeded percentile bootstrap
that resamples the statistics (not the rows) for everything else (ISO 4213 clause 7).

Wilson intervals use each metric's own denominator (precision: tp + fp, recall: tp + fn, ...).
The bootstrap draws multinomial counts over the cells of a ConfusionCounts (equivalent to
resampling rows for every confusion metric) and over the cells of a ScoreCounts coarsened to at
most ``MAX_BOOT_BINS`` score bins (so 1,000 replicates at 10M rows take well under a second);
the coarsening shift of AUROC / AP is added back, so intervals are centred on the exact value.
Weighted statistics are resampled as counts of ``n_rows`` rows with probabilities proportional
to the weights, then rescaled to the total weight, and Wilson intervals use the effective count
``weight * n_rows / total_weight`` (an approximation, documented in the README).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

from metrics_core import formulas as f
from metrics_core.compute import binary_confusion_metrics, multiclass_confusion_metrics
from metrics_core.counts import BinnedScoreCounts, ScoreCounts
from metrics_core.curves import auroc_from_counts, average_precision_from_counts

MAX_BOOT_BINS = 2048
NO_INTERVAL = ("n", "tp", "fp", "fn", "tn")


def wilson(successes, n, level: float = 0.95):
    """Wilson score interval for a proportion; (nan, nan) when ``n == 0``.

    ``(p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)`` with z the normal quantile.

    >>> tuple(round(x, 6) for x in wilson(8, 10))
    (0.490162, 0.943318)
    """
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    z = ndtri(0.5 + level / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        denom = 1.0 + z * z / n
        centre = (p + z * z / (2 * n)) / denom
        half = z / denom * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        lo, hi = centre - half, centre + half
    if np.ndim(lo) == 0:
        return (float(lo), float(hi)) if n > 0 else (float("nan"), float("nan"))
    return np.where(n > 0, lo, np.nan), np.where(n > 0, hi, np.nan)


def _percentile(reps: np.ndarray, level: float) -> tuple[float, float]:
    reps = np.asarray(reps, dtype=np.float64)
    ok = reps[~np.isnan(reps)]
    if ok.size == 0:
        return float("nan"), float("nan")
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(ok, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def _multinomial(n: int, probs: np.ndarray, n_boot: int, rng) -> np.ndarray:
    """``n_boot`` multinomial draws as conditional binomials vectorised over the replicates.

    Exact multinomial sampling; one vectorised binomial call per cell instead of numpy's
    per-replicate loop over cells (which costs seconds for thousands of cells).
    """
    out = np.empty((n_boot, probs.size))
    remaining = np.full(n_boot, n, dtype=np.int64)
    mass_left = 1.0
    for j, pj in enumerate(probs):
        if j == probs.size - 1:
            out[:, j] = remaining
            break
        q = min(max(pj / mass_left, 0.0), 1.0) if mass_left > 0 else 0.0
        draw = rng.binomial(remaining, q)
        out[:, j] = draw
        remaining -= draw
        mass_left -= pj
    return out


def _resample(counts: np.ndarray, n_rows: int, n_boot: int, rng) -> np.ndarray:
    """``n_boot`` multinomial replicates of a count array (any shape), rescaled to its total."""
    flat = np.asarray(counts, dtype=np.float64).ravel()
    total = flat.sum()
    if total <= 0 or n_rows <= 0:
        return np.zeros((n_boot,) + np.shape(counts))
    draws = _multinomial(int(n_rows), flat / total, n_boot, rng)
    return (draws * (total / n_rows)).reshape((n_boot,) + np.shape(counts))


def coarsen(sc: ScoreCounts, max_bins: int = MAX_BOOT_BINS, losses: bool = True):
    """Group consecutive distinct scores into at most ``max_bins`` bins of about equal mass.

    Returns ``(pos, neg, loss_pos, loss_neg, brier_pos, brier_neg)`` per bin: counts and the mean
    per-row log loss / squared error of the positives and negatives in the bin (None without
    ``losses``).
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
    if not losses:
        return bp, bn, None, None, None, None
    eps = np.finfo(np.float64).eps
    s = sc.scores
    p = np.clip(s, eps, 1 - eps)
    lp = np.add.reduceat(sc.pos * -np.log(p), starts)
    ln = np.add.reduceat(sc.neg * -np.log(1.0 - p), starts)
    sp = np.add.reduceat(sc.pos * (1 - s) ** 2, starts)
    sn = np.add.reduceat(sc.neg * s * s, starts)
    return bp, bn, f.ratio(lp, bp), f.ratio(ln, bn), f.ratio(sp, bp), f.ratio(sn, bn)


def _trapezoid_pr(pos, neg):
    """Trapezoid area under PR points (with the (0, 1) start) for replicate count arrays."""
    pos_d, neg_d = np.flip(pos, -1), np.flip(neg, -1)
    tps, fps = np.cumsum(pos_d, -1), np.cumsum(neg_d, -1)
    prec = np.nan_to_num(f.ratio(tps, tps + fps))
    rec = f.ratio(tps, tps[..., -1:])
    rec = np.concatenate((np.zeros(rec.shape[:-1] + (1,)), rec), -1)
    prec = np.concatenate((np.ones(prec.shape[:-1] + (1,)), prec), -1)
    return (np.diff(rec, axis=-1) * (prec[..., 1:] + prec[..., :-1]) / 2).sum(-1)


def score_replicates(sc, n_rows: int, n_boot: int, rng, prob: bool = True) -> dict:
    """Bootstrap replicates of auroc, average_precision, auprc_trapezoid, log_loss and brier."""
    if isinstance(sc, BinnedScoreCounts):
        sc = sc.as_score_counts()
    bp, bn, lp, ln, sp, sn = coarsen(sc, losses=prob)
    k = bp.size
    reps = _resample(np.concatenate((bp, bn)), n_rows, n_boot, rng)
    rp, rn = reps[:, :k], reps[:, k:]
    out = {}
    exact = {"auroc": auroc_from_counts(sc.pos, sc.neg),
             "average_precision": average_precision_from_counts(sc.pos, sc.neg)}
    coarse = {"auroc": auroc_from_counts(bp, bn), "average_precision": average_precision_from_counts(bp, bn)}
    out["auroc"] = auroc_from_counts(rp, rn) + (exact["auroc"] - coarse["auroc"])
    out["average_precision"] = average_precision_from_counts(rp, rn) + (
        exact["average_precision"] - coarse["average_precision"])
    from metrics_core.curves import pr_curve, trapezoid_area

    if sc.pos.sum() > 0:
        r, p, _ = pr_curve(sc)
        shift = trapezoid_area(r, p) - float(_trapezoid_pr(bp, bn))
        out["auprc_trapezoid"] = _trapezoid_pr(rp, rn) + shift
    if prob:
        tot = rp.sum(-1) + rn.sum(-1)
        out["log_loss"] = f.ratio(rp @ np.nan_to_num(lp) + rn @ np.nan_to_num(ln), tot)
        out["brier"] = f.ratio(rp @ np.nan_to_num(sp) + rn @ np.nan_to_num(sn), tot)
    return out


def _clt(total, total_sq, weight, n_rows, level, bounds=(-np.inf, np.inf)):
    """Normal (CLT) interval of a mean from its sum and sum of squares, clipped to ``bounds``."""
    if not weight or np.isnan(total):
        return float("nan"), float("nan")
    mean = total / weight
    var = max(total_sq / weight - mean * mean, 0.0)
    z = ndtri(0.5 + level / 2.0)
    half = z * np.sqrt(var / n_rows)
    return float(max(mean - half, bounds[0])), float(min(mean + half, bounds[1]))


def _wilson_map(tp, fp, fn, tn, scale, level, keys) -> dict:
    n = tp + fp + fn + tn
    table = {"accuracy": (tp + tn, n), "error_rate": (fp + fn, n), "precision": (tp, tp + fp),
             "recall": (tp, tp + fn), "specificity": (tn, tn + fp), "fpr": (fp, fp + tn), "fnr": (fn, fn + tp),
             "npv": (tn, tn + fn), "prevalence": (tp + fn, n)}
    return {out: wilson(table[src][0] * scale, table[src][1] * scale, level) for out, src in keys.items()}


def report_intervals(report) -> dict:
    """All intervals of a report (see module docstring); keys without an interval are omitted."""
    from metrics_core.stats import BinaryStats, MulticlassStats, MultilabelStats

    o = report.options
    level, n_boot = o.get("level", 0.95), o.get("n_boot", 1000)
    rng = np.random.default_rng(o.get("seed", 0))
    s = report.stats
    out: dict = {}
    if isinstance(s, BinaryStats):
        m = s.confusion.matrix.astype(np.float64)
        total = m.sum()
        scale = s.n_rows / total if total else 1.0
        tn, fp, fn, tp = m.ravel()
        wil = _wilson_map(tp, fp, fn, tn, scale, level, {k: k for k in (
            "accuracy", "error_rate", "precision", "recall", "specificity", "fpr", "fnr", "npv", "prevalence")})
        reps = binary_confusion_metrics(_resample(m, s.n_rows, n_boot, rng), o.get("beta", 1.0), o.get("cost_matrix"))
        if s.scores is not None:
            reps.update(score_replicates(s.scores, s.n_rows, n_boot, rng,
                                         not np.isnan(report.metrics.get("log_loss", np.nan))))
    elif isinstance(s, MulticlassStats):
        m = s.confusion.matrix.astype(np.float64)
        total = m.sum()
        scale = s.n_rows / total if total else 1.0
        tp = np.trace(m)
        wil = {k: wilson(tp * scale, total * scale, level) for k in ("accuracy", "precision_micro", "recall_micro")}
        wil["error_rate"] = wilson((total - tp) * scale, total * scale, level)
        reps, _ = multiclass_confusion_metrics(_resample(m, s.n_rows, n_boot, rng), o.get("beta", 1.0),
                                               o.get("cost_matrix"))
        if s.scores is not None:
            per = [score_replicates(sc, int(round(s.n_rows)), n_boot, rng, prob=False)["auroc"] for sc in s.scores]
            per = np.stack(per, -1)
            support = m.sum(axis=1)
            reps["auroc_ovr_macro"], _ = f.nanmean_count(per)
            reps["auroc_ovr_weighted"], _ = f.nanmean_count(per, support)
            out["log_loss"] = _clt(s.log_loss.total, s.log_loss.total_sq, s.log_loss.weight, s.n_rows, level, (0.0, np.inf))
    elif isinstance(s, MultilabelStats):
        m = s.label_confusion.astype(np.float64)
        tn, fp, fn, tp = m[:, 0, 0], m[:, 0, 1], m[:, 1, 0], m[:, 1, 1]
        n_labels = m.shape[0]
        wil = {"hamming_loss": wilson((fp + fn).sum(), s.n_rows * n_labels, level),
               "precision_micro": wilson(tp.sum(), (tp + fp).sum(), level),
               "recall_micro": wilson(tp.sum(), (tp + fn).sum(), level)}
        k, _, n = s.sample_sums["exact_match"]
        wil["exact_match_ratio"] = wilson(k, n, level)
        for name in ("jaccard", "precision", "recall", "f1"):
            t, t2, d = s.sample_sums[name]
            out[f"{name}_samples"] = _clt(t, t2, d, d, level, (0.0, 1.0))
        rep = np.stack([_resample(m[j], s.n_rows, n_boot, rng) for j in range(n_labels)], 1)  # (B, L, 2, 2)
        rtn, rfp, rfn, rtp = rep[..., 0, 0], rep[..., 0, 1], rep[..., 1, 0], rep[..., 1, 1]
        reps = {"f1_micro": f.fbeta(rtp.sum(-1), rfp.sum(-1), rfn.sum(-1))}
        for name, vals in (("precision", f.ratio(rtp, rtp + rfp)), ("recall", f.ratio(rtp, rtp + rfn)),
                           ("f1", f.fbeta(rtp, rfp, rfn))):
            reps[f"{name}_macro"], _ = f.nanmean_count(vals)
    else:  # pragma: no cover - every report kind is handled above
        raise TypeError(f"No intervals for statistics of type {type(s).__name__}.")
    for key, vals in reps.items():
        if key in NO_INTERVAL or key.startswith("n_undefined") or key not in report.metrics:
            continue
        out[key] = _percentile(vals, level)
    out.update(wil)
    return {k: out[k] for k in report.metrics if k in out}
