"""Regression tests of issue 12 §2 ("wrong answers without an error") and the reversed-scores warning (§6)."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from sklearn import metrics as skm

import metrics_core as mc
from metrics_core.contract import Columns
from metrics_core.dataset import scan_stats
from metrics_core.intervals import class_auroc_replicates
from metrics_core.monitoring.scan import scan_period
from metrics_core.misread import REVERSED_AUROC, reversed_scores

MIXED = "mixed label types"


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# --------------------------------------------------------------------------------------------------
# 1. String labels with numeric predictions (or class lists): an error in every entry point
# --------------------------------------------------------------------------------------------------
def test_issue_example_string_labels_numeric_predictions_raise():
    """The issue's call returned accuracy 0.5 for a perfect classifier; scikit-learn raises."""
    with pytest.raises(ValueError, match="Mix of label input types"):
        skm.accuracy_score(["spam", "spam", "eggs", "eggs"], [1, 1, 0, 0])
    with pytest.raises(mc.InputError, match=MIXED):
        mc.binary_report(["spam", "spam", "eggs", "eggs"], y_pred=[1, 1, 0, 0], pos_label="spam")
    with pytest.raises(mc.InputError, match=MIXED):  # the other way round
        mc.binary_report([1, 1, 0, 0], y_pred=["1", "1", "0", "0"], pos_label=1)
    with pytest.raises(mc.InputError, match=MIXED):
        mc.multiclass_report(["spam", "spam", "eggs", "eggs"], [1, 1, 0, 0])


def test_class_list_of_another_kind_than_the_labels_raises():
    """labels=[0, 1] for string labels was 'not in the class list'; it is the same mixed-kind error now."""
    scores = np.array([[0.9, 0.1], [0.8, 0.2], [0.1, 0.9], [0.2, 0.8]])
    with pytest.raises(mc.InputError, match=r"labels holds int64 values and y_true holds <U4 values \(mixed label"):
        mc.multiclass_report(["eggs", "eggs", "spam", "spam"], y_score=scores, labels=[0, 1])
    with pytest.raises(mc.InputError, match=MIXED):
        mc.multiclass_report([0, 0, 1, 1], y_score=scores, labels=["0", "1"])


@pytest.fixture
def mixed_files(tmp_path):
    t = pa.table({"label": ["spam", "spam", "eggs", "eggs"], "prediction": [1, 1, 0, 0],
                  "score": [0.9, 0.8, 0.1, 0.2]})
    pq.write_table(t, tmp_path / "mixed.parquet")
    pacsv.write_csv(t, tmp_path / "mixed.csv")
    return [tmp_path / "mixed.parquet", tmp_path / "mixed.csv"]


@pytest.mark.parametrize("task, kwargs", [("binary", {"pos_label": "spam"}), ("multiclass", {})])
def test_streamed_scan_raises_mixed_label_types(mixed_files, task, kwargs):
    for path in mixed_files:
        with pytest.raises(mc.InputError, match=rf"{path.name}: column 'prediction' holds int64 values .*{MIXED}"):
            scan_stats(path, task, **kwargs)


@pytest.mark.parametrize("labels", [["eggs", "spam"], [0, 1]])
def test_monitoring_scan_raises_mixed_label_types(mixed_files, labels):
    for source in (mixed_files[0], pq.read_table(mixed_files[0])):
        with pytest.raises(mc.InputError, match=MIXED):
            scan_period(source, "binary", labels, label="label", prediction="prediction")


