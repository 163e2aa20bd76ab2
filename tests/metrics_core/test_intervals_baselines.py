"""r.intervals and r.baselines (ISO/IEC TS 4213 clause 7: Wilson for proportions, a seeded percentile
bootstrap for the rest; baselines of ISO 5.3.13 / ONS Annex D).

Oracles: statsmodels' proportion_confint(method="wilson") with each metric's own denominator; a
row-level bootstrap with scikit-learn for the bootstrap of the statistics; scikit-learn metrics of a
constant prediction for the majority-class baseline; the closed forms of the prevalence-matched random
classifier (accuracy = sum p_k^2, kappa = mcc = 0, recall_k = precision_k = p_k) and, slow-marked, a
Monte Carlo simulation of random classifiers.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn import metrics as skm
from statsmodels.stats.proportion import proportion_confint
from flow_data import multiclass_scores
from test_common import Case, assert_close, keys_for

import metrics_core as mc
from metrics_core.intervals import class_auroc_replicates, replicate_interval


def _binary_data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.clip(np.round(rng.normal(0.35 + 0.3 * y, 0.2), 3), 0.01, 0.99)  # no confident 0/1: light tails
    return y, s


def _multiclass_data(n: int, k: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    p = np.arange(1, k + 1) / (k * (k + 1) / 2)  # unequal prevalences 0.1, 0.2, 0.3, 0.4
    y = rng.choice(k, size=n, p=p)
    raw = rng.uniform(size=(n, k)) + 1.5 * np.eye(k)[y] * rng.uniform(size=(n, 1))
    return y, raw / raw.sum(axis=1, keepdims=True)


def _wilson(count, nobs, level):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return proportion_confint(count, nobs, alpha=1 - level, method="wilson")


# --------------------------------------------------------------------------------------------------
# Wilson intervals
# --------------------------------------------------------------------------------------------------
BINARY_PROPORTIONS = {  # key -> (successes, trials) from the confusion counts: each metric's own denominator
    "accuracy": lambda tp, fp, fn, tn: (tp + tn, tp + fp + fn + tn),
    "error_rate": lambda tp, fp, fn, tn: (fp + fn, tp + fp + fn + tn),
    "prevalence": lambda tp, fp, fn, tn: (tp + fn, tp + fp + fn + tn),
    "precision": lambda tp, fp, fn, tn: (tp, tp + fp),
    "recall": lambda tp, fp, fn, tn: (tp, tp + fn),
    "specificity": lambda tp, fp, fn, tn: (tn, tn + fp),
    "fpr": lambda tp, fp, fn, tn: (fp, fp + tn),
    "fnr": lambda tp, fp, fn, tn: (fn, fn + tp),
    "npv": lambda tp, fp, fn, tn: (tn, tn + fn),
}


@pytest.mark.parametrize("level", [0.95, 0.8])
@pytest.mark.parametrize("data", ["typical", "small", "no_predicted_positive"])
@pytest.mark.parametrize("key", sorted(BINARY_PROPORTIONS))
def test_binary_wilson_equals_statsmodels(key, data, level):
    if data == "typical":
        y, s = _binary_data(300)
        r = mc.binary_report(y, y_score=s, level=level)
    elif data == "small":
        r = mc.binary_report([1, 0, 1, 1, 0], y_pred=[1, 0, 0, 1, 1], level=level)
    else:  # precision and npv have denominators 0 and 5: (nan, nan) where there is no denominator
        r = mc.binary_report([1, 0, 1, 1, 0], y_pred=[0, 0, 0, 0, 0], level=level)
    m = r.metrics
    k, n = BINARY_PROPORTIONS[key](m["tp"], m["fp"], m["fn"], m["tn"])
    lo, hi = _wilson(k, n, level) if n else (math.nan, math.nan)
    got = r.intervals[key]
    assert_close(got[0], lo, f"{key} low")
    assert_close(got[1], hi, f"{key} high")


def test_weighted_wilson_uses_the_effective_count():
    """Weighted: Wilson on weight * n_rows / total_weight (the documented approximation)."""
    y, s = _binary_data(200, seed=3)
    w = np.random.default_rng(3).uniform(0.5, 3.0, y.size)
    r = mc.binary_report(y, y_score=s, sample_weight=w)
    m = r.metrics
    scale = y.size / w.sum()
    for key, counts in BINARY_PROPORTIONS.items():
        k, n = counts(m["tp"], m["fp"], m["fn"], m["tn"])
        lo, hi = _wilson(k * scale, n * scale, 0.95)
        assert_close(r.intervals[key][0], lo, key) and assert_close(r.intervals[key][1], hi, key)


def test_multiclass_and_multilabel_wilson_equal_statsmodels():
    y, s = _multiclass_data(400)
    r = mc.multiclass_report(y, y_score=s)
    n, correct = r.metrics["n"], r.metrics["accuracy"] * r.metrics["n"]
    for key, (k, trials) in {"accuracy": (correct, n), "precision_micro": (correct, n), "recall_micro": (correct, n),
                             "error_rate": (n - correct, n)}.items():
        lo, hi = _wilson(round(k), trials, 0.95)
        assert_close(r.intervals[key][0], lo, key) and assert_close(r.intervals[key][1], hi, key)

    rng = np.random.default_rng(1)
    t = (rng.uniform(size=(150, 3)) < 0.4).astype(int)
    p = np.where(rng.uniform(size=t.shape) < 0.8, t, 1 - t)
    r = mc.multilabel_report(t, p)
    tp, fp, fn = (t & p).sum(), ((1 - t) & p).sum(), (t & (1 - p)).sum()
    expected = {"hamming_loss": ((t != p).sum(), t.size), "exact_match_ratio": ((t == p).all(1).sum(), len(t)),
                "precision_micro": (tp, tp + fp), "recall_micro": (tp, tp + fn)}
    for key, (k, trials) in expected.items():
        lo, hi = _wilson(k, trials, 0.95)
        assert_close(r.intervals[key][0], lo, key) and assert_close(r.intervals[key][1], hi, key)


# --------------------------------------------------------------------------------------------------
# bootstrap intervals
# --------------------------------------------------------------------------------------------------
BOOTSTRAP_KEYS = {
    "binary": ["auroc", "average_precision", "auprc_trapezoid", "f1", "fbeta", "mcc", "cohen_kappa",
               "balanced_accuracy", "brier", "log_loss"],
    "multiclass": ["auroc_ovr_macro", "auroc_ovr_weighted", "f1_macro", "f1_weighted", "precision_macro",
                   "recall_macro", "balanced_accuracy", "cohen_kappa", "mcc", "f1_of_macro", "log_loss"],
}


def _report(task: str, n: int, data_seed: int = 0, **kw):
    if task == "binary":
        y, s = _binary_data(n, data_seed)
        return mc.binary_report(y, y_score=s, beta=2.0, **kw)
    y, s = _multiclass_data(n, seed=data_seed)
    return mc.multiclass_report(y, y_score=s, **kw)


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_bootstrap_is_seeded(task):
    a = _report(task, 300, seed=7).intervals
    assert _report(task, 300, seed=7).intervals == a  # same data, same seed: identical intervals
    other = _report(task, 300, seed=12345).intervals
    assert [k for k in BOOTSTRAP_KEYS[task] if other[k] != a[k]], "another seed should move the intervals"
    wilson_keys = [k for k in a if k not in BOOTSTRAP_KEYS[task] and k in ("accuracy", "precision", "recall")]
    assert all(other[k] == a[k] for k in wilson_keys)  # Wilson intervals do not depend on the seed


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_bootstrap_interval_contains_point_estimate(task):
    r = _report(task, 500, data_seed=1)
    bad = [(k, r.metrics[k], r.intervals[k]) for k in BOOTSTRAP_KEYS[task]
           if not r.intervals[k][0] <= r.metrics[k] <= r.intervals[k][1]]
    assert bad == []
    # and every metric with an interval has low <= high
    assert all(lo <= hi for lo, hi in r.intervals.values() if not (math.isnan(lo) or math.isnan(hi)))


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_bootstrap_interval_shrinks_with_n(task):
    small, large = _report(task, 200, data_seed=2), _report(task, 5000, data_seed=2)
    bad = []
    for k in BOOTSTRAP_KEYS[task]:
        ws, wl = (r.intervals[k][1] - r.intervals[k][0] for r in (small, large))
        if not wl < ws / 2.5:  # sqrt(5000 / 200) = 5 expected; 2.5 leaves room for sampling noise
            bad.append((k, ws, wl))
    assert bad == []


def test_interval_of_a_metric_with_infinite_replicates():
    """kl_divergence is inf in a replicate that never predicts a labelled class: on 5 rows many
    replicates are inf, so the 97.5% percentile is inf (not nan), with no stray numpy warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        iv = mc.binary_report([1, 0, 1, 1, 0], y_pred=[1, 0, 0, 1, 1]).intervals
    assert iv["kl_divergence"][0] == 0.0 and iv["kl_divergence"][1] == math.inf


