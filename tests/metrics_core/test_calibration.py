"""Calibration from mergeable statistics against scikit-learn and the torchmetrics CalibrationError formula."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss

from metrics_core.calibration import (
    CalibrationCounts,
    bin_edges,
    brier_decomposition,
    calibration_metrics,
    calibration_set,
    reliability,
)
from metrics_core.counts import ScoreCounts, fold_negative_runs
from metrics_core.errors import InputError


def tm_calibration_error(confidences, accuracies, n_bins: int, norm: str) -> float:
    """torchmetrics' documented CalibrationError: uniform bins over [0, 1], b_i the share of rows in
    bin i, p_i its accuracy, c_i its mean confidence; l1 = sum_i b_i |p_i - c_i| (ECE), max =
    max_i |p_i - c_i| (MCE). Bins as torch.bucketize(right=True) - 1: [e_i, e_{i+1})."""
    conf = np.asarray(confidences, float)
    acc = np.asarray(accuracies, float)
    edges = np.linspace(0, 1, n_bins + 1)
    idx = np.searchsorted(edges, conf, side="right") - 1
    count = np.bincount(idx, minlength=n_bins + 1)
    with np.errstate(invalid="ignore"):
        p = np.nan_to_num(np.bincount(idx, acc, minlength=n_bins + 1) / count)
        c = np.nan_to_num(np.bincount(idx, conf, minlength=n_bins + 1) / count)
    gap = np.abs(p - c)
    return float(np.sum(gap * count / count.sum())) if norm == "l1" else float(gap.max())


def _binary(seed: int, n: int = 2000, power: float = 1.5):
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    return (rng.random(n) < s ** power).astype(int), s


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("n_bins", [5, 10, 13])
def test_reliability_matches_sklearn_calibration_curve(strategy, n_bins):
    y, s = _binary(1)
    y[:50], s[:50] = 1, 0.5  # ties, some on an inner edge of the fixed-width bins
    prob_true, prob_pred = calibration_curve(y, s, n_bins=n_bins, strategy=strategy)
    r = reliability(CalibrationCounts.from_score_counts(ScoreCounts.from_arrays(y, s)), n_bins, strategy)
    full = r.count > 0
    np.testing.assert_allclose(r.observed[full], prob_true, rtol=0, atol=1e-12)
    np.testing.assert_allclose(r.mean_score[full], prob_pred, rtol=0, atol=1e-12)
    np.testing.assert_allclose(r.edges, np.percentile(s, np.linspace(0, 100, n_bins + 1)) if strategy == "quantile"
                               else np.linspace(0, 1, n_bins + 1), atol=1e-12)


def test_fine_binned_equals_exact_on_the_fine_grid():
    y, s = _binary(2)
    exact = CalibrationCounts.from_score_counts(ScoreCounts.from_arrays(y, s))
    fine = CalibrationCounts.from_arrays(y, s, fine_bins=1000)
    for n_bins in (5, 10, 20):
        a, b = reliability(exact, n_bins), reliability(fine, n_bins)
        np.testing.assert_allclose(b.count, a.count)
        np.testing.assert_allclose(b.observed, a.observed, atol=1e-12)
        assert b.ece == pytest.approx(a.ece, abs=1e-12)
    q_exact, q_fine = reliability(exact, 10, "quantile"), reliability(fine, 10, "quantile")
    assert np.abs(q_exact.edges - q_fine.edges).max() <= 1e-3  # within one fine bin
    assert q_fine.ece == pytest.approx(q_exact.ece, abs=0.01)


@pytest.mark.parametrize("n_bins", [10, 15])
def test_binary_ece_mce_match_torchmetrics_formula(n_bins):
    y, s = _binary(3, power=2.0)
    fine = CalibrationCounts.from_arrays(y, s, fine_bins=n_bins * 40)
    r = reliability(fine, n_bins)
    assert r.ece == pytest.approx(tm_calibration_error(s, y, n_bins, "l1"), abs=1e-12)
    assert r.mce == pytest.approx(tm_calibration_error(s, y, n_bins, "max"), abs=1e-12)


def _multiclass(seed: int, n: int = 3000, k: int = 4):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    logits = rng.standard_normal((n, k))
    logits[np.arange(n), y] += 1.5
    p = np.exp(logits)
    return y, p / p.sum(axis=1, keepdims=True)


def test_multiclass_top_label_and_per_class():
    y, p = _multiclass(4)
    cs = calibration_set("multiclass", ["a", "b", "c", "d"], y, p, fine_bins=1500)
    metrics, table = calibration_metrics(cs, n_bins=15)
    conf, pred = p.max(axis=1), p.argmax(axis=1)
    assert metrics["ece_uniform"] == pytest.approx(tm_calibration_error(conf, pred == y, 15, "l1"), abs=1e-12)
    assert metrics["mce_uniform"] == pytest.approx(tm_calibration_error(conf, pred == y, 15, "max"), abs=1e-12)
    for j, name in enumerate("abcd"):  # one-vs-rest: scikit-learn's binary calibration per class
        row = table.row(by_predicate=pl.col("target") == name, named=True)
        assert row["ece_uniform"] == pytest.approx(tm_calibration_error(p[:, j], y == j, 15, "l1"), abs=1e-12)
        assert row["brier"] == pytest.approx(brier_score_loss(y == j, p[:, j]), abs=1e-12)
    total = sum(table.filter(table["target"] != "top_label")[t].sum() for t in ("reliability", "within_bin")) \
        - table.filter(table["target"] != "top_label")["resolution"].sum() \
        + table.filter(table["target"] != "top_label")["uncertainty"].sum()
    assert total == pytest.approx(brier_score_loss(y, p, labels=[0, 1, 2, 3]), abs=1e-12)
    assert metrics["brier_reliability"] == pytest.approx(
        table.filter(table["target"] != "top_label")["reliability"].sum())


def test_murphy_decomposition_is_exact_with_one_score_per_bin():
    rng = np.random.default_rng(5)
    s = rng.choice(np.arange(10) / 10 + 0.05, 5000)
    y = rng.random(5000) < s
    d = brier_decomposition(CalibrationCounts.from_arrays(y, s), n_bins=10)
    assert d["within_bin"] == pytest.approx(0, abs=1e-12)
    o = y.mean()
    rel = sum((s == v).sum() * (v - y[s == v].mean()) ** 2 for v in np.unique(s)) / s.size
    res = sum((s == v).sum() * (y[s == v].mean() - o) ** 2 for v in np.unique(s)) / s.size
    assert d["reliability"] == pytest.approx(rel) and d["resolution"] == pytest.approx(res)
    assert d["uncertainty"] == pytest.approx(o * (1 - o))
    assert d["brier"] == pytest.approx(brier_score_loss(y, s), abs=1e-12)


def test_binned_decomposition_discrepancy_is_small_and_stated():
    y, s = _binary(6, n=20000)
    d = brier_decomposition(CalibrationCounts.from_arrays(y, s), n_bins=10)
    assert d["brier"] == pytest.approx(brier_score_loss(y, s), abs=1e-12)
    assert d["brier"] == pytest.approx(d["reliability"] - d["resolution"] + d["uncertainty"] + d["within_bin"])
    assert abs(d["within_bin"]) < 0.01  # of the order of the squared bin width (0.01)


def test_undefined_cases_are_nan():
    r = reliability(CalibrationCounts.from_arrays([1, 0], [1.5, 0.2]))
    assert np.isnan(r.ece) and np.isnan(r.mce)
    assert np.isnan(brier_decomposition(CalibrationCounts.from_arrays([], []))["brier"])
    with pytest.raises(InputError, match="folded"):
        CalibrationCounts.from_score_counts(fold_negative_runs(ScoreCounts.from_arrays([1, 0, 0], [0.9, 0.1, 0.2])))
    with pytest.raises(InputError, match="strategy"):
        bin_edges(CalibrationCounts.from_arrays([1], [0.5]), 10, "kmeans")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=200), st.integers(1, 199),
       st.integers(1, 12), st.sampled_from(["uniform", "quantile"]))
def test_properties(rows, cut, n_bins, strategy):
    s = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows])
    whole = CalibrationCounts.from_arrays(y, s, fine_bins=120)
    cut = cut % len(rows)
    merged = CalibrationCounts.from_arrays(y[:cut], s[:cut], fine_bins=120).merge(
        CalibrationCounts.from_arrays(y[cut:], s[cut:], fine_bins=120))
    a, b = reliability(whole, n_bins, strategy), reliability(merged, n_bins, strategy)
    assert a.ece == pytest.approx(b.ece, abs=1e-9) and a.mce == pytest.approx(b.mce, abs=1e-9)
    assert 0 <= a.ece <= a.mce + 1e-12 <= 1 + 1e-12
    assert np.nansum(a.count) == len(rows)
    d = brier_decomposition(whole, n_bins, strategy)
    assert d["brier"] == pytest.approx(np.mean((s - y) ** 2), abs=1e-9)
    assert d["reliability"] >= 0 and d["resolution"] >= 0 and 0 <= d["uncertainty"] <= 0.25
    assert d["brier"] == pytest.approx(d["reliability"] - d["resolution"] + d["uncertainty"] + d["within_bin"])
    exact = CalibrationCounts.from_score_counts(ScoreCounts.from_arrays(y, s))
    if strategy == "uniform":
        prob_true, _ = calibration_curve(y.astype(int), s, n_bins=n_bins, strategy="uniform") \
            if len(set(y)) > 1 else (None, None)
        if prob_true is not None:
            r = reliability(exact, n_bins)
            np.testing.assert_allclose(r.observed[r.count > 0], prob_true, atol=1e-12)


@pytest.mark.parametrize("task, names, raises", [("multiclass", ["a", "top_label"], True),
                                                 ("multiclass", ["a", "top_label_class"], False),
                                                 ("binary", ["a", "top_label"], False)])
def test_a_multiclass_class_named_top_label_is_refused(task, names, raises):
    """The top-label target's name: a multiclass class bearing it would share its metrics and tests."""
    scores = np.array([[0.8, 0.2], [0.3, 0.7]]) if task == "multiclass" else np.array([[0.2], [0.7]])
    call = lambda: calibration_set(task, names, np.array([0, 1]), scores)  # noqa: E731
    if raises:
        with pytest.raises(InputError, match="a class is named 'top_label'.*Rename that class"):
            call()
    else:
        assert call().names == (tuple(names) if task == "multiclass" else ("top_label",))
