"""Label shift without labels: priors by EM on binned scores, the shift the scores support, whether to trust it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

from metrics_core import drift
from metrics_core.monitoring.calibration_map import coarsen
from metrics_core.monitoring.period import PeriodStats, binned
from metrics_core.monitoring.policy import AlertPolicy

__all__ = ["cell_posteriors", "own_scores", "coarse_own", "em_priors", "adjust", "ShiftChoice", "choose_shift",
           "reweighted_reference", "support", "ALPHA", "TEST_BINS", "MIN_CELL", "MAX_UNEXPLAINED", "MIN_SUPPORT",
           "MIN_SUPPORT_SHARE",
           "DEGENERATE_SHARE", "PREFIX"]

#: Prefix of the estimated metrics in a period's metrics.
PREFIX = "estimated/"

#: Level of the two goodness-of-fit tests that choose between no shift, label shift and covariate shift.
ALPHA = 0.01

#: Bins of the own score per predicted class in those tests (0.1 wide).
TEST_BINS = 10

#: Expected period rows a cell of those tests needs to count (the chi-squared approximation's rule).
MIN_CELL = 5.0

#: Label shift explains a period's scores when its fit holds at :data:`ALPHA`, or when it leaves
#: under this share of the no-shift fit's excess X^2 - df (its non-centrality): with thousands of
#: rows a small misfit of the reference's maps is significant while the prior change explains nearly
#: all of the move (on the simulations: label shift leaves 0.4-6 %, covariate shift 72-94 %).
MAX_UNEXPLAINED = 0.25


def own_scores(task: str, hist: np.ndarray) -> np.ndarray:
    """Each predicted class's own score histogram: (K, S, B) -> (K, B), the score the prediction rests
    on (binary: the positive score of both predicted classes; multiclass: score column k for class k)."""
    k = hist.shape[0]
    return hist[:, 0] if task == "binary" else hist[np.arange(k), np.arange(k)]


def cell_posteriors(task: str, cond: np.ndarray, confusion: np.ndarray) -> np.ndarray:
    """The calibrated posterior over the classes of a row in cell (predicted class k, own-score bin b).

    Parameters
    ----------
    task : {"binary", "multiclass"}
        The task.
    cond : numpy.ndarray, shape (..., K, S, B)
        The reference's calibration map per predicted class (:attr:`CalibrationMap.cond`), leading
        axes replicates.
    confusion : numpy.ndarray, shape (K, K)
        The reference's confusion counts (rows label, columns predicted).

    Returns
    -------
    numpy.ndarray, shape (..., K, B, K)
        ``P[k, b, j]`` = P(label j | predicted k, own score in bin b) under the reference's priors.
        Binary: ``[1 - g, g]`` with g the positive class's map. Multiclass: the predicted class's
        own map on the diagonal; the rest 1 - g shared among the other classes as the reference's
        wrong rows of column k are (the statistics keep no joint score of two classes, so the mix
        of the wrong labels is taken as constant over the own score; equal shares without any).
    """
    if task == "binary":
        g = np.clip(cond[..., 0, :], 0.0, 1.0)
        return np.stack([1 - g, g], axis=-1)
    k = cond.shape[-3]
    diag = np.clip(cond[..., np.arange(k), np.arange(k), :], 0.0, 1.0)  # (..., K, B)
    off = np.asarray(confusion, dtype=np.float64).T * (1 - np.eye(k))  # [pred, label]
    tot = off.sum(axis=1, keepdims=True)
    r = np.where(tot > 0, off / np.where(tot > 0, tot, 1), (1 - np.eye(k)) / (k - 1))
    out = (1 - diag)[..., None] * r[:, None, :]
    out[..., np.arange(k), :, np.arange(k)] = np.moveaxis(diag, -2, 0)
    return out


def adjust(post: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Posteriors under new priors: p'(y | x) proportional to p(y | x) w_y, w = new prior / old prior
    (Saerens, Latinne & Decaestecker 2002, eq. 2.4); ``weights`` (..., K) broadcast over the cells."""
    q = post * weights[..., None, None, :]
    s = q.sum(axis=-1, keepdims=True)
    return np.divide(q, s, out=np.zeros_like(q), where=s > 0)


