"""deployments/prefect.yaml and the served deployments agree: cron schedule, event trigger, templated parameters."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest
import yaml

from deployments.events import MODEL_TRAINED, build_trained_event
from deployments.serve import (DEFAULT_CRON, DEFAULT_SPEC, EVALUATE_DEPLOYMENT, MONITOR_DEPLOYMENT,
                               SCHEDULED_PERIOD, build_deployments, trained_trigger)

PREFECT_YAML = Path(__file__).parents[2] / "deployments" / "prefect.yaml"


@pytest.fixture(scope="module")
def config() -> dict:
    return yaml.safe_load(PREFECT_YAML.read_text())


@pytest.fixture(scope="module")
def by_name(config) -> dict:
    return {d["name"]: d for d in config["deployments"]}


def _flow(entrypoint: str):
    module, name = entrypoint.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def test_yaml_has_the_two_deployments_with_importable_flows(by_name):
    assert set(by_name) == {MONITOR_DEPLOYMENT, EVALUATE_DEPLOYMENT}
    assert _flow(by_name[MONITOR_DEPLOYMENT]["entrypoint"]).name == "monitor_period"
    assert _flow(by_name[EVALUATE_DEPLOYMENT]["entrypoint"]).name == "evaluate_model"
    for d in by_name.values():  # every parameter the yaml sets is one the flow takes
        flow = _flow(d["entrypoint"])
        accepted = set(inspect.signature(flow.fn).parameters)
        given = set(d["parameters"]) | {k for t in d.get("triggers", []) for k in t["parameters"]} | \
            {k for s in d.get("schedules", []) for k in s.get("parameters", {})}
        assert given <= accepted, given - accepted


def test_yaml_monitoring_runs_on_the_monthly_cron_for_the_previous_period(by_name):
    d = by_name[MONITOR_DEPLOYMENT]
    assert d["schedules"] == [{"cron": DEFAULT_CRON, "timezone": "UTC", "slug": "monthly",
                               "parameters": {"period": SCHEDULED_PERIOD}}]
    assert d["parameters"] == {"spec": DEFAULT_SPEC}


def test_yaml_evaluation_trigger_matches_the_served_one(by_name):
    (trigger,) = by_name[EVALUATE_DEPLOYMENT]["triggers"]
    served = trained_trigger(DEFAULT_SPEC)
    assert trigger["type"] == "event" and trigger["enabled"] is True
    assert set(trigger["expect"]) == served.expect == {MODEL_TRAINED}
    assert (trigger["posture"], trigger["threshold"], trigger["within"]) == ("Reactive", 1, 0)
    assert trigger["parameters"] == served.parameters
    assert trigger["parameters"]["model_uri"] == "{{ event.resource.id }}"


def test_served_deployments_have_schedule_trigger_and_module_entrypoints(tmp_path):
    spec = tmp_path / "classwatch.yaml"
    spec.write_text("name: m\ntask: binary\n")
    monitor, evaluate = build_deployments(spec, cron="0 5 3 * *", timezone="Europe/London")
    assert (monitor.flow_name, monitor.name) == ("monitor_period", MONITOR_DEPLOYMENT)
    (schedule,) = monitor.schedules
    assert (schedule.schedule.cron, schedule.schedule.timezone) == ("0 5 3 * *", "Europe/London")
    assert schedule.parameters == {"period": SCHEDULED_PERIOD} and schedule.active
    assert monitor.parameters == {"spec": str(spec.resolve())}
    assert monitor.entrypoint == "flows.monitor_period.monitor_period"
    assert (evaluate.flow_name, evaluate.name) == ("evaluate_model", EVALUATE_DEPLOYMENT)
    assert not evaluate.schedules
    (trigger,) = evaluate.triggers
    assert trigger.expect == {MODEL_TRAINED} and trigger.threshold == 1 and trigger.within.total_seconds() == 0
    assert trigger.parameters == trained_trigger(str(spec.resolve())).parameters
    assert evaluate.entrypoint == "flows.evaluate_model.evaluate_model"


def test_without_a_spec_only_the_evaluation_is_served():
    (only,) = build_deployments(None)
    assert only.name == EVALUATE_DEPLOYMENT and only.parameters == {}


def test_a_missing_spec_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="spec: .*nope.yaml.*--spec"):
        build_deployments(tmp_path / "nope.yaml")


def _render(parameters: dict, event) -> dict:
    """Render trigger parameters as the Prefect server's RunDeployment action does, through the public
    hydration kinds: a string that is one ``{{ expression }}`` becomes ``json`` of the expression
    ``| tojson`` (so None stays None and numbers stay numbers), other templates ``jinja``. The
    end-to-end trigger test covers the server itself."""
    from prefect.server.events.schemas.events import ReceivedEvent
    from prefect.utilities.schema_tools.hydration import HydrationContext, hydrate

    def wrap(value):
        text = value.strip()
        if text.startswith("{{") and text.endswith("}}") and text.count("{{") == 1:
            return {"__prefect_kind": "json",
                    "value": {"__prefect_kind": "jinja", "template": "{{ " + text[2:-2].strip() + " | tojson }}"}}
        return {"__prefect_kind": "jinja", "template": value}

    params = {k: wrap(v) if isinstance(v, str) and "{{" in v else v for k, v in parameters.items()}
    ctx = HydrationContext(render_jinja=True, raise_on_error=True,
                           jinja_context={"event": ReceivedEvent(**event.model_dump())})
    return hydrate(params, ctx)


@pytest.mark.parametrize("default_spec", [None, "/srv/specs/eval.yaml"])
def test_trigger_parameters_render_from_the_event_with_types_kept(tmp_path, default_spec):
    test = tmp_path / "test.parquet"
    test.write_bytes(b"")
    given = tmp_path / "given.yaml"
    given.write_text("name: m\n")
    params = trained_trigger(default_spec).parameters
    with_spec = _render(params, build_trained_event("models:/price/4", test, spec=given))
    assert with_spec == {"model_uri": "models:/price/4", "model_name": "price", "test_data": str(test),
                         "spec": str(given)}
    # No spec in the event: the deployment's default, or a real None (not the text "None").
    without = _render(params, build_trained_event("models:/price/4", test, model_name="other"))
    assert without["spec"] == default_spec and without["model_name"] == "other"
