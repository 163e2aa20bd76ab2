"""The calibration-change test of a labelled sample with unequal weights, weighted by the design: its
level on stratified samples of an unchanged model (where the labelled rows as they are read a change),
its power on a real change, and the same test for equal weights whatever their scale."""

from __future__ import annotations

import types

import numpy as np
import pytest
from monitoring_data import LABELS, PRIOR

from metrics_core.calibration import calibration_set
from metrics_core.monitoring.calibration_map import cached_calibration_map
from metrics_core.monitoring.calibration_change import calibration_change
from metrics_core.monitoring.labelled import design_calibration_change
from metrics_core.monitoring.bins import Bins
from metrics_core.monitoring.period import sample_bins
from metrics_core.monitoring.sample import sample_update, unequal

K = LABELS.size
#: 3 % of the five common predicted classes, 25 % of the three rarest.
RATES = np.array([0.03] * 5 + [0.25] * 3)


def _deliveries(seeds: int, n: int, seed: int, noise: float = 0.0):
    """``seeds`` deliveries of the monitoring tests' classifier (monitoring_data.period_arrays) in one pass;
    ``noise`` of the labels replaced by a random class (the score-label relation changed)."""
    rng = np.random.default_rng(seed)
    y = (rng.random((seeds, n, 1)) > np.cumsum(PRIOR)).sum(axis=-1)
    logits = rng.standard_normal((seeds, n, K)) + np.log(PRIOR)
    np.put_along_axis(logits, y[..., None], np.take_along_axis(logits, y[..., None], -1) + 2.4, -1)
    s = np.exp(logits - logits.max(axis=-1, keepdims=True))
    s /= s.sum(axis=-1, keepdims=True)
    pred = s.argmax(axis=-1)
    y = np.where(rng.random((seeds, n)) < noise, rng.integers(0, K, (seeds, n)), y)
    on = rng.random((seeds, n)) < RATES[pred]
    return y, pred, s, on


def _p_values(reference, seeds: int, seed: int, noise: float = 0.0, scale: float = 1.0):
    """Per seed, the p-value of the design-weighted test and of the raw labelled rows' top-label test."""
    cal_map = cached_calibration_map(reference, 10, 0)
    design, raw = [], []
    for chunk in range(0, seeds, 25):  # 25 deliveries a numpy pass: 30 MB a score array
        design_raw = _chunk(cal_map, min(25, seeds - chunk), seed * 1000 + chunk, noise, scale)
        design += design_raw[0]
        raw += design_raw[1]
    return np.array(design), np.array(raw)


def _chunk(cal_map, seeds: int, seed: int, noise: float, scale: float) -> tuple[list, list]:
    y, pred, s, on = _deliveries(seeds, 20_000, seed, noise)
    design, raw = [], []
    for i in range(seeds):
        b, n_bins = sample_bins(Bins(), s[i], pred[i], "multiclass")
        sample = sample_update(pred[i], pred[i], b, np.where(on[i], y[i], -1), scale / RATES[pred[i]],
                               strata=tuple(LABELS), n_classes=K, n_bins=n_bins)
        assert unequal(sample)
        design.append(design_calibration_change(cal_map, sample, "multiclass", n_boot=10)["top_label"].p_value)
        lab = on[i]
        cs = calibration_set("multiclass", LABELS, y[i][lab], s[i][lab], pred_idx=pred[i][lab])
        raw.append(calibration_change(cal_map, types.SimpleNamespace(calibration=cs))["top_label"].p_value)
    return design, raw


def test_the_design_weighted_calibration_test_holds_its_level_on_stratified_samples(reference):
    """An unchanged model, 100 stratified samples (3 % / 25 %): the design-weighted test rejects about as
    often as its level says; the raw labelled rows' top-label test against the reference's map does not."""
    design, raw = _p_values(reference, 100, 1)
    print(f"calibration false alarms at alpha 0.05 over 100 seeds: design-weighted {np.mean(design < 0.05):.2f}, "
          f"raw labelled rows {np.mean(raw < 0.05):.2f}")
    assert np.mean(design < 0.05) <= 0.08
    assert np.mean(raw < 0.05) > 0.3


def test_the_design_weighted_calibration_test_sees_a_changed_relation(reference):
    """15 % of the labels replaced by a random class: the predictions are right less often than their
    scores promise, and the design-weighted test sees it in most seeds."""
    design, _ = _p_values(reference, 25, 2, noise=0.15)
    print(f"calibration change detected (15 % label noise, 25 seeds): {np.mean(design < 0.05):.2f}")
    assert np.mean(design < 0.05) >= 0.8


def test_the_scale_of_equal_design_weights_does_not_matter(reference):
    """Design weights multiplied by a constant give the same test (the weights are expanded to each
    stratum's rows), to rounding."""
    cal_map = cached_calibration_map(reference, 10, 0)
    y, pred, s, on = (a[0] for a in _deliveries(1, 20_000, 3))
    b, n_bins = sample_bins(Bins(), s, pred, "multiclass")
    a, c = (design_calibration_change(cal_map, sample_update(
        pred, pred, b, np.where(on, y, -1), w / RATES[pred], strata=tuple(LABELS), n_classes=K, n_bins=n_bins),
        "multiclass", n_boot=10)["top_label"] for w in (1.0, 7.3))
    assert a.statistic == pytest.approx(c.statistic, rel=1e-9) and a.p_value == pytest.approx(c.p_value, rel=1e-9)
    assert a.details["df"] == c.details["df"] > 0


def test_the_per_class_table_of_a_sample_estimates_the_delivery():
    """The design-weighted per-class table: for a stratified sample (3 % / 25 %) its recall and precision are
    scikit-learn's on the labelled rows weighted by their expansion weights, and its interval of the rare
    classes' recall covers the delivery's own; the labelled rows unweighted give another recall."""
    from sklearn.metrics import precision_score, recall_score

    from metrics_core.monitoring.labelled import design_per_class
    from metrics_core.monitoring.sample import expansion

    y, pred, s, on = (a[0] for a in _deliveries(1, 40_000, 4))
    b, n_bins = sample_bins(Bins(), s, pred, "multiclass")
    sample = sample_update(pred, pred, b, np.where(on, y, -1), 1 / RATES[pred], strata=tuple(LABELS), n_classes=K,
                           n_bins=n_bins)
    table = design_per_class(sample, LABELS)
    _, factor = expansion(sample)
    w = factor[pred[on]] / RATES[pred[on]]
    kw = dict(labels=np.arange(K), average=None, zero_division=np.nan)
    assert np.allclose(table["recall"].to_numpy(), recall_score(y[on], pred[on], sample_weight=w, **kw))
    assert np.allclose(table["precision"].to_numpy(), precision_score(y[on], pred[on], sample_weight=w, **kw))
    # precision is within a stratum (a predicted class), where the weights are equal; recall is not
    assert not np.allclose(table["recall"].to_numpy(), recall_score(y[on], pred[on], **kw), atol=0.01)
    truth = recall_score(y, pred, **kw)
    low, high = table["recall_ci_low"].to_numpy(), table["recall_ci_high"].to_numpy()
    assert np.all((low[5:] <= truth[5:]) & (truth[5:] <= high[5:]))
    assert table["support"].sum() == pytest.approx(y.size)