def em_priors(post: np.ndarray, counts: np.ndarray, prior: np.ndarray, *, iters: int = 1000,
              tol: float = 1e-9) -> np.ndarray:
    """The period's class priors by EM on binned calibrated posteriors (Saerens, Latinne & Decaestecker 2002).

    Parameters
    ----------
    post : numpy.ndarray, shape (..., K, B, K)
        Posteriors under the reference priors per cell (:func:`cell_posteriors`).
    counts : numpy.ndarray, shape (..., K, B)
        The period's rows per cell.
    prior : numpy.ndarray, shape (..., K)
        The reference's priors (the mean posterior over the reference's rows).

    Returns
    -------
    numpy.ndarray, shape (..., K)
        The fixed point of pi'_j <- (1/N) sum_cells n_c p'(j | c), p' the posteriors adjusted to pi'
        (:func:`adjust`): the maximum-likelihood priors of the period given the reference's
        class-conditional score distributions. A class with a zero reference prior keeps 0; the
        reference's priors back without rows.
    """
    n = counts.sum(axis=(-2, -1))
    if not np.all(n > 0):
        return np.array(prior, dtype=np.float64, copy=True)
    k = post.shape[-1]
    lead = np.broadcast_shapes(post.shape[:-3], counts.shape[:-2], np.shape(prior)[:-1])
    p = np.broadcast_to(post, (*lead, *post.shape[-3:])).reshape(*lead, -1, k)
    c = np.broadcast_to(counts, (*lead, *counts.shape[-2:])).reshape(*lead, -1)
    keep = np.any(c > 0, axis=tuple(range(c.ndim - 1)))  # cells without rows in any replicate add nothing
    p, c = p[..., keep, :], c[..., keep]
    prior = np.broadcast_to(np.asarray(prior, dtype=np.float64), (*lead, k))
    w = (prior > 0).astype(np.float64)
    for _ in range(iters):
        # pi'_j = (1/N) sum_c n_c p_cj w_j / sum_i p_ci w_i, the E and M steps in one
        denom = np.einsum("...ck,...k->...c", p, w)
        ratio = np.divide(c, denom, out=np.zeros_like(c, dtype=np.float64), where=denom > 0)
        new = w * np.einsum("...c,...ck->...k", ratio, p) / n[..., None]
        done = np.max(np.abs(new - w * prior)) < tol
        w = np.divide(new, prior, out=np.zeros_like(new), where=prior > 0)
        if done:
            break
    return w * prior


@dataclass(frozen=True)
class ShiftChoice:
    """Which shift the period's scores support (:func:`choose_shift`): ``model`` ``"none"``,
    ``"label"`` or ``"covariate"``; the p-values of the fit without any shift and of the label-shift
    model; the cells tested; ``weights`` (K,) the re-estimated priors over the reference's;
    ``reweight`` (K, B): m = sum_j w_j P(j | cell), the factor by which label shift scales the
    reference's rows of each cell (predicted class, own-score bin); ``unexplained``: the share of
    the no-shift fit's excess X^2 - df that the label-shift fit leaves."""

    model: str
    p_none: float
    p_label: float
    cells: int
    weights: np.ndarray
    reweight: np.ndarray | None = field(default=None, repr=False)
    unexplained: float = math.nan

    @property
    def why(self) -> str:
        """The choice in words."""
        p = (f"p = {self.p_none:.2g} without a shift, {self.p_label:.2g} with the priors re-estimated, "
             f"which leave {self.unexplained:.0%} of the discrepancy")
        return {"none": f"the scores fit the reference's ({p})",
                "label": f"the scores moved as a change of the class priors explains ({p})",
                "covariate": f"the scores moved in a way a change of the class priors does not explain ({p})"
                }[self.model]


def _fit(observed, ref, m, free: int, n_ref: float) -> tuple[float, int, int]:
    """Pearson's X^2 of the period's cell counts against the reference's reweighted by ``m``, the
    variance widened for the reference's own sampling; (X^2, degrees of freedom, cells used)."""
    q = ref * m
    total = q.sum()
    n = observed.sum()
    if total <= 0 or n <= 0:
        return math.nan, 0, 0
    exp = n * q / total
    use = (exp >= MIN_CELL) & (ref > 0)
    df = int(use.sum()) - 1 - free
    if df < 1:
        return math.nan, 0, int(use.sum())
    m_bar = total / ref.sum()
    var = exp * (1 + n * m / (n_ref * m_bar))
    return float(np.sum((observed[use] - exp[use]) ** 2 / var[use])), df, int(use.sum())


