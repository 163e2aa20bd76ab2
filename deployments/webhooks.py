"""MLflow registry webhooks -> ``classwatch.model.trained``: a signed-delivery listener and the hook set-up."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import json
import logging
import os
import secrets
import sys
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

# Header names and signature version as in mlflow/webhooks/constants.py (MLflow 3.17).
DELIVERY_ID_HEADER = "X-MLflow-Delivery-Id"
TIMESTAMP_HEADER = "X-MLflow-Timestamp"
SIGNATURE_HEADER = "X-MLflow-Signature"
SIGNATURE_VERSION = "v1"

DEFAULT_PORT = 4210
PATH = "/mlflow-webhook"
#: Deliveries older (or further in the future) than this many seconds are rejected as replays.
REPLAY_WINDOW_S = 300
#: Delivery ids remembered to reject a repeat (the replay window bounds them too).
MAX_SEEN = 10_000
MAX_BODY = 1 << 20
WEBHOOK_NAME = "classwatch-evaluate"
MLFLOW_EVENTS = ("model_version.created", "model_version_alias.created")
SECRET_FILE_ENV = "CLASSWATCH_WEBHOOK_SECRET_FILE"
PORT_ENV = "CLASSWATCH_WEBHOOK_PORT"

log = logging.getLogger("classwatch.webhooks")


class _StderrHandler(logging.StreamHandler):
    """A handler writing to the current ``sys.stderr`` (looked up at each record)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def _ensure_log_handler() -> None:
    """Rejections and started evaluations go to stderr (the serve log) even when nothing set up logging."""
    if not log.handlers:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s classwatch webhooks %(levelname)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False


# ----------------------------------------------------------------------------- secret file
def secret_file() -> Path:
    """Where the shared secret lives: $CLASSWATCH_WEBHOOK_SECRET_FILE, else PREFECT_HOME/classwatch-mlflow-webhook.json."""
    if os.environ.get(SECRET_FILE_ENV):
        return Path(os.environ[SECRET_FILE_ENV]).expanduser()
    from prefect.settings import PREFECT_HOME

    return Path(PREFECT_HOME.value()).expanduser() / "classwatch-mlflow-webhook.json"


def read_hook_file(path: Path | None = None) -> dict | None:
    """The stored hook settings (``secret``, ``webhook_id``, ``url``, ``tracking_uri``), None if absent."""
    path = path or secret_file()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"webhook secret file {path} is unreadable ({exc}); re-run `classwatch hooks setup`.") from exc
    return data if isinstance(data, dict) and data.get("secret") else None


def write_hook_file(data: dict, path: Path | None = None) -> Path:
    """Write the hook settings with mode 0600 (owner read/write only), atomically."""
    path = path or secret_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh, indent=1)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    return path


# ----------------------------------------------------------------------------- verification
def sign(secret: str, delivery_id: str, timestamp: str, body: bytes) -> str:
    """MLflow's signature: ``v1,`` + base64 HMAC-SHA256 of ``"<delivery_id>.<timestamp>.<body>"``."""
    content = f"{delivery_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret.encode("utf-8"), content, hashlib.sha256).digest()
    return f"{SIGNATURE_VERSION},{base64.b64encode(digest).decode()}"


