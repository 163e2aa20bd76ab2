"""The curves of a scanned file draw as those of the in-memory report of the same rows: ROC, PR, gain and lift."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import metrics_core as mc
from metrics_core.counts import LIFT_STEP, FoldedScoreCounts
from metrics_core.dataset import scan_stats

#: Where both curves are exact (the same points, or points on the same straight segment) they
#: agree to rounding. The lift of a class-at-a-time scan keeps the folded-away points only where
#: the depth grows by LIFT_STEP (counts.fold_negative_runs), so its straight lines depart from the
#: in-memory curve by at most (LIFT_STEP - 1)**2 / 4 = 2.5e-7 of the lift (a 1/x curve between
#: x and 1.001 x): far below a pixel. The tolerance allows four times that.
EXACT = 1e-9
LIFT = 4 * (LIFT_STEP - 1) ** 2 / 4


def _rows(task: str, weighted: bool, ties: bool, n: int = 1_500, k: int = 10, seed: int = 32):
    """Well-separated classes (as the issue's digits: ten classes of prevalence 0.1)."""
    rng = np.random.default_rng(seed)
    if task == "binary":
        y = (rng.random(n) < 0.1).astype(np.int64)
        s = 1 / (1 + np.exp(-(4.0 * y - 2.0 + rng.standard_normal(n))))
        scores = {"score": s}
    else:
        y = rng.integers(0, k, n)
        logits = rng.standard_normal((n, k)) + 3.0 * np.eye(k)[y]
        s = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        scores = {f"score_{c}": s[:, c] for c in range(k)}
    if ties:  # few distinct score rows: runs of tied negatives, as a forest's probabilities have
        pool = np.unique(np.round(s, 1), axis=0, return_inverse=True)[1].ravel() % 40
        s = s[np.unique(pool, return_index=True)[1]][pool]
        scores = {"score": s} if task == "binary" else {f"score_{c}": s[:, c] for c in range(k)}
    w = rng.integers(1, 8, n) / 4 if weighted else None
    return y, s, scores, w


def _reports(tmp_path, task, weighted, ties):
    y, s, scores, w = _rows(task, weighted, ties)
    table = pa.table({"label": y, **scores, **({"weight": w} if weighted else {})})
    path = tmp_path / "rows.parquet"
    pq.write_table(table, path, row_group_size=400)
    columns = mc.contract.Columns(weight="weight" if weighted else None)
    stats = scan_stats(path, task, columns, batch_rows=400, threads=2)
    if task == "binary":
        return mc.binary_from_stats(stats, n_boot=0), mc.binary_report(y, s, sample_weight=w, n_boot=0), stats
    streamed = mc.multiclass_from_stats(stats, n_boot=0)
    # the scan's class order is sorted, as the in-memory report's
    return streamed, mc.multiclass_report(y, y_score=s, labels=list(range(10)), sample_weight=w, n_boot=0), stats


def _curve_pairs(streamed, in_memory, task):
    if task == "binary":
        return [(None, streamed.curves, in_memory.curves)]
    return [(c, streamed.curves[c], in_memory.curves[c]) for c in in_memory.curves]


def _distance_to_polyline(points: np.ndarray, line: np.ndarray) -> np.ndarray:
    """Each point's distance to the polyline through ``line`` (both (n, 2); nan coordinates dropped)."""
    line = line[~np.isnan(line).any(axis=1)]
    a, b = line[:-1], line[1:]
    ab = b - a
    length2 = np.maximum((ab ** 2).sum(axis=1), 1e-300)
    out = np.empty(len(points))
    for i in range(0, len(points), 256):  # in chunks: points x segments
        p = points[i:i + 256, None, :]
        t = np.clip(((p - a) * ab).sum(axis=2) / length2, 0.0, 1.0)
        out[i:i + 256] = np.sqrt((((a + t[..., None] * ab) - p) ** 2).sum(axis=2)).min(axis=1)
    return out


def _drawn_alike(a: dict, b: dict) -> float:
    """The largest distance between the polylines of ``a`` and ``b`` (their vertices and the midpoints
    of their segments, each way), in units of the curves' y range."""
    pa_, pb = (np.column_stack([np.asarray(c["x"], float), np.asarray(c["y"], float)]) for c in (a, b))
    pa_, pb = (p[~np.isnan(p).any(axis=1)] for p in (pa_, pb))
    scale = max(np.ptp(pb[:, 1]), 1.0)
    worst = 0.0
    for p, line in ((pa_, pb), (pb, pa_)):
        samples = np.concatenate((p, (p[1:] + p[:-1]) / 2))
        worst = max(worst, float(_distance_to_polyline(samples / [1, scale], line / [1, scale]).max()))
    return worst


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "tied"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_streamed_curves_draw_as_the_in_memory_ones(tmp_path, task, weighted, ties):
    """The multiclass lift of a class-at-a-time scan kept only the ROC vertices, and drew a straight
    line from (0.1, 10) to (1, 1) where the curve is 1/x: 5.5 at depth 0.5 instead of 2."""
    streamed, in_memory, stats = _reports(tmp_path, task, weighted, ties)
    if task == "multiclass":
        assert all(isinstance(sc, FoldedScoreCounts) for sc in stats.scores)  # the class-at-a-time scan
    for label, s_curves, m_curves in _curve_pairs(streamed, in_memory, task):
        for kind in ("roc", "pr"):  # runs of negatives are horizontal (ROC) or vertical (PR) segments
            assert _drawn_alike(s_curves[kind], m_curves[kind]) <= EXACT, (label, kind)
        for kind in ("gain", "lift"):  # x (the depth) ascends: the curves as functions of x
            s, m = s_curves[kind], m_curves[kind]
            xs = np.linspace(m["x"][0], 1.0, 4_001)
            got, want = np.interp(xs, s["x"], s["y"]), np.interp(xs, m["x"], m["y"])
            rel = LIFT if kind == "lift" else EXACT
            np.testing.assert_allclose(got, want, rtol=rel, atol=EXACT, err_msg=f"{label} {kind}")
        if label == 0 and not weighted and not ties:  # the reading: lift 2 at depth 0.5
            assert np.interp(0.5, s_curves["lift"]["x"], s_curves["lift"]["y"]) == pytest.approx(
                np.interp(0.5, m_curves["lift"]["x"], m_curves["lift"]["y"]), rel=LIFT)


def test_a_folded_statistic_keeps_few_lift_points():
    """The kept depths grow with log(rows), not with the rows: 2 log(T) / log(LIFT_STEP) at most."""
    rng = np.random.default_rng(3)
    n = 400_000
    y = rng.random(n) < 0.01
    sc = mc.ScoreCounts.from_arrays(y, np.where(y, 0.5, 0.0) + rng.random(n))
    folded = mc.counts.fold_negative_runs(sc)
    assert folded.scores.size <= 2 * int((sc.pos > 0).sum()) + 1
    assert 0 < folded.lift_depths.size <= 2 * np.log(n) / np.log(LIFT_STEP) + 2
    assert np.all(np.diff(folded.lift_depths) > 0)
