"""The input contract (metrics_core.contract): one layout, one set of row rules, one naming of classes,
shared by in-memory reports, streamed scans and monitoring."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

import metrics_core as mc
from metrics_core import contract as ct
from metrics_core.dataset import file_error, iter_batches, scan_stats
from metrics_core.monitoring import Bins, scan_period


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


SCHEMA = pa.schema([("label", pa.string()), ("score_a", pa.float32()), ("score_b", pa.float32()),
                    ("prediction", pa.string()), ("price", pa.float64())])


# ------------------------------------------------------------------------------------------------
# Layout
# ------------------------------------------------------------------------------------------------

def test_layout_roles_present_and_optional():
    lay = ct.resolve_layout(SCHEMA, "multiclass", ct.Columns(weight="w", price="price"), labels=["b", "a"])
    assert lay.scores == ["score_b", "score_a"] and lay.labels == ["b", "a"]  # the class list decides the order
    assert lay.prediction == "prediction" and lay.price == "price" and lay.weight is None and lay.id is None
    assert lay.used() == ["label", "prediction", "score_b", "score_a", "price"]
    assert ct.Layout(**lay.as_dict()) == lay


def test_layout_classes_from_score_columns_in_schema_order():
    schema = pa.schema([("label", pa.int8()), ("score_2", pa.float32()), ("score_0", pa.float32())])
    lay = ct.resolve_layout(schema, "multiclass")
    assert lay.labels == [2, 0] and lay.scores == ["score_2", "score_0"]
    with pytest.raises(mc.InputError, match=r"column 'score_x': class 'x' is not a value of the label type int8"):
        ct.resolve_layout(schema.append(pa.field("score_x", pa.float32())), "multiclass")


def test_layout_binary_score_or_prediction():
    schema = pa.schema([("label", pa.int8()), ("score", pa.float32()), ("prediction", pa.int8())])
    assert ct.resolve_layout(schema, "binary").scores == ["score"]
    assert ct.resolve_layout(schema, "binary", use_prediction=False).prediction is None
    only_label = pa.schema([("label", pa.int8())])
    with pytest.raises(mc.InputError) as err:
        ct.resolve_layout(only_label, "binary", where="d.parquet")
    message = str(err.value)
    for fragment in ("d.parquet", "missing column 'score' (score)", "not found", "['label']", "'prediction'",
                     "--score-column"):
        assert fragment in message
    lay = ct.resolve_layout(only_label, "binary", predictions=False)  # a model will score the rows
    assert lay.scores == [] and lay.prediction is None


@pytest.mark.parametrize("columns, task, says, not_said", [
    (["label", "score"], "multiclass", "The data has the binary score column 'score': is the task binary", None),
    (["label", "score_0", "score_1"], "binary", "The data has per-class score columns ['score_0', 'score_1']: is the "
     "task multiclass? A binary task reads the positive class's score from one column (columns.score in a run spec; "
     "--score-column score_1 on the command line)", "a near miss of"),
    (["label", "scores"], "binary", "the data has 'scores', a near miss of 'score'", "is the task"),
])
def test_the_other_tasks_score_columns_suggest_the_task(columns, task, says, not_said):
    schema = pa.schema([(c, pa.int8() if c == "label" else pa.float64()) for c in columns])
    with pytest.raises(mc.InputError) as err:
        ct.resolve_layout(schema, task)
    assert says in str(err.value) and (not_said is None or not_said not in str(err.value))


def test_layout_required_roles_and_partial_score_columns():
    with pytest.raises(mc.InputError, match=r"missing columns 'w' \(weight\), 'x' \(features\)"):
        ct.resolve_layout(SCHEMA, "multiclass", ct.Columns(weight="w", features=("label", "x")),
                          require=["weight", "features"])
    with pytest.raises(mc.InputError, match=r"missing column 'prediction' \(prediction\)"):
        ct.resolve_layout(SCHEMA.remove(3), "multiclass", use_prediction=True)
    with pytest.raises(mc.InputError, match=r"missing per-class score column\(s\) \['score_c'\] \(1 of 3 classes\)"):
        ct.resolve_layout(SCHEMA, "multiclass", labels=["a", "b", "c"])
    with pytest.raises(mc.InputError, match="task: expected 'binary' or 'multiclass'"):
        ct.resolve_layout(SCHEMA, "multilabel")


def test_schema_kept_between_reference_and_current():
    lay = ct.resolve_layout(SCHEMA, "multiclass", ct.Columns(price="price"))
    ct.check_same_schema(SCHEMA, SCHEMA.remove(0).set(2, pa.field("prediction", pa.large_string())), lay)
    changed = SCHEMA.set(4, pa.field("price", pa.string()))
    with pytest.raises(mc.InputError, match=r"1 column\(s\) differ, e\.g\. column 'price' changed type: "
                                            r"double -> string"):
        ct.check_same_schema(SCHEMA, changed, lay, reference="ref.parquet", current="cur.parquet")


# ------------------------------------------------------------------------------------------------
# Classes
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("values, pos, expected", [
    (["ham", "spam"], "spam", ["ham", "spam"]),
    ([0, 1], 1, [0, 1]),
    ([0, 1], "1", [0, 1]),  # a positive class typed as text names the class of the data
    ([True, False], True, [False, True]),
    ([1], 1, [0, 1]),
    (["yes"], "yes", ["not yes", "yes"]),
    ([], 1, [0, 1]),
])
def test_binary_classes(values, pos, expected):
    assert ct.binary_classes(values, pos) == expected


def test_binary_classes_errors_and_the_report_agree():
    with pytest.raises(mc.InputError, match=r"y_true: a binary evaluation needs at most two classes, found 3"):
        ct.binary_classes([0, 1, 2], 1)
    with pytest.raises(mc.InputError, match=r"pos_label='c' is not one of the labels \['a', 'b'\]"):
        ct.binary_classes(["a", "b"], "c")
    assert ct.binary_classes([1], 1, absent=None) == [None, 1]
    # the in-memory report names its classes the same way
    assert mc.binary_report([0, 1, 1], [0.2, 0.6, 0.9], pos_label="1").stats.confusion.labels.tolist() == [0, 1]


@pytest.mark.parametrize("weighted", [False, True])
def test_a_third_class_in_memory_says_where_each_class_is(weighted):
    y = np.array([0, 1] * 10, dtype=object)
    y[13] = 2
    pred = y.copy()
    pred[4] = 3  # a fourth class, in the predictions only
    w = np.ones(20)
    w[[0, 2]] = 0  # rows of weight 0 are no rows: neither counted nor the first row
    expected = (r"y_true: a binary evaluation needs at most two classes, found 4: \[0, 1, 2, 3\]\. .* 0 in 8 row\(s\) "
                r"of y_true \(first: row 4\); 1 in 9 \(first: row 1\); 2 in 1 \(first: row 13\); 3 in 1 row\(s\) of "
                r"y_pred \(first: row 4\)\.$")
    if not weighted:
        expected = expected.replace("0 in 8", "0 in 10").replace(r"\(first: row 4\); 1", r"\(first: row 0\); 1")
    with pytest.raises(mc.InputError, match=expected):
        mc.binary_report(y.astype(int), y_pred=pred.astype(int), sample_weight=w if weighted else None)


def test_streamed_binary_names_classes_like_the_report(tmp_path):
    """Two files, each holding one class: the names come from the contract once everything is merged."""
    for i, (label, pos) in enumerate([("no", False), ("yes", True)]):
        pq.write_table(pa.table({"label": [label] * 3, "score": [0.1, 0.8, 0.4]}), tmp_path / f"f{i}.parquet")
    stats = scan_stats(tmp_path, "binary", pos_label="yes")
    assert stats.confusion.labels.tolist() == ["no", "yes"]
    pq.write_table(pa.table({"label": ["maybe"] * 3, "score": [0.1, 0.8, 0.4]}), tmp_path / "f2.parquet")
    with pytest.raises(mc.InputError, match=r"f2\.parquet: column 'label': a binary evaluation needs at most two"):
        scan_stats(tmp_path, "binary", pos_label="yes")


def test_positive_class_and_class_values():
    assert ct.positive_class(pa.bool_()) is True and ct.positive_class(pa.float64()) == 1
    assert ct.positive_class(pa.int8(), "3") == 3 and ct.positive_class(pa.string(), "beer") == "beer"
    with pytest.raises(mc.InputError, match=r"d\.csv: column 'y' holds string labels: .*--positive-class"):
        ct.positive_class(pa.string(), column="y", where="d.csv")
    with pytest.raises(mc.InputError, match="pos_label 'x' is not a value of the label type int8"):
        ct.positive_class(pa.int8(), "x")


def test_class_indices_numpy_and_arrow_agree():
    labels = ["a", "b", "c"]
    values = ["c", "a", "z", "b"]
    expected = [2, 0, -1, 1]
    assert ct.class_indices(np.array(values), labels).tolist() == expected
    assert ct.class_indices(pa.array(values), labels).tolist() == expected
    assert ct.class_indices(pa.array(values, pa.large_string()).dictionary_encode(), labels).tolist() == expected
    assert ct.class_indices(np.array([3, 1, 7]), [1, 3]).tolist() == [1, 0, -1]
    assert ct.class_indices(pa.array([1, None]), ["1", "2"]).tolist() == [0, -1]  # compared as text; null: -1
    assert ct.class_indices(np.array([1, 2]), ["a", "b"]).tolist() == [-1, -1]  # numbers are no string class


def test_predicted_class_is_the_reports():
    s = np.array([0.2, 0.5, 0.49, 0.9])
    assert ct.predicted_class(s, "binary").tolist() == [0, 1, 0, 1]
    assert ct.predicted_class(s, "binary", threshold=0.3).tolist() == [0, 1, 1, 1]
    r = mc.binary_report([0, 1, 0, 1], s, threshold=0.3, n_boot=20)
    assert (r.metrics["tp"], r.metrics["fp"]) == (2, 1)
    k = np.array([[0.2, 0.8, 0.0], [0.4, 0.4, 0.2], [0.1, 0.2, 0.7]])
    assert ct.predicted_class(k, "multiclass").tolist() == [1, 0, 2]  # ties: the first column
    r = mc.multiclass_report([1, 0, 2], y_score=k, labels=[0, 1, 2], n_boot=20)
    assert r.metrics["accuracy"] == 1.0



def _float32_neighbours(t: float) -> np.ndarray:
    """float32 scores at and around ``t``: its nearest float32 and the one on each side."""
    near = np.float32(t)
    return np.array([np.nextafter(near, np.float32(0)), near, np.nextafter(near, np.float32(1))], np.float32)


@pytest.mark.parametrize("t", [0.7, 0.1, 0.3, 0.5, 0.9, 1 / 3])
def test_predicted_class_compares_float32_scores_with_the_threshold_as_numbers(t):
    """A float32 score counts as >= t by its value, as in float64 (numpy rounded t to float32 first:
    float32(0.7) = 0.69999999 was predicted positive at 0.7 by the binned and streamed confusions only)."""
    s = _float32_neighbours(t)
    expected = (s.astype(np.float64) >= t).astype(np.int8).tolist()
    assert ct.predicted_class(s, "binary", t).tolist() == expected
    assert ct.predicted_class(pa.array(s), "binary", t).tolist() == expected
    if float(np.float32(t)) < t:  # the threshold rounds down in float32: the case numpy got wrong
        assert expected == [0, 0, 1]


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1e-6, max_value=1 - 1e-6))
def test_predicted_class_of_float32_scores_is_that_of_their_float64_values(t):
    s = np.concatenate((_float32_neighbours(t), np.linspace(0, 1, 11, dtype=np.float32)))
    assert ct.predicted_class(s, "binary", t).tolist() == (s.astype(np.float64) >= t).astype(np.int8).tolist()


def test_mixed_label_kinds():
    with pytest.raises(mc.InputError, match=r"y_pred holds int64 values and y_true holds <U1 values \(mixed label"):
        mc.binary_report(np.array(["a", "b"]), y_pred=np.array([0, 1]), pos_label="b")
    with pytest.raises(mc.InputError, match=r"mixed types"):
        mc.multiclass_report(np.array([1, "a", 2], dtype=object), [1, 2, 2])
    batch = pa.record_batch({"label": ["a", "b"], "prediction": [0, 1]})
    with pytest.raises(mc.InputError, match=r"f\.csv: column 'prediction' holds int64 values and the label column"):
        ct.check_batch(batch, "f.csv", label="label", prediction="prediction")


MIXED = "mixed label types"


def test_string_labels_with_numeric_predictions_raise_as_in_scikit_learn():
    """String labels with numeric predictions once gave accuracy 0.5 for a perfect classifier; scikit-learn
    raises, and so does every report."""
    with pytest.raises(ValueError, match="Mix of label input types"):
        skm.accuracy_score(["spam", "spam", "eggs", "eggs"], [1, 1, 0, 0])
    with pytest.raises(mc.InputError, match=MIXED):
        mc.binary_report(["spam", "spam", "eggs", "eggs"], y_pred=[1, 1, 0, 0], pos_label="spam")
    with pytest.raises(mc.InputError, match=MIXED):  # the other way round
        mc.binary_report([1, 1, 0, 0], y_pred=["1", "1", "0", "0"], pos_label=1)
    with pytest.raises(mc.InputError, match=MIXED):
        mc.multiclass_report(["spam", "spam", "eggs", "eggs"], [1, 1, 0, 0])


def test_class_list_of_another_kind_than_the_labels_raises():
    """labels=[0, 1] for string labels was 'not in the class list'; it is the same mixed-kind error now."""
    scores = np.array([[0.9, 0.1], [0.8, 0.2], [0.1, 0.9], [0.2, 0.8]])
    with pytest.raises(mc.InputError, match=r"labels holds int64 values and y_true holds <U4 values \(mixed label"):
        mc.multiclass_report(["eggs", "eggs", "spam", "spam"], y_score=scores, labels=[0, 1])
    with pytest.raises(mc.InputError, match=MIXED):
        mc.multiclass_report([0, 0, 1, 1], y_score=scores, labels=["0", "1"])


@pytest.fixture
def mixed_files(tmp_path):
    t = pa.table({"label": ["spam", "spam", "eggs", "eggs"], "prediction": [1, 1, 0, 0],
                  "score": [0.9, 0.8, 0.1, 0.2]})
    pq.write_table(t, tmp_path / "mixed.parquet")
    pacsv.write_csv(t, tmp_path / "mixed.csv")
    return [tmp_path / "mixed.parquet", tmp_path / "mixed.csv"]


@pytest.mark.parametrize("task, kwargs", [("binary", {"pos_label": "spam"}), ("multiclass", {})])
def test_streamed_scan_raises_mixed_label_types(mixed_files, task, kwargs):
    for path in mixed_files:
        with pytest.raises(mc.InputError, match=rf"{path.name}: column 'prediction' holds int64 values .*{MIXED}"):
            scan_stats(path, task, **kwargs)


@pytest.mark.parametrize("labels", [["eggs", "spam"], [0, 1]])
def test_monitoring_scan_raises_mixed_label_types(mixed_files, labels):
    for source in (mixed_files[0], pq.read_table(mixed_files[0])):
        with pytest.raises(mc.InputError, match=MIXED):
            scan_period(source, "binary", labels, label="label", prediction="prediction")


def test_zero_weight_rows_leave_the_class_list():
    """A class that only zero-weight rows hold is not a class of the data (as if the rows were absent)."""
    y = np.array(["a", "b", "a", "b", "c"])
    pred = np.array(["a", "b", "b", "b", "c"])
    w = np.array([1.0, 2.0, 1.0, 1.0, 0.0])
    got = quiet(mc.multiclass_report, y, pred, sample_weight=w)
    expected = quiet(mc.multiclass_report, y[:4], pred[:4], sample_weight=w[:4])
    assert got.per_class["class"].to_list() == ["a", "b"]
    assert got.metrics == expected.metrics
    binary = quiet(mc.binary_report, y, y_pred=pred, pos_label="a", sample_weight=w)  # "c" was a third class
    assert binary.metrics == quiet(mc.binary_report, y[:4], y_pred=pred[:4], pos_label="a",
                                   sample_weight=w[:4]).metrics
    with pytest.raises(mc.InputError, match="every row has weight 0"):
        mc.multiclass_report(y, pred, sample_weight=np.zeros(5))


def test_float32_scores_give_one_confusion_in_every_mode(tmp_path):
    """Exact, binned, streamed (exact and confusion only) and monitoring confusions of float32 scores at
    a threshold that float32 rounds down (0.7 -> 0.69999999) agree with those of the float64 values."""
    rng = np.random.default_rng(7)
    s = np.concatenate((np.full(40, 0.7, np.float32), rng.random(200).astype(np.float32)))
    y = rng.integers(0, 2, s.size)
    expected = skm.confusion_matrix(y, (s.astype(np.float64) >= 0.7).astype(int)).tolist()
    assert float(np.float32(0.7)) < 0.7 and expected != skm.confusion_matrix(y, (s >= 0.7).astype(int)).tolist()
    bins = np.linspace(0, 1, 11)
    in_memory = {"exact": mc.binary_report(y, s, threshold=0.7, n_boot=0),
                 "binned": mc.binary_report(y, s, threshold=0.7, bins=bins, n_boot=0)}
    pq.write_table(pa.table({"label": y, "score": s}), tmp_path / "f32.parquet")
    modes = {"exact": {}, "binned": {"bins": bins}, "confusion only": {"confusion_only": True}}
    streamed = {kind: scan_stats(tmp_path / "f32.parquet", "binary", threshold=0.7, **kw).confusion.matrix.tolist()
                for kind, kw in modes.items()}
    period = scan_period(tmp_path / "f32.parquet", "binary", [0, 1], label="label", scores=["score"], threshold=0.7)
    got = {**{f"{k} report": [[int(r.metrics[a]) for a in row] for row in (("tn", "fp"), ("fn", "tp"))]
              for k, r in in_memory.items()},
           **{f"{k} scan": m for k, m in streamed.items()}, "monitoring": period.performance.confusion.matrix.tolist()}
    assert got == {k: expected for k in got}


# ------------------------------------------------------------------------------------------------
# Rows: one set of rules, in memory and streamed
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("role, values, problem, bad", [
    ("score", [0.1, float("nan"), 0.3], "NaN score (scores must be finite)", [False, True, False]),
    ("score", [0.1, 0.2, float("-inf")], "infinite score (scores must be finite)", [False, False, True]),
    ("weight", [1.0, -1.0, 2.0], "negative, NaN or infinite weight", [False, True, False]),
    ("price", [1.0, 0.0, 2.0], "null, NaN, infinite or non-positive price", [False, True, False]),
    ("label", [0.0, 1.0, float("nan")], "NaN label", [False, False, True]),
])
def test_value_rules(role, values, problem, bad):
    assert [(p, m.tolist()) for p, m, _ in ct.value_problems(role, np.array(values))] == [(problem, bad)]


def test_nan_score_reads_the_same_in_memory_and_streamed(tmp_path):
    """The same rule, named by argument in memory and by file and column when streamed."""
    score = np.array([0.1, 0.4, np.nan, 0.8, np.nan])
    label = np.array([0, 0, 1, 1, 1], np.int8)
    with pytest.raises(mc.InputError) as memory:
        mc.binary_report(label, score)
    pq.write_table(pa.table({"label": label, "score": score}), tmp_path / "s.parquet")
    with pytest.raises(mc.InputError) as streamed:
        scan_stats(tmp_path / "s.parquet", "binary", batch_rows=3)
    assert str(memory.value).startswith("y_score: NaN score (scores must be finite) in 2 row(s), e.g. row 2 = nan.")
    assert re.search(r"s\.parquet: column 'score': NaN score \(scores must be finite\) in 2 row\(s\) of the file, "
                     r"e\.g\. row 2: label=1, score=nan\.", str(streamed.value))


@pytest.mark.parametrize("labels, classes, hint", [
    (["c", "a", "c"], ["A", "C"], "'c' differs from the class 'C' only in case or spaces"),
    (["milk ", "tea", "tea"], ["milk", "tea"], "'milk ' differs from the class 'milk' only in case or spaces"),
    (["coffee", "tea", "tea"], ["milk", "tea"], "Add the class to the class list"),  # no near class: the old hint
])
def test_a_label_outside_the_class_list_but_for_case_says_so(tmp_path, labels, classes, hint):
    """In memory and streamed (strings are not converted to numpy there: the hint reads the Arrow column)."""
    with pytest.raises(mc.InputError, match=re.escape(hint)):
        mc.multiclass_report(np.array(labels), np.array([classes[-1]] * 3), labels=classes)
    pq.write_table(pa.table({"label": labels}), tmp_path / "l.parquet")
    with pytest.raises(mc.InputError, match=re.escape(hint)):
        ct.check_batch(pq.read_table(tmp_path / "l.parquet"), tmp_path / "l.parquet", label="label", labels=classes)


def test_counts_of_bad_rows_have_thousands_separators():
    with pytest.raises(mc.InputError, match=r"NaN score \(scores must be finite\) in 1,500 row\(s\)"):
        mc.binary_report(np.zeros(3000, int), np.where(np.arange(3000) % 2, np.nan, 0.5))


def test_check_batch_order_and_file_count(tmp_path):
    path = tmp_path / "b.parquet"
    t = pa.table({"label": pa.array(["a", None, "q", "b"] * 3), "score_a": [0.5, 0.5, float("nan"), 0.1] * 3,
                  "w": [1.0, 1.0, 1.0, -2.0] * 3})
    pq.write_table(t, path)
    checks = dict(label="label", scores=["score_a"], weight="w", labels=["a", "b"])
    problems = [(p.column, p.problem) for p in ct.row_problems(t, path, **checks)]
    assert problems == [("label", "null label"), ("label", "label not in the class list ['a', 'b']"),
                        ("score_a", "NaN score (scores must be finite)"), ("w", "negative, NaN or infinite weight")]
    first = next(iter_batches(path, list(t.column_names), batch_rows=4))[1]
    with pytest.raises(mc.InputError) as err:
        ct.check_batch(first, path, **checks)
    assert "null label in 1 row(s) of this batch (rows 0-3 of the file), e.g. row 1: label=None" in str(err.value)
    assert err.value.bad_rows == ("label", "null label")
    whole = file_error(err.value, path, str(path), list(t.column_names), batch_rows=4, **checks)
    assert "null label in 3 row(s) of the file, e.g. row 1: label=None, score_a=0.5, w=1.0" in str(whole)


def test_price_errors_show_the_value(tmp_path):
    batch = pa.record_batch({"label": ["a", "b", "a"], "price": [2.0, -1.0, 3.0]})
    with pytest.raises(mc.InputError, match=r"f\.parquet: column 'price': null, NaN, infinite or non-positive price "
                                            r"in 1 row\(s\), e\.g\. row 11 = -1\.0 \(counted in the batch of rows "
                                            r"10-12 of the file; the row: label='b', price=-1\.0\)"):
        ct.check_batch(batch, "f.parquet", label="label", price="price", first_row=10)


def test_monitoring_scan_uses_the_same_checks(tmp_path):
    path = tmp_path / "m.parquet"
    pq.write_table(pa.table({"label": ["a", "b", "a", "b"], "prediction": ["a", "a", "c", "b"],
                             "score_a": [0.6, 0.7, 0.2, 0.1], "score_b": [0.4, 0.3, 0.8, 0.9]}), path)
    kw = dict(label="label", prediction="prediction", scores=["score_a", "score_b"], batch_rows=2)
    with pytest.raises(mc.InputError, match=r"column 'prediction': prediction not in the class list \['a', 'b'\] in "
                                            r"1 row\(s\) of the file, e\.g\. row 2: .*prediction='c'"):
        scan_period(path, "multiclass", ["a", "b"], Bins(), **kw)
    stats = scan_period(path, "multiclass", ["a", "b"], Bins(), **{**kw, "prediction": None})
    assert stats.pred_counts.tolist() == [2, 2]  # argmax of the scores


# ------------------------------------------------------------------------------------------------
# A monitored period's labelled sample: null labels, design weights
# ------------------------------------------------------------------------------------------------

def test_null_labels_are_unlabelled_rows_only_in_a_monitored_period(tmp_path):
    batch = pa.record_batch({"label": ["a", None, "b", None], "score": [0.2, 0.4, 0.9, 0.7]})
    ct.check_batch(batch, "d.parquet", label="label", labels=["a", "b"], partial_labels=True)  # no error
    with pytest.raises(mc.InputError, match=r"null label in 2 row\(s\).*a monitored period's delivery may carry "
                                            r"labels on a sample"):
        ct.check_batch(batch, "d.parquet", label="label", labels=["a", "b"])
    # a label outside the class list is still an error in a sample
    with pytest.raises(mc.InputError, match="label not in the class list"):
        ct.check_batch(pa.record_batch({"label": ["a", None, "z"]}), "d", label="label", labels=["a", "b"],
                       partial_labels=True)
    # the reference window of a monitoring scan (and an evaluation's scan) keep the error
    path = tmp_path / "ref.parquet"
    pq.write_table(pa.Table.from_batches([batch]), path)
    with pytest.raises(mc.InputError, match="null label in 2 row"):
        scan_period(path, "binary", ["a", "b"], label="label", scores=["score"])
    with pytest.raises(mc.InputError, match="null label in 2 row.*labelled samples"):
        quiet(scan_stats, path, "binary", ct.Columns(label="label", score="score"), labels=["a", "b"], pos_label="b")
    stats = scan_period(path, "binary", ["a", "b"], label="label", scores=["score"], partial_labels=True)
    assert stats.n_rows == 4 and stats.n_labelled == 2 and stats.performance.confusion.matrix.sum() == 2


@pytest.mark.parametrize("value, problem", [(0.0, "non-positive design weight"), (-2.0, "non-positive design weight"),
                                            (float("nan"), "NaN, infinite or non-positive"),
                                            (None, "null design_weight on a labelled row")])
def test_a_bad_design_weight_on_a_labelled_row_names_column_count_and_example(value, problem):
    batch = pa.record_batch({"label": ["a", "b", None, "a", "b"], "dw": pa.array([2.0, value, None, value, 4.0],
                                                                               pa.float64())})
    with pytest.raises(mc.InputError, match=re.escape(problem) + r".* in 2 row\(s\).*e\.g\. row 1: label='b'") as err:
        ct.check_batch(batch, "d.parquet", label="label", labels=["a", "b"], design_weight="dw", partial_labels=True)
    assert "column 'dw'" in str(err.value)
    # the unlabelled row's null is not read; unlabelled rows may carry anything there
    ct.check_batch(pa.record_batch({"label": ["a", None, None], "dw": [2.0, None, float("nan")]}), "d",
                   label="label", labels=["a", "b"], design_weight="dw", partial_labels=True)


def test_design_weights_are_not_read_from_a_reference_window():
    table = pa.table({"label": ["a", "b"], "score": [0.1, 0.9], "dw": [1.0, 2.0]})
    with pytest.raises(mc.InputError, match="design_weight: design weights belong to a monitored period"):
        scan_period(table, "binary", ["a", "b"], label="label", scores=["score"], design_weight="dw")
