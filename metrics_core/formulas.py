"""Every confusion-matrix formula, once, vectorised over leading axes (for bootstrap replicates).

A confusion array has shape ``(..., K, K)``: rows = actual, columns = predicted. Every function
returns float64 arrays of shape ``(...)`` (or ``(..., K)`` per class); an undefined value (a 0/0)
is ``nan`` and never 0. Sources: ISO/IEC TS 4213:2022 clause 6 and 3.2.x definitions; the ONS
guidance Annex C for micro balanced accuracy and F of averaged precision and recall.
"""

from __future__ import annotations

import numpy as np


def ratio(num, den):
    """``num / den`` as float64, ``nan`` where ``den == 0`` (no warning: callers document it)."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out if out.ndim else float(out)


def one_vs_rest(m):
    """Per-class (tp, fp, fn, tn) from a ``(..., K, K)`` confusion array, each ``(..., K)``."""
    m = np.asarray(m, dtype=np.float64)
    tp = np.diagonal(m, axis1=-2, axis2=-1)
    actual = m.sum(axis=-1)
    predicted = m.sum(axis=-2)
    total = actual.sum(axis=-1, keepdims=True)
    fp = predicted - tp
    fn = actual - tp
    tn = total - tp - fp - fn
    return tp, fp, fn, tn


def fbeta(tp, fp, fn, beta=1.0):
    """F-beta = (1 + b^2) tp / ((1 + b^2) tp + b^2 fn + fp); nan only when tp + fp + fn = 0.

    This is 0 (not nan) when precision is 0/0 but there are false negatives (SPEC convention,
    scikit-learn with ``zero_division=nan`` agrees).
    """
    b2 = beta * beta
    return ratio((1 + b2) * np.asarray(tp, float), (1 + b2) * np.asarray(tp, float) + b2 * np.asarray(fn, float)
                 + np.asarray(fp, float))


def f_of(precision, recall, beta=1.0):
    """F-beta as the weighted harmonic mean of a given precision and recall (ONS Annex C, Zhou).

    nan when either is nan or both are 0.
    """
    b2 = beta * beta
    p = np.asarray(precision, dtype=np.float64)
    r = np.asarray(recall, dtype=np.float64)
    return ratio((1 + b2) * p * r, b2 * p + r)


def per_class(m, beta=1.0):
    """Per-class one-vs-rest metrics (ISO 3.2.x) as a dict of ``(..., K)`` arrays."""
    tp, fp, fn, tn = one_vs_rest(m)
    total = (tp + fp + fn + tn)
    return {
        "support": tp + fn,
        "prevalence": ratio(tp + fn, total),
        "precision": ratio(tp, tp + fp),
        "recall": ratio(tp, tp + fn),
        "specificity": ratio(tn, tn + fp),
        "f1": fbeta(tp, fp, fn, 1.0),
        "fbeta": fbeta(tp, fp, fn, beta),
    }


def nanmean_count(x, weights=None):
    """Mean over the last axis skipping nan (weighted if given); also the number skipped.

    nan when every entry is nan (or all remaining weights are 0).
    """
    x = np.asarray(x, dtype=np.float64)
    ok = ~np.isnan(x)
    w = np.ones_like(x) if weights is None else np.broadcast_to(np.asarray(weights, float), x.shape)
    w = np.where(ok, w, 0.0)
    mean = ratio(np.where(ok, x, 0.0).__mul__(w).sum(axis=-1), w.sum(axis=-1))
    return mean, (~ok).sum(axis=-1)


def accuracy(m):
    """Fraction of rows on the diagonal (ISO 3.2.1); nan for an empty matrix."""
    m = np.asarray(m, dtype=np.float64)
    return ratio(np.trace(m, axis1=-2, axis2=-1), m.sum(axis=(-2, -1)))


def cohen_kappa(m):
    """Cohen's kappa = (p_o - p_e) / (1 - p_e); nan when p_e = 1 (a constant label and prediction)."""
    m = np.asarray(m, dtype=np.float64)
    n = m.sum(axis=(-2, -1))
    po = ratio(np.trace(m, axis1=-2, axis2=-1), n)
    pe = ratio((m.sum(axis=-1) * m.sum(axis=-2)).sum(axis=-1), n * n)
    return ratio(np.asarray(po) - pe, 1 - np.asarray(pe))


def mcc(m):
    """Matthews correlation (Gorodkin's K-class form); nan when a marginal is constant.

    ``(c s - t.p) / sqrt((s^2 - p.p)(s^2 - t.t))`` with c the trace, s the total, t the actual
    and p the predicted class totals. scikit-learn returns 0 where this is nan.
    """
    m = np.asarray(m, dtype=np.float64)
    t = m.sum(axis=-1)
    p = m.sum(axis=-2)
    s = t.sum(axis=-1)
    c = np.trace(m, axis1=-2, axis2=-1)
    cov_tp = c * s - (t * p).sum(axis=-1)
    cov_pp = s * s - (p * p).sum(axis=-1)
    cov_tt = s * s - (t * t).sum(axis=-1)
    return ratio(cov_tp, np.sqrt(cov_tt * cov_pp))


def class_distributions(m):
    """(labelled, predicted) class distributions p and q, each ``(..., K)``."""
    m = np.asarray(m, dtype=np.float64)
    n = m.sum(axis=(-2, -1))[..., None]
    return ratio(m.sum(axis=-1), n), ratio(m.sum(axis=-2), n)


def kl_divergence(m):
    """KL(p || q) = sum p log(p / q) in nats, p labelled and q predicted class distribution.

    Terms with p = 0 are 0; inf when a labelled class is never predicted (q = 0 < p).
    """
    p, q = class_distributions(m)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0) / q), 0.0)
    return terms.sum(axis=-1) if terms.ndim > 1 else float(terms.sum())


def csmf_accuracy(m):
    """CSMF accuracy = 1 - sum|p - q| / (2 (1 - min p)) (ISO 4213 Annex D); nan when min p = 1."""
    p, q = class_distributions(m)
    return 1.0 - np.asarray(ratio(np.abs(p - q).sum(axis=-1), 2.0 * (1.0 - p.min(axis=-1))))


def cccsmf_accuracy(csmf):
    """Chance-corrected CSMF accuracy = (csmf - (1 - 1/e)) / (1/e) (ISO 4213 Annex D)."""
    e_inv = np.exp(-1.0)
    return (np.asarray(csmf, dtype=np.float64) - (1.0 - e_inv)) / e_inv


def balanced_accuracy_micro(m):
    """ONS Annex C micro balanced accuracy: mean of micro TPR and micro TNR over the summed
    one-vs-rest tables; nan when either is undefined."""
    tp, fp, fn, tn = one_vs_rest(m)
    tpr = ratio(tp.sum(axis=-1), (tp + fn).sum(axis=-1))
    tnr = ratio(tn.sum(axis=-1), (tn + fp).sum(axis=-1))
    return (np.asarray(tpr) + tnr) / 2.0


def total_cost(m, cost_matrix):
    """Sum of C[actual, predicted] over rows (lecture slides' C(P|A), transposed to [A, P])."""
    return (np.asarray(m, dtype=np.float64) * np.asarray(cost_matrix, dtype=np.float64)).sum(axis=(-2, -1))
