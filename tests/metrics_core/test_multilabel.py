"""Multilabel report against scikit-learn 1.9, driven by hypothesis.

hamming_loss, exact_match_ratio (accuracy_score on indicator arrays), the example-based (samples)
Jaccard / precision / recall / F1 of the lecture slides (seed 001) and the micro / macro averages,
with the per-label table. SPEC: sample-averaged metrics skip the rows where they are undefined and
report how many (``n_undefined_samples_<metric>``).
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm
from test_common import Case, keys_for, mismatches
from test_undefined import record_undefined

import metrics_core as mc
from metrics_core.undefined import UndefinedMetricWarning

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def multilabel_cases(draw) -> Case:
    n = draw(st.integers(1, 20))
    n_labels = draw(st.integers(2, 5))  # scikit-learn reads one column as binary, not multilabel
    density = draw(st.sampled_from([0.0, 0.2, 0.5, 0.9]))
    cells = n * n_labels
    t = np.array(draw(st.lists(st.floats(0, 1), min_size=cells, max_size=cells))).reshape(n, n_labels) < density
    flips = np.array(draw(st.lists(st.floats(0, 1), min_size=cells, max_size=cells))).reshape(n, n_labels)
    p = np.where(flips < draw(st.sampled_from([0.0, 0.2, 0.5])), ~t, t)
    if draw(st.booleans()):
        p[:, draw(st.integers(0, n_labels - 1))] = False  # a label never predicted
    return Case("multilabel", t.astype(int), y_pred=p.astype(int))


@given(case=multilabel_cases())
@SETTINGS
def test_multilabel_report_equals_oracles(case):
    r, reasons = record_undefined(case.report)
    assert mismatches(r.metrics, case, keys_for(case)) == []
    assert {k for k, v in r.metrics.items() if np.isnan(v)} <= set(reasons or {})  # each nan key is explained
    # per label: precision / recall / F1 with zero_division=nan, support, prevalence, specificity
    t, p = np.asarray(case.y_true), np.asarray(case.y_pred)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prec, rec, f1, support = skm.precision_recall_fscore_support(t, p, average=None, zero_division=np.nan)
        mcm = skm.multilabel_confusion_matrix(t, p)
    with np.errstate(invalid="ignore"):
        specificity = mcm[:, 0, 0] / (mcm[:, 0, 0] + mcm[:, 0, 1])
    pc = r.per_class
    expected = {"precision": prec, "recall": rec, "f1": f1, "support": support, "prevalence": support / len(t),
                "specificity": specificity}
    for column, values in expected.items():
        np.testing.assert_allclose(pc[column].to_numpy(), values, rtol=1e-9, atol=1e-12, equal_nan=True,
                                   err_msg=column)


@pytest.mark.parametrize("kind", ["list", "bool", "polars", "pyarrow"])
def test_multilabel_inputs(kind):
    """Lists, bool arrays, polars DataFrames and pyarrow Tables of 0/1 columns give the same metrics."""
    rng = np.random.default_rng(0)
    t = (rng.uniform(size=(30, 4)) < 0.4).astype(int)
    p = (rng.uniform(size=(30, 4)) < 0.4).astype(int)
    convert = {
        "list": lambda a: a.tolist(),
        "bool": lambda a: a.astype(bool),
        "polars": lambda a: pl.DataFrame({f"l{j}": a[:, j] for j in range(a.shape[1])}),
        "pyarrow": lambda a: pa.table({f"l{j}": a[:, j] for j in range(a.shape[1])}),
    }[kind]
    expected, expected_reasons = record_undefined(lambda: mc.multilabel_report(t, p))
    got, got_reasons = record_undefined(lambda: mc.multilabel_report(convert(t), convert(p)))
    assert got_reasons == expected_reasons
    expected, got = expected.metrics, got.metrics
    assert got.keys() == expected.keys()
    for key in expected:
        assert np.isclose(got[key], expected[key], rtol=0, atol=0, equal_nan=True), key


def test_undefined_samples_are_skipped_and_counted():
    """Row 0 has empty true and predicted sets, row 1 an empty predicted set, row 2 an empty true set:
    each sample-averaged metric averages only the rows where it is defined (SPEC)."""
    t = [[0, 0], [1, 0], [0, 0], [1, 1]]
    p = [[0, 0], [0, 0], [0, 1], [1, 0]]
    with pytest.warns(UndefinedMetricWarning, match="precision_samples") as record:
        m = mc.multilabel_report(t, p).metrics
    reasons = record[0].message.reasons
    assert reasons["precision_samples"] == "averaged over 2 of 4 rows; 2 skipped (empty predicted label set)"
    assert reasons["jaccard_samples"] == "averaged over 3 of 4 rows; 1 skipped (empty true and predicted label sets)"
    # precision defined on rows 2, 3: 0/1, 1/1; recall on rows 1, 3: 0/1, 1/2
    assert m["precision_samples"] == 0.5 and m["n_undefined_samples_precision"] == 2
    assert m["recall_samples"] == 0.25 and m["n_undefined_samples_recall"] == 2
    # jaccard and F1 undefined only on row 0: jaccard 0, 0, 1/2; F1 0, 0, 2*1/(2+1)
    assert m["jaccard_samples"] == pytest.approx(1 / 6, rel=1e-12)
    assert m["f1_samples"] == pytest.approx(2 / 9, rel=1e-12)
    assert m["n_undefined_samples_jaccard"] == m["n_undefined_samples_f1"] == 1
    assert m["exact_match_ratio"] == 0.25 and m["hamming_loss"] == 3 / 8


@pytest.mark.parametrize("matrix", [np.zeros((1, 0)), [[]], np.zeros((3, 0), dtype=bool)])
def test_multilabel_without_label_columns_raises(matrix):
    with pytest.raises(mc.InputError, match="no label columns"):
        mc.multilabel_report(matrix, matrix)
