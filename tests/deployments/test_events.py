"""deployments/events.py: the classwatch.model.trained event a training job sends."""

from __future__ import annotations

import uuid

import pytest

from deployments.events import MODEL_TRAINED, build_trained_event, model_name_from_uri, notify_trained


@pytest.mark.parametrize("uri, name", [
    ("models:/price-classifier/3", "price-classifier"),
    ("models:/price-classifier@champion", "price-classifier"),
    ("models:/price-classifier/latest", "price-classifier"),
    ("runs:/0a1b2c/model", "model"),
    ("/abs/path/to/model/", "model"),
])
def test_model_name_from_uri(uri, name):
    assert model_name_from_uri(uri) == name


def test_event_has_the_model_uri_as_resource_and_an_absolute_test_path(tmp_path, monkeypatch):
    (tmp_path / "test.parquet").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    eid = uuid.uuid4()
    event = build_trained_event("models:/m/2", "test.parquet", extra={"train_run": "abc"}, event_id=eid)
    assert event.event == MODEL_TRAINED and event.id == eid
    assert event.resource.id == "models:/m/2" and event.resource["classwatch.model.name"] == "m"
    assert event.payload == {"train_run": "abc", "model_uri": "models:/m/2", "model_name": "m",
                             "test_data": str(tmp_path / "test.parquet"), "spec": ""}


def test_uris_pass_unchanged():
    event = build_trained_event("runs:/r/model", "s3://bucket/test.parquet", model_name="price")
    assert event.payload["test_data"] == "s3://bucket/test.parquet" and event.payload["model_name"] == "price"


@pytest.mark.parametrize("uri, test_data, match", [
    ("", "s3://b/t.parquet", "model_uri: empty"),
    ("models:/m/1", "no/such/test.parquet", "test_data: 'no/such/test.parquet' does not exist"),
])
def test_bad_arguments_say_what_to_pass(uri, test_data, match):
    with pytest.raises((ValueError, FileNotFoundError), match=match):
        build_trained_event(uri, test_data)


def test_without_a_prefect_server_nothing_is_silently_dropped(tmp_path):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        with pytest.raises(RuntimeError, match="PREFECT_API_URL is not set"):
            notify_trained("models:/m/1", "s3://b/t.parquet")


def test_an_unreachable_server_is_an_error_naming_it():
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        with pytest.raises(RuntimeError, match=r"Could not send classwatch.model.trained .*127.0.0.1:9"):
            notify_trained("models:/m/1", "s3://b/t.parquet", reconnection_attempts=0)
