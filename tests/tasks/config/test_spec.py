"""tasks.config.spec: the run spec loads from YAML and dicts, and a wrong spec names the field."""

from __future__ import annotations

import dataclasses

import pytest
import yaml
from pydantic import ValidationError

from metrics_core import monitoring
from metrics_core.errors import InputError
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
    ({"task_runner": "spark://x"}, "task_runner", "Dask address"),  # a Spark master needs its port
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


# ---------------------------------------------------------------- the alert policy, declared once in metrics_core
#: The bounds of the policy's fields, as the run spec has always validated them (calibration_change:
#: an expected calibration error, a fraction of rows).
BOUNDS = {"alpha": {"gt": 0, "lt": 1}, "correction": {}, "prevalence_change": {"gt": 0, "lt": 1}, "psi": {"gt": 0},
          "score_shift": {"gt": 0, "lt": 1}, "calibration_change": {"gt": 0, "lt": 1}, "price_change": {"gt": 0},
          "metric_drop": {"ge": 0}, "metric_floor": {}, "level": {"gt": 0, "lt": 1}, "feature_shift": {"gt": 0},
          "feature_psi": {"gt": 0}, "feature_unseen": {"gt": 0, "lt": 1}, "feature_auroc": {"gt": 0.5, "le": 1}}


def test_calibration_change_is_a_spec_field_and_reaches_the_policy():
    """docs/alerts.md: every threshold can be set in ``alerts:``; calibration_change was rejected as unknown."""
    spec = RunSpec(alerts={"calibration_change": 0.1})
    policy = monitoring.AlertPolicy.of(spec.alerts)
    assert spec.alerts.calibration_change == 0.1 and policy.calibration_change == 0.1
    assert policy.threshold("calibration") == 0.1 and AlertPolicy().calibration_change == 0.05
    # an 8-point calibration change alerts under the default 0.05, not under the spec's 0.1
    from metrics_core.significance import TestResult

    test = {monitoring.TestKey("calibration", "tea"): TestResult("calibration change", 40.0, 1e-6, 0.08, "ECE",
                                                                 "significant", 0.05, None, {})}
    assert monitoring.decide_alert(test).alert and not monitoring.decide_alert(test, spec.alerts).alert


def _spec_bounds(name: str) -> dict:
    """The bounds pydantic enforces on a field of the spec's model (read from its JSON schema)."""
    schema = AlertPolicy.model_json_schema()["properties"][name]
    words = {"exclusiveMinimum": "gt", "minimum": "ge", "exclusiveMaximum": "lt", "maximum": "le"}
    return {words[k]: v for k, v in schema.items() if k in words}


def test_the_spec_model_and_the_policy_dataclass_have_the_same_fields_defaults_and_bounds():
    names = [f.name for f in dataclasses.fields(monitoring.AlertPolicy)]
    assert list(AlertPolicy.model_fields) == names == list(BOUNDS)
    assert AlertPolicy().model_dump() == dataclasses.asdict(monitoring.POLICY)
    assert AlertPolicy.__name__ == "AlertPolicy" and AlertPolicy.model_config["extra"] == "forbid"
    with pytest.raises(ValidationError):  # frozen
        AlertPolicy().psi = 0.3
    for name, bounds in BOUNDS.items():
        assert _spec_bounds(name) == bounds == {k: v for k, v in next(
            f for f in monitoring.POLICY_FIELDS if f.name == name).bounds.items()}, name


@pytest.mark.parametrize("name, value", [
    ("alpha", 0.0), ("alpha", 1.0), ("prevalence_change", 0.0), ("prevalence_change", 1.0), ("psi", 0.0),
    ("score_shift", 1.0), ("calibration_change", 0.0), ("calibration_change", 1.0), ("price_change", -1e-9),
    ("metric_drop", -1e-9), ("level", 0.0), ("level", 95), ("psi", float("nan")), ("correction", "BH"),
    ("psi", "a lot"),
])
def test_a_value_out_of_bounds_is_rejected_by_the_spec_and_by_the_policy(name, value):
    with pytest.raises(SpecError, match=f"field 'alerts.{name}'"):
        load_spec({"alerts": {name: value}})
    with pytest.raises(InputError, match=f"alert policy: field '{name}' must be"):
        monitoring.AlertPolicy.of({name: value})


@pytest.mark.parametrize("name, value", [("alpha", 1e-9), ("metric_drop", 0.0), ("psi", 5.0), ("level", "0.9"),
                                         ("correction", "holm"), ("metric_floor", -2.0), ("price_change", 3)])
def test_a_value_in_bounds_is_accepted_by_both_alike(name, value):
    assert getattr(load_spec({"alerts": {name: value}}).alerts, name) == \
        getattr(monitoring.AlertPolicy.of({name: value}), name)


def _laughs(levels: int, width: int = 9) -> str:
    """A "billion laughs" YAML: each level a list of ``width`` aliases of the level below."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + f"\nlabels: *l{levels - 1}\n"


def test_nested_yaml_aliases_are_refused_before_they_are_expanded(tmp_path):
    """Seven levels of nine aliases expand to 4.8 million values in 600 bytes of YAML; validating and
    describing them built the expansion in memory (nine levels: 3 GB in 20 s). The spec is refused by
    counting, which stops at the limit."""
    import time

    from tasks.config.spec import MAX_SPEC_NODES, expanded_size

    path = tmp_path / "laughs.yaml"
    path.write_text(_laughs(7))
    assert len(path.read_bytes()) < 1000
    t0 = time.perf_counter()
    with pytest.raises(SpecError, match="more than 100,000 values once its YAML aliases"):
        load_spec(path)
    assert time.perf_counter() - t0 < 2.0
    raw = yaml.safe_load(_laughs(3))
    assert expanded_size(raw["labels"]) == 1 + 9 + 81 + 729  # the lists and the strings, as expanded
    assert expanded_size(yaml.safe_load(_laughs(9))) == MAX_SPEC_NODES + 1  # it stops counting there


def test_the_message_of_a_bad_spec_is_bounded_whatever_the_input():
    """Every bad value is shown in at most 80 characters and at most ten error lines are listed: a
    spec with 5,000 bad class names gave 10,000 lines (neither a text nor a number, each), and a
    value's whole repr was built first."""
    from tasks.config.spec import MAX_SPEC_ERRORS, shown

    with pytest.raises(SpecError) as err:
        load_spec({"labels": [{"bad": "x" * 100_000}] * 5000})
    text = str(err.value)
    lines = text.splitlines()
    assert len(lines) == 1 + MAX_SPEC_ERRORS + 1 and lines[-1] == f"  and {2 * 5000 - MAX_SPEC_ERRORS} more"
    assert "field 'labels.0.str'" in lines[1] and len(text) < 3000
    deep: list = []
    for _ in range(500):
        deep = [deep, "x" * 10_000]
    assert len(shown(deep)) <= 80 and len(shown("y" * 10**7)) == 60


def test_a_huge_spec_file_is_refused_before_it_is_read(tmp_path):
    from tasks.config.spec import MAX_SPEC_BYTES

    path = tmp_path / "big.yaml"
    path.write_text("name: m\ncontext: " + "x" * MAX_SPEC_BYTES + "\n")
    with pytest.raises(SpecError, match=r"is 1\.0 MiB; a run spec is at most 1 MiB") as err:
        load_spec(path)
    assert len(str(err.value)) < 400
    path.write_text("labels: " + "[" * 1200 + "]" * 1200 + "\n")
    with pytest.raises(SpecError, match="too deeply"):
        load_spec(path)
