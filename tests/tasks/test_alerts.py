"""tasks.alerts: deterministic event ids, tags, payload and markdown of a retraining alert."""

from __future__ import annotations

import json
import uuid
from types import SimpleNamespace

import pytest
from hypothesis import given, settings, strategies as hs

from metrics_core import drift, monitoring as mon
from tasks.alerts import (EVENT, alert_tags, artifact_key, event_id, logged_alert, payload, reasons_from_tags, resource,
                          verdict)
from tasks.render.markdown import alert_markdown


def decision(alert: bool) -> mon.Alert:
    k2 = 1500 if alert else 1010
    return mon.decide_alert({mon.TestKey("prevalence_pred", "wine"): drift.two_proportion_z(1000, 10000, k2, 10000)})


def test_event_id_is_uuid5_of_model_and_period():
    a = event_id("m", "2024-08")
    assert a == event_id("m", "2024-08") and a.version == 5 and isinstance(a, uuid.UUID)
    assert len({a, event_id("m", "2024-09"), event_id("n", "2024-08")}) == 3


def test_a_logged_periods_verdict_is_read_from_the_tags_alert_tags_wrote():
    """One reader of the verdict tag serves the period's result and the parent run's list of alert months."""
    from tasks.log import _parent_tags
    from tasks.monitor import History, PeriodResult
    from tasks.store.mlflow import RunSummary

    assert logged_alert(alert_tags(decision(True))) and not logged_alert(alert_tags(decision(False)))
    assert not logged_alert({}) and not logged_alert({"classwatch.alert": "Retrain"})
    assert [verdict(True, {"not_enough_labels": 1.0}), verdict(False, {"not_enough_labels": 1.0}),
            verdict(False, {"not_enough_labels": 0.0}), verdict(False, {})] == \
        ["retrain", "not enough labels to judge", "no alert", "no alert"]

    def run(alert: bool, enough: float) -> RunSummary:
        return RunSummary("r", "FINISHED", alert_tags(decision(alert)), {"not_enough_labels": enough}, "1")

    spec = SimpleNamespace(name="m")
    for alert, enough, said in ((True, 0.0, "retrain"), (False, 1.0, "not enough labels to judge"),
                                (False, 0.0, "no alert")):
        assert PeriodResult.from_run(spec, SimpleNamespace(tracking_uri="u", experiment="e"), "2024-08",
                                     run(alert, enough)).verdict == said
    periods = {"2024-08": run(True, 0.0), "2024-09": run(False, 1.0)}
    note = _parent_tags(spec, SimpleNamespace(period="2024-10", reference="ref"),
                        History("2024-10", "p", "p|2024-10", None, periods), False)["mlflow.note.content"]
    assert "alerts in 2024-08 (1)" in note and "2024-08 to 2024-10" in note
    # each month links to its run in the "Model training" view of the MLflow UI
    linked = _parent_tags(spec, SimpleNamespace(period="2024-10", reference="ref"),
                          History("2024-10", "p", "p|2024-10", None, periods), False, "r10", "3")["mlflow.note.content"]
    assert ("2024-08 to 2024-10: [2024-08 ALERT](#/experiments/3/runs/r?workflowType=machine_learning), "
            "[2024-09](#/experiments/3/runs/r?workflowType=machine_learning), "
            "[2024-10](#/experiments/3/runs/r10?workflowType=machine_learning);") in linked
    assert "(2024-08 is 202408;" in linked


