"""The delivery's performance from its labelled sample: oracles (scikit-learn, a jackknife, a census) and
coverage over 400 stratified samples of a simulated delivery whose realised metrics are known."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

from metrics_core.compute import multiclass_confusion_metrics
from metrics_core.errors import InputError
from metrics_core.monitoring.sample import sample_update
from metrics_core.monitoring.survey import (SampleWarning, _neyman, design_confusion, design_metric, design_metrics,
                                            model_assisted_metric, model_assisted_metrics, next_sample)
from metrics_core.sampling import sample_size
from metrics_core.undefined import UndefinedMetricWarning

K, B = 5, 10
STRATA = tuple(f"pred {k}" for k in range(K))
SHARES = (0.45, 0.30, 0.15, 0.07, 0.03)
RATES = (0.03, 0.03, 0.03, 0.03, 0.25)  # the rarest predicted class is labelled eight times as often
METRICS = ("accuracy", "balanced_accuracy")
SEEDS = 400


def delivery(seed: int = 1, n: int = 20_000):
    """A delivery whose labels follow a known P(label | predicted class, score bin): the true conditional.

    Scores of the common predicted classes sit high (beta(4, 1)), the rarest's low (beta(1.5, 2)); the
    chance of being right rises with the score bin from 0.3 to 0.98, and the wrong labels spread over
    the other classes by a Dirichlet draw per predicted class.
    """
    rng = np.random.default_rng(seed)
    pred = rng.choice(K, size=n, p=SHARES)
    u = np.where(pred == K - 1, rng.beta(1.5, 2.0, n), rng.beta(4.0, 1.0, n))
    b = np.minimum((u * B).astype(np.int64), B - 1)
    right = 0.3 + 0.68 * ((np.arange(B) + 0.5) / B) ** 1.5
    rest = rng.dirichlet(np.ones(K - 1), size=K)
    cond = np.empty((K, B, K))
    for k in range(K):
        cond[k, :, k] = right
        cond[k][:, [j for j in range(K) if j != k]] = (1 - right)[:, None] * rest[k]
    y = np.minimum((rng.random(n)[:, None] > cond[pred, b].cumsum(axis=1)).sum(axis=1), K - 1)
    return pred, b, y, cond


def overconfident(cond: np.ndarray) -> np.ndarray:
    """A miscalibrated map: 20 points too sure of the predicted class, the rest scaled down."""
    out = cond.copy()
    for k in range(K):
        right = np.minimum(cond[k, :, k] + 0.2, 0.995)
        others = [j for j in range(K) if j != k]
        out[k][:, others] *= ((1 - right) / (1 - cond[k, :, k]))[:, None]
        out[k, :, k] = right
    return out


def confusion(y, pred, w=None) -> np.ndarray:
    m = np.zeros((K, K))
    np.add.at(m, (y, pred), 1.0 if w is None else w)
    return m


def stratified(pred: np.ndarray, sizes, n_samples: int, seed: int):
    """``n_samples`` stratified simple random samples without replacement (sizes[k] rows of predicted class
    k), drawn in one pass: (mask of the sampled rows per sample, design weight N_h / n_h per row)."""
    rng = np.random.default_rng(seed)
    masks = np.zeros((n_samples, pred.size), bool)
    d = np.zeros(pred.size)
    for k, n_h in enumerate(sizes):
        idx = np.flatnonzero(pred == k)
        pick = np.argpartition(rng.random((n_samples, idx.size)), n_h - 1, axis=1)[:, :n_h]
        masks[np.arange(n_samples)[:, None], idx[pick]] = True
        d[idx] = idx.size / n_h
    return masks, d


def stats(pred, b, y, mask, d=None, w=None):
    return sample_update(pred, pred, b, np.where(mask, y, -1), d, w, strata=STRATA, n_classes=K, n_bins=B)


@pytest.fixture(scope="module")
def simulation():
    """Per sample and metric: design-based, model-assisted (true and overconfident map) and unweighted
    labelled-rows values with intervals, and the delivery's realised metrics."""
    pred, b, y, cond = delivery()
    sizes = [max(2, round(r * (pred == k).sum())) for k, r in enumerate(RATES)]
    masks, d = stratified(pred, sizes, SEEDS, 2)
    bad = overconfident(cond)
    out = {name: np.empty((SEEDS, len(METRICS), 3)) for name in ("design", "assisted", "miscalibrated", "plain")}
    for s in range(SEEDS):
        st = stats(pred, b, y, masks[s], d)
        plain = multiclass_confusion_metrics(confusion(y[masks[s]], pred[masks[s]]))[0]
        for name, res in (("design", design_metrics(st, METRICS)),
                          ("assisted", model_assisted_metrics(st, cond, METRICS)),
                          ("miscalibrated", model_assisted_metrics(st, bad, METRICS))):
            out[name][s] = [(v, lo, hi) for v, (lo, hi) in res.values()]
        out["plain"][s] = [(plain[m], np.nan, np.nan) for m in METRICS]
    truth = multiclass_confusion_metrics(confusion(y, pred))[0]
    model_only = multiclass_confusion_metrics(np.einsum("kb,kbj->jk", _counts(pred, b), bad))[0]
    return out, np.array([truth[m] for m in METRICS]), np.array([model_only[m] for m in METRICS])