class Rejected(Exception):
    """A delivery that must not start anything: HTTP status and the reason (logged, and sent back)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


class DeliveryGuard:
    """Checks a delivery's signature, age and id; remembers verified ids (bounded, thread-safe)."""

    def __init__(self, secret: Callable[[], str | None], window: float = REPLAY_WINDOW_S,
                 max_seen: int = MAX_SEEN, clock: Callable[[], float] = time.time) -> None:
        self.secret, self.window, self.max_seen, self.clock = secret, window, max_seen, clock
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def verify(self, headers, body: bytes) -> str:
        """Return the delivery id of an authentic, fresh, first-seen delivery; raise :class:`Rejected` otherwise."""
        delivery_id, stamp, given = (headers.get(h) for h in (DELIVERY_ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER))
        if not (delivery_id and stamp and given):
            missing = [h for h, v in zip((DELIVERY_ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER),
                                         (delivery_id, stamp, given)) if not v]
            raise Rejected(401, f"unsigned delivery: missing {', '.join(missing)}")
        try:
            secret = self.secret()
        except Exception as exc:  # an unreadable secret file: reject, say why
            raise Rejected(401, f"cannot read the webhook secret: {exc}") from exc
        if not secret:
            raise Rejected(401, "no webhook secret configured on this side: run `classwatch hooks setup`")
        expected = sign(secret, delivery_id, stamp, body).encode()
        # Standard Webhooks allow several space-separated signatures; MLflow sends one.
        if not any(hmac.compare_digest(expected, part.encode()) for part in given.split()):
            raise Rejected(401, f"wrong signature on delivery {delivery_id!r} (another secret, or a forged request)")
        try:
            age = self.clock() - int(stamp)
        except ValueError:
            raise Rejected(401, f"delivery {delivery_id!r}: {TIMESTAMP_HEADER} {stamp!r} is not a Unix time") from None
        if abs(age) > self.window:
            raise Rejected(401, f"stale delivery {delivery_id!r}: timestamp {age:+.0f} s from now, outside the "
                                f"{self.window:.0f} s replay window")
        with self._lock:
            now = self.clock()
            while self._seen and (len(self._seen) >= self.max_seen
                                  or next(iter(self._seen.values())) < now - 2 * self.window):
                self._seen.popitem(last=False)
            if delivery_id in self._seen:
                raise Rejected(409, f"repeated delivery {delivery_id!r}: already received, nothing started")
            self._seen[delivery_id] = now
        return delivery_id

    def forget(self, delivery_id: str) -> None:
        """Let a delivery that could not be handed on (Prefect down) be retried by MLflow."""
        with self._lock:
            self._seen.pop(delivery_id, None)


# ----------------------------------------------------------------------------- delivery -> event
def trained_event_for(delivery: dict, spec_path: str | None, delivery_id: str):
    """The ``classwatch.model.trained`` event a verified delivery asks for, or (None, why not)."""
    from deployments.events import build_trained_event
    from tasks.config.spec import load_spec

    entity, action, data = delivery.get("entity"), delivery.get("action"), delivery.get("data") or {}
    name, version = data.get("name"), data.get("version")
    if action != "created" or entity not in ("model_version", "model_version_alias") or not name or not version:
        return None, f"{entity}.{action} is not a new model version or alias"
    if spec_path is None:
        return None, "classwatch serve has no run spec (it names the test data): pass --spec or --evaluate-spec"
    spec = load_spec(spec_path)
    trigger = spec.trigger
    models = trigger.models or [spec.name]
    if name not in models:
        return None, f"model {name!r} is not in the spec's trigger.models {models}"
    kind = "new_version" if entity == "model_version" else f"alias:{data.get('alias')}"
    if kind not in trigger.events:
        return None, f"{kind} is not in the spec's trigger.events {list(trigger.events)}"
    if not spec.data.test:
        return None, f"the spec {spec_path} has no data.test to evaluate {name} on"
    model_uri = f"models:/{name}/{version}"
    extra = {"source": "mlflow-webhook", "mlflow_event": f"{entity}.{action}", "delivery_id": delivery_id,
             "trigger": kind, "run_id": data.get("run_id") or ""}
    event_id = uuid.uuid5(uuid.NAMESPACE_URL, f"classwatch/mlflow-webhook/{delivery_id}")
    return build_trained_event(model_uri, spec.data.test, name, spec=spec_path, extra=extra, event_id=event_id), kind


