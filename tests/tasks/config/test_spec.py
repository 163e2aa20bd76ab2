"""tasks.config.spec: the run spec loads from YAML and dicts, and a wrong spec names the field."""

from __future__ import annotations

import pytest
import yaml

from metrics_core import monitoring
from tasks.config.spec import AlertPolicy, RunSpec, SpecError, example_yaml, load_spec


def test_example_yaml_loads_and_resolves_paths_against_the_file(tmp_path):
    path = tmp_path / "conf" / "spec.yaml"
    path.parent.mkdir()
    path.write_text(example_yaml())
    spec = load_spec(path)
    assert spec.name == "price-classifier" and spec.task == "multiclass"
    assert spec.data.reference == str(path.parent / "data" / "reference.parquet")
    assert spec.data.current == str(path.parent / "data" / "deliveries" / "{period}.parquet")
    assert spec.columns.features == [] and spec.columns.price == "price"  # defaults spelt out


def test_defaults_match_the_documented_policy():
    policy = AlertPolicy()
    for key in ("alpha", "correction", "prevalence_change", "psi", "score_shift", "price_change", "metric_drop"):
        assert getattr(policy, key) == getattr(monitoring.POLICY, key), key


@pytest.mark.parametrize("raw, field, words", [
    ({"alerts": {"psi": -0.1}}, "alerts.psi", "greater than 0"),
    ({"task": "regression"}, "task", "'binary' or 'multiclass'"),
    ({"alert": {"psi": 0.2}}, "alert", "unknown field"),
    ({"columns": {"lable": "y"}}, "columns.lable", "unknown field"),
    ({"task": "binary", "labels": [0, 1, 2]}, "labels", "two classes"),
    ({"monitor": {"score_range": [1, 0]}}, "monitor.score_range", "low < high"),
    ({"task_runner": "spark"}, "task_runner", "Dask address"),
    ({"cost_matrix": [[0, 1], [1]]}, "cost_matrix", "square"),
])
def test_errors_name_the_field(raw, field, words):
    with pytest.raises(SpecError) as err:
        load_spec(raw)
    assert f"field '{field}'" in str(err.value)
    assert words in str(err.value)


def test_file_errors(tmp_path):
    with pytest.raises(SpecError, match="not found"):
        load_spec(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_spec(bad)
    bad.write_text("- a list\n")
    with pytest.raises(SpecError, match="mapping"):
        load_spec(bad)


def test_overrides_and_round_trip():
    spec = load_spec({"name": "m", "data": {"test": "t.parquet"}}, model_uri="models:/m/1", data={"current": "c"})
    assert spec.model_uri == "models:/m/1" and spec.data.test == "t.parquet" and spec.data.current == "c"
    again = load_spec(spec.model_dump(mode="json"))
    assert again == spec and again.fingerprint() == spec.fingerprint()
    assert load_spec(spec) == spec
    params = spec.flat_params()
    assert params["alerts.psi"] == "0.1" and params["data.current"] == "c"
    assert yaml.safe_load(yaml.safe_dump(spec.model_dump(mode="json"))) == spec.model_dump(mode="json")


def test_tracking_uri_default(monkeypatch, tmp_path):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    assert RunSpec().tracking_uri() == f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
    assert RunSpec().tracking_uri() == "http://127.0.0.1:5000"
    assert RunSpec(mlflow={"tracking_uri": "sqlite:///x.db"}).tracking_uri() == "sqlite:///x.db"


def test_fingerprint_hashes_what_decides_a_result_only():
    spec = load_spec({"name": "m", "task": "binary"})
    same = [load_spec({"name": "m", "task": "binary", "n_boot": spec.n_boot, "threshold": 0.5}),  # defaults spelt out
            load_spec({"name": "m", "task": "binary", "task_runner": "dask"}),
            load_spec({"name": "m", "task": "binary", "trigger": {"events": ["alias:challenger"]}})]
    assert {s.fingerprint() for s in same} == {spec.fingerprint()}
    changed = [load_spec({"name": "m", "task": "binary", "threshold": 0.7}),
               load_spec({"name": "m", "task": "binary", "alerts": {"alpha": 0.01}}),
               load_spec({"name": "n", "task": "binary"})]
    assert len({s.fingerprint() for s in changed} | {spec.fingerprint()}) == 4
