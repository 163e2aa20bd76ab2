"""metrics_core.significance.compare: fold metrics, the clause-7 tests between models corrected together, against
scipy and statsmodels."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from flow_data import three_models
from oracles import multipletests
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

import metrics_core as mc
from metrics_core import significance as sig
from metrics_core.significance import FOLDS, fold_metrics, model_comparison

LABELS = ["bread", "milk", "wine"]
N = 500  # a multiple of FOLDS: equal folds
STATSMODELS = {"bh": "fdr_bh", "holm": "holm", "bonferroni": "bonferroni"}
OPTIONS = {"n_boot": 50}  # as a run spec with n_boot 50 and the default seed, alpha and correction


@pytest.fixture(scope="module")
def rows():
    """True labels and three models: 90 % right, 70 % right and a copy of the first."""
    return three_models(LABELS, N)


# ---------------------------------------------------------------- fold_metrics
def test_fold_metrics_split_the_rows_into_equal_disjoint_folds(rows):
    y, preds = rows
    folds = fold_metrics("multiclass", LABELS, y, preds, "accuracy")
    assert folds.columns == ["model", "fold", "accuracy"] and folds.height == len(preds) * FOLDS
    for name, pred in preds.items():
        part = folds.filter(pl.col("model") == name)
        assert part["fold"].to_list() == list(range(FOLDS))
        # equal folds: the mean of the fold accuracies is the accuracy of all rows
        assert part["accuracy"].mean() == pytest.approx(np.mean(pred == y), rel=1e-12)
    assert folds.equals(fold_metrics("multiclass", LABELS, y, preds, "accuracy"))
    assert not folds.equals(fold_metrics("multiclass", LABELS, y, preds, "accuracy", seed=1))


# ---------------------------------------------------------------- model_comparison
@pytest.mark.parametrize("correction", ["bh", "holm", "bonferroni"])
@pytest.mark.parametrize("models, cv", [(["m v1", "m v2"], None),
                                        (["m v1", "m v2", "m v1 copy"], {"m v1": [0.9, 0.88, 0.91],
                                                                         "m v2": [0.7, 0.74, 0.69]})],
                         ids=["two-models", "three-models-and-cv"])
def test_comparison_corrects_every_p_value_together(rows, correction, models, cv):
    y, all_preds = rows
    preds = {m: all_preds[m] for m in models}
    alpha = 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the copy: a paired t-test of zero differences is nan
        out = model_comparison("multiclass", LABELS, y, preds, "f1_macro", cv_scores=cv,
                               cv_n_train=300 if cv else None, cv_n_test=100 if cv else None,
                               correction=correction, alpha=alpha, **OPTIONS)
    tests = out["tests"]
    pairs = len(models) * (len(models) - 1) // 2
    assert tests.height == 3 * pairs + (1 if cv else 0) + (2 if len(models) >= 3 else 0)
    assert tests["test"].to_list()[:3] == ["McNemar", "paired bootstrap (f1_macro)",
                                           f"paired t-test over {FOLDS} test folds"]
    p, adjusted = tests["p_value"].to_numpy(), tests["p_adjusted"].to_numpy()
    ok = np.isfinite(p)
    expected = sig.correct(p[ok], correction, alpha)
    np.testing.assert_allclose(adjusted[ok], expected.p_adjusted, rtol=1e-12)
    assert tests["reject"].to_numpy()[ok].tolist() == expected.reject.tolist()
    reject, oracle, _, _ = multipletests(p[ok], alpha=alpha, method=STATSMODELS[correction])
    np.testing.assert_allclose(adjusted[ok], oracle, rtol=1e-12)
    assert np.isnan(adjusted[~ok]).all() and not tests["reject"].to_numpy()[~ok].any()
    assert ok.sum() == tests.height - (1 if len(models) >= 3 else 0)  # only the copy's fold t-test is undefined

    first = tests.row(0, named=True)
    direct = sig.mcnemar(y, preds["m v1"], preds["m v2"])
    assert (first["model_a"], first["model_b"], first["statistic"], first["p_value"]) == (
        "m v1", "m v2", direct.statistic, direct.p_value)
    if cv:
        row = tests.filter(pl.col("test").str.ends_with("(CV scores)")).row(0, named=True)
        res = sig.corrected_resampled_t_test(cv["m v1"], cv["m v2"], 300, 100)
        assert (row["test"], row["p_value"]) == ("corrected resampled t-test (CV scores)", res.p_value)
    if len(models) >= 3:
        assert tests["test"].to_list()[-2:] == ["ANOVA over folds", "Kruskal-Wallis over folds"]


def test_comparison_per_model_metrics_and_the_best(rows):
    y, preds = rows
    chosen = {m: preds[m] for m in ("m v2", "m v1")}
    out = model_comparison("multiclass", LABELS, y, chosen, "f1_macro", **OPTIONS)
    per_model = out["per_model"]
    assert per_model.columns == ["model", "f1_macro", "accuracy", "balanced_accuracy"]
    for row in per_model.iter_rows(named=True):
        report = mc.multiclass_report(y, preds[row["model"]], labels=LABELS)
        assert {k: row[k] for k in per_model.columns[1:]} == pytest.approx(
            {k: report.metrics[k] for k in per_model.columns[1:]})
    assert out["best"] == "m v1" and out["metric"] == "f1_macro"
    assert out["folds"].equals(fold_metrics("multiclass", LABELS, y, chosen, "f1_macro"))


def test_cv_scores_without_sizes_use_the_paired_t_test(rows):
    y, preds = rows
    cv = {"m v1": [0.9, 0.88, 0.91], "m v2": [0.7, 0.74, 0.69]}
    out = model_comparison("multiclass", LABELS, y, {m: preds[m] for m in ("m v1", "m v2")}, "accuracy",
                           cv_scores=cv, **OPTIONS)
    row = out["tests"].row(-1, named=True)
    assert row["test"] == "paired t-test (CV scores)"
    assert row["p_value"] == sig.paired_t_test(cv["m v1"], cv["m v2"]).p_value


def test_binary_comparison_uses_the_positive_class():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 400)
    a, b = np.where(rng.random(400) < 0.85, y, 1 - y), np.where(rng.random(400) < 0.6, y, 1 - y)
    out = model_comparison("binary", [0, 1], y, {"a": a, "b": b}, "f1", **OPTIONS)
    assert out["per_model"]["f1"].to_list() == pytest.approx(
        [mc.binary_report(y, y_pred=p, pos_label=1).metrics["f1"] for p in (a, b)])
    assert out["best"] == "a"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_comparison_against_scipy_and_statsmodels_on_random_models(seed):
    """Every test of three random models against its oracle: McNemar (statsmodels, exact), the paired t-test,
    ANOVA and Kruskal-Wallis over the folds (scipy, folds rebuilt here), the Holm correction (statsmodels)."""
    rng = np.random.default_rng(seed)
    n = 300 + 7 * seed  # folds of unequal size when n is no multiple of FOLDS
    y = rng.integers(0, 3, n)
    preds = {f"m{i}": np.where(rng.random(n) < p, y, rng.integers(0, 3, n)) for i, p in enumerate((0.9, 0.75, 0.6))}
    out = model_comparison("multiclass", [0, 1, 2], y, preds, "accuracy", correction="holm", seed=seed, n_boot=50)
    tests = out["tests"]
    fold = np.random.default_rng(seed).permutation(n) % FOLDS
    acc = {m: np.array([np.mean(p[fold == f] == y[fold == f]) for f in range(FOLDS)]) for m, p in preds.items()}
    got = {(r["model_a"], r["model_b"], r["test"]): r for r in tests.iter_rows(named=True)}
    for a, b in (("m0", "m1"), ("m0", "m2"), ("m1", "m2")):
        ra, rb = preds[a] == y, preds[b] == y
        table = [[np.sum(ra & rb), np.sum(ra & ~rb)], [np.sum(~ra & rb), np.sum(~ra & ~rb)]]
        assert got[a, b, "McNemar"]["p_value"] == pytest.approx(sm_mcnemar(table, exact=True).pvalue, rel=1e-9)
        t = stats.ttest_rel(acc[a], acc[b])
        row = got[a, b, f"paired t-test over {FOLDS} test folds"]
        assert (row["statistic"], row["p_value"]) == pytest.approx((t.statistic, t.pvalue), rel=1e-9)
    groups = [acc[m] for m in preds]
    assert got["all", "all", "ANOVA over folds"]["p_value"] == pytest.approx(stats.f_oneway(*groups).pvalue, rel=1e-9)
    assert got["all", "all", "Kruskal-Wallis over folds"]["p_value"] == pytest.approx(
        stats.kruskal(*groups).pvalue, rel=1e-9)
    reject, adjusted, _, _ = multipletests(tests["p_value"].to_numpy(), alpha=0.05, method="holm")
    np.testing.assert_allclose(tests["p_adjusted"].to_numpy(), adjusted, rtol=1e-12)
    assert tests["reject"].to_list() == reject.tolist()
    assert out["best"] == "m0" and out["per_model"]["accuracy"].to_list() == pytest.approx(
        [np.mean(p == y) for p in preds.values()])
