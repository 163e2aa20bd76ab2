"""metrics_core.monitoring.period: a period's counts and histograms match numpy, and batches merge to one pass."""

from __future__ import annotations

import numpy as np
from monitoring_data import K, LABELS, period_arrays

from metrics_core import monitoring as mon


def test_merge_of_batches_equals_one_pass():
    y, pred, s, price = period_arrays(30_000, 3)
    whole = mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, scores=s, price=price)
    cuts = [0, 7_000, 7_001, 19_000, 30_000]
    parts = [mon.update("multiclass", LABELS, mon.Bins(), pred[a:b], label_idx=y[a:b], scores=s[a:b],
                        price=price[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    merged = parts[0]
    for p in parts[1:]:
        merged = merged.merge(p)
    assert merged.n_rows == whole.n_rows == 30_000
    for name in ("pred_counts", "label_counts", "score_counts", "price_counts", "price_cells"):
        np.testing.assert_array_equal(getattr(merged, name), getattr(whole, name))
    np.testing.assert_array_equal(merged.performance.confusion.matrix, whole.performance.confusion.matrix)


def test_counts_match_numpy():
    y, pred, s, price = period_arrays(5_000, 4)
    st = mon.update("multiclass", LABELS, mon.Bins(), pred, label_idx=y, scores=s, price=price)
    np.testing.assert_array_equal(st.label_counts, np.bincount(y, minlength=K))
    np.testing.assert_array_equal(st.pred_counts, np.bincount(pred, minlength=K))
    hist, _ = np.histogram(s[:, 2], bins=1000, range=(0.0, 1.0))
    np.testing.assert_array_equal(st.score_counts[2, 1:-1], hist)
    assert st.score_counts[:, [0, -1]].sum() == 0