def choose_shift(task: str, post: np.ndarray, ref_hist: np.ndarray, cur_hist: np.ndarray, weights: np.ndarray,
                 alpha: float = ALPHA) -> ShiftChoice:
    """Does the period's score distribution fit the reference's, the reference's under re-estimated
    priors (label shift), or neither (covariate shift)?

    Parameters
    ----------
    task : {"binary", "multiclass"}
        The task.
    post : numpy.ndarray, shape (K, B, K)
        Posteriors under the reference's priors per cell (:func:`cell_posteriors`).
    ref_hist, cur_hist : numpy.ndarray, shape (K, B)
        Rows per cell (predicted class, own-score bin) of the reference and the period.
    weights : numpy.ndarray, shape (K,)
        The period's re-estimated priors over the reference's (:func:`em_priors`).
    alpha : float
        Level of both tests.

    Returns
    -------
    ShiftChoice
        Under label shift the period's cells are distributed as the reference's reweighted by
        m_c = sum_j w_j P(j | c) (p(x | y) unchanged, so p'(x) = p(x) sum_j w_j p(j | x)); without
        shift, m = 1. Each fit is Pearson's X^2 over the cells of 0.1 of own score per predicted
        class that expect :data:`MIN_CELL` rows, the variance n q (1 + n m / (N m_bar)) widened
        for the reference's sampling (a two-sample test), df = cells - 1 - K + 1 (priors fitted)
        or cells - 1. ``"none"`` when the fit without a shift holds at ``alpha``; else ``"label"``
        when the label-shift fit holds, or leaves under :data:`MAX_UNEXPLAINED` of the no-shift
        fit's excess X^2 - df; else ``"covariate"`` (the only assumption left that the scores
        cannot refute: the reference's P(label | score) is applied to the scores as they are). nan
        p-values (too few cells) count as holding.
    """
    b = ref_hist.shape[-1]
    step = b // TEST_BINS if b % TEST_BINS == 0 and b > TEST_BINS else 1
    m = np.einsum("kbj,j->kb", post, weights)
    ref = ref_hist.reshape(*ref_hist.shape[:-1], -1, step).sum(axis=-1)
    mw = (ref_hist * m).reshape(ref.shape + (step,)).sum(axis=-1)
    m_coarse = np.divide(mw, ref, out=np.ones_like(ref), where=ref > 0)
    cur = cur_hist.reshape(ref.shape + (step,)).sum(axis=-1)
    n_ref = float(ref.sum())
    x2_none, df_none, cells = _fit(cur.ravel(), ref.ravel(), np.ones(ref.size), 0, n_ref)
    x2_label, df_label, _ = _fit(cur.ravel(), ref.ravel(), m_coarse.ravel(), weights.size - 1, n_ref)
    p_none = float(sps.chi2.sf(x2_none, df_none)) if df_none else math.nan
    p_label = float(sps.chi2.sf(x2_label, df_label)) if df_label else math.nan
    excess = max(x2_none - df_none, 0.0)
    left = max(x2_label - df_label, 0.0) / excess if excess > 0 else math.nan
    model = ("none" if not p_none < alpha else "label" if not p_label < alpha or left < MAX_UNEXPLAINED
             else "covariate")
    return ShiftChoice(model, p_none, p_label, cells, weights, m, left)


