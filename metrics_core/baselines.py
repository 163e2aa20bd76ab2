"""Baselines (ISO/IEC TS 4213:2022 5.3.13, ONS Annex D): majority-class and prevalence-matched random.

Both are analytic expected values from the labelled class counts, never simulated.

- majority: predicts the most frequent labelled class for every row (first class on ties) and
  scores every row with the class prior.
- random: predicts class j with probability p_j (the labelled prevalence), independently of
  the row; its expected confusion is ``E[M_ij] = n_i p_j``. Ratio metrics are evaluated on the
  expected counts (exact in the large-sample limit): accuracy = sum p_k^2, kappa = mcc = 0,
  precision_k = recall_k = p_k. Its score metrics are those of a constant prior score:
  AUROC 0.5, AP = prevalence, log loss = the label entropy, Brier = p(1 - p).
"""

from __future__ import annotations

import numpy as np

from metrics_core import formulas as f
from metrics_core.compute import as_floats, binary_confusion_metrics, multiclass_confusion_metrics, score_metrics
from metrics_core.counts import ScoreCounts
from metrics_core.losses import clip_probability
from metrics_core.stats import BinaryStats, MulticlassStats, MultilabelStats


def expected_confusions(actual_totals: np.ndarray) -> dict[str, np.ndarray]:
    """The expected confusion matrices of the majority-class and the random baseline.

    majority: every row predicted as the most frequent labelled class (the first on ties), so
    column argmax(t) holds the class totals t; random: class j predicted with probability p_j =
    t_j / n independently of the row, so ``E[M_ij] = t_i p_j`` (ISO/IEC TS 4213:2022 5.3.13 and
    3.2.18; ONS Annex D).

    Parameters
    ----------
    actual_totals : array_like, shape (K,)
        Labelled rows (or weight) per class.

    Returns
    -------
    dict of str to numpy.ndarray
        ``{"majority": M, "random": M}``, each K x K float64; the random matrix is nan when
        there are no rows.

    Examples
    --------
    >>> m = expected_confusions([3, 1])
    >>> m["majority"].tolist(), m["random"].tolist()
    ([[3.0, 0.0], [1.0, 0.0]], [[2.25, 0.75], [0.75, 0.25]])
    """
    t = np.asarray(actual_totals, dtype=np.float64)
    k = t.size
    majority = np.zeros((k, k))
    majority[:, int(np.argmax(t))] = t
    p = t / t.sum() if t.sum() else np.full(k, np.nan)
    return {"majority": majority, "random": np.outer(t, p)}


def report_baselines(report) -> dict[str, dict[str, float]]:
    """The metrics of the majority-class and random baselines of a report, under the report's keys.

    Threshold metrics are those of :func:`expected_confusions` through the same compute step as
    the report (so the same formulas and the same nan rules, without a warning); with scores the
    baselines score every row with the class prior: AUROC 0.5, average precision = prevalence,
    log loss = the label entropy, Brier = p (1 - p). Multiclass keys are limited to the report's.

    Parameters
    ----------
    report : Report
        A binary, multiclass or multilabel report (its ``stats`` and ``options``).

    Returns
    -------
    dict
        ``{"majority": {key: value}, "random": {key: value}}``; undefined values are nan, e.g.
        the majority baseline's precision when it never predicts the positive class.

    Examples
    --------
    >>> from metrics_core.report import binary_report
    >>> b = report_baselines(binary_report([0, 0, 0, 1], y_score=[0.1, 0.2, 0.6, 0.9]))
    >>> b["majority"]["accuracy"], b["random"]["accuracy"], b["random"]["auroc"]
    (0.75, 0.625, 0.5)
    """
    o = report.options
    s = report.stats
    out = {}
    if isinstance(s, BinaryStats):
        totals = s.confusion.matrix.sum(axis=1).astype(np.float64)  # [negatives, positives]
        for name, m in expected_confusions(totals).items():
            d = binary_confusion_metrics(m, o.get("beta", 1.0), o.get("cost_matrix"))
            if s.scores is not None and totals.sum():
                prior = totals[1] / totals.sum()
                d.update(score_metrics(ScoreCounts(np.array([prior]), np.array([totals[1]]), np.array([totals[0]]))))
            out[name] = as_floats(d)
    elif isinstance(s, MulticlassStats):
        totals = s.confusion.matrix.sum(axis=1).astype(np.float64)
        p = totals / totals.sum()
        for name, m in expected_confusions(totals).items():
            d, _ = multiclass_confusion_metrics(m, o.get("beta", 1.0), o.get("cost_matrix"))
            if s.scores is not None:
                present = (p > 0) & (p < 1)
                d["auroc_ovr_macro"] = d["auroc_ovr_weighted"] = 0.5 if present.any() else np.nan
                d["log_loss"] = float(-(p[p > 0] * np.log(clip_probability(p[p > 0]))).sum())
            out[name] = {k: v for k, v in as_floats(d).items() if k in report.metrics}
    elif isinstance(s, MultilabelStats):
        m = s.label_confusion.astype(np.float64)
        for name in ("majority", "random"):
            confs = np.stack([expected_confusions(mm.sum(axis=1))[name] for mm in m])
            tn, fp, fn, tp = confs[:, 0, 0], confs[:, 0, 1], confs[:, 1, 0], confs[:, 1, 1]
            d = {"hamming_loss": f.ratio((fp + fn).sum(), s.n_rows * m.shape[0]),
                 "precision_micro": f.ratio(tp.sum(), (tp + fp).sum()),
                 "recall_micro": f.ratio(tp.sum(), (tp + fn).sum()),
                 "f1_micro": f.fbeta(tp.sum(), fp.sum(), fn.sum())}
            for key, vals in (("precision", f.ratio(tp, tp + fp)), ("recall", f.ratio(tp, tp + fn)),
                              ("f1", f.fbeta(tp, fp, fn))):
                d[f"{key}_macro"], _ = f.nanmean_count(vals)
            out[name] = as_floats(d)
    return out