# --------------------------------------------------------------------------------------------------
# 2. Intervals do not depend on the scale of the weights
# --------------------------------------------------------------------------------------------------
def _multiclass_data(n=300, k=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    raw = rng.uniform(size=(n, k))
    raw[np.arange(n), y] += 0.8
    return y, raw / raw.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("c", [0.001, 0.01, 1.0, 100.0])
def test_multiclass_auroc_interval_does_not_depend_on_weight_scale(c):
    """With weights all c the auroc_ovr_macro interval was (nan, nan) for c = 0.001 and (0, 1) for
    c = 0.01 (round(sum of weights) rows); the row count now decides, as without weights."""
    y, s = _multiclass_data()
    ref = mc.multiclass_report(y, y_score=s, n_boot=300).intervals
    got = mc.multiclass_report(y, y_score=s, sample_weight=np.full(y.size, c), n_boot=300).intervals
    assert got.keys() == ref.keys()
    for key in ref:
        np.testing.assert_allclose(got[key], ref[key], rtol=1e-9, err_msg=key)
    low, high = got["auroc_ovr_macro"]
    assert 0.9 < low < high < 1.0


@pytest.mark.parametrize("c", [0.001, 0.01, 1.0, 100.0])
def test_binary_intervals_do_not_depend_on_weight_scale(c):
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 200)
    s = np.clip(0.3 * y + rng.uniform(0, 0.7, 200), 0, 1)
    w = rng.integers(1, 4, 200).astype(float)
    ref = mc.binary_report(y, y_score=s, sample_weight=w, n_boot=300).intervals
    got = mc.binary_report(y, y_score=s, sample_weight=w * c, n_boot=300).intervals
    for key in ref:
        np.testing.assert_allclose(got[key], ref[key], rtol=1e-9, err_msg=key)


def test_class_auroc_replicates_take_the_row_count():
    y, s = _multiclass_data(n=100)
    stats = mc.multiclass_stats(y, y_score=s, sample_weight=np.full(100, 0.001))
    reps = class_auroc_replicates(stats.scores, 50, np.random.default_rng(0), stats.n_rows)
    assert stats.n_rows == 100 and not np.isnan(reps).any()


# --------------------------------------------------------------------------------------------------
# 3. A row of weight 0 is an absent row (in memory and streamed)
# --------------------------------------------------------------------------------------------------
def test_zero_weight_row_with_scores_outside_0_1_leaves_log_loss_alone():
    """Multiclass log_loss was nan (a zero-weight row's scores outside [0, 1]); binary already dropped it."""
    y, s = _multiclass_data(n=50)
    bad = s.copy()
    bad[0] = [2.0, -1.0, 0.0]
    w = np.ones(50)
    w[0] = 0.0
    got = mc.multiclass_report(y, y_score=bad, sample_weight=w)
    expected = mc.multiclass_report(y[1:], y_score=s[1:])
    assert got.metrics["log_loss"] == pytest.approx(skm.log_loss(y[1:], s[1:], labels=[0, 1, 2]), rel=1e-12)
    assert got.metrics == pytest.approx(expected.metrics, rel=1e-12, nan_ok=True)
    assert got.intervals == expected.intervals
    b = mc.binary_report((y == 1).astype(int), y_score=bad[:, 1], sample_weight=w)
    assert b.metrics["log_loss"] == mc.binary_report((y[1:] == 1).astype(int), y_score=s[1:, 1]).metrics["log_loss"]