def reweighted_reference(ref_fine: np.ndarray, reweight: np.ndarray) -> np.ndarray:
    """The reference's fine score histograms per predicted class (K, S, B_fine + 2) as the period
    should show them under label shift: each predicted class's rows in own-score bin b times
    ``reweight[k, b]`` (:attr:`ShiftChoice.reweight`, on coarser bins: repeated over their fine bins;
    the overflow bins take the nearest bin's factor)."""
    fine = ref_fine.shape[-1] - 2
    m = reweight
    m = np.repeat(m, fine // m.shape[-1], axis=-1) if fine % m.shape[-1] == 0 else np.ones((m.shape[0], fine))
    m = np.concatenate([m[:, :1], m, m[:, -1:]], axis=-1)
    return ref_fine * m[:, None, :]


def coarse_own(task: str, hist: np.ndarray, resolution: int) -> np.ndarray:
    """:func:`own_scores` of a (K, S, B + 2) histogram summed to ``resolution`` bins (overflow dropped)."""
    return own_scores(task, coarsen(hist, resolution))


#: Reference rows a score bin of 0.1 (per predicted class, on its own score) needs for the
#: calibration map to vouch for a period's rows in it: an isotonic fit pools sparse bins with their
#: neighbours, so a bin with fewer rows holds the neighbours' rate, not its own.
MIN_SUPPORT = 20

#: Share of a period's rows that must fall in supported bins (:data:`MIN_SUPPORT`) for its estimate
#: to count as reliable.
MIN_SUPPORT_SHARE = 0.9

#: Share of a period's rows on one own score (one fine bin of one predicted class) from which its
#: scores count as degenerate, when the reference puts under a tenth of that share there: a
#: scoring step that gives every row the same scores.
DEGENERATE_SHARE = 0.5


def support(reference: PeriodStats, current: PeriodStats, score_shift: float | None = None,
            shift: ShiftChoice | None = None) -> dict[str, float]:
    """Can the reference's calibration map vouch for the period's scores? Two measurable rules on
    the scores the map reads: each row's own score (its predicted class's) among the rows predicted
    as that class.

    Parameters
    ----------
    reference, current : PeriodStats
        The reference window (the rows the calibration map is fitted on) and the period: their
        score histograms per predicted class (``score_by_pred``) and score columns.
    score_shift : float, optional
        The shift (below) from which the estimate is no longer vouched for (default: the policy's
        ``score_shift``, 0.02 score units, the score test's practical threshold).
    shift : ShiftChoice, optional
        The shift the period's scores support (:func:`choose_shift`): under label shift the
        period's scores are compared with the reference's as the re-estimated priors reweight them
        (:func:`reweighted_reference`), since a change of the class mix moves each predicted
        class's own scores too, and the estimate follows it.

    Returns
    -------
    dict
        Empty when either has no score histograms per predicted class.
        ``estimated/support_share``: the share of the period's rows whose own score (the predicted
        class's; binary: the positive score) falls in a bin of 0.1 where the reference had at least
        :data:`MIN_SUPPORT` rows predicted as the same class (nan without rows);
        ``estimated/score_shift``: per predicted class, the Wasserstein-1 distance of its own score
        among its rows, reference against period, averaged over the classes weighted by the
        period's rows (nan without a class predicted in both); ``estimated/degenerate``: 1 when
        :data:`DEGENERATE_SHARE` of the period's rows share one own score (a fine bin of one
        predicted class) where the reference (reweighted under label shift) has under a tenth of
        that share (every row scored alike: a broken scoring step); ``estimated/reliable``: 1 when
        the share is at least :data:`MIN_SUPPORT_SHARE`, the shift under ``score_shift`` and the
        scores not degenerate, else 0.
        Within a predicted class, because the map is fitted per predicted class: a prevalence shift
        changes the mix of predicted classes (and moves a column's scores as a whole), which the
        estimate follows, and leaves this shift small. Where the scores have moved, the map's
        P(label | score) is applied to rows unlike those it was fitted on: whether it still holds
        (covariate shift) or not (corrupted inputs, a changed model) the scores cannot tell, so the
        estimate then carries no guarantee.

    Examples
    --------
    >>> from metrics_core.monitoring.bins import Bins
    >>> from metrics_core.monitoring.period import update
    >>> rng = np.random.default_rng(0)
    >>> s = rng.random(4000); y = (rng.random(4000) < s).astype(int)
    >>> ref = update("binary", np.array([0, 1]), Bins(), (s >= 0.5).astype(int), label_idx=y, scores=s[:, None])
    >>> support(ref, ref)  # doctest: +NORMALIZE_WHITESPACE
    {'estimated/support_share': 1.0, 'estimated/score_shift': 0.0, 'estimated/degenerate': 0.0,
     'estimated/reliable': 1.0}
    >>> moved = update("binary", np.array([0, 1]), Bins(), (s >= 0.5).astype(int), scores=s[:, None] ** 3)
    >>> support(ref, moved)["estimated/reliable"]
    0.0
    """
    if reference.score_by_pred is None or current.score_by_pred is None:
        return {}
    task = current.task
    limit = AlertPolicy().score_shift if score_shift is None else score_shift
    n_own, h_own = coarse_own(task, reference.score_by_pred, 10), coarse_own(task, current.score_by_pred, 10)
    total = h_own.sum()
    share = float(h_own[n_own >= MIN_SUPPORT].sum() / total) if total > 0 else math.nan
    ref = reference.score_by_pred
    if shift is not None and shift.model == "label" and shift.reweight is not None:
        ref = reweighted_reference(ref, shift.reweight)
    ref_own, cur_own = own_scores(task, ref).astype(np.float64), own_scores(task, current.score_by_pred)
    points = current.bins.score_points()
    pairs = [(r, c) for r, c in zip(ref_own, cur_own) if r.sum() > 0 and c.sum() > 0]
    shifts = [drift.wasserstein(binned(points, r), binned(points, c), threshold=None).statistic for r, c in pairs]
    weights = [c.sum() for _, c in pairs]
    moved = float(np.average(shifts, weights=weights)) if pairs else math.nan
    degenerate = _degenerate(ref_own, cur_own)
    reliable = share >= MIN_SUPPORT_SHARE and moved < limit and not degenerate
    return {f"{PREFIX}support_share": share, f"{PREFIX}score_shift": moved, f"{PREFIX}degenerate": float(degenerate),
            f"{PREFIX}reliable": float(reliable)}


def _degenerate(ref_own: np.ndarray, cur_own: np.ndarray) -> bool:
    """Whether :data:`DEGENERATE_SHARE` of the period's rows sit on one own score the reference
    gives under a tenth of that share (:func:`support`)."""
    n, n_ref = cur_own.sum(), ref_own.sum()
    if n <= 0 or n_ref <= 0:
        return False
    top = np.unravel_index(np.argmax(cur_own), cur_own.shape)
    here = cur_own[top] / n
    return bool(here >= DEGENERATE_SHARE and ref_own[top] / n_ref < here / 10)
