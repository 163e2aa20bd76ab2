"""Every confusion-matrix formula, once, vectorised over leading axes (for bootstrap replicates).

A confusion array has shape ``(..., K, K)``: rows = actual, columns = predicted (ISO/IEC TS
4213:2022, 3.2.7 and 6.2.2). Every function returns float64 arrays of shape ``(...)`` (or
``(..., K)`` per class), or a Python float for a single matrix; an undefined value (a 0/0) is
``nan`` and never 0. Sources: ISO/IEC TS 4213:2022 definitions 3.2.x and clause 6; the ONS
guidelines for selecting metrics to evaluate classification in price statistics (Advisory Panel on
Consumer Prices - Technical), Annex C, for micro balanced accuracy and F of averaged precision and
recall. The formulas do not warn; a report names its nan metrics once
(:mod:`metrics_core.undefined`).
"""

from __future__ import annotations

import numpy as np


def ratio(num, den):
    """``num / den`` as float64, ``nan`` where ``den == 0``, without a numpy warning.

    Parameters
    ----------
    num, den : array_like
        Broadcastable numerators and denominators.

    Returns
    -------
    float or numpy.ndarray
        A Python float for scalar inputs, else an array of the broadcast shape; nan where
        ``den == 0`` (callers document when that happens).

    Examples
    --------
    >>> ratio(1, 4), ratio(0, 0)
    (0.25, nan)
    >>> ratio([1, 2], [2, 0]).tolist()
    [0.5, nan]
    """
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out if out.ndim else float(out)


def one_vs_rest(m):
    """Per-class one-vs-rest counts (tp, fp, fn, tn) of a ``(..., K, K)`` confusion array.

    For class k: tp = M[k, k], fp = column total - tp, fn = row total - tp and tn = the rest
    (ISO/IEC TS 4213:2022, 6.4.1; ONS Annex A, one-versus-rest). Never undefined.

    Parameters
    ----------
    m : array_like, shape (..., K, K)
        Confusion counts, rows = actual, columns = predicted.

    Returns
    -------
    tuple of numpy.ndarray
        ``(tp, fp, fn, tn)``, each float64 of shape ``(..., K)``.

    Examples
    --------
    >>> tp, fp, fn, tn = one_vs_rest([[5, 1], [2, 4]])
    >>> tp.tolist(), fp.tolist(), fn.tolist(), tn.tolist()
    ([5.0, 4.0], [2.0, 1.0], [1.0, 2.0], [4.0, 5.0])
    """
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
    """F-beta score from counts: ``(1 + b^2) tp / ((1 + b^2) tp + b^2 fn + fp)``.

    ISO/IEC TS 4213:2022, 3.2.8 (F1), 6.2.5 and 6.2.6 (F-beta); van Rijsbergen (1979). The
    count form is undefined only when tp + fp + fn = 0; it is 0 (not nan) when precision is 0/0
    but there are false negatives, as scikit-learn's ``fbeta_score(zero_division=nan)``.

    Parameters
    ----------
    tp, fp, fn : array_like
        True positive, false positive and false negative counts (or weights), broadcastable.
    beta : float
        Weight of recall relative to precision (beta > 1 favours recall).

    Returns
    -------
    float or numpy.ndarray
        F-beta in [0, 1]; nan where tp + fp + fn = 0.

    Examples
    --------
    >>> fbeta(6, 2, 4), fbeta(0, 0, 3), fbeta(0, 0, 0)
    (0.6666666666666666, 0.0, nan)
    >>> round(fbeta(6, 2, 4, beta=2.0), 4)
    0.625
    """
    b2 = beta * beta
    return ratio((1 + b2) * np.asarray(tp, float), (1 + b2) * np.asarray(tp, float) + b2 * np.asarray(fn, float)
                 + np.asarray(fp, float))


def f_of(precision, recall, beta=1.0):
    """F-beta as the weighted harmonic mean of a given precision and recall.

    ``(1 + b^2) p r / (b^2 p + r)``: used for F of the macro- or weighted-averaged precision and
    recall (ONS Annex C; Zhou (2016), Machine Learning, 2.3.2).

    Parameters
    ----------
    precision, recall : array_like
        Precision and recall values, broadcastable.
    beta : float
        Weight of recall relative to precision.

    Returns
    -------
    float or numpy.ndarray
        nan when either input is nan or both are 0.

    Examples
    --------
    >>> f_of(0.5, 1.0), f_of(0.0, 0.0)
    (0.6666666666666666, nan)
    """
    b2 = beta * beta
    p = np.asarray(precision, dtype=np.float64)
    r = np.asarray(recall, dtype=np.float64)
    return ratio((1 + b2) * p * r, b2 * p + r)