def test_tags_payload_markdown():
    yes, no = decision(True), decision(False)
    assert alert_tags(no) == {"classwatch.alert": "none", "alert reasons": "none"}
    tags = alert_tags(yes)
    assert tags["classwatch.alert"] == "retrain" and "prevalence of 'wine'" in tags["alert reasons"]
    assert reasons_from_tags(tags) == yes.reasons and reasons_from_tags(alert_tags(no)) == ()
    body = payload("m", "2024-08", yes, "run1", "sqlite:///x.db")
    assert json.loads(json.dumps(body)) == body
    assert body["period"] == "2024-08" and body["reasons"] == yes.texts and body["reason"] == yes.texts[0]
    assert body["figures"]["prevalence_pred:wine"] == pytest.approx(0.05) and "mlflow_run_url" not in body
    url = payload("m", "2024-08", yes, "run1", "http://127.0.0.1:5000/", "7")["mlflow_run_url"]
    assert url == "http://127.0.0.1:5000/#/experiments/7/runs/run1?workflowType=machine_learning"
    text = alert_markdown("m", "2024-08", yes, "run1", "sqlite:///x.db")
    assert "# Retraining alert: m, 2024-08" in text and "| prevalence_pred:wine | 0.05 |" in text
    served = alert_markdown("m", "2024-08", yes, "run1", "http://127.0.0.1:5000", "7")
    assert served.splitlines()[-1] == ("MLflow run: [run1](http://127.0.0.1:5000/#/experiments/7/runs/run1"
                                       "?workflowType=machine_learning)")
    assert resource("m") == {"prefect.resource.id": "classwatch.model.m", "prefect.resource.name": "m"}
    assert EVENT == "classwatch.alert.retrain"
    assert artifact_key("M_1", "2024-08") == "classwatch-alert-m-1-2024-08"


def test_a_segments_reason_is_named_in_the_tags_the_records_and_the_event():
    from metrics_core import drift
    from metrics_core.monitoring import TestKey, decide_alert
    from tasks.alerts import RECORDS_TAG, SEGMENTS_TAG, alert_tags, payload, reasons_from_tags

    key = TestKey("prevalence_pred", "tea", ("retailer", "shop_07"))
    decision = decide_alert({key: drift.two_proportion_z(100, 1000, 300, 1000)})
    tags = alert_tags(decision)
    assert tags[SEGMENTS_TAG] == "retailer=shop_07"
    assert tags["alert reasons"].startswith("retailer=shop_07: prevalence of 'tea' (predictions) rose")
    assert reasons_from_tags({RECORDS_TAG: tags[RECORDS_TAG]})[0].key == key
    sent = payload("m", "2024-08", decision, None, None)
    assert sent["segments"] == ["retailer=shop_07"] and sent["reason"].startswith("retailer=shop_07: ")
    assert "prevalence_pred:tea@retailer=shop_07" in sent["figures"]


@settings(max_examples=80, deadline=None)
@given(hs.lists(hs.integers(1, 400), max_size=60), hs.integers(0, 60), hs.sampled_from([-1, 0, 1]))
def test_the_records_tag_holds_the_most_first_reasons_that_fit(monkeypatch_limit, lengths, first, off):
    """As many of the strongest (first) reasons as fit the limit, each encoded once: the text the
    obvious loop gives (dump the list, drop the last reason until it fits), on both sides of the
    limit (a limit of exactly the first reasons' text, one less, one more)."""
    import tasks.alerts as alerts

    reasons = [mon.Reason(mon.TestKey("prevalence_pred", "c" * n), 0.2, 0.02, 1e-9, 0.1, 0.3) for n in lengths]
    limit = max(2, len(json.dumps([r.to_dict() for r in reasons[:first]], separators=(",", ":"))) + off)
    monkeypatch_limit(alerts, "REASONS_LIMIT", limit)
    records = [r.to_dict() for r in reasons]
    while records and len(json.dumps(records, separators=(",", ":"))) > limit:
        records.pop()
    text = alerts._records(reasons)
    assert text == json.dumps(records, separators=(",", ":")) and len(text) <= max(limit, 2)
    assert reasons_from_tags({alerts.RECORDS_TAG: text}) == tuple(reasons[:len(records)])


@pytest.fixture(scope="module")
def monkeypatch_limit():
    """setattr for a hypothesis test (a function-scoped monkeypatch is not reset between its examples)."""
    with pytest.MonkeyPatch.context() as mp:
        yield mp.setattr