def test_zero_weight_rows_leave_the_class_list():
    """A class that only zero-weight rows hold is not a class of the data (as if the rows were absent)."""
    y = np.array(["a", "b", "a", "b", "c"])
    pred = np.array(["a", "b", "b", "b", "c"])
    w = np.array([1.0, 2.0, 1.0, 1.0, 0.0])
    got = _quiet(mc.multiclass_report, y, pred, sample_weight=w)
    expected = _quiet(mc.multiclass_report, y[:4], pred[:4], sample_weight=w[:4])
    assert got.per_class["class"].to_list() == ["a", "b"]
    assert got.metrics == expected.metrics
    binary = _quiet(mc.binary_report, y, y_pred=pred, pos_label="a", sample_weight=w)  # "c" was a third class
    assert binary.metrics == _quiet(mc.binary_report, y[:4], y_pred=pred[:4], pos_label="a",
                                    sample_weight=w[:4]).metrics
    with pytest.raises(mc.InputError, match="every row has weight 0"):
        mc.multiclass_report(y, pred, sample_weight=np.zeros(5))


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_zero_weight_rows_streamed_equal_absent_rows(tmp_path, task):
    y, s = _multiclass_data(n=120, seed=4)
    w = np.random.default_rng(5).integers(0, 3, 120).astype(float)
    if task == "binary":
        y = np.where(y == 1, "yes", "no")
        y[w == 0] = "maybe"  # a third class on zero-weight rows only
        frame = {"label": y, "score": s[:, 1], "w": w}
    else:
        s[w == 0] = [1.5, -0.25, -0.25]  # not probabilities (though summing to 1), on zero-weight rows only
        frame = {"label": y, **{f"score_{j}": s[:, j] for j in range(3)}, "w": w}
    pl.DataFrame(frame).write_parquet(tmp_path / "all.parquet")
    pl.DataFrame(frame).filter(pl.col("w") > 0).write_parquet(tmp_path / "kept.parquet")
    kw = dict(pos_label="yes") if task == "binary" else {}
    to_report = mc.binary_from_stats if task == "binary" else mc.multiclass_from_stats
    got = to_report(scan_stats(tmp_path / "all.parquet", task, Columns(weight="w"), batch_rows=50, **kw), n_boot=200)
    expected = to_report(scan_stats(tmp_path / "kept.parquet", task, Columns(weight="w"), batch_rows=50, **kw),
                         n_boot=200)
    assert got.metrics == pytest.approx(expected.metrics, rel=1e-12, nan_ok=True)
    assert got.intervals.keys() == expected.intervals.keys()
    for key, interval in expected.intervals.items():
        np.testing.assert_allclose(got.intervals[key], interval, rtol=1e-9, err_msg=key)
    if task == "multiclass":
        assert np.isfinite(got.metrics["log_loss"])


@pytest.mark.parametrize("kind", ["pred", "score"])
def test_paired_bootstrap_zero_weight_rows_and_weight_scale(kind):
    """Zero-weight rows took draws of every replicate (n counted them): now absent; scale-free too."""
    from metrics_core.significance import paired_bootstrap

    rng = np.random.default_rng(6)
    y = rng.integers(0, 2, 150)
    if kind == "pred":
        a, b = (np.where(rng.uniform(size=150) < p, y, 1 - y) for p in (0.8, 0.7))
        metric = "accuracy"
    else:
        a, b, metric = np.clip(0.3 * y + rng.uniform(0, 0.7, 150), 0, 1), rng.uniform(size=150), "auroc"
    w = rng.integers(0, 3, 150).astype(float)
    k = w > 0
    n_boot = 300 if kind == "pred" else 40
    got = paired_bootstrap(metric, y, a, b, kind=kind, sample_weight=w, n_boot=n_boot)
    absent = paired_bootstrap(metric, y[k], a[k], b[k], kind=kind, sample_weight=w[k], n_boot=n_boot)
    scaled = paired_bootstrap(metric, y, a, b, kind=kind, sample_weight=w * 0.01, n_boot=n_boot)
    assert got.statistic == pytest.approx(absent.statistic, rel=1e-12)
    np.testing.assert_allclose(got.interval, absent.interval, rtol=1e-12)
    np.testing.assert_allclose(scaled.interval, got.interval, rtol=1e-9)


# --------------------------------------------------------------------------------------------------
# 4. Complex weights and an N x 0 multilabel matrix are errors
# --------------------------------------------------------------------------------------------------
def test_complex_weights_raise():
    """The imaginary part was dropped (n = 4 for weights [1+5j, 1, 2+1j])."""
    with pytest.raises(mc.InputError, match=r"sample_weight: complex weight .* in 2 row\(s\), e.g. row 0 = \(1\+5j\)"):
        mc.binary_report([0, 1, 1], y_score=[0.2, 0.7, 0.4], sample_weight=[1 + 5j, 1, 2 + 1j])
    with pytest.raises(mc.InputError, match="complex weight"):
        mc.multiclass_report([0, 1, 1], [0, 1, 0], sample_weight=np.array([1, 1, 1], dtype=complex))
    with pytest.raises(mc.InputError, match="weights must be real numbers"):
        mc.binary_report([0, 1, 1], y_score=[0.2, 0.7, 0.4], sample_weight=["1", "1", "2"])