def per_class(m, beta=1.0):
    """Per-class one-vs-rest metrics of a ``(..., K, K)`` confusion array.

    support = tp + fn; prevalence = support / n; precision = tp / (tp + fp) (ISO 3.2.9); recall =
    tp / (tp + fn) (3.2.10); specificity = tn / (tn + fp) (3.2.11); f1 and fbeta as :func:`fbeta`.

    Parameters
    ----------
    m : array_like, shape (..., K, K)
        Confusion counts, rows = actual, columns = predicted.
    beta : float
        Beta of the ``fbeta`` entry.

    Returns
    -------
    dict of str to numpy.ndarray
        Keys support, prevalence, precision, recall, specificity, f1, fbeta; each ``(..., K)``.
        precision is nan for a class never predicted, recall for a class never labelled, f1/fbeta
        for a class neither labelled nor predicted, prevalence for an empty matrix.

    Examples
    --------
    >>> pc = per_class([[2, 0, 0], [0, 1, 1], [0, 0, 0]])
    >>> pc["precision"].tolist(), pc["recall"].tolist()
    ([1.0, 1.0, 0.0], [1.0, 0.5, nan])
    """
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
    """Mean over the last axis skipping nan entries (weighted if given), and how many were skipped.

    The macro average of ISO/IEC TS 4213:2022, 6.4.3 (weighted: each class by its support) over
    the classes where the metric is defined.

    Parameters
    ----------
    x : array_like, shape (..., K)
        Per-class values, nan where undefined.
    weights : array_like, optional
        Non-negative weights broadcastable to ``x``; a skipped entry's weight is dropped.

    Returns
    -------
    mean : float or numpy.ndarray
        nan when every entry is nan (or all remaining weights are 0).
    skipped : numpy.ndarray
        Number of nan entries, shape ``(...)``.

    Examples
    --------
    >>> mean, skipped = nanmean_count([1.0, float("nan"), 0.5])
    >>> mean, int(skipped)
    (0.75, 1)
    >>> nanmean_count([1.0, 0.0], weights=[3, 1])[0]
    0.75
    """
    x = np.asarray(x, dtype=np.float64)
    ok = ~np.isnan(x)
    w = np.ones_like(x) if weights is None else np.broadcast_to(np.asarray(weights, float), x.shape)
    w = np.where(ok, w, 0.0)
    mean = ratio(np.where(ok, x, 0.0).__mul__(w).sum(axis=-1), w.sum(axis=-1))
    return mean, (~ok).sum(axis=-1)


def accuracy(m):
    """Fraction of rows on the diagonal: trace / total (ISO/IEC TS 4213:2022, 3.2.6, 6.4.2).

    Parameters
    ----------
    m : array_like, shape (..., K, K)
        Confusion counts.

    Returns
    -------
    float or numpy.ndarray
        nan for an empty matrix (no rows).

    Examples
    --------
    >>> accuracy([[3, 1], [0, 4]]), accuracy([[0, 0], [0, 0]])
    (0.875, nan)
    """
    m = np.asarray(m, dtype=np.float64)
    return ratio(np.trace(m, axis1=-2, axis2=-1), m.sum(axis=(-2, -1)))


def cohen_kappa(m):
    """Cohen's kappa = (p_o - p_e) / (1 - p_e) (Cohen, 1960).

    p_o is the observed agreement (accuracy), p_e = sum_k t_k p_k / n^2 the agreement expected
    from the actual (t) and predicted (p) class totals.

    Parameters
    ----------
    m : array_like, shape (..., K, K)
        Confusion counts.

    Returns
    -------
    float or numpy.ndarray
        In [-1, 1]; nan when p_e = 1 (labels and predictions all one and the same class) or the
        matrix is empty.

    Examples
    --------
    >>> round(cohen_kappa([[20, 5], [10, 15]]), 4)
    0.4
    >>> cohen_kappa([[4, 0], [0, 0]])
    nan
    """
    m = np.asarray(m, dtype=np.float64)
    n = m.sum(axis=(-2, -1))
    po = ratio(np.trace(m, axis1=-2, axis2=-1), n)
    pe = ratio((m.sum(axis=-1) * m.sum(axis=-2)).sum(axis=-1), n * n)
    return ratio(np.asarray(po) - pe, 1 - np.asarray(pe))


