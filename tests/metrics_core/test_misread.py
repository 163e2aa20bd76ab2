"""The warnings of a binary report whose input looks misread (metrics_core.misread): scores that look
reversed for the positive class, and a threshold on another scale than the scores."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn import metrics as skm

import metrics_core as mc
from metrics_core.misread import REVERSED_AUROC, reversed_scores


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


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
