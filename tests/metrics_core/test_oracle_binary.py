"""Binary report against scikit-learn 1.9 (and scipy for kl_divergence), driven by hypothesis.

Every key of the registry in test_common is compared to its oracle to rtol 1e-9 / atol 1e-12
(nan == nan) on: sizes from 1 row, heavy ties (scores from a few values), one class only, weights,
string labels (positive class sorting first or last), predicted labels instead of scores, decision
scores of mixed sign. Curves equal roc_curve(drop_intermediate=False) and precision_recall_curve.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm
from test_common import Case, assert_close, keys_for, mismatches

import metrics_core as mc

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LABELS = {"int": (0, 1), "str": ("no", "yes"), "str_pos_first": ("zz", "aa"), "int_nonzero": (3, 7)}
FEW = [0.0, 0.1, 0.25, 0.5, 0.7, 0.75, 0.9, 1.0]


@st.composite
def binary_cases(draw, mode: str = "score", weighted: bool | None = None, labels: str | None = None,
                 positive_weights: bool = True) -> Case:
    n = draw(st.integers(1, 25))
    lab = LABELS[labels or draw(st.sampled_from(sorted(LABELS)))]
    p_pos = draw(st.sampled_from([0.0, 0.2, 0.5, 0.8, 1.0]))  # 0 and 1: one class only
    y01 = np.array(draw(st.lists(st.floats(0, 1), min_size=n, max_size=n))) < p_pos
    if draw(st.booleans()):  # heavy ties: a few distinct values
        values = draw(st.lists(st.sampled_from(FEW), min_size=1, max_size=3, unique=True))
        score = np.array(draw(st.lists(st.sampled_from(values), min_size=n, max_size=n)), dtype=float)
    else:
        score = np.array(draw(st.lists(st.floats(0, 1, allow_subnormal=False), min_size=n, max_size=n)))
    if mode == "decision":  # decision-function scores of mixed sign, -0.0 included
        score = np.array(draw(st.lists(st.sampled_from([-3.5, -1.0, -0.0, 0.0, 0.5, 2.0, 7.25]), min_size=n,
                                       max_size=n)))
    threshold = draw(st.sampled_from(sorted(set(score.tolist())) + [0.0, 0.5, 1.0]))
    y_pred = None
    if mode == "pred":
        p01 = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        y_pred = np.where(p01, lab[1], lab[0])
        if draw(st.booleans()):
            score = None
    if weighted is None:
        weighted = draw(st.booleans())
    w = None
    if weighted:
        choices = [0.5, 1.0, 2.0, 3.25, 7.0] + ([] if positive_weights else [0.0])
        w = np.array(draw(st.lists(st.sampled_from(choices), min_size=n, max_size=n)))
        if w.sum() == 0:
            w[0] = 1.0
    cost = np.array(draw(st.lists(st.integers(-2, 9), min_size=4, max_size=4)), dtype=float).reshape(2, 2)
    return Case("binary", np.where(y01, lab[1], lab[0]), y_pred=y_pred, y_score=score, labels=lab,
                sample_weight=w, threshold=threshold, beta=draw(st.sampled_from([0.5, 1.0, 2.0, 3.0])),
                cost_matrix=cost)


def _report(case: Case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # decision scores: log_loss/brier nan (tested elsewhere)
        return case.report()


@pytest.mark.parametrize("mode", ["score", "pred", "decision"])
@given(data=st.data())
@SETTINGS
def test_binary_report_equals_oracles(mode, data):
    case = data.draw(binary_cases(mode))
    r = _report(case)
    assert mismatches(r.metrics, case, keys_for(case)) == []


def _sk_roc(case: Case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return skm.roc_curve(case.y01, case.score, sample_weight=case.w, drop_intermediate=False)


@given(case=binary_cases("score"))
@SETTINGS
def test_roc_curve_equals_sklearn(case):
    """ROC x/y/thresholds equal roc_curve(drop_intermediate=False): from (0, 0), first threshold +inf,
    one point per distinct score (ties are one point); nan rates when a class is absent, as sklearn."""
    fpr, tpr, thr = _sk_roc(case)
    roc = _report(case).curves["roc"]
    for got, want in ((roc["x"], fpr), (roc["y"], tpr), (roc["thresholds"], thr)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, equal_nan=True)


@given(case=binary_cases("score"))
@SETTINGS
def test_pr_curve_equals_sklearn(case):
    """PR x = recall, y = precision equal precision_recall_curve; our thresholds carry a final +inf for
    the (recall 0, precision 1) end point (documented in metrics_core/curves.py), so [:-1] equals sklearn's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        precision, recall, thr = skm.precision_recall_curve(case.y01, case.score, sample_weight=case.w)
    pr = _report(case).curves["pr"]
    np.testing.assert_allclose(pr["x"], recall, rtol=1e-9, atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(pr["y"], precision, rtol=1e-9, atol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(pr["thresholds"][:-1], thr)
    assert pr["thresholds"][-1] == np.inf


@given(case=binary_cases("score"))
@SETTINGS
def test_gain_and_lift_curves(case):
    """Gain: (fraction of weight with score >= t, TPR) at the ROC thresholds; lift = TPR / fraction,
    from the first finite threshold (lift at fraction 0 is undefined)."""
    fpr, tpr, thr = _sk_roc(case)
    frac = np.array([case.weight[case.score >= t].sum() for t in thr]) / case.weight.sum()
    curves = _report(case).curves
    np.testing.assert_allclose(curves["gain"]["x"], frac, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(curves["gain"]["y"], tpr, rtol=1e-9, atol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(curves["gain"]["thresholds"], thr)
    np.testing.assert_allclose(curves["lift"]["x"], frac[1:], rtol=1e-9, atol=1e-12)
    with np.errstate(invalid="ignore", divide="ignore"):
        np.testing.assert_allclose(curves["lift"]["y"], tpr[1:] / frac[1:], rtol=1e-9, atol=1e-12, equal_nan=True)


def test_tied_scores_are_one_roc_point():
    """Two rows with the same score (one positive, one negative) make one diagonal step, not two."""
    r = mc.binary_report([1, 0, 1, 0], y_score=[0.9, 0.6, 0.6, 0.1])
    np.testing.assert_allclose(r.curves["roc"]["x"], [0, 0, 0.5, 1])
    np.testing.assert_allclose(r.curves["roc"]["y"], [0, 0.5, 1, 1])
    assert r.metrics["auroc"] == 0.875  # Mann-Whitney: (1 + 1 + 0.5 + 1) / 4


@given(case=binary_cases("score", weighted=True, positive_weights=False))
@example(case=Case("binary", np.array([0, 1, 1, 0, 1]), y_score=np.array([0.9, 0.8, 0.3, 0.3, 0.2]), labels=(0, 1),
                   sample_weight=np.array([0.0, 1, 1, 1, 1])))  # the top score carries no weight
@settings(max_examples=40, deadline=None)
def test_zero_weight_rows_equal_dropped_rows(case):
    """A row of weight 0 is a row that is not there (scikit-learn drops them before its curves): every
    metric equals the report without those rows, when both classes keep some weight."""
    keep = case.weight > 0
    if keep.all() or len(np.unique(case.y01[keep])) < 2:
        return
    dropped = Case("binary", case.yt[keep], y_score=case.score[keep], labels=case.labels,
                   sample_weight=case.w[keep], threshold=case.threshold, beta=case.beta)
    a, b = _report(case).metrics, _report(dropped).metrics
    bad = [f"{k}: {a[k]!r} vs {b[k]!r}" for k in b if not np.isclose(a[k], b[k], rtol=1e-9, atol=1e-12,
                                                                       equal_nan=True)]
    assert bad == []


@pytest.mark.parametrize("n, max_points", [(3, 1000), (1500, 1000), (5000, 1000), (5000, 7), (40, 2)])
def test_thin_keeps_at_most_max_points_with_endpoints(n, max_points):
    rng = np.random.default_rng(n)
    y = rng.integers(0, 2, n)
    score = rng.normal(y, 1.0)  # mixed-sign decision scores, all distinct
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = mc.binary_report(y, y_score=score)
    for name in ("roc", "pr", "gain", "lift"):
        c = r.curves[name]
        x, yy, t = mc.thin(c["x"], c["y"], c["thresholds"], max_points=max_points)
        assert len(x) == len(yy) == len(t) <= max_points
        assert (x[0], yy[0], t[0]) == (c["x"][0], c["y"][0], c["thresholds"][0])
        assert (x[-1], yy[-1], t[-1]) == (c["x"][-1], c["y"][-1], c["thresholds"][-1])
        # a subsequence of the full curve, in order (matched through the distinct thresholds)
        idx = np.array([np.flatnonzero(c["thresholds"] == v)[0] for v in t])
        assert np.all(np.diff(idx) > 0)
        np.testing.assert_array_equal(x, c["x"][idx])
        np.testing.assert_array_equal(yy, c["y"][idx])
    # areas come from the full statistic: unchanged by thinning, equal to sklearn on the full curve
    assert len(r.curves["roc"]["x"]) == n + 1
    assert_close(r.metrics["auroc"], skm.roc_auc_score(y, score), "auroc")
    assert_close(r.metrics["average_precision"], skm.average_precision_score(y, score), "average_precision")


@pytest.mark.parametrize("signed", [False, True])
def test_large_input_equals_oracles(signed):
    """Above 100,000 rows the packed keys are sorted by polars' radix sort (metrics_core.counts): the
    report still equals every oracle. Mixed signs put >100,000 rows on each side of zero."""
    rng = np.random.default_rng(7)
    n = 230_000 if signed else 120_000
    y = rng.integers(0, 2, n)
    score = np.round(rng.normal(0.4 * y, 0.6 if signed else 0.15) + (0 if signed else 0.3), 4)
    if not signed:
        score = np.clip(score, 0.0, 1.0)
    case = Case("binary", y, y_score=score, labels=(0, 1), threshold=0.0 if signed else 0.5,
                cost_matrix=np.array([[0.0, 1.0], [5.0, 0.0]]))
    assert mismatches(_report(case).metrics, case, keys_for(case)) == []