def mcc(m):
    """Matthews correlation coefficient, in Gorodkin's K-class form (Matthews, 1975; Gorodkin, 2004).

    ``(c s - t.p) / sqrt((s^2 - p.p)(s^2 - t.t))`` with c the trace, s the total, t the actual
    and p the predicted class totals; for K = 2 it is the binary
    ``(tp tn - fp fn) / sqrt((tp + fp)(tp + fn)(tn + fp)(tn + fn))``.

    Parameters
    ----------
    m : array_like, shape (..., K, K)
        Confusion counts.

    Returns
    -------
    float or numpy.ndarray
        In [-1, 1]; nan when the labels or the predictions are constant (one class only), where
        scikit-learn returns 0.

    Examples
    --------
    >>> round(mcc([[20, 5], [10, 15]]), 4)
    0.4082
    >>> mcc([[3, 0], [2, 0]])
    nan
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
    """The labelled (p) and predicted (q) class distributions of a confusion array.

    p_k = row total k / n and q_k = column total k / n (ISO/IEC TS 4213:2022, 6.4.4).

    Parameters
    ----------
    m : array_like, shape (..., K, K)
        Confusion counts.

    Returns
    -------
    tuple of numpy.ndarray
        ``(p, q)``, each ``(..., K)``; nan for an empty matrix.

    Examples
    --------
    >>> p, q = class_distributions([[3, 1], [0, 4]])
    >>> p.tolist(), q.tolist()
    ([0.5, 0.5], [0.375, 0.625])
    """
    m = np.asarray(m, dtype=np.float64)
    n = m.sum(axis=(-2, -1))[..., None]
    return ratio(m.sum(axis=-1), n), ratio(m.sum(axis=-2), n)


def kl_divergence(m):
    """KL(p || q) = sum_k p_k log(p_k / q_k) in nats, p labelled and q predicted class distribution.

    ISO/IEC TS 4213:2022, 6.2.7 and 6.3.5 (Kullback and Leibler, 1951). Terms with p_k = 0 are 0.

    Parameters
    ----------
    m : array_like, shape (..., K, K)
        Confusion counts.

    Returns
    -------
    float or numpy.ndarray
        >= 0; inf when a labelled class is never predicted (q_k = 0 < p_k); 0 for an empty
        matrix (never nan).

    Examples
    --------
    >>> round(kl_divergence([[3, 1], [0, 4]]), 4)
    0.0323
    >>> kl_divergence([[3, 0], [1, 0]])
    inf
    """
    p, q = class_distributions(m)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0) / q), 0.0)
    return terms.sum(axis=-1) if terms.ndim > 1 else float(terms.sum())


def csmf_accuracy(m):
    """Cause-specific mortality fraction accuracy = 1 - sum_k |p_k - q_k| / (2 (1 - min_k p_k)).

    ISO/IEC TS 4213:2022, Annex D (Murray et al., 2011), with p the labelled and q the predicted
    class distribution.

    Parameters
    ----------
    m : array_like, shape (..., K, K)
        Confusion counts.

    Returns
    -------
    float or numpy.ndarray
        In [0, 1]; nan when min p = 1 (a single class) or the matrix is empty.

    Examples
    --------
    >>> float(csmf_accuracy([[6, 2], [0, 2]]))
    0.75
    """
    p, q = class_distributions(m)
    return 1.0 - np.asarray(ratio(np.abs(p - q).sum(axis=-1), 2.0 * (1.0 - p.min(axis=-1))))


def cccsmf_accuracy(csmf):
    """Chance-corrected CSMF accuracy = (csmf - (1 - 1/e)) / (1/e) (ISO/IEC TS 4213:2022, Annex D).

    Parameters
    ----------
    csmf : array_like
        CSMF accuracy values (:func:`csmf_accuracy`).

    Returns
    -------
    float or numpy.ndarray
        0 for a random allocation, 1 for a perfect one; nan where ``csmf`` is nan.

    Examples
    --------
    >>> round(float(cccsmf_accuracy(1.0)), 4)
    1.0
    """
    e_inv = np.exp(-1.0)
    return (np.asarray(csmf, dtype=np.float64) - (1.0 - e_inv)) / e_inv


def balanced_accuracy_micro(m):
    """Micro balanced accuracy: the mean of micro TPR and micro TNR (ONS Annex C).

    TPR = sum_k tp_k / sum_k (tp_k + fn_k) and TNR = sum_k tn_k / sum_k (tn_k + fp_k) over the
    one-vs-rest tables of :func:`one_vs_rest`.

    Parameters
    ----------
    m : array_like, shape (..., K, K)
        Confusion counts.

    Returns
    -------
    float or numpy.ndarray
        nan when either rate is undefined: an empty matrix, or a single class (no negatives).

    Examples
    --------
    >>> float(balanced_accuracy_micro([[6, 2], [0, 2]]))
    0.8
    """
    tp, fp, fn, tn = one_vs_rest(m)
    tpr = ratio(tp.sum(axis=-1), (tp + fn).sum(axis=-1))
    tnr = ratio(tn.sum(axis=-1), (tn + fp).sum(axis=-1))
    return (np.asarray(tpr) + tnr) / 2.0


def total_cost(m, cost_matrix):
    """Total misclassification cost: sum over cells of M[a, p] C[a, p].

    ``cost_matrix`` is indexed [actual, predicted]: the transpose of Elkan's (2001) C(i, j), the
    cost of predicting i when the truth is j.

    Parameters
    ----------
    m : array_like, shape (..., K, K)
        Confusion counts (or weights).
    cost_matrix : array_like, shape (K, K)
        Finite costs, C[actual, predicted].

    Returns
    -------
    float or numpy.ndarray
        Never undefined (0 for an empty matrix); divide by the total for the mean cost per row.

    Examples
    --------
    >>> float(total_cost([[3, 1], [2, 4]], [[0, 1], [5, 0]]))
    11.0
    """
    return (np.asarray(m, dtype=np.float64) * np.asarray(cost_matrix, dtype=np.float64)).sum(axis=(-2, -1))
