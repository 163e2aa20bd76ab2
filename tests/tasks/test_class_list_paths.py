"""The monitor_period flow and the notebook API resolve the class list of one reference alike
(metrics_core.dataset.resolve_class_list): a class held only by rows of weight 0 is no class."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metrics_core.monitoring import assess_period
from tasks import monitor
from tasks.config.spec import load_spec


@pytest.fixture
def reference():
    """A reference whose class 'c' is only on a row of weight 0."""
    return pa.table({"label": ["a", "b", "a", "c", "b", "a"], "prediction": ["a", "b", "b", "a", "b", "a"],
                     "weight": [1.0, 2.0, 1.0, 0.0, 1.0, 1.0]})


def test_the_flow_and_the_notebook_api_find_the_same_classes_in_a_weighted_reference(tmp_path, reference):
    ref, cur = tmp_path / "ref.parquet", tmp_path / "cur.parquet"
    pq.write_table(reference, ref)
    pq.write_table(reference, cur)
    spec = load_spec({"data": {"reference": str(ref), "current": str(cur)}, "columns": {"weight": "weight"}})
    plan = monitor.plan_period.fn(spec, "2024-01")  # what the flow resolves before reading rows
    flow = monitor.scan_source_stats.fn(spec, plan.reference, plan.ref_layout)  # the flow's pass over the reference
    notebook = assess_period(reference, reference, columns={"weight": "weight"}, report_options={"n_boot": 0})
    assert plan.labels == ["a", "b"]
    assert flow.labels.tolist() == notebook.reference.labels.tolist() == ["a", "b"]
    # the row of weight 0 names no class and counts nowhere, in both paths
    assert flow.n_rows == notebook.reference.n_rows == 5
    assert flow.label_counts.tolist() == notebook.reference.label_counts.tolist() == [3, 2]
