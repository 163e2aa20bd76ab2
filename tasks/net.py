"""The network probes of classwatch: does a server answer (TCP, HTTP), and was a failure a lost connection."""

from __future__ import annotations

import socket


class Unreachable(ConnectionError):
    """A server that a probe found down or silent (MLflow, a Dask scheduler, the Prefect API): the
    call is not retried (``tasks.transient``), since a retry would only wait as long again."""


def connect_error(host: str, port: int, timeout: float) -> str | None:
    """None when a TCP connection to ``host:port`` opens within ``timeout`` seconds, else the reason
    in words ("Connection refused", "timed out", a name that does not resolve).

    Used before a run so that a server that is down is one clear error at once, instead of a
    client's retries for its own timeout (MLflow: minutes; Dask: 30 s) and a traceback.

    >>> with socket.socket() as s:
    ...     s.bind(("127.0.0.1", 0)); s.listen(); connect_error("127.0.0.1", s.getsockname()[1], 1.0) is None
    True
    """
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__


def http_error(url: str, timeout: float) -> str | None:
    """None when an HTTP server at ``url`` answers a GET within ``timeout`` seconds (any status: an
    answer, even 401 or 503, shows that it is alive), else the reason in words ("timed out",
    "Connection refused").

    >>> http_error("http://127.0.0.1:9/health", 1.0) is not None  # nothing listens on port 9 here
    True
    """
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return None
    except urllib.error.HTTPError:
        return None
    except urllib.error.URLError as exc:
        reason = exc.reason
        return getattr(reason, "strerror", None) or str(reason) or type(reason).__name__
    except (OSError, ValueError) as exc:  # a read that timed out, a reset, a malformed URL
        return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def connection_failure(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or an exception it was raised from or during) is a failure to reach a server:
    refused, reset, timed out, name not resolved (the builtin ``ConnectionError`` and ``TimeoutError``,
    and those of requests, urllib3 and httpx, which MLflow and Prefect wrap in their own errors).

    >>> try:
    ...     try:
    ...         raise ConnectionRefusedError(111, "Connection refused")
    ...     except OSError as e:
    ...         raise RuntimeError("API request failed") from None
    ... except RuntimeError as e:
    ...     connection_failure(e), connection_failure(ValueError("bad"))
    (True, False)
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (ConnectionError, TimeoutError, socket.gaierror)):
            return True
        name, module = type(exc).__name__, type(exc).__module__.split(".")[0]
        if module in ("requests", "urllib3", "httpx", "httpcore") and any(
                word in name for word in ("Connect", "Timeout", "MaxRetry", "NewConnection")):
            return True
        exc = exc.__cause__ or exc.__context__
    return False