@pytest.mark.parametrize("matrix", [np.zeros((1, 0)), [[]], np.zeros((3, 0), dtype=bool)])
def test_multilabel_without_label_columns_raises(matrix):
    with pytest.raises(mc.InputError, match="no label columns"):
        mc.multilabel_report(matrix, matrix)


# --------------------------------------------------------------------------------------------------
# 6. Reversed scores
# --------------------------------------------------------------------------------------------------
def _scores_of_class_1(n=400, seed=1):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return y, np.clip(0.5 * y + rng.uniform(0, 0.5, n), 0, 1)


def test_reversed_scores_warn_and_name_the_other_class():
    y, s = _scores_of_class_1()
    with pytest.warns(mc.ReversedScoresWarning, match=r"look reversed for the positive class 0.*--positive-class 1"):
        r = mc.binary_report(y, y_score=s, pos_label=0)
    assert r.metrics["auroc"] == pytest.approx(skm.roc_auc_score(y == 0, s), rel=1e-12)
    assert r.metrics["auroc"] < REVERSED_AUROC
    with warnings.catch_warnings():
        warnings.simplefilter("error", mc.ReversedScoresWarning)
        mc.binary_report(y, y_score=s, pos_label=1)  # the right class: no warning


def _warned(cls, fn, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    return out, [w.message for w in caught if isinstance(w.message, cls)]


@pytest.mark.parametrize("weighted", [False, True])
def test_a_probability_threshold_on_percent_scores_warns_with_the_share_predicted_positive(weighted):
    """Scores in percent with the default threshold 0.5: every row above it but the few below 0.5 is
    'positive' (accuracy = prevalence): a ThresholdScaleWarning says so and how to fix it."""
    y, s = _scores_of_class_1()
    pct = s * 100
    w = np.random.default_rng(3).integers(1, 4, y.size).astype(float) if weighted else None
    r, said = _warned(mc.ThresholdScaleWarning, mc.binary_report, y, y_score=pct, sample_weight=w)
    above = (pct >= 0.5) * (1.0 if w is None else w)
    assert len(said) == 1 and said[0].share == pytest.approx(above.sum() / (y.size if w is None else w.sum()))
    assert "outside [0, 1]" in str(said[0]) and "--threshold" in str(said[0]) and "divide them by 100" in str(said[0])
    assert r.metrics["accuracy"] == pytest.approx(skm.accuracy_score(y, pct >= 0.5, sample_weight=w), rel=1e-12)
    for quiet in (dict(y_score=pct, threshold=50), dict(y_score=s), dict(y_score=pct, y_pred=(pct >= 50).astype(int))):
        assert _warned(mc.ThresholdScaleWarning, mc.binary_report, y, sample_weight=w, **quiet)[1] == []



@pytest.mark.parametrize("weighted", [False, True])
def test_a_percent_threshold_on_probability_scores_warns_with_the_share_predicted_positive(weighted):
    """--threshold 70 meant 70 %: on probabilities it predicts every row negative (and -0.5 every row
    positive), with no error; a ThresholdScaleWarning says so and what to use instead."""
    y, s = _scores_of_class_1()
    w = np.random.default_rng(3).integers(1, 4, y.size).astype(float) if weighted else None
    for threshold, share, hint in ((70, 0.0, "use 0.7"), (-0.5, 1.0, "within [0, 1]")):
        r, said = _warned(mc.ThresholdScaleWarning, mc.binary_report, y, y_score=s, sample_weight=w,
                          threshold=threshold)
        assert len(said) == 1 and said[0].share == share, [str(m) for m in said]
        assert f"the threshold {threshold:g} is outside [0, 1]" in str(said[0]) and hint in str(said[0])
        assert r.metrics["recall"] == share
    for quiet in (dict(threshold=0.0), dict(threshold=1.0), dict(threshold=70, y_pred=(s >= 0.7).astype(int))):
        assert _warned(mc.ThresholdScaleWarning, mc.binary_report, y, y_score=s, sample_weight=w, **quiet)[1] == []

def test_the_bootstrap_does_not_repeat_a_misread_input_warning():
    """A paired bootstrap makes 2 x n_boot reports: the warnings come from the observed reports only."""
    from metrics_core.significance.bootstrap import paired_bootstrap

    y, s = _scores_of_class_1()
    _, said = _warned(mc.MisreadInputWarning, paired_bootstrap, "auroc", y, s * 100, s * 90, n_boot=30,
                      kind="score")
    assert 1 <= len(said) <= 2


def test_reversed_scores_rule_needs_auroc_below_0_3_and_a_tight_interval():
    """AUROC 0.25 on 8 rows has an interval reaching past 0.5: no warning; 0.35 on many rows: none either."""
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    s = np.array([0.9, 0.8, 0.3, 0.7, 0.1, 0.2, 0.85, 0.4])
    r = _quiet(mc.binary_report, y, y_score=s)
    assert r.metrics["auroc"] == 0.25 and reversed_scores(r.stats, r.metrics["auroc"]) is None
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 20_000)
    s = rng.uniform(size=y.size) - 0.3 * y * rng.uniform(size=y.size)
    r = _quiet(mc.binary_report, y, y_score=s)
    assert 0.3 < r.metrics["auroc"] < 0.5 and reversed_scores(r.stats, r.metrics["auroc"]) is None
    upper = reversed_scores(r.stats, 0.29)
    assert upper is not None and 0.29 < upper < 0.31  # 20,000 rows: a tight interval


