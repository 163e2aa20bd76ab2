"""deployments/webhooks.py: MLflow webhook signatures, replay and duplicate rejection, over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import stat
import time
import urllib.error
import urllib.request
import uuid

import pytest

from deployments import webhooks as wh
from deployments.events import MODEL_TRAINED

SECRET = "s3cret-shared-with-mlflow"


@pytest.fixture
def spec(tmp_path):
    (tmp_path / "test.parquet").write_bytes(b"")
    path = tmp_path / "classwatch.yaml"
    path.write_text("name: price\ntask: binary\ndata:\n  test: test.parquet\n"
                    "trigger:\n  models: [price, price-v2]\n  events: [new_version, 'alias:challenger']\n")
    return path


class Sink:
    """Where the listener's events go in these tests (the e2e test sends them to a real Prefect server)."""

    def __init__(self) -> None:
        self.events, self.fail = [], False

    def __call__(self, event) -> None:
        if self.fail:
            raise ConnectionError("Prefect server down")
        self.events.append(event)


@pytest.fixture
def listener(spec):
    sink = Sink()
    with wh.WebhookListener(str(spec), port=0, secret=lambda: SECRET, emit=sink) as lst:
        lst.sink = sink
        yield lst


def body_of(entity="model_version", name="price", version="3", **data) -> bytes:
    payload = {"entity": entity, "action": "created", "timestamp": "2026-11-24T13:00:00+00:00",
               "data": {"name": name, "version": version, "source": "models:/m-1", "run_id": "r1", **data}}
    return json.dumps(payload).encode()


def post(url, body: bytes, secret: str | None = SECRET, delivery_id: str | None = None, stamp: int | None = None,
         signature: str | None = None):
    delivery_id = delivery_id or str(uuid.uuid4())
    stamp = str(int(time.time()) if stamp is None else stamp)
    headers = {"Content-Type": "application/json", wh.DELIVERY_ID_HEADER: delivery_id, wh.TIMESTAMP_HEADER: stamp}
    if signature is not None:
        headers[wh.SIGNATURE_HEADER] = signature
    elif secret is not None:
        headers[wh.SIGNATURE_HEADER] = wh.sign(secret, delivery_id, stamp, body)
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_signature_is_exactly_mlflows():
    from mlflow.webhooks.delivery import _generate_hmac_signature

    body = body_of()
    assert wh.sign(SECRET, "d-1", "1764000000", body) == _generate_hmac_signature(SECRET, "d-1", "1764000000",
                                                                                   body.decode())


def test_signed_new_version_becomes_a_trained_event(listener, spec, tmp_path):
    status, reply = post(listener.url, body_of(version="3"), delivery_id="d-ok")
    assert (status, reply["status"], reply["model_uri"]) == (202, "accepted", "models:/price/3")
    [event] = listener.sink.events
    assert event.event == MODEL_TRAINED and event.resource.id == "models:/price/3"
    assert event.id == uuid.uuid5(uuid.NAMESPACE_URL, "classwatch/mlflow-webhook/d-ok")
    assert event.payload["test_data"] == str(tmp_path / "test.parquet")
    assert event.payload["spec"] == str(spec) and event.payload["model_name"] == "price"
    assert (event.payload["source"], event.payload["trigger"], event.payload["run_id"]) == \
        ("mlflow-webhook", "new_version", "r1")


def test_alias_in_the_spec_pins_the_version(listener):
    body = body_of("model_version_alias", name="price-v2", version="7", alias="challenger")
    assert post(listener.url, body)[0] == 202
    assert [e.resource.id for e in listener.sink.events] == ["models:/price-v2/7"]
    assert listener.sink.events[0].payload["trigger"] == "alias:challenger"


@pytest.mark.parametrize("body, reason", [
    (body_of(name="other-model"), "not in the spec's trigger.models"),
    (body_of("model_version_alias", alias="champion"), "alias:champion is not in the spec's trigger.events"),
    (json.dumps({"entity": "registered_model", "action": "created", "data": {"name": "price"}}).encode(),
     "not a new model version"),
])
def test_verified_but_unwanted_deliveries_start_nothing(listener, body, reason):
    status, reply = post(listener.url, body)
    assert (status, reply["status"]) == (200, "ignored") and reason in reply["reason"]
    assert listener.sink.events == []


@pytest.mark.parametrize("kwargs, reason", [
    ({"secret": None}, "unsigned delivery: missing X-MLflow-Signature"),
    ({"secret": "not-the-secret"}, "wrong signature"),
    ({"signature": "v1,AAAA"}, "wrong signature"),
    ({"signature": ""}, "unsigned delivery"),
    ({"age": wh.REPLAY_WINDOW_S + 60}, "stale delivery"),
    ({"age": -wh.REPLAY_WINDOW_S - 60}, "stale delivery"),  # from the future
])
def test_unsigned_forged_or_stale_deliveries_get_401_and_start_nothing(listener, kwargs, reason, capsys):
    kwargs = dict(kwargs)
    if "age" in kwargs:  # stamped when the request is sent, not when the tests were collected
        kwargs["stamp"] = int(time.time()) - kwargs.pop("age")
    status, reply = post(listener.url, body_of(), **kwargs)
    assert (status, reply["status"]) == (401, "rejected") and reason in reply["reason"]
    assert listener.sink.events == []
    assert "rejected (HTTP 401)" in capsys.readouterr().err


