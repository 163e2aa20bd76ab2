"""metrics_core.monitoring.scan_period: its batches go through the dataset's one batch loop; a row of
weight 0 names no class."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metrics_core import monitoring as mon
from metrics_core.errors import InputError

COLUMNS = dict(label="label", prediction="prediction", weight="weight")


def _rows(n: int = 3_000, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    classes = np.array(["a", "b", "c"])
    y = rng.integers(0, 3, n)
    pred = np.where(rng.random(n) < 0.8, y, rng.integers(0, 3, n))
    s = rng.dirichlet(np.ones(3), n)
    return pa.table({"label": classes[y], "prediction": classes[pred], "weight": rng.random(n) * 10,
                     "price": np.exp(rng.normal(0, 1, n)), **{f"score_{c}": s[:, j] for j, c in enumerate(classes)}})


@pytest.mark.parametrize("in_memory", [False, True])
def test_a_row_of_weight_zero_outside_the_class_list_is_no_row(tmp_path, in_memory):
    """As in memory and in the evaluation scans: validated, then left out; it is no new class either."""
    table = pa.table({"label": ["a", "b", "x", "a"], "prediction": ["a", "b", "y", "b"],
                      "weight": [1.0, 1.0, 0.0, 2.0]})
    path = tmp_path / "ref.parquet"
    pq.write_table(table, path)
    source = table if in_memory else path
    for open_classes in (False, True):
        stats = mon.scan_period(source, "multiclass", ["a", "b"], **COLUMNS, open_classes=open_classes)
        assert stats.n_rows == 3 and stats.label_counts.tolist() == [2, 1] and stats.new_classes == {}
    # a row of weight 0 inside the class list is still a monitored row (weight is expenditure here)
    kept = mon.scan_period(source, "multiclass", ["a", "b", "x", "y"], **COLUMNS)
    assert kept.n_rows == 4
    positive = table.set_column(2, "weight", pa.array([1.0, 1.0, 0.5, 2.0]))
    pq.write_table(positive, path)
    with pytest.raises(InputError, match=r"column 'label': label not in the class list \['a', 'b'\] in 1 row"):
        mon.scan_period(positive if in_memory else path, "multiclass", ["a", "b"], **COLUMNS)


def test_the_statistics_do_not_depend_on_the_threads_and_progress_counts_every_batch(tmp_path):
    path = tmp_path / "p.parquet"
    pq.write_table(_rows(), path, row_group_size=500)
    kw = dict(**COLUMNS, price="price", scores=["score_a", "score_b", "score_c"], batch_rows=400)
    one = mon.scan_period(path, "multiclass", ["a", "b", "c"], threads=1, **kw)
    seen: list[int] = []
    three = mon.scan_period(path, "multiclass", ["a", "b", "c"], threads=3, progress=seen.append, **kw)
    assert repr(one) == repr(three) and one.n_rows == 3_000
    assert sum(seen) == 3_000 and len(seen) > 1 and max(seen) <= 400


def test_a_bad_row_is_named_by_file_and_counted_over_the_file_on_threads(tmp_path):
    table = _rows(1_000)
    weight = table["weight"].to_numpy().copy()
    weight[[150, 900]] = -1.0
    pq.write_table(table.set_column(2, "weight", pa.array(weight)), tmp_path / "bad.parquet")
    with pytest.raises(InputError, match=r"bad\.parquet: column 'weight': negative, NaN or infinite weight in 2 "
                                         r"row\(s\) of the file, e\.g\. row 150"):
        mon.scan_period(tmp_path / "bad.parquet", "multiclass", ["a", "b", "c"], **COLUMNS, batch_rows=100,
                        threads=2)
