"""Baselines (ISO 4213 5.3.13, ONS Annex D): the majority-class and the prevalence-matched random
classifier, as analytic expected values from the labelled class counts, never simulated.

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

from metrics_core.compute import as_floats, binary_confusion_metrics, multiclass_confusion_metrics, score_metrics
from metrics_core.counts import ScoreCounts


def expected_confusions(actual_totals: np.ndarray) -> dict[str, np.ndarray]:
    """{"majority": M, "random": M} expected confusion matrices from the labelled class totals."""
    t = np.asarray(actual_totals, dtype=np.float64)
    k = t.size
    majority = np.zeros((k, k))
    majority[:, int(np.argmax(t))] = t
    p = t / t.sum() if t.sum() else np.full(k, np.nan)
    return {"majority": majority, "random": np.outer(t, p)}


def report_baselines(report) -> dict[str, dict[str, float]]:
    """The baseline metrics of a report, with the same keys where they are defined."""
    from metrics_core.stats import BinaryStats, MulticlassStats, MultilabelStats

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
                eps = np.finfo(np.float64).eps
                d["log_loss"] = float(-(p[p > 0] * np.log(np.clip(p[p > 0], eps, 1 - eps))).sum())
            out[name] = {k: v for k, v in as_floats(d).items() if k in report.metrics}
    elif isinstance(s, MultilabelStats):
        m = s.label_confusion.astype(np.float64)
        for name in ("majority", "random"):
            confs = np.stack([expected_confusions(mm.sum(axis=1))[name] for mm in m])
            tn, fp, fn, tp = confs[:, 0, 0], confs[:, 0, 1], confs[:, 1, 0], confs[:, 1, 1]
            from metrics_core import formulas as f

            d = {"hamming_loss": f.ratio((fp + fn).sum(), s.n_rows * m.shape[0]),
                 "precision_micro": f.ratio(tp.sum(), (tp + fp).sum()),
                 "recall_micro": f.ratio(tp.sum(), (tp + fn).sum()),
                 "f1_micro": f.fbeta(tp.sum(), fp.sum(), fn.sum())}
            for key, vals in (("precision", f.ratio(tp, tp + fp)), ("recall", f.ratio(tp, tp + fn)),
                              ("f1", f.fbeta(tp, fp, fn))):
                d[f"{key}_macro"], _ = f.nanmean_count(vals)
            out[name] = as_floats(d)
    return out