def test_replicate_interval_is_students_t_on_the_finite_replicates():
    """point +/- t(B - 1) s_B (scipy.stats.t.interval as oracle), per column, non-finite replicates left
    out, clipped to the range; and it covers at its level when the replicates are few (B = 10): the
    normal quantile with the same s_B covered 0.915 of these 4,000 simulated estimates (0.918 in theory)."""
    from scipy import stats

    rng = np.random.default_rng(0)
    reps = rng.normal(0.8, 0.02, (100, 3))
    reps[:7, 1] = np.nan
    reps[0, 2] = np.inf
    point = np.array([0.81, 0.79, 0.80])
    lo, hi = replicate_interval(point, reps, 0.9)
    for j, b in enumerate((100, 93, 99)):
        ok = reps[np.isfinite(reps[:, j]), j]
        want = stats.t.interval(0.9, b - 1, loc=point[j], scale=ok.std(ddof=1))
        np.testing.assert_allclose((lo[j], hi[j]), want, rtol=1e-12)
    assert replicate_interval(0.99, reps[:, 0] + 0.2, 0.95, (0.0, 1.0))[1] == 1.0
    assert all(math.isnan(x) for x in replicate_interval(np.nan, reps[:, 0], 0.95))
    truth = rng.normal(0.0, 1.0, 4000)  # the errors of 4,000 estimates; each with 10 replicates of its spread
    lo, hi = replicate_interval(np.zeros(4000), rng.normal(0.0, 1.0, (10, 4000)), 0.95)
    assert abs(np.mean((lo <= truth) & (truth <= hi)) - 0.95) < 0.01