def test_a_tampered_body_fails_the_signature(listener):
    delivery_id, stamp = "d-t", int(time.time())
    signature = wh.sign(SECRET, delivery_id, str(stamp), body_of(version="3"))
    status, _ = post(listener.url, body_of(version="4"), delivery_id=delivery_id, stamp=stamp, signature=signature)
    assert status == 401 and listener.sink.events == []


def test_a_repeated_delivery_id_is_rejected(listener):
    body, stamp = body_of(), int(time.time())
    assert post(listener.url, body, delivery_id="d-rep", stamp=stamp)[0] == 202
    status, reply = post(listener.url, body, delivery_id="d-rep", stamp=stamp)
    assert status == 409 and "repeated delivery" in reply["reason"]
    assert len(listener.sink.events) == 1


def test_prefect_down_gives_503_and_mlflows_retry_goes_through(listener):
    body, stamp = body_of(), int(time.time())
    listener.sink.fail = True
    assert post(listener.url, body, delivery_id="d-retry", stamp=stamp)[0] == 503
    listener.sink.fail = False
    assert post(listener.url, body, delivery_id="d-retry", stamp=stamp)[0] == 202
    assert len(listener.sink.events) == 1


def test_no_secret_configured_rejects_everything(spec):
    sink = Sink()
    with wh.WebhookListener(str(spec), port=0, secret=lambda: None, emit=sink) as lst:
        status, reply = post(lst.url, body_of())
    assert status == 401 and "classwatch hooks setup" in reply["reason"] and sink.events == []


def test_wrong_path_is_404(listener):
    assert post(listener.url.replace(wh.PATH, "/other"), body_of())[0] == 404


def test_remembered_delivery_ids_are_bounded():
    guard = wh.DeliveryGuard(lambda: SECRET, max_seen=3)
    stamp = str(int(time.time()))
    for i in range(10):
        body = body_of(version=str(i))
        guard.verify({wh.DELIVERY_ID_HEADER: f"d{i}", wh.TIMESTAMP_HEADER: stamp,
                      wh.SIGNATURE_HEADER: wh.sign(SECRET, f"d{i}", stamp, body)}, body)
    assert list(guard._seen) == ["d7", "d8", "d9"]


def test_hook_file_is_private_and_read_back(tmp_path, monkeypatch):
    path = tmp_path / "home" / "hook.json"
    monkeypatch.setenv(wh.SECRET_FILE_ENV, str(path))
    assert wh.secret_file() == path and wh.read_hook_file() is None
    wh.write_hook_file({"secret": "abc", "webhook_id": "w1"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert wh.read_hook_file()["secret"] == "abc"


def test_mlflow_server_env_keeps_one_private_fernet_key(tmp_path):
    from cryptography.fernet import Fernet

    env = wh.mlflow_server_env(tmp_path, {})
    assert env["MLFLOW_WEBHOOK_ALLOWED_SCHEMES"] == "http,https" and env["MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS"] == "true"
    Fernet(env["MLFLOW_WEBHOOK_SECRET_ENCRYPTION_KEY"].encode())  # a valid key
    assert stat.S_IMODE((tmp_path / ".classwatch-webhook-key").stat().st_mode) == 0o600
    assert wh.mlflow_server_env(tmp_path, {}) == env  # stable across restarts
    mine = wh.mlflow_server_env(tmp_path, {"MLFLOW_WEBHOOK_SECRET_ENCRYPTION_KEY": "k", "MLFLOW_WEBHOOK_CACHE_TTL": "9"})
    assert "MLFLOW_WEBHOOK_SECRET_ENCRYPTION_KEY" not in mine and "MLFLOW_WEBHOOK_CACHE_TTL" not in mine


def test_trigger_spec_rejects_unknown_events():
    from tasks.config.spec import SpecError, load_spec

    with pytest.raises(SpecError, match="alias:<name>"):
        load_spec({"trigger": {"events": ["new_version", "champion"]}})
    assert load_spec({}).trigger.events == ["new_version"] and load_spec({}).trigger.models is None


def test_a_busy_port_is_an_error_when_asked_for_and_only_a_message_by_default(spec, monkeypatch):
    import socket

    monkeypatch.delenv(wh.PORT_ENV, raising=False)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(RuntimeError, match=f"127.0.0.1:{port}.*--webhook-port"):
            wh.start_listener(str(spec), port)
        monkeypatch.setattr(wh, "DEFAULT_PORT", port)
        said = []
        assert wh.start_listener(str(spec), None, echo=said.append) is None
        assert said and said[0].startswith(f"MLflow registry webhooks: NOT listening, 127.0.0.1:{port} is in use")
    assert wh.start_listener(str(spec), 0) is None
