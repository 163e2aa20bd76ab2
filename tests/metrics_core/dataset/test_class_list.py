"""metrics_core.dataset.resolve_class_list: the one class-list rule, on a table in memory and on a file."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metrics_core.contract import Columns
from metrics_core.dataset import class_labels, resolve_class_list
from metrics_core.errors import InputError

WEIGHTED = Columns(weight="weight")


@pytest.fixture(params=["memory", "parquet"])
def source_of(request, tmp_path):
    """A table as given (in memory), or written to a Parquet file and read in a streamed pass."""
    def make(table: pa.Table):
        if request.param == "memory":
            return table, "reference"
        path = tmp_path / "ref.parquet"
        pq.write_table(table, path, row_group_size=2)
        return str(path), "ref.parquet"
    return make


def test_rows_of_weight_zero_and_null_labels_name_no_class_and_a_null_weight_is_a_row(source_of):
    table = pa.table({"label": ["b", "a", "zero", None, "null weight", "b"],
                      "prediction": ["b", "a", "a", "a", "a", "pred"],
                      "weight": [1.0, 2.0, 0.0, 1.0, None, 1.0],
                      "score_a": [0.5] * 6, "score_s": [0.5] * 6})
    source, _ = source_of(table)
    got = resolve_class_list(source, "multiclass", WEIGHTED, batch_rows=2)
    # sorted: labels and predictions of the rows that count, and the classes of the score columns
    assert got == ["a", "b", "null weight", "pred", "s"]
    # without the weight column every row counts
    assert "zero" in resolve_class_list(source, "multiclass", Columns(weight=None))


def test_a_class_list_given_is_checked_not_read(source_of):
    source, _ = source_of(pa.table({"label": ["a", "b", "c"]}))
    assert resolve_class_list(source, "multiclass", labels=["c", "x", "a"]) == ["c", "x", "a"]
    with pytest.raises(InputError, match=r"column 'label': the class list has duplicates: \['a', 'a'\]"):
        resolve_class_list(source, "multiclass", labels=["a", "a"])
    assert resolve_class_list(source, "binary", labels=["a", "c"], positive_class="a") == ["c", "a"]


def test_a_binary_class_held_only_by_rows_of_weight_zero_is_not_a_third_class(source_of):
    source, _ = source_of(pa.table({"label": ["no", "yes", "maybe"], "score": [0.1, 0.9, 0.5],
                                    "weight": [1.0, 1.0, 0.0]}))
    assert resolve_class_list(source, "binary", WEIGHTED, positive_class="yes") == ["no", "yes"]
    with pytest.raises(InputError, match=r"found 3: \['maybe', 'no', 'yes'\]"):
        resolve_class_list(source, "binary", Columns(weight=None), positive_class="yes")


def test_a_third_binary_class_of_positive_weight_says_where_each_class_is(source_of):
    table = pa.table({"label": [0, 1, 0, 5, 1, 2, 0], "prediction": [0, 1, 1, 0, 1, 1, 7],
                      "weight": [1.0, 1.0, 1.0, 0.0, 1.0, 3.0, 1.0]})
    source, name = source_of(table)
    of = "" if name == "reference" else " of ref.parquet"
    expected = (rf"column 'label': a binary evaluation needs at most two classes, found 4: \[0, 1, 2, 7\]\. .* "
                rf"Where they are: 0 in 3 row\(s\) of column 'label' \(first: row 0{of}\); "
                rf"1 in 2 \(first: row 1{of}\); "
                rf"2 in 1 \(first: row 5{of}\); 7 in 1 row\(s\) of column 'prediction' \(first: row 6{of}\)\.$")
    with pytest.raises(InputError, match=expected) as err:
        resolve_class_list(source, "binary", WEIGHTED, where="reference" if name == "reference" else None)
    assert str(err.value).startswith(f"{'reference' if name == 'reference' else source}: column 'label'")
    assert "5 in" not in str(err.value)  # the class of the row of weight 0 is nowhere


def test_without_a_label_column_the_predictions_give_the_classes(source_of):
    source, _ = source_of(pa.table({"prediction": ["b", "a", "b"], "score_a": [0.5] * 3, "score_b": [0.5] * 3}))
    assert resolve_class_list(source, "multiclass") == ["a", "b"]
    source, _ = source_of(pa.table({"other": [1, 2]}))
    with pytest.raises(InputError, match=r"missing column 'label' \(label\).*prediction column 'prediction'"):
        resolve_class_list(source, "multiclass")


def test_an_empty_selection_has_no_classes(tmp_path):
    import pyarrow.dataset as pads

    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"label": ["a", "b"], "period": ["2024-01", "2024-01"]}), path)
    with pytest.raises(InputError, match="no class values under the filter"):
        resolve_class_list(str(path), "multiclass", filter=pads.field("period") == "2024-02")
    assert class_labels(str(path), filter=pads.field("period") == "2024-01").tolist() == ["a", "b"]


def test_values_found_by_a_map_over_partitions_follow_the_same_rule(tmp_path):
    """The Dask flow maps class_labels over partitions (without score classes) and finishes the list here."""
    import pyarrow.dataset as pads

    from metrics_core.dataset import parts_of

    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"label": ["b", "a", "b", "d"], "score_a": [1.0] * 4, "score_c": [0.0] * 4}), path,
                   row_group_size=2)
    parts = parts_of(str(path), target_rows=2)
    found = {v for part in parts for v in class_labels(str(path), parts=[part], with_scores=False).tolist()}
    assert resolve_class_list(str(path), "multiclass", found=found) == ["a", "b", "c", "d"] \
        == resolve_class_list(str(path), "multiclass")
    with pytest.raises(InputError, match="no class values under the filter"):
        resolve_class_list(pa.table({"label": ["a"]}), "multiclass", found=[], filter=pads.field("label") == "z")