def _counts(pred, b) -> np.ndarray:
    return np.bincount(pred * B + b, minlength=K * B).reshape(K, B).astype(np.float64)


def summary(values: np.ndarray, truth: np.ndarray) -> dict:
    """Mean bias, coverage and mean width per metric over the samples."""
    v, lo, hi = values[..., 0], values[..., 1], values[..., 2]
    return {"bias": v.mean(axis=0) - truth, "coverage": ((lo <= truth) & (truth <= hi)).mean(axis=0),
            "width": (hi - lo).mean(axis=0)}


# ---------------------------------------------------------------------------------------------- oracles

@pytest.mark.parametrize("metric", ["accuracy", "balanced_accuracy", "f1_macro"])
def test_a_simple_random_sample_without_design_weights_gives_the_plain_metric_of_its_rows(metric):
    pred, b, y, _ = delivery(4, 3000)
    mask = np.random.default_rng(0).random(pred.size) < 0.1
    s = sample_update(np.zeros(pred.size, np.int64), pred, b, np.where(mask, y, -1), strata=("all",), n_classes=K,
                      n_bins=B)
    oracle = {"accuracy": accuracy_score, "balanced_accuracy": balanced_accuracy_score,
              "f1_macro": lambda t, p: f1_score(t, p, average="macro")}[metric]
    assert design_metric(s, metric)[0] == pytest.approx(oracle(y[mask], pred[mask]), abs=1e-12)


def test_with_expenditure_weights_it_is_the_weighted_metric_of_its_rows():
    pred, b, y, _ = delivery(5, 2000)
    rng = np.random.default_rng(1)
    mask, w = rng.random(pred.size) < 0.2, rng.gamma(2.0, 3.0, pred.size)
    s = sample_update(np.zeros(pred.size, np.int64), pred, b, np.where(mask, y, -1), None, w, strata=("all",),
                      n_classes=K, n_bins=B)
    assert design_metric(s, "balanced_accuracy")[0] == pytest.approx(
        balanced_accuracy_score(y[mask], pred[mask], sample_weight=w[mask]), abs=1e-12)


def test_binary_metrics_come_from_the_binary_report():
    rng = np.random.default_rng(2)
    pred = rng.integers(0, 2, 500)
    y = np.where(rng.random(500) < 0.8, pred, 1 - pred)
    s = sample_update(np.zeros(500, np.int64), pred, np.zeros(500, np.int64), y, strata=("all",), n_classes=2, n_bins=1)
    assert design_metric(s, "f1")[0] == pytest.approx(f1_score(y, pred), abs=1e-12)
    assert design_metric(s, "f1_macro")[0] == pytest.approx(f1_score(y, pred, average="macro"), abs=1e-12)


def test_the_interval_of_accuracy_in_a_simple_random_sample_is_the_textbook_one():
    rng = np.random.default_rng(3)
    pred = rng.integers(0, 3, 400)
    y = np.where(rng.random(400) < 0.7, pred, (pred + 1) % 3)
    s = sample_update(np.zeros(400, np.int64), pred, np.zeros(400, np.int64), y, strata=("all",), n_classes=3,
                      n_bins=1)
    p, (lo, hi) = design_metric(s, "accuracy")
    half = 1.959963984540054 * math.sqrt(p * (1 - p) / 399)  # s^2 / n with the n - 1 divisor
    assert (lo, hi) == pytest.approx((p - half, p + half), abs=1e-9)