# ----------------------------------------------------------------------------- listener
class WebhookListener:
    """A ThreadingHTTPServer on ``host:port`` that turns verified MLflow deliveries into Prefect events.

    ``emit`` sends the event (default: :func:`deployments.events.send_event` to PREFECT_API_URL);
    ``secret`` returns the shared secret, read at every delivery so ``hooks setup`` may run later.
    """

    def __init__(self, spec_path: str | None, host: str = "127.0.0.1", port: int = DEFAULT_PORT, *,
                 secret: Callable[[], str | None] | None = None, emit: Callable | None = None,
                 window: float = REPLAY_WINDOW_S) -> None:
        import prefect.events  # noqa: F401 - imported now, not on the first delivery (seconds on a busy machine)

        import tasks.config.spec  # noqa: F401
        from deployments.events import send_event

        _ensure_log_handler()
        self.spec_path = spec_path
        self.guard = DeliveryGuard(secret or (lambda: (read_hook_file() or {}).get("secret")), window=window)
        self.emit = emit or send_event
        self.server = http.server.ThreadingHTTPServer((host, port), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://{host}:{self.server.server_address[1]}{PATH}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="classwatch-webhooks", daemon=True)

    def handle(self, headers, body: bytes) -> tuple[int, dict]:
        """Answer one POST: (HTTP status, JSON reply). Only a verified, wanted delivery emits an event."""
        try:
            delivery_id = self.guard.verify(headers, body)
        except Rejected as exc:
            log.warning("rejected (HTTP %d): %s", exc.status, exc.reason)
            return exc.status, {"status": "rejected", "reason": exc.reason}
        try:
            delivery = json.loads(body)
            event, why = trained_event_for(delivery if isinstance(delivery, dict) else {}, self.spec_path, delivery_id)
        except Exception as exc:  # bad JSON, spec errors, missing test data: say so, MLflow need not retry
            log.error("delivery %s not usable: %s", delivery_id, exc)
            return 422, {"status": "error", "reason": str(exc)}
        if event is None:
            log.info("delivery %s ignored: %s", delivery_id, why)
            return 200, {"status": "ignored", "reason": why}
        try:
            self.emit(event)
        except Exception as exc:  # Prefect unreachable: 503 makes MLflow retry the same delivery
            self.guard.forget(delivery_id)
            log.error("delivery %s verified, but sending %s failed: %s", delivery_id, event.event, exc)
            return 503, {"status": "error", "reason": f"could not reach Prefect: {exc}"}
        log.info("delivery %s (%s): sent %s for %s", delivery_id, why, event.event, event.resource.id)
        return 202, {"status": "accepted", "model_uri": event.resource.id, "event_id": str(event.id)}

    def _handler(self):
        listener = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server API
                length = int(self.headers.get("Content-Length") or 0) if \
                    (self.headers.get("Content-Length") or "0").isdigit() else MAX_BODY + 1
                if self.path.split("?")[0] != PATH:
                    status, reply = 404, {"status": "rejected", "reason": f"POST to {PATH}"}
                elif length > MAX_BODY:
                    status, reply = 413, {"status": "rejected", "reason": "body too large"}
                else:
                    status, reply = listener.handle(self.headers, self.rfile.read(length))
                out = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args):
                pass

        return Handler

    def start(self) -> "WebhookListener":
        self.thread.start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "WebhookListener":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def start_listener(spec_path: str | None, port: int | None = None, echo=print) -> WebhookListener | None:
    """Start the listener for ``classwatch serve`` (port: argument, $CLASSWATCH_WEBHOOK_PORT, 4210; 0 = off).

    A port that was asked for and is busy is an error; the default port being busy only turns the
    listener off, with a message (serving the deployments matters more).
    """
    chosen = port if port is not None else (int(os.environ[PORT_ENV]) if os.environ.get(PORT_ENV) else None)
    if chosen == 0:
        return None
    try:
        listener = WebhookListener(spec_path, port=chosen or DEFAULT_PORT).start()
    except OSError as exc:
        advice = f"Pick another port with --webhook-port (or {PORT_ENV}), or 0 to turn it off."
        if chosen is not None:
            raise RuntimeError(f"MLflow webhook listener: cannot listen on 127.0.0.1:{chosen} ({exc}). {advice}") from exc
        echo(f"MLflow registry webhooks: NOT listening, 127.0.0.1:{DEFAULT_PORT} is in use ({exc}). {advice}")
        return None
    note = "" if spec_path else " (no spec: deliveries are verified, then ignored)"
    echo(f"MLflow registry webhooks: listening on {listener.url}{note}; register it with `classwatch hooks setup`.")
    return listener


