"""The calibration-change test: a labelled period's positives per score bin against its reference's calibration map."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from metrics_core.monitoring.calibration_map import CalibrationMap, calibration_targets
from metrics_core.monitoring.decision import MIN_EXPECTED
from metrics_core.monitoring.period import PeriodStats
from metrics_core.significance import TestResult

__all__ = ["calibration_change", "calibration_result"]


def _binned_rows(bins: np.ndarray, weights: np.ndarray, n_bins: int) -> np.ndarray:
    """``np.bincount(bins, weights=w, minlength=n_bins)`` for each row ``w`` of ``weights``.

    Bins in ascending order (the atoms of fine-binned statistics, sorted by score, as
    :func:`_bin_sums` passes them) are summed as runs with ``np.add.reduceat``: about 10x faster
    than a bincount over the replicates (51 maps of 50 replicates per period with segments), the
    same sums within 1e-14 relative (numpy's pairwise summation, not bincount's running sum).
    Other bins take one bincount over all rows: the same sums, added in the same order, as a loop
    over the rows."""
    rows = weights.shape[0]
    if bins.size and (bins[1:] >= bins[:-1]).all():
        starts = np.flatnonzero(np.concatenate(([True], bins[1:] != bins[:-1])))
        out = np.zeros((rows, n_bins))
        out[:, bins[starts]] = np.add.reduceat(weights, starts, axis=1)
        return out
    at = (np.arange(rows)[:, None] * n_bins + bins[None, :]).ravel()
    return np.bincount(at, weights=weights.ravel(), minlength=rows * n_bins).reshape(rows, n_bins)


def _bin_sums(coarse: np.ndarray, n: np.ndarray, y: np.ndarray, cal_map: CalibrationMap, rows: np.ndarray,
              n_bins: int) -> tuple[np.ndarray, ...]:
    """Per target and score bin, the sums of :func:`calibration_change` for T targets on the same atoms.

    ``coarse`` (A,): each atom's bin; ``n``, ``y`` (T, A): each target's rows and positives per atom;
    ``rows`` (T,): the targets' rows of ``cal_map``. Returns the observed positives, the expected
    ones, their variance, the rows (each (T, n_bins)) and the variance over the map's replicates of
    the expected positives. The targets' bins are apart in one binning: each target's sums are
    those of one target at a time (the replicates' by :func:`_binned_rows`, pairwise over atoms in
    score order; the others by bincount, in order). A replicate's atoms without rows add zeros where
    the target's replicates are all finite: when most atoms have rows every atom is summed (no
    gather of the replicates), else those are left out."""
    t = n.shape[0]
    flat = (np.arange(t)[:, None] * n_bins + coarse[None, :]).ravel()

    def binned(w: np.ndarray) -> np.ndarray:
        return np.bincount(flat, weights=w.ravel(), minlength=t * n_bins).reshape(t, n_bins)

    g = cal_map.probs[rows]
    keep = (n != 0) | ~cal_map.finite_replicates[rows][:, None]
    if keep.mean() > 0.5:
        together = rows.size == rows[-1] - rows[0] + 1 and (np.diff(rows) == 1).all()  # a view, not a copy
        reps = cal_map.replicates[:, rows[0]:rows[-1] + 1] if together else cal_map.replicates[:, rows]
        drawn = _binned_rows(flat, (n * reps).reshape(reps.shape[0], -1), t * n_bins)
    else:
        tt, aa = np.nonzero(keep)
        drawn = _binned_rows(flat.reshape(t, -1)[tt, aa], n[tt, aa] * cal_map.replicates[:, rows[tt], aa], t * n_bins)
    return binned(y), binned(n * g), binned(n * g * (1 - g)), binned(n), drawn.reshape(-1, t, n_bins).var(axis=0)


def calibration_change(cal_map: CalibrationMap, current: PeriodStats, n_bins: int = 10) -> dict[str, TestResult]:
    """Does the period's calibration differ from the reference's? One test per class.

    Parameters
    ----------
    cal_map : CalibrationMap
        The reference's calibration map (with its bootstrap replicates).
    current : PeriodStats
        A labelled period (``current.calibration``).
    n_bins : int
        Fixed-width bins over [0, 1] compared.

    Returns
    -------
    dict of class name (or ``"top_label"``) to TestResult
        Per class (one-vs-rest score; multiclass also the top label: the predicted class's score
        against "the prediction was right"): in each bin b, the observed positives O_b against those the
        reference map expects for the period's own scores, E_b = sum of g(score); statistic
        X^2 = sum_b (O_b - E_b)^2 / (V_b + W_b), V_b = sum g(1 - g) (the period's sampling), W_b the
        variance of E_b over the map's bootstrap replicates (the reference's); p-value from
        chi-squared with the number of bins as degrees of freedom (Hosmer-Lemeshow without fitted
        parameters), over the bins that expect at least
        :data:`~metrics_core.monitoring.decision.MIN_EXPECTED` positives and as many negatives (the
        approximation's rule; a period without such a bin has a nan p-value and never alerts).
        Effect: ``sum_b |O_b - E_b| / N`` over every bin, the expected calibration error of the
        period measured against the reference's calibration (0 when the relation between scores
        and labels is unchanged, up to sampling noise of order sqrt(p(1-p)/N_b)); nan when the test
        is undefined (``details["ece"]`` keeps it). Empty without calibration statistics in the period.
    """
    cal = current.calibration
    if cal is None:
        return {}
    found = [(j, name, cc) for j, (name, cc) in enumerate(calibration_targets(cal)) if cc.valid]
    # Targets on the same atoms (fine bins: every target) are summed together, others one by one.
    shared = all(np.array_equal(cc.keys, found[0][2].keys) for _, _, cc in found)
    out = {}
    for group in ([found] if shared and found else [[x] for x in found]):
        coarse = np.minimum((group[0][2].keys * n_bins).astype(np.int64), n_bins - 1)
        obs, exp, var, rows, rep_var = _bin_sums(coarse, np.stack([cc.n for _, _, cc in group]),
                                                 np.stack([cc.y for _, _, cc in group]), cal_map,
                                                 np.array([j for j, _, _ in group]), n_bins)
        for i, (_, name, cc) in enumerate(group):
            out[name] = calibration_result(obs[i], exp[i], var[i] + rep_var[i], rows[i], cc.total)
    return out


def calibration_result(obs: np.ndarray, exp: np.ndarray, denom: np.ndarray, rows: np.ndarray, total: float,
                       scale: np.ndarray | float = 1.0) -> TestResult:
    """The calibration-change test from its per-bin sums (:func:`calibration_change`).

    Parameters
    ----------
    obs, exp : numpy.ndarray
        Per score bin, the observed positives O_b and those the reference's calibration expects E_b.
    denom : numpy.ndarray
        Per bin, the variance of O_b - E_b (the period's sampling plus the reference's).
    rows : numpy.ndarray
        Per bin, the rows (or their weight).
    total : float
        All rows (or their weight).
    scale : numpy.ndarray or float
        Per bin, the effective rows per unit of ``rows`` (1 for unweighted rows; Σ a / Σ a² for
        weights a): the rule on expected positives and negatives reads effective counts.

    Returns
    -------
    TestResult
        X^2 = sum_b (O_b - E_b)^2 / denom_b over the bins that expect at least
        :data:`~metrics_core.monitoring.decision.MIN_EXPECTED` positives and as many negatives,
        chi-squared with as many degrees of freedom; effect the ECE sum_b |O_b - E_b| / total
        (nan when no bin counts: the test is then undefined and never alerts).
    """
    # The chi-squared approximation's rule: a bin counts when it expects MIN_EXPECTED positives and
    # negatives (one row scored 0.8 and labelled negative gave X^2 = 23, p = 2e-6 and a "retrain").
    full = (denom > 0) & (exp * scale >= MIN_EXPECTED) & ((rows - exp) * scale >= MIN_EXPECTED)
    x2 = float(np.sum((obs[full] - exp[full]) ** 2 / denom[full]))
    df = int(full.sum())
    p = float(special.chdtrc(df, x2)) if df else math.nan  # scipy.stats.chi2.sf(x2, df)'s value, without its overhead
    ece = float(np.abs(obs - exp).sum() / total)
    effect = ece if df else math.nan  # undefined, not judged on the effect alone (as a distance is)
    verdict = (f"undefined: no score bin expects {MIN_EXPECTED} positives and negatives" if not df
               else ("significant" if p < 0.05 else "not significant"))
    return TestResult("calibration change (chi-squared over score bins)", x2, p, effect,
                      "ECE against the reference calibration", f"{verdict} at alpha=0.05", 0.05, None,
                      {"df": float(df), "ece": ece, "observed": float(obs.sum()), "expected": float(exp.sum()),
                       "rate_current": float(obs.sum() / total), "rate_expected": float(exp.sum() / total)})