def test_binary_bootstrap_of_statistics_matches_row_bootstrap():
    """Resampling the statistics is resampling the rows: the AUROC / F1 / MCC percentile intervals agree
    with a row bootstrap through scikit-learn to within Monte Carlo noise."""
    y, s = _binary_data(300, seed=4)
    r = mc.binary_report(y, y_score=s, n_boot=2000, seed=4)
    rng = np.random.default_rng(99)
    reps = {"auroc": [], "f1": [], "mcc": []}
    pred = (s >= 0.5).astype(int)
    for _ in range(300):
        i = rng.integers(0, y.size, y.size)
        reps["auroc"].append(skm.roc_auc_score(y[i], s[i]))
        tp, fp = np.sum((y[i] == 1) & (pred[i] == 1)), np.sum((y[i] == 0) & (pred[i] == 1))
        fn, tn = np.sum((y[i] == 1) & (pred[i] == 0)), np.sum((y[i] == 0) & (pred[i] == 0))
        reps["f1"].append(2 * tp / (2 * tp + fp + fn))
        reps["mcc"].append((tp * tn - fp * fn) / math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)))
    for key, values in reps.items():
        lo, hi = np.quantile(values, [0.025, 0.975])
        assert abs(r.intervals[key][0] - lo) < 0.025 and abs(r.intervals[key][1] - hi) < 0.025, key


# --------------------------------------------------------------------------------------------------
# baselines
# --------------------------------------------------------------------------------------------------
def _majority_case(case: Case) -> Case:
    """The majority-class classifier as a Case: a constant prediction of the most frequent labelled class
    (first in label order on ties) and, with scores, the class prior as a constant score."""
    totals = np.array([case.weight[case.yt == lab].sum() for lab in case.labels])
    majority = case.labels[int(np.argmax(totals))]
    n = len(case.yt)
    prior = totals / totals.sum()
    score = None
    if case.y_score is not None:
        score = np.full(n, prior[1]) if case.task == "binary" else np.tile(prior, (n, 1))
    return Case(case.task, case.yt, y_pred=np.full(n, majority, dtype=np.asarray(case.labels).dtype),
                y_score=score, labels=case.labels, sample_weight=case.w, beta=case.beta,
                cost_matrix=case.cost_matrix)


MAJORITY_CASES = {
    "binary, scores and cost": lambda: Case("binary", _binary_data(60, 5)[0], y_score=_binary_data(60, 5)[1],
                                                      labels=(0, 1), beta=2.0, cost_matrix=np.array([[0, 1], [4, 0]])),
    "binary, strings, majority positive": lambda: Case("binary", np.array(["y"] * 7 + ["n"] * 3),
                                                       y_pred=np.array(["y", "n"] * 5), labels=("n", "y")),
    "binary, weighted": lambda: Case("binary", np.array([0, 0, 0, 1, 1]), y_score=np.array([.1, .5, .4, .9, .3]),
                                     labels=(0, 1), sample_weight=np.array([1.0, 1, 1, 2.5, 2.5])),
    "multiclass, scores": lambda: Case("multiclass", _multiclass_data(80)[0], y_score=_multiclass_data(80)[1],
                                       labels=(0, 1, 2, 3), beta=0.5, cost_matrix=np.ones((4, 4)) - np.eye(4)),
    "multiclass, tie for majority": lambda: Case("multiclass", np.array(["b", "a", "a", "b", "c"]),
                                                 y_pred=np.array(["a", "a", "c", "b", "c"]), labels=("a", "b", "c")),
}