def test_the_linearised_variance_agrees_with_a_stratified_jackknife():
    """Delete-one jackknife of the stratified sample (Wolter 2007, ch. 4), computed from the rows."""
    pred, b, y, _ = delivery(6)
    sizes = [max(2, round(r * (pred == k).sum())) for k, r in enumerate(RATES)]
    masks, d = stratified(pred, sizes, 1, 7)
    rows = np.flatnonzero(masks[0])
    big_n = np.bincount(pred, minlength=K).astype(float)
    n_h = np.bincount(pred[rows], minlength=K).astype(float)
    per = np.stack([confusion(y[rows[pred[rows] == k]], pred[rows[pred[rows] == k]]) for k in range(K)])
    full = np.einsum("h,hjk->jk", big_n / n_h, per)
    h = pred[rows]
    one = np.zeros((rows.size, K, K))
    one[np.arange(rows.size), y[rows], pred[rows]] = 1.0
    reps = full - (big_n / n_h)[h, None, None] * per[h] + (big_n / (n_h - 1))[h, None, None] * (per[h] - one)
    theta = multiclass_confusion_metrics(reps)[0]["balanced_accuracy"]
    mean_h = np.bincount(h, weights=theta, minlength=K) / n_h
    v_jk = float(np.sum(((n_h - 1) / n_h)[h] * (theta - mean_h[h]) ** 2))
    value, (lo, hi) = design_metric(stats(pred, b, y, masks[0], d), "balanced_accuracy")
    assert value == pytest.approx(float(multiclass_confusion_metrics(full)[0]["balanced_accuracy"]), abs=1e-12)
    assert (hi - lo) / 2 == pytest.approx(1.959963984540054 * math.sqrt(v_jk), rel=0.05)


def test_a_census_gives_the_delivery_s_metric_whatever_the_model():
    pred, b, y, cond = delivery(8, 3000)
    s = stats(pred, b, y, np.ones(pred.size, bool))
    truth = multiclass_confusion_metrics(confusion(y, pred))[0]
    for metric in ("accuracy", "balanced_accuracy", "f1_macro", "mcc"):
        assert design_metric(s, metric)[0] == pytest.approx(truth[metric], abs=1e-12)
        assert model_assisted_metric(s, overconfident(cond), metric)[0] == pytest.approx(truth[metric], abs=1e-12)


def test_design_weights_matter_only_up_to_a_constant_and_an_integer_weight_is_repeated_rows():
    pred, b, y, _ = delivery(9, 3000)
    sizes = [max(2, round(r * (pred == k).sum())) for k, r in enumerate(RATES)]
    masks, d = stratified(pred, sizes, 1, 1)
    a = design_metrics(stats(pred, b, y, masks[0], d), METRICS)
    scaled = design_metrics(stats(pred, b, y, masks[0], d * 7.3), METRICS)
    for m in METRICS:
        assert scaled[m][0] == pytest.approx(a[m][0], rel=1e-12)
        assert scaled[m][1] == pytest.approx(a[m][1], rel=1e-9)
    # within a stratum only the weights' ratios count: no design weights = d = N_h / n_h for a stratified sample
    unweighted = design_metrics(stats(pred, b, y, masks[0]), METRICS)
    for m in METRICS:
        assert unweighted[m][0] == pytest.approx(a[m][0], rel=1e-12)
        assert unweighted[m][1] == pytest.approx(a[m][1], rel=1e-9)
    # a stratified simple random sample (d = N_h / n_h): the Horvitz-Thompson totals, sum of d per cell
    assert design_confusion(stats(pred, b, y, masks[0], d)) == pytest.approx(
        confusion(y[masks[0]], pred[masks[0]], d[masks[0]]), rel=1e-12)
    # one labelled row of design weight 3 beside two unlabelled rows = the row labelled three times
    one = sample_update([0, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0], [1, -1, -1, 0], [3.0, np.nan, np.nan, 1.0],
                        strata=("all",), n_classes=2, n_bins=1)
    three = sample_update([0, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0], [1, 1, 1, 0], strata=("all",), n_classes=2,
                          n_bins=1)
    assert design_confusion(one).tolist() == design_confusion(three).tolist() == [[1.0, 0.0], [0.0, 3.0]]


# ------------------------------------------------------------------------------ coverage over samples

def test_stratified_samples_with_unequal_rates_cover_the_delivery_s_value(simulation):
    out, truth, _ = simulation
    design = summary(out["design"], truth)
    assert (design["coverage"] >= 0.93).all(), design
    assert (np.abs(design["bias"]) <= 0.01).all(), design


