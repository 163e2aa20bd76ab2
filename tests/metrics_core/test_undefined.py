"""UndefinedMetricWarning: one warning per report call, naming every nan metric (and every average that
skipped undefined classes or rows) with its reason; none for a well-defined report or a bootstrap."""

from __future__ import annotations

import math
import warnings
from functools import reduce
from itertools import product

import numpy as np
import pytest

import metrics_core as mc
from metrics_core.multilabel import multilabel_from_stats, multilabel_stats
from metrics_core.undefined import ZERO_OVER_ZERO, UndefinedMetricWarning, undefined_reasons


def caught(call):
    """(result, list of UndefinedMetricWarning instances) of one call, every warning recorded."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        result = call()
    return result, [w for w in record if issubclass(w.category, UndefinedMetricWarning)]


def record_undefined(call):
    """(result, reasons of the one UndefinedMetricWarning of a call, or None); other warnings dropped.

    For tests whose random cases may hold undefined metrics: they compare the reasons instead of
    letting the warning through."""
    result, found = caught(call)
    assert len(found) <= 1, [str(w.message) for w in found]
    return result, (found[0].message.reasons if found else None)


def binary(y, **kw):
    return lambda: mc.binary_report(np.asarray(y), **kw)


def multiclass(y, pred=None, **kw):
    return lambda: mc.multiclass_report(np.asarray(y), None if pred is None else np.asarray(pred), **kw)


def multilabel(t, p):
    return lambda: mc.multilabel_report(np.asarray(t), np.asarray(p))


NOT_PROB = "scores outside [0, 1] are not probabilities"
# (call, key, words in its reason)
CASES = [
    (binary([0, 0, 1], y_pred=[0, 0, 0]), "precision", "no predicted positives (tp + fp = 0)"),
    (binary([0, 0, 1], y_pred=[0, 0, 0]), "mcc", "constant predictions (every row predicted 0)"),
    (binary([0, 0, 0], y_pred=[0, 1, 0]), "recall", "no actual positives (tp + fn = 0)"),
    (binary([0, 0, 0], y_pred=[0, 1, 0]), "fnr", "no actual positives (tp + fn = 0)"),
    (binary([0, 0, 0], y_pred=[0, 1, 0]), "mcc", "constant labels (every row is 0)"),
    (binary([0, 0, 0], y_pred=[0, 1, 0]), "balanced_accuracy", "specificity only (recall: no actual positives)"),
    (binary([1, 1, 0], y_pred=[1, 1, 1]), "npv", "no predicted negatives (tn + fn = 0)"),
    (binary([1, 1, 1], y_pred=[1, 0, 1]), "specificity", "no actual negatives (tn + fp = 0)"),
    (binary([1, 1, 1], y_pred=[1, 0, 1]), "fpr", "no actual negatives (tn + fp = 0)"),
    (binary([1, 1, 1], y_pred=[1, 0, 1]), "balanced_accuracy", "recall only (specificity: no actual negatives)"),
    (binary([0, 0], y_pred=[0, 0]), "f1", "no actual or predicted positives (tp + fp + fn = 0)"),
    (binary([0, 0], y_pred=[0, 0]), "fbeta", "no actual or predicted positives (tp + fp + fn = 0)"),
    (binary([0, 0], y_pred=[0, 0]), "cohen_kappa", "labels and predictions are all 0 (expected agreement p_e = 1)"),
    (binary([1, 1], y_score=[0.2, 0.9]), "auroc", "only one class present (no negatives among the scored rows)"),
    (binary([0, 0], y_score=[0.2, 0.9]), "auroc", "only one class present (no positives among the scored rows)"),
    (binary([0, 0], y_score=[0.2, 0.9]), "average_precision", "no actual positives (tp + fn = 0)"),
    (binary([0, 0], y_score=[0.2, 0.9]), "auprc_trapezoid", "no actual positives (tp + fn = 0)"),
    (binary([1, 1], y_score=[0.2, 0.9], bins=[0, 0.5, 1]), "auroc_error_bound", "only one class present"),
    (binary([0, 1], y_score=[-1.0, 2.0]), "log_loss", NOT_PROB),
    (binary([0, 1], y_score=[-1.0, 2.0]), "brier", NOT_PROB),
    (binary([1, 1], y_score=[0.2, 0.3]), "mcc", "every row predicted the negative class"),
    (binary([0, 1], y_score=[0.2, 0.8], sample_weight=[0, 0], cost_matrix=[[0, 1], [1, 0]]), "mean_cost", "no rows"),
    (binary([0, 1], y_score=[0.2, 0.8], sample_weight=[0, 0]), "accuracy", "no rows"),
    (multiclass(list("abca"), list("abba")), "precision_macro",
     "averaged over 2 of 3 classes; 1 skipped (no predicted rows: 'c')"),
    (multiclass(list("abca"), list("abba")), "precision_weighted", "1 skipped (no predicted rows: 'c')"),
    (multiclass(list("abba"), list("abca")), "recall_macro", "1 skipped (no actual rows: 'c')"),
    (multiclass(list("abba"), list("abca")), "balanced_accuracy", "1 skipped (no actual rows: 'c')"),
    (multiclass(list("aab"), list("aab"), labels=list("abc")), "f1_macro",
     "1 skipped (no actual or predicted rows: 'c')"),
    (multiclass(list("aab"), list("aab"), labels=list("abc")), "fbeta_macro", "no actual or predicted rows"),
    (multiclass(list("aab"), y_score=[[0.9, 0.1, 0], [0.6, 0.4, 0], [0.2, 0.8, 0]], labels=list("abc")),
     "auroc_ovr_macro", "1 skipped (one class only in its one-vs-rest table: 'c')"),
    (multiclass(list("aab"), y_score=[[0.9, 0.1, 0], [0.6, 0.4, 0], [0.2, 0.8, 0]], labels=list("abc")),
     "auroc_ovr_weighted", None),  # 'c' has no support: it weighs nothing, nothing skipped
    (multiclass(list("aa"), list("aa"), labels=list("ab")), "mcc",
     "constant labels (every row is 'a') and constant predictions (every row predicted 'a')"),
    (multiclass(list("aa"), list("aa"), labels=list("ab")), "cohen_kappa", "labels and predictions are all 'a'"),
    (multiclass(list("aa"), list("aa"), labels=list("a")), "csmf_accuracy", "a single class"),
    (multiclass(list("aa"), list("aa"), labels=list("a")), "cccsmf_accuracy", "a single class"),
    (multiclass(list("aa"), list("aa"), labels=list("a")), "balanced_accuracy_micro", "a single class"),
    (multiclass(list("abc"), y_score=[[2.0, -1, 0], [0, 1.5, 0.2], [0.1, 0.1, 3.0]]), "log_loss", NOT_PROB),
    (multiclass(list("ab"), list("ab"), labels=list("ab"), sample_weight=[0, 0]), "precision_macro", "no rows"),
    (multilabel([[0, 1], [0, 1]], [[0, 0], [0, 0]]), "precision_micro", "no predicted labels in any row (tp + fp = 0)"),
    (multilabel([[0, 0], [0, 0]], [[0, 1], [0, 0]]), "recall_micro", "no true labels in any row (tp + fn = 0)"),
    (multilabel([[0, 0], [0, 0]], [[0, 0], [0, 0]]), "f1_micro", "no true or predicted labels in any row"),
    (multilabel([[0, 1], [1, 1]], [[0, 1], [0, 1]]), "precision_macro", "1 skipped (never predicted: 0)"),
    (multilabel([[0, 1], [0, 1]], [[1, 1], [0, 1]]), "recall_macro", "1 skipped (never true: 0)"),
    (multilabel([[0, 1, 0], [0, 1, 0]], [[0, 1, 0], [0, 1, 0]]), "f1_macro",
     "averaged over 1 of 3 labels; 2 skipped (never true nor predicted: 0, 2)"),
    (multilabel([[0, 1], [1, 0]], [[0, 0], [1, 0]]), "precision_samples",
     "averaged over 1 of 2 rows; 1 skipped (empty predicted label set)"),
    (multilabel([[0, 0], [1, 0]], [[0, 1], [1, 0]]), "recall_samples", "1 skipped (empty true label set)"),
    (multilabel([[0, 0], [0, 0]], [[0, 0], [0, 0]]), "jaccard_samples",
     "all 2 rows skipped (empty true and predicted label sets)"),
    (multilabel([[0, 0], [1, 0]], [[0, 0], [1, 0]]), "f1_samples", "1 skipped (empty true and predicted label sets)"),
]


@pytest.mark.parametrize("call, key, words", CASES, ids=[f"{i}-{c[1]}" for i, c in enumerate(CASES)])
def test_each_reason_fires_for_its_case(call, key, words):
    report, found = caught(call)
    assert len(found) == 1, [str(w.message) for w in found]
    warning = found[0].message
    assert warning.reasons == undefined_reasons(report)
    if words is None:
        assert key not in warning.reasons
        return
    assert words in warning.reasons[key]
    assert f"{key}" in str(warning) and words in str(warning)
    # a key listed with a defined value is an average that skipped undefined classes, labels or rows
    if not math.isnan(report.metrics[key]):
        assert key == "balanced_accuracy" or key.endswith(("_macro", "_weighted", "_samples")), key


def test_weighted_twin_keys_have_their_own_reasons():
    stats = mc.binary_stats([0, 1, 1], y_pred=[0, 1, 0], twin_weight=[1.0, 0.0, 0.0])  # twin: negatives only
    report, found = caught(lambda: mc.binary_from_stats(stats))
    reasons = found[0].message.reasons
    assert "precision" not in reasons  # the unweighted confusion is defined
    assert reasons["weighted/precision"] == "no predicted positives (tp + fp = 0)"
    assert reasons["weighted/recall"] == "no actual positives (tp + fn = 0)"
    assert math.isnan(report.metrics["weighted/precision"])
    stats = mc.multiclass_stats(list("abc"), list("abc"), twin_weight=[1.0, 1.0, 0.0])
    _, found = caught(lambda: mc.multiclass_from_stats(stats))
    reasons = found[0].message.reasons
    assert set(reasons) == {f"weighted/{m}_macro" for m in ("precision", "recall", "f1", "fbeta")} | {
        "weighted/balanced_accuracy"}
    assert "no predicted rows: 'c'" in reasons["weighted/precision_macro"]


def test_every_nan_key_of_degenerate_reports_has_a_specific_reason():
    """Over every report of up to 3 rows (binary, with labels, predictions and scores; multiclass and
    multilabel alike), each nan key is named, with a reason other than the generic fallback."""
    calls = []
    for y, p in product(product([0, 1], repeat=3), repeat=2):
        s = np.array([0.2, 0.6, 0.9])
        calls += [binary(y, y_pred=p), binary(y, y_score=s), binary(y, y_score=s * 3 - 1, bins=[-1, 0, 1, 2]),
                  binary(y, y_score=s, y_pred=p, cost_matrix=[[0, 1], [2, 0]])]
        calls += [multiclass(y, p, labels=[0, 1, 2], y_score=np.eye(3)[list(p)] * 0.8 + 0.1)]
        calls += [multilabel(np.array([y, p]).T, np.array([p, y]).T)]
    for call in calls:
        report, found = caught(call)
        nan_keys = {k for k, v in report.metrics.items() if math.isnan(v)}
        if not found:
            assert not nan_keys
            continue
        reasons = found[0].message.reasons
        assert nan_keys <= set(reasons), nan_keys - set(reasons)
        assert set(reasons) <= set(report.metrics)
        assert ZERO_OVER_ZERO not in reasons.values(), reasons


@pytest.mark.parametrize("call", [
    binary([0, 1, 1, 0], y_score=[0.1, 0.9, 0.8, 0.6], cost_matrix=[[0, 1], [2, 0]]),
    binary([0, 1, 1, 0], y_score=[0.1, 0.9, 0.8, 0.3], bins=[0, 0.5, 1]),
    multiclass(list("abcab"), list("abcba"), y_score=np.eye(3)[[0, 1, 2, 1, 0]] * 0.7 + 0.1),
    multilabel([[0, 1], [1, 0], [1, 1]], [[0, 1], [1, 1], [1, 0]]),
], ids=["binary", "binned", "multiclass", "multilabel"])
def test_no_warning_for_a_well_defined_report_nor_its_bootstrap(call):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = call()
        assert report.intervals and report.baselines  # bootstrap replicates and baselines: silent
    assert undefined_reasons(report) == {}


def test_exactly_one_warning_per_call_and_none_from_intervals():
    """Many undefined keys, one warning; the bootstrap of the same report adds none (its replicates are
    full of nan here) and neither do the baselines."""
    report, found = caught(binary([1, 1, 1, 1], y_score=[0.2, 0.3, 0.4, 0.45], n_boot=50))
    assert len(found) == 1
    assert {"precision", "specificity", "mcc", "auroc"} <= set(found[0].message.reasons)
    _, again = caught(lambda: (report.intervals, report.baselines))
    assert again == []
    _, twice = caught(lambda: [binary([0, 0], y_pred=[0, 0])() for _ in range(2)])
    assert len(twice) == 2  # once per call, not once per process


def test_missing_inputs_are_not_undefined():
    """Without scores the report has no auroc key, and nothing is said about it."""
    report, found = caught(binary([0, 0, 1], y_pred=[0, 0, 0]))
    assert "auroc" not in report.metrics
    assert set(found[0].message.reasons) == {"precision", "mcc"}
    report, found = caught(multiclass(list("abca"), list("abba")))
    assert "auroc_ovr_macro" not in found[0].message.reasons and "log_loss" not in report.metrics


def test_merged_statistics_warn_the_same_reasons_as_one_pass():
    y, p = np.array([1, 1, 0, 0, 1]), np.array([1, 1, 1, 1, 1])
    parts = [mc.binary_stats(y[i:i + 2], y_pred=p[i:i + 2]) for i in range(0, 5, 2)]
    merged, found_merged = caught(lambda: mc.binary_from_stats(reduce(lambda a, b: a.merge(b), parts)))
    whole, found_whole = caught(binary(y, y_pred=p))
    assert found_merged[0].message.reasons == found_whole[0].message.reasons
    assert str(found_merged[0].message) == str(found_whole[0].message)
    t, q = np.array([[0, 1], [1, 0], [0, 0]]), np.array([[0, 1], [0, 0], [0, 0]])
    _, found_merged = caught(lambda: multilabel_from_stats(multilabel_stats(t[:1], q[:1]).merge(
        multilabel_stats(t[1:], q[1:]))))
    _, found_whole = caught(multilabel(t, q))
    assert found_merged[0].message.reasons == found_whole[0].message.reasons


def test_warning_points_at_the_callers_line():
    with pytest.warns(UndefinedMetricWarning, match=r"precision: no predicted positives") as record:
        mc.binary_report([0, 1], y_pred=[0, 0])
    assert record[0].filename == __file__


def test_existing_runtime_warning_for_scores_outside_unit_interval_is_kept():
    """The probability-loss warning stays a RuntimeWarning matching 'log_loss'; the undefined warning,
    a RuntimeWarning too, names log_loss and brier with their reason."""
    with pytest.warns(RuntimeWarning, match="log_loss") as record:
        mc.binary_report([0, 1], y_score=[-1.0, 2.0])
    undefined = [w.message for w in record if isinstance(w.message, UndefinedMetricWarning)]
    assert len(undefined) == 1
    assert undefined[0].reasons == {"log_loss": NOT_PROB, "brier": NOT_PROB}