# ----------------------------------------------------------------------------- registration
@dataclass
class HookSetup:
    """What ``classwatch hooks setup`` did."""

    webhook_id: str
    created: bool
    removed_duplicates: int
    url: str
    tracking_uri: str
    secret_path: Path
    secret_rotated: bool
    test: Any  # mlflow WebhookTestResult, or None when not tested


def setup_webhook(url: str, tracking_uri: str | None = None, *, rotate_secret: bool = False,
                  test: bool = True) -> HookSetup:
    """Create or update the one ``classwatch-evaluate`` webhook on the tracking server; store its secret.

    Idempotent: an existing webhook of that name is updated (others of the same name are deleted),
    and the stored secret is kept unless ``rotate_secret``. ``test`` asks MLflow to send a test
    delivery, which the listener verifies and ignores (its model is ``example_model``).
    """
    import mlflow
    from mlflow import MlflowClient

    tracking_uri = tracking_uri or mlflow.get_tracking_uri()
    if not tracking_uri.startswith(("http://", "https://")):
        raise RuntimeError(f"MLflow webhooks are a feature of a tracking server, but the tracking URI is "
                           f"{tracking_uri!r}. Start one with `classwatch server` and export "
                           "MLFLOW_TRACKING_URI=http://127.0.0.1:5000 (or your server's URL).")
    path = secret_file()
    stored = read_hook_file(path)
    secret = stored["secret"] if stored and not rotate_secret else secrets.token_urlsafe(32)
    client = MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
    mine = [w for w in _all_webhooks(client) if w.name == WEBHOOK_NAME]
    description = "classwatch: evaluate new model versions (see `classwatch hooks setup`)"
    if mine:
        hook = client.update_webhook(mine[0].webhook_id, url=url, events=list(MLFLOW_EVENTS), secret=secret,
                                     description=description, status="ACTIVE")
        for extra in mine[1:]:
            client.delete_webhook(extra.webhook_id)
    else:
        hook = client.create_webhook(WEBHOOK_NAME, url, list(MLFLOW_EVENTS), description=description, secret=secret)
    write_hook_file({"secret": secret, "webhook_id": hook.webhook_id, "url": url, "tracking_uri": tracking_uri,
                     "events": list(MLFLOW_EVENTS)}, path)
    result = client.test_webhook(hook.webhook_id) if test else None
    return HookSetup(hook.webhook_id, not mine, max(len(mine) - 1, 0), url, tracking_uri, path,
                     secret != (stored or {}).get("secret"), result)


def _all_webhooks(client) -> list:
    hooks, token = [], None
    while True:
        page = client.list_webhooks(max_results=100, page_token=token)
        hooks.extend(page)
        token = page.token
        if not token:
            return hooks


# ----------------------------------------------------------------------------- MLflow server settings
def mlflow_server_env(store_dir: str | Path, environ: dict | None = None) -> dict[str, str]:
    """Environment an ``mlflow server`` needs for webhooks to a 127.0.0.1 listener (values already set win).

    A stable Fernet key (kept in ``store_dir/.classwatch-webhook-key``, mode 0600) encrypts the
    stored webhook secrets, so they survive a server restart; http and private addresses are
    allowed so MLflow may deliver to ``http://127.0.0.1``; the webhook list is cached 5 s, not 60.
    """
    environ = os.environ if environ is None else environ
    env = {"MLFLOW_WEBHOOK_ALLOWED_SCHEMES": "http,https", "MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS": "true",
           "MLFLOW_WEBHOOK_CACHE_TTL": "5"}
    if not environ.get("MLFLOW_WEBHOOK_SECRET_ENCRYPTION_KEY"):
        key_file = Path(store_dir) / ".classwatch-webhook-key"
        if not key_file.exists():
            key_file.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(base64.urlsafe_b64encode(os.urandom(32)).decode())  # a Fernet key
        env["MLFLOW_WEBHOOK_SECRET_ENCRYPTION_KEY"] = key_file.read_text().strip()
    return {k: v for k, v in env.items() if not environ.get(k)}