def test_the_unweighted_labelled_rows_are_biased_on_the_same_samples(simulation):
    out, truth, _ = simulation
    plain, design = summary(out["plain"], truth), summary(out["design"], truth)
    # the over-sampled rare class (labelled at 25 %, right half as often) drags the plain estimate
    assert np.abs(plain["bias"]).max() > 0.03, plain
    assert (np.abs(plain["bias"]) > 4 * np.abs(design["bias"])).all(), (plain, design)


def test_the_model_assisted_interval_is_narrower_on_a_calibrated_model_and_still_covers(simulation):
    out, truth, _ = simulation
    assisted, design = summary(out["assisted"], truth), summary(out["design"], truth)
    assert (assisted["coverage"] >= 0.93).all(), assisted
    assert (np.abs(assisted["bias"]) <= 0.01).all(), assisted
    assert (assisted["width"] / design["width"] < 0.95).all(), (assisted, design)


def test_the_model_assisted_estimate_of_a_miscalibrated_model_stays_unbiased(simulation):
    out, truth, model_only = simulation
    bad = summary(out["miscalibrated"], truth)
    assert (np.abs(model_only - truth) > 0.05).all(), model_only  # the map alone (label lag) is far off
    assert (np.abs(bad["bias"]) <= 0.01).all(), bad
    assert (bad["coverage"] >= 0.93).all(), bad


# ----------------------------------------------------------------------------------- edge cases

def test_a_stratum_without_labelled_rows_warns_and_one_with_a_single_row_borrows_the_pooled_variance():
    pred, b, y, cond = delivery(10, 4000)
    sizes = [40, 30, 20, 1, 2]
    masks, d = stratified(pred, sizes, 1, 3)
    value, (lo, hi) = design_metric(stats(pred, b, y, masks[0], d), "accuracy")
    assert math.isfinite(lo) and lo < value < hi
    none = masks[0] & (pred != 3)
    with pytest.warns(SampleWarning, match=r"1 stratum\(s\) with rows but no labelled row .* e\.g\. 'pred 3'"):
        design_metric(stats(pred, b, y, none, d), "accuracy")
    with pytest.warns(SampleWarning, match="calibrated scores alone"):
        _, (lo, hi) = model_assisted_metric(stats(pred, b, y, none, d), cond, "accuracy")
    assert math.isfinite(hi - lo)


def test_the_pooled_variance_of_a_stratum_with_one_labelled_row_by_hand():
    # stratum a: 4 rows, all labelled, 2 right; b: 2 rows, 1 labelled and right. N = 6, 4 right: 2/3.
    # g = 1/18 for a right cell, -1/9 for a wrong one; a's residuals +-1/12: V_a = 4/3 * 4/144 = 1/27,
    # its variance per row 1/144, pooled 4 * (1/144) / 3 = 1/108; V_b = W_b^2 * 1/108 = 1/27.
    s = sample_update([0, 0, 0, 0, 1, 1], [0, 1, 0, 1, 0, 0], [0] * 6, [0, 1, 1, 0, 0, -1], strata=("a", "b"),
                      n_classes=2, n_bins=1)
    value, (lo, hi) = design_metric(s, "accuracy")
    assert value == pytest.approx(2 / 3, abs=1e-12)
    assert (lo, hi) == pytest.approx((2 / 3 - 1.959963984540054 * math.sqrt(2 / 27), 1.0), abs=1e-9)


def test_without_labelled_rows_the_metric_is_undefined_with_a_warning():
    pred, b, y, _ = delivery(11, 500)
    s = stats(pred, b, y, np.zeros(pred.size, bool))
    with pytest.warns(UndefinedMetricWarning), warnings.catch_warnings():
        warnings.simplefilter("ignore", SampleWarning)
        value, interval = design_metric(s, "accuracy")
    assert math.isnan(value) and all(math.isnan(x) for x in interval)


def test_bad_metric_and_conditional_are_errors():
    pred, b, y, cond = delivery(12, 500)
    s = stats(pred, b, y, np.ones(pred.size, bool))
    with pytest.raises(InputError, match="'auroc' is not a count-based metric of 5 classes"):
        design_metric(s, "auroc")
    with pytest.raises(InputError, match=r"expected P\(label \| predicted class, score bin\) of shape \(5, 10, 5\)"):
        model_assisted_metric(s, cond[:, :5], "accuracy")
    bad = cond.copy()
    bad[2, 3, 1] = np.nan
    with pytest.raises(InputError, match=r"1 probability\(ies\) missing or outside \[0, 1\], e\.g\. \[pred 2, bin 3"):
        model_assisted_metric(s, bad, "accuracy")