@pytest.mark.parametrize("name", list(MAJORITY_CASES))
def test_majority_baseline_equals_sklearn_on_a_constant_prediction(name):
    case = MAJORITY_CASES[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        baseline = case.report().baselines["majority"]
    constant = _majority_case(case)
    bad = []
    for key in keys_for(constant):
        if key.name in baseline and not math.isclose(baseline[key.name], key.oracle(constant), rel_tol=1e-9,
                                                     abs_tol=1e-12) and not (
                math.isnan(baseline[key.name]) and math.isnan(key.oracle(constant))):
            bad.append((key.name, baseline[key.name], key.oracle(constant)))
    assert bad == []
    checked = {k.name for k in keys_for(constant)} & set(baseline)
    assert {"accuracy", "cohen_kappa", "mcc", "balanced_accuracy"} <= checked


@pytest.mark.parametrize("prevalence", [0.1, 0.37, 0.5, 0.9])
def test_random_baseline_binary_closed_forms(prevalence):
    n = 1000
    n_pos = int(round(prevalence * n))
    y = np.r_[np.ones(n_pos, int), np.zeros(n - n_pos, int)]
    s = np.random.default_rng(0).uniform(size=n)
    p = n_pos / n
    b = mc.binary_report(y, y_score=s).baselines["random"]
    expected = {"accuracy": p * p + (1 - p) ** 2, "error_rate": 2 * p * (1 - p), "prevalence": p,
                "precision": p, "recall": p, "specificity": 1 - p, "npv": 1 - p, "fpr": p, "fnr": 1 - p, "f1": p,
                "fbeta": p, "balanced_accuracy": 0.5, "cohen_kappa": 0.0, "mcc": 0.0, "kl_divergence": 0.0,
                "tp": n * p * p, "fp": n * (1 - p) * p, "auroc": 0.5, "average_precision": p,
                "brier": p * (1 - p), "log_loss": -(p * math.log(p) + (1 - p) * math.log(1 - p))}
    for key, value in expected.items():
        assert_close(b[key], value, key)


@pytest.mark.parametrize("counts", [[10, 20, 30, 40], [1, 1, 98], [25, 25, 25, 25, 0]])
def test_random_baseline_multiclass_closed_forms(counts):
    """accuracy = sum p_k^2, kappa = mcc = 0, precision_k = recall_k = p_k (so their macro means are
    1/K over the labelled classes and their support-weighted means sum p_k^2); a class in labels that
    is never labelled has p_k = 0 and undefined precision/recall, skipped."""
    k = len(counts)
    y = np.repeat(np.arange(k), counts)
    rng = np.random.default_rng(k)
    r = mc.multiclass_report(y, rng.integers(0, k, y.size), labels=list(range(k)))
    b = r.baselines["random"]
    p = np.array(counts) / sum(counts)
    present = p > 0
    acc = float((p * p).sum())
    expected = {"accuracy": acc, "error_rate": 1 - acc, "cohen_kappa": 0.0, "mcc": 0.0,
                "precision_macro": p[present].mean(), "recall_macro": p[present].mean(),
                "f1_macro": p[present].mean(), "balanced_accuracy": p[present].mean(),
                "precision_weighted": acc, "recall_weighted": acc, "f1_weighted": acc,
                "precision_micro": acc, "kl_divergence": 0.0, "csmf_accuracy": 1.0,
                "n_undefined_precision": float((~present).sum()), "n_undefined_recall": float((~present).sum())}
    for key, value in expected.items():
        assert_close(b[key], value, key)


@pytest.mark.slow
@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_random_baseline_matches_monte_carlo(task):
    """The analytic expectations equal the mean over simulated prevalence-matched random classifiers
    within 4 standard errors plus 2/n (the ratio metrics' O(1/n) bias: the closed forms are the
    large-sample limit, as documented)."""
    rng = np.random.default_rng(2024)
    n, reps = 2000, 300
    if task == "binary":
        labels = [0, 1]
        p = np.array([0.7, 0.3])
        keys = ["accuracy", "precision", "recall", "specificity", "npv", "f1", "balanced_accuracy",
                "cohen_kappa", "mcc", "auroc"]
    else:
        labels = [0, 1, 2, 3]
        p = np.array([0.1, 0.2, 0.3, 0.4])
        keys = ["accuracy", "cohen_kappa", "mcc", "precision_macro", "recall_macro", "f1_macro", "balanced_accuracy",
                "precision_weighted", "recall_weighted", "f1_weighted", "balanced_accuracy_micro"]
    y = rng.choice(len(labels), size=n, p=p)
    observed = np.bincount(y, minlength=len(labels)) / n
    sims = {k: [] for k in keys}
    for _ in range(reps):
        pred = rng.choice(len(labels), size=n, p=observed)  # prevalence-matched: the labelled prevalence
        if task == "binary":
            m = mc.binary_report(y, y_score=rng.uniform(size=n), y_pred=pred).metrics
        else:
            m = mc.multiclass_report(y, pred, labels=labels).metrics
        for k in keys:
            sims[k].append(m[k])
    if task == "binary":
        baseline = mc.binary_report(y, y_score=rng.uniform(size=n)).baselines["random"]
    else:
        baseline = mc.multiclass_report(y, y, labels=labels).baselines["random"]
    bad = []
    for k in keys:
        mean, se = np.mean(sims[k]), np.std(sims[k], ddof=1) / math.sqrt(reps)
        if abs(mean - baseline[k]) > 4 * se + 2 / n:
            bad.append((k, mean, baseline[k], se))
    assert bad == []


# weights' scale: the row count decides the intervals, not the sum of weights
@pytest.mark.parametrize("c", [0.001, 0.01, 1.0, 100.0])
def test_multiclass_auroc_interval_does_not_depend_on_weight_scale(c):
    """With weights all c the auroc_ovr_macro interval was (nan, nan) for c = 0.001 and (0, 1) for
    c = 0.01 (round(sum of weights) rows); the row count now decides, as without weights."""
    y, s = multiclass_scores()
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
    y, s = multiclass_scores(n=100)
    stats = mc.multiclass_stats(y, y_score=s, sample_weight=np.full(100, 0.001))
    reps = class_auroc_replicates(stats.scores, 50, np.random.default_rng(0), stats.n_rows)
    assert stats.n_rows == 100 and not np.isnan(reps).any()


def _multinomial_cell_by_cell(n, probs, n_boot, rng):
    """The conditional-binomial draws one cell at a time, the mass left updated after each cell."""
    groups, cells = probs.shape
    out = np.empty((n_boot, groups, cells))
    remaining = np.broadcast_to(np.asarray(n, dtype=np.int64), (n_boot, groups)).copy()
    mass_left = np.ones(groups)
    for j in range(cells - 1):
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.clip(np.where(mass_left > 0, probs[:, j] / mass_left, 0.0), 0.0, 1.0)
        q = np.round(q * 2.0 ** 40) / 2.0 ** 40
        out[:, :, j] = draw = rng.binomial(remaining, q)
        remaining -= draw
        mass_left = mass_left - probs[:, j]
    out[:, :, cells - 1] = remaining
    return out


def test_multinomial_draws_equal_a_cell_by_cell_loop_and_leave_the_stream_where_it_does():
    """The conditional probabilities are found at once and empty cells skipped (numpy's binomial draws
    nothing at p = 0): the replicates and the generator's next number are those of the plain loop."""
    from metrics_core.intervals import _multinomial

    gen = np.random.default_rng(3)
    for case in range(200):
        groups, cells = int(gen.integers(1, 4)), int(gen.integers(1, 25))
        counts = gen.integers(0, 40, (groups, cells)) * (gen.random((groups, cells)) < 0.5) * (0.37 if case % 3 else 1)
        total = counts.sum(axis=1, keepdims=True)
        probs = np.where(total > 0, counts / np.maximum(total, 1e-300), 0.0)
        n, boot = gen.integers(0, 300, groups), int(gen.integers(1, 40))
        ours, loop = np.random.default_rng(case), np.random.default_rng(case)
        assert np.array_equal(_multinomial(n, probs, boot, ours), _multinomial_cell_by_cell(n, probs, boot, loop))
        assert ours.random() == loop.random()


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_intervals_of_chosen_keys_equal_those_of_the_full_result(task):
    from metrics_core.intervals import report_intervals

    r = _report(task, 400, seed=5, n_boot=60)
    keys = ("balanced_accuracy", "f1_macro" if task == "multiclass" else "f1", "accuracy")
    assert report_intervals(r, keys) == {k: r.intervals[k] for k in r.intervals if k in keys}
    assert len(report_intervals(r, keys)) == 3