def test_float32_scores_give_one_confusion_in_every_mode(tmp_path):
    """Exact, binned, streamed (exact and confusion only) and monitoring confusions of float32 scores at
    a threshold that float32 rounds down (0.7 -> 0.69999999) agree with those of the float64 values."""
    rng = np.random.default_rng(7)
    s = np.concatenate((np.full(40, 0.7, np.float32), rng.random(200).astype(np.float32)))
    y = rng.integers(0, 2, s.size)
    expected = skm.confusion_matrix(y, (s.astype(np.float64) >= 0.7).astype(int)).tolist()
    assert float(np.float32(0.7)) < 0.7 and expected != skm.confusion_matrix(y, (s >= 0.7).astype(int)).tolist()
    bins = np.linspace(0, 1, 11)
    in_memory = {"exact": mc.binary_report(y, s, threshold=0.7, n_boot=0),
                 "binned": mc.binary_report(y, s, threshold=0.7, bins=bins, n_boot=0)}
    pq.write_table(pa.table({"label": y, "score": s}), tmp_path / "f32.parquet")
    modes = {"exact": {}, "binned": {"bins": bins}, "confusion only": {"confusion_only": True}}
    streamed = {kind: scan_stats(tmp_path / "f32.parquet", "binary", threshold=0.7, **kw).confusion.matrix.tolist()
                for kind, kw in modes.items()}
    period = scan_period(tmp_path / "f32.parquet", "binary", [0, 1], label="label", scores=["score"], threshold=0.7)
    got = {**{f"{k} report": [[int(r.metrics[a]) for a in row] for row in (("tn", "fp"), ("fn", "tp"))]
              for k, r in in_memory.items()},
           **{f"{k} scan": m for k, m in streamed.items()}, "monitoring": period.performance.confusion.matrix.tolist()}
    assert got == {k: expected for k in got}
