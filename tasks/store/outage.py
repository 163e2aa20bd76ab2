"""An MLflow tracking server that does not answer: a probe before the first call, a server lost during a call."""

from __future__ import annotations

from tasks.net import Unreachable


class StoreUnreachable(Unreachable):
    """The MLflow tracking server of the run spec does not answer (before the first call: nothing
    was logged; during a period: its run, if created, is not FINISHED and the next run replaces it)."""


def lost(exc: BaseException, tracking_uri: str, timeout: float = 5.0) -> StoreUnreachable | None:
    """A :class:`StoreUnreachable` when ``exc`` is a failed connection to an http(s) tracking server
    and a new TCP connection to it fails too (the server is down, not a request that went wrong),
    else None. MLflow's client has retried the call already (``MLFLOW_HTTP_REQUEST_MAX_RETRIES``):
    the task is then not retried (:func:`tasks.transient`), which waited as long again, twice."""
    from urllib.parse import urlsplit

    from tasks.net import connect_error, connection_failure

    parts = urlsplit(tracking_uri)
    if isinstance(exc, StoreUnreachable) or parts.scheme not in ("http", "https") or not parts.hostname \
            or not connection_failure(exc):
        return None
    reason = connect_error(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80), timeout)
    if reason is None:
        return None
    return StoreUnreachable(
        f"the MLflow tracking server {tracking_uri} stopped answering ({reason}); a run being written is not "
        "FINISHED (the next run replaces it). Start the server again (`classwatch server` starts one on "
        "127.0.0.1:5000) and run the same command again.")


def guarded(mlflow_client, tracking_uri: str):
    """``mlflow_client`` itself for a local store; for an http(s) tracking server, the same client
    whose calls raise :class:`StoreUnreachable` once the server is down (:func:`lost`)."""
    return _Guarded(mlflow_client, tracking_uri) if tracking_uri.startswith(("http://", "https://")) else mlflow_client


class _Guarded:
    """An MlflowClient whose calls raise :class:`StoreUnreachable` when the server went down (:func:`lost`)."""

    def __init__(self, mlflow_client, tracking_uri: str):
        self._client, self._uri = mlflow_client, tracking_uri

    def __getattr__(self, name: str):
        value = getattr(self._client, name)
        if not callable(value):
            return value

        def call(*args, **kwargs):
            try:
                return value(*args, **kwargs)
            except Exception as exc:
                down = lost(exc, self._uri)
                if down is None:
                    raise
                raise down from exc

        return call


def check_reachable(tracking_uri: str, timeout: float = 10.0) -> None:
    """For an http(s) tracking URI, one TCP connection to its host and port; StoreUnreachable
    naming the URI when it is refused or times out. MLflow's client would instead retry for up
    to minutes (``MLFLOW_HTTP_REQUEST_MAX_RETRIES``) and then print a long urllib3 error."""
    from urllib.parse import urlsplit

    from tasks.net import connect_error

    parts = urlsplit(tracking_uri)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return
    reason = connect_error(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80), timeout)
    if reason is None:
        return
    raise StoreUnreachable(
        f"the MLflow tracking server {tracking_uri} is unreachable ({reason}); nothing was logged. Start it "
        "(`classwatch server` starts one on 127.0.0.1:5000) or point MLFLOW_TRACKING_URI / the spec's "
        "mlflow.tracking_uri at a running one, then run the same command again.")
