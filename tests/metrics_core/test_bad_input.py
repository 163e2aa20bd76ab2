"""Bad input: a ValueError (mc.InputError) that names the argument,
the number of bad rows and an example (index and value), raised before anything is computed.

Each case gives the call and the fragments its message must contain. Shape errors (2-D scores, score
columns, cost matrix) have no bad rows: their message names the argument and both shapes instead.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from flow_data import multiclass_scores
from sklearn import metrics as skm

import metrics_core as mc

NAN, INF = float("nan"), float("inf")
S3 = [0.1, 0.2, 0.3]

CASES = [
    # -- lengths and emptiness ---------------------------------------------------------------------
    ("mismatched lengths", lambda: mc.binary_report([0, 1, 1], [0.1, 0.2]),
     ["y_true", "y_score", r"\b3\b", r"\b2\b"]),
    ("mismatched sample_weight length", lambda: mc.binary_report([0, 1, 1], S3, sample_weight=[1, 1]),
     ["sample_weight", r"\b2\b", r"\b3\b"]),
    ("mismatched y_pred length (multiclass)", lambda: mc.multiclass_report([0, 1, 2], [0, 1]),
     ["y_true", "y_pred", r"\b3\b", r"\b2\b"]),
    ("empty input", lambda: mc.binary_report([], []), ["y_true", r"\b0 rows"]),
    ("empty multiclass input", lambda: mc.multiclass_report(np.array([], dtype=int), np.array([], dtype=int)),
     ["y_true", r"\b0 rows"]),
    ("empty multilabel input", lambda: mc.multilabel_report(np.zeros((0, 3)), np.zeros((0, 3))),
     ["Y_true", r"\b0 rows"]),
    # -- scores ------------------------------------------------------------------------------------
    ("NaN scores", lambda: mc.binary_report([0, 1, 1, 0], [0.1, NAN, 0.3, NAN]),
     ["y_score", "NaN", r"2 row\(s\)", r"row 1 = nan"]),
    ("inf score", lambda: mc.binary_report([0, 1, 1], [0.1, 0.2, INF]),
     ["y_score", r"1 row\(s\)", r"row 2 = inf"]),
    ("-inf in N x K scores", lambda: mc.multiclass_report([0, 1, 1], y_score=[[0.5, 0.5], [0.1, 0.9], [-INF, 1.0]]),
     ["y_score", r"1 row\(s\)", r"row 2\b"]),
    ("NaN in N x K scores", lambda: mc.multiclass_report([0, 1, 1], y_score=[[0.5, 0.5], [NAN, 0.9], [0.0, 1.0]]),
     ["y_score", "NaN", r"1 row\(s\)", r"row 1\b"]),
    ("null in a polars DataFrame of scores",
     lambda: mc.multiclass_report([0, 1, 1], y_score=pl.DataFrame({"a": [0.5, None, 0.2], "b": [0.5, 0.5, 0.8]})),
     ["y_score", r"1 row\(s\)", r"row 1\b"]),
    ("scores that are strings", lambda: mc.binary_report([0, 1], ["0.1", "0.2"]), ["y_score", "number"]),
    ("2-D scores for a binary report", lambda: mc.binary_report([0, 1], [[0.1, 0.9], [0.2, 0.8]]),
     ["y_score", r"\(2, 2\)"]),
    ("1-D scores for a multiclass report", lambda: mc.multiclass_report([0, 1, 1], y_score=S3),
     ["y_score", r"\(3,\)"]),
    ("score columns do not match labels",
     lambda: mc.multiclass_report([0, 1, 2], y_score=np.full((3, 2), 0.5), labels=[0, 1, 2]),
     ["y_score", r"\b2 columns", r"\b3 classes"]),
    ("score columns do not match the inferred classes",
     lambda: mc.multiclass_report([0, 1, 2], y_score=np.full((3, 2), 0.5)),
     ["y_score", r"\b2 columns", r"\b3 classes", "labels="]),
    # -- labels ------------------------------------------------------------------------------------
    ("null label in a polars Series", lambda: mc.binary_report(pl.Series([0, 1, None, 1]), [0.1, 0.2, 0.3, 0.4]),
     ["y_true", "null", r"1 row\(s\)", r"row 2 = None"]),
    ("null label in a pyarrow Array", lambda: mc.binary_report(pa.array([0, 1, 1, None]), [0.1, 0.2, 0.3, 0.4]),
     ["y_true", "null", r"1 row\(s\)", r"row 3 = None"]),
    ("nulls in the second chunk of a ChunkedArray (global row index)",
     lambda: mc.multiclass_report(pa.chunked_array([[0, 1], [None, 2, None]]), [0, 1, 1, 2, 2]),
     ["y_true", "null", r"2 row\(s\)", r"row 2 = None"]),
    ("null predicted label in a pyarrow string array",
     lambda: mc.multiclass_report(["a", "b", "b"], pa.array(["a", None, "b"])),
     ["y_pred", "null", r"1 row\(s\)", r"row 1 = None"]),
    ("None in a list of string labels", lambda: mc.multiclass_report(["a", "b", None, "a"], ["a", "b", "a", "a"]),
     ["y_true", "null", r"1 row\(s\)", r"row 2 = None"]),
    ("None in a list of string labels (binary)",
     lambda: mc.binary_report(["pos", None, "neg"], S3, pos_label="pos"),
     ["y_true", "null", r"1 row\(s\)", r"row 1 = None"]),
    ("NaN in float labels", lambda: mc.multiclass_report(np.array([0.0, 1.0, NAN]), np.array([0.0, 1.0, 1.0])),
     ["y_true", r"NaN label|null", r"1 row\(s\)", r"row 2 = nan"]),
    ("null weight", lambda: mc.binary_report([0, 1, 1], S3, sample_weight=pl.Series([1.0, None, 2.0])),
     ["sample_weight", r"1 row\(s\)", r"row 1 = None"]),
    ("labels outside `labels`", lambda: mc.multiclass_report(["a", "b", "z", "z"], ["a", "b", "a", "a"],
                                                             labels=["a", "b"]),
     ["y_true", r"2 row\(s\)", r"row 2 = 'z'", r"labels"]),
    ("predicted label outside `labels`", lambda: mc.multiclass_report(["a", "b", "a"], ["a", "q", "a"],
                                                                      labels=["a", "b"]),
     ["y_pred", r"1 row\(s\)", r"row 1 = 'q'"]),
    ("y_true with 3 classes in a binary report", lambda: mc.binary_report([0, 1, 2, 2], [0.1, 0.2, 0.3, 0.4]),
     ["y_true", r"\b3\b", r"\[0, 1, 2\]"]),
    ("pos_label not present (strings)", lambda: mc.binary_report(["a", "b"], [0.1, 0.2], pos_label="c"),
     ["pos_label", "'c'", r"\['a', 'b'\]"]),
    ("pos_label not present (integers)", lambda: mc.binary_report([0, 2, 2], S3, pos_label=1),
     ["pos_label", r"\b1\b", r"\[0, 2\]"]),
    ("duplicate labels", lambda: mc.multiclass_report([0, 1], [0, 1], labels=[0, 1, 1]), ["labels", "duplicate"]),
    # -- weights and costs ------------------------------------------------------------------------
    ("negative weight", lambda: mc.binary_report([0, 1, 1], S3, sample_weight=[1, -2, 1]),
     ["sample_weight", r"1 row\(s\)", r"row 1 = -2\.0"]),
    ("NaN weights", lambda: mc.multiclass_report([0, 1, 1], [0, 1, 0], sample_weight=[NAN, 1, NAN]),
     ["sample_weight", r"2 row\(s\)", r"row 0 = nan"]),
    ("cost matrix of the wrong shape (binary)", lambda: mc.binary_report([0, 1, 1], S3, cost_matrix=np.ones((3, 3))),
     ["cost_matrix", r"\(2, 2\)", r"\(3, 3\)"]),
    ("cost matrix of the wrong shape (multiclass)",
     lambda: mc.multiclass_report([0, 1, 2], [0, 1, 1], cost_matrix=np.ones((2, 2))),
     ["cost_matrix", r"\(3, 3\)", r"\(2, 2\)"]),
    # -- multilabel --------------------------------------------------------------------------------
    ("multilabel value other than 0/1",
     lambda: mc.multilabel_report([[0, 1], [1, 2], [0, 0]], [[0, 1], [1, 1], [0, 0]]),
     ["Y_true", r"1 row\(s\)", r"row 1 = 2\b"]),
    ("multilabel shapes differ", lambda: mc.multilabel_report([[0, 1], [1, 0]], [[0, 1, 0], [1, 1, 0]]),
     ["Y_true", "Y_pred", r"\(2, 2\)", r"\(2, 3\)"]),
]


@pytest.mark.parametrize("call, fragments", [pytest.param(c, f, id=name) for name, c, f in CASES])
def test_bad_input_raises_input_error_naming_argument_rows_and_example(call, fragments):
    with pytest.raises(mc.InputError) as info:
        call()
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    missing = [f for f in fragments if not re.search(f, message)]
    assert missing == [], f"message {message!r} lacks {missing}"


def test_binary_scores_outside_unit_interval_rank_but_have_no_probability_losses():
    """SPEC "Bad input": decision scores are valid for ranking metrics; log_loss and brier are nan
    with a warning."""
    y = np.array([0, 1, 1, 0, 1, 0])
    s = np.array([-2.0, 3.5, 0.5, 0.5, 1.5, -0.1])
    with pytest.warns(RuntimeWarning, match="log_loss"):
        r = mc.binary_report(y, y_score=s, threshold=0.0)
    assert np.isnan(r.metrics["log_loss"]) and np.isnan(r.metrics["brier"])
    assert r.metrics["auroc"] == skm.roc_auc_score(y, s)
    assert r.metrics["average_precision"] == pytest.approx(skm.average_precision_score(y, s), rel=1e-12)
    assert r.metrics["tp"] == 3 and r.metrics["fp"] == 1  # predicted positive when score >= 0.0


def test_multiclass_scores_outside_unit_interval():
    y = np.array([0, 1, 2, 2])
    s = np.array([[2.0, -1.0, 0.0], [0.0, 1.5, 0.2], [0.1, 0.1, 3.0], [1.0, 0.0, 2.0]])
    with pytest.warns(RuntimeWarning, match="log_loss"):
        r = mc.multiclass_report(y, y_score=s)
    assert np.isnan(r.metrics["log_loss"])
    expected = np.mean([skm.roc_auc_score(y == k, s[:, k]) for k in range(3)])
    assert r.metrics["auroc_ovr_macro"] == pytest.approx(expected, rel=1e-12)
    assert r.metrics["accuracy"] == 1.0


def test_probability_scores_give_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = mc.binary_report([0, 1, 1], [0.0, 1.0, 0.5])
    assert r.metrics["log_loss"] == pytest.approx(skm.log_loss([0, 1, 1], [0.0, 1.0, 0.5]), rel=1e-12)


def test_complex_weights_raise():
    """The imaginary part was dropped (n = 4 for weights [1+5j, 1, 2+1j])."""
    with pytest.raises(mc.InputError, match=r"sample_weight: complex weight .* in 2 row\(s\), e.g. row 0 = \(1\+5j\)"):
        mc.binary_report([0, 1, 1], y_score=[0.2, 0.7, 0.4], sample_weight=[1 + 5j, 1, 2 + 1j])
    with pytest.raises(mc.InputError, match="complex weight"):
        mc.multiclass_report([0, 1, 1], [0, 1, 0], sample_weight=np.array([1, 1, 1], dtype=complex))
    with pytest.raises(mc.InputError, match="weights must be real numbers"):
        mc.binary_report([0, 1, 1], y_score=[0.2, 0.7, 0.4], sample_weight=["1", "1", "2"])


def test_zero_weight_row_with_scores_outside_0_1_leaves_log_loss_alone():
    """Multiclass log_loss was nan (a zero-weight row's scores outside [0, 1]); binary already dropped it."""
    y, s = multiclass_scores(n=50)
    bad = s.copy()
    bad[0] = [2.0, -1.0, 0.0]
    w = np.ones(50)
    w[0] = 0.0
    got = mc.multiclass_report(y, y_score=bad, sample_weight=w)
    expected = mc.multiclass_report(y[1:], y_score=s[1:])
    assert got.metrics["log_loss"] == pytest.approx(skm.log_loss(y[1:], s[1:], labels=[0, 1, 2]), rel=1e-12)
    assert got.metrics == pytest.approx(expected.metrics, rel=1e-12, nan_ok=True)
    assert got.intervals == expected.intervals
    b = mc.binary_report((y == 1).astype(int), y_score=bad[:, 1], sample_weight=w)
    # weighted and unweighted sums of 49 losses may differ in the last bit, not more
    assert b.metrics["log_loss"] == pytest.approx(
        mc.binary_report((y[1:] == 1).astype(int), y_score=s[1:, 1]).metrics["log_loss"], rel=1e-14)