# ---------------------------------------------------------------------------------------- next sample

def test_neyman_allocation_of_a_hand_computed_example():
    # A_h = N_h S_h = 800, 1200, 1000, V = 45,000: n = 3000^2 / V = 200 -> 53.3, 80, 66.7; the third
    # stratum has 50 rows, so it is taken whole: V left = 45,000 - 1000^2 / 50 = 25,000, n = 2000^2 / 25,000
    # = 160 -> 64 and 96 (Cochran 1977, 5.9).
    alloc = _neyman(np.array([800.0, 1200.0, 1000.0]), np.array([400.0, 300.0, 50.0]), 45_000.0)
    assert alloc.tolist() == pytest.approx([64.0, 96.0, 50.0])
    assert _neyman(np.array([800.0, 1200.0]), np.array([4000.0, 3000.0]), 20_000.0).tolist() == pytest.approx(
        [80.0, 120.0])


def test_one_stratum_needs_what_sampling_sample_size_says():
    rng = np.random.default_rng(4)
    pred = rng.integers(0, 3, 5000)
    y = np.where(rng.random(5000) < 0.8, pred, (pred + 1) % 3)
    y[rng.random(5000) > 0.1] = -1
    s = sample_update(np.zeros(5000, np.int64), pred, np.zeros(5000, np.int64), y, strata=("all",), n_classes=3,
                      n_bins=1)
    p, n = design_metric(s, "accuracy")[0], int((y >= 0).sum())
    _, n0 = sample_size(0.02, expected=p)
    plan = next_sample(s, "accuracy", 0.02)
    assert plan.method == "neyman" and plan.n == math.ceil(n0 * n / (n - 1))  # n/(n-1): the variance's divisor
    empty = sample_update(np.zeros(5000, np.int64), pred, np.zeros(5000, np.int64), np.full(5000, -1),
                          strata=("all",), n_classes=3, n_bins=1)
    assert next_sample(empty, "accuracy", 0.02).n == sample_size(0.02, population_size=5000)[0]


def test_the_neyman_allocation_reaches_its_margin_and_beats_proportional():
    pred, b, y, cond = delivery()
    sizes = [max(2, round(r * (pred == k).sum())) for k, r in enumerate(RATES)]
    masks, d = stratified(pred, sizes, 1, 2)
    plan = next_sample(stats(pred, b, y, masks[0], d), "balanced_accuracy", 0.03)
    # the model-assisted estimate needs fewer rows for the same margin: its residuals spread less
    assisted = next_sample(stats(pred, b, y, masks[0], d), "balanced_accuracy", 0.03, conditional=cond)
    assert assisted.n < plan.n, (assisted.n, plan.n)  # 728 against 769
    alloc = plan.table["label"].to_numpy()
    assert plan.n == alloc.sum() and (alloc >= 2).all()
    big_n = np.bincount(pred, minlength=K)
    proportional = np.maximum(2, np.round(plan.n * big_n / big_n.sum())).astype(int)
    truth = multiclass_confusion_metrics(confusion(y, pred))[0]["balanced_accuracy"]
    half = {}
    for name, n_h in (("neyman", alloc), ("proportional", proportional)):
        draws, dd = stratified(pred, n_h, 120, 5)
        res = np.array([design_metric(stats(pred, b, y, draws[s], dd), "balanced_accuracy") for s in range(120)],
                       dtype=object)
        lo, hi = np.array([r[0] for r in res[:, 1]]), np.array([r[1] for r in res[:, 1]])
        half[name] = float(np.mean(hi - lo) / 2)
        if name == "neyman":
            assert np.mean((lo <= truth) & (truth <= hi)) >= 0.9
    assert 0.027 <= half["neyman"] <= 0.031, half
    assert half["neyman"] < half["proportional"], half


# ------------------------------------------------------------------ with the reference's calibration map

@pytest.fixture(scope="module")
def mapped():
    """The eight-class generator: a 20,000-row reference, its calibration map in the sample's layout, and a
    5,000-row period with its rows' own-score bins."""
    from monitoring_data import K as K8, LABELS, period_arrays, period_stats

    from metrics_core.monitoring import Bins, update
    from metrics_core.monitoring.calibration_map import fit_calibration_map
    from metrics_core.monitoring.sample import conditional_from_map, score_bin

    cal_map = fit_calibration_map(period_stats(20_000, 0), n_boot=0)
    y, pred, s, _ = period_arrays(5000, 1)
    b = score_bin(s[np.arange(pred.size), pred], cal_map.cond.shape[-1])
    unlabelled = update("multiclass", LABELS, Bins(), pred, scores=s)
    return K8, cal_map, conditional_from_map(cal_map, "multiclass"), unlabelled, y, pred, b


