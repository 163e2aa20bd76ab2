"""Multiclass report against scikit-learn 1.9 (scipy for kl_divergence), driven by hypothesis.

Every registered multiclass key and every per-class column agrees with its oracle to rtol 1e-9 /
atol 1e-12 (nan == nan) on: sizes from 1 row, one class only, classes never predicted or never
labelled, heavy ties in the scores (argmax takes the first column, as documented), weights, integer
and string labels, predicted labels or argmax of N x K scores.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm
from test_common import Case, assert_close, keys_for, mismatches, per_class_auroc

import metrics_core as mc

SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def multiclass_cases(draw, mode: str) -> Case:
    k = draw(st.integers(2, 5))
    labels = tuple(range(k)) if draw(st.booleans()) else tuple("abcde"[:k])  # sorted, as sklearn assumes
    n = draw(st.integers(1, 25))
    labelled = draw(st.lists(st.sampled_from(labels), min_size=1, max_size=k, unique=True))  # maybe one class
    y = np.array(draw(st.lists(st.sampled_from(labelled), min_size=n, max_size=n)))
    y_pred = score = None
    if mode in ("pred", "both"):
        predicted = draw(st.lists(st.sampled_from(labels), min_size=1, max_size=k, unique=True))  # never-predicted
        y_pred = np.array(draw(st.lists(st.sampled_from(predicted), min_size=n, max_size=n)))
    if mode in ("score", "both"):
        raw = np.array(draw(st.lists(st.integers(0, 3), min_size=n * k, max_size=n * k)), dtype=float).reshape(n, k)
        raw[raw.sum(axis=1) == 0] = 1.0  # heavy ties, rows with equal maxima
        score = raw / raw.sum(axis=1, keepdims=True)
    w = None
    if draw(st.booleans()):
        w = np.array(draw(st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.25]), min_size=n, max_size=n)))
    cost = np.array(draw(st.lists(st.integers(0, 9), min_size=k * k, max_size=k * k)), dtype=float).reshape(k, k)
    return Case("multiclass", y, y_pred=y_pred, y_score=score, labels=labels, sample_weight=w,
                beta=draw(st.sampled_from([0.5, 1.0, 2.0])), cost_matrix=cost)


def _per_class_oracle(case: Case) -> dict:
    labels = list(case.labels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = {}
        for name, beta in (("f1", 1.0), ("fbeta", case.beta)):
            p, r, f, _ = skm.precision_recall_fscore_support(case.yt, case.pred, labels=labels, beta=beta,
                                                             average=None, zero_division=np.nan,
                                                             sample_weight=case.w)
            out.update({"precision": p, "recall": r, name: f})
        mcm = skm.multilabel_confusion_matrix(case.yt, case.pred, labels=labels, sample_weight=case.w)
        tn, fp = mcm[:, 0, 0], mcm[:, 0, 1]
        with np.errstate(invalid="ignore"):
            out["specificity"] = tn / (tn + fp)
    support = np.bincount(case.ti, weights=case.weight, minlength=len(labels))
    out["support"] = support
    out["prevalence"] = support / case.weight.sum()
    out["auroc"] = per_class_auroc(case) if case.score is not None else np.full(len(labels), np.nan)
    return out


@pytest.mark.parametrize("mode", ["pred", "score", "both"])
@given(data=st.data())
@SETTINGS
def test_multiclass_report_equals_oracles(mode, data):
    """Every registered key, then every per-class column (support and prevalence weighted)."""
    case = data.draw(multiclass_cases(mode))
    r = case.report()
    assert mismatches(r.metrics, case, keys_for(case)) == []
    pc = r.per_class
    assert pc["class"].to_list() == list(case.labels)
    for column, expected in _per_class_oracle(case).items():
        np.testing.assert_allclose(pc[column].to_numpy(), expected, rtol=1e-9, atol=1e-12, equal_nan=True,
                                   err_msg=column)


@given(case=multiclass_cases("score"))
@settings(max_examples=30, deadline=None)
def test_auroc_ovr_and_per_class_curves_equal_sklearn(case):
    """With every class labelled (and K >= 3, else sklearn treats it as binary), scikit-learn's own
    roc_auc_score(multi_class="ovr") averages apply directly; r.curves[label]["roc"] is sklearn's
    one-vs-rest roc_curve of that class's score column."""
    r = case.report()
    if np.unique(case.yt).size == len(case.labels) >= 3:
        for average in ("macro", "weighted"):
            expected = skm.roc_auc_score(case.yt, case.score, multi_class="ovr", average=average,
                                         labels=list(case.labels), sample_weight=case.w)
            assert_close(r.metrics[f"auroc_ovr_{average}"], expected, average)
    curves = r.curves
    assert list(curves) == list(case.labels)
    for j, lab in enumerate(case.labels):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fpr, tpr, thr = skm.roc_curve((case.yt == lab).astype(int), case.score[:, j], sample_weight=case.w,
                                          drop_intermediate=False)
        roc = curves[lab]["roc"]
        np.testing.assert_allclose(roc["x"], fpr, rtol=1e-9, atol=1e-12, equal_nan=True)
        np.testing.assert_allclose(roc["y"], tpr, rtol=1e-9, atol=1e-12, equal_nan=True)
        np.testing.assert_array_equal(roc["thresholds"], thr)


def test_argmax_takes_first_column_on_ties():
    """SPEC: with only y_score the prediction is the argmax over labels (first column on ties)."""
    r = mc.multiclass_report(["b", "a", "c"], y_score=[[0.5, 0.5, 0.0], [0.2, 0.4, 0.4], [0.1, 0.1, 0.8]],
                             labels=["b", "a", "c"])
    # row 0 ties columns "b"/"a" -> "b"; row 1 ties "a"/"c" -> "a"; both right only under first-column ties
    assert r.metrics["accuracy"] == 1.0


def test_kl_divergence_is_inf_when_a_labelled_class_is_never_predicted():
    r = mc.multiclass_report([0, 1, 2, 2], [0, 1, 1, 1])
    assert r.metrics["kl_divergence"] == np.inf


def test_the_metrics_asked_for_equal_the_full_results_alone_and_together():
    """``keys`` runs only the formulas of the metrics asked for (a bootstrap of one interval): each
    value is the full result's, bit for bit, on replicates with empty classes and a cost matrix."""
    from metrics_core.compute import multiclass_confusion_metrics

    gen = np.random.default_rng(4)
    m = gen.integers(0, 6, (7, 4, 4)) * (gen.random((7, 4, 4)) < 0.5)
    m[0] = 0  # an empty replicate: every metric nan
    cost = gen.random((4, 4))
    full, per = multiclass_confusion_metrics(m, 2.0, cost)
    for keys in [(k,) for k in full] + [("mcc", "f1_of_macro", "mean_cost")]:
        part, part_per = multiclass_confusion_metrics(m, 2.0, cost, keys)
        assert list(part) == [k for k in full if k in keys]
        assert all(part[k].tobytes() == full[k].tobytes() for k in part)
        assert all(part_per[k].tobytes() == per[k].tobytes() for k in per)