def test_without_labels_the_model_term_is_the_label_lag_estimate_on_the_diagonal(mapped):
    from metrics_core.monitoring.estimate import expected_confusion
    from metrics_core.monitoring.survey import _model_assisted_confusion

    k, cal_map, cond, unlabelled, y, pred, b = mapped
    assert cond.sum(axis=-1) == pytest.approx(np.ones(cond.shape[:2]))
    s = sample_update(pred, pred, b, np.full(pred.size, -1), strata=[str(i) for i in range(k)], n_classes=k,
                      n_bins=cond.shape[1])
    expected, _ = expected_confusion("multiclass", cal_map.cond, unlabelled.score_by_pred)
    ma = _model_assisted_confusion(s, cond)
    assert np.diag(ma) == pytest.approx(np.diag(expected), rel=1e-9)
    assert ma.sum(axis=0) == pytest.approx(np.bincount(pred, minlength=k).astype(float), rel=1e-12)


def test_with_the_reference_map_the_model_assisted_interval_is_narrower_and_covers(mapped):
    k, _, cond, _, y, pred, b = mapped
    rates = np.where(np.bincount(pred, minlength=k) < 0.05 * pred.size, 0.25, 0.05)
    sizes = [max(2, round(r * (pred == i).sum())) for i, r in enumerate(rates)]
    masks, d = stratified(pred, sizes, 200, 9)
    strata = [str(i) for i in range(k)]
    res = np.empty((2, 200, 3))
    for i in range(200):
        st = sample_update(pred, pred, b, np.where(masks[i], y, -1), d, strata=strata, n_classes=k,
                           n_bins=cond.shape[1])
        for j, (v, (lo, hi)) in enumerate((design_metric(st, "balanced_accuracy"),
                                           model_assisted_metric(st, cond, "balanced_accuracy"))):
            res[j, i] = v, lo, hi
    m = np.zeros((k, k))
    np.add.at(m, (y, pred), 1.0)
    truth = np.array([multiclass_confusion_metrics(m)[0]["balanced_accuracy"]])
    design, assisted = summary(res[0][:, None], truth), summary(res[1][:, None], truth)
    assert assisted["coverage"][0] >= 0.93 and abs(assisted["bias"][0]) <= 0.01, assisted
    assert assisted["width"][0] / design["width"][0] < 0.95, (assisted, design)


def test_a_binary_map_gives_the_label_lag_estimate_without_labels_and_the_census_with_them():
    from metrics_core.monitoring import Bins, update
    from metrics_core.monitoring.calibration_map import fit_calibration_map
    from metrics_core.monitoring.estimate import expected_confusion
    from metrics_core.monitoring.sample import conditional_from_map, score_bin
    from metrics_core.monitoring.survey import _model_assisted_confusion

    def rows(n, seed):
        rng = np.random.default_rng(seed)
        y = (rng.random(n) < 0.3).astype(np.int64)
        s = np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1)
        return y, (s >= 0.5).astype(np.int64), s

    labels = np.array([0, 1])
    y, pred, s = rows(20_000, 0)
    cal_map = fit_calibration_map(update("binary", labels, Bins(), pred, label_idx=y, scores=s[:, None]), n_boot=0)
    cond = conditional_from_map(cal_map, "binary")
    y, pred, s = rows(3000, 1)
    b = score_bin(s, cond.shape[1])
    none = sample_update(pred, pred, b, np.full(3000, -1), strata=("0", "1"), n_classes=2, n_bins=cond.shape[1])
    expected, _ = expected_confusion("binary", cal_map.cond, update("binary", labels, Bins(), pred,
                                                                   scores=s[:, None]).score_by_pred)
    assert _model_assisted_confusion(none, cond) == pytest.approx(expected, rel=1e-9)
    full = sample_update(pred, pred, b, y, strata=("0", "1"), n_classes=2, n_bins=cond.shape[1])
    assert model_assisted_metric(full, cond, "f1")[0] == pytest.approx(f1_score(y, pred), abs=1e-12)
