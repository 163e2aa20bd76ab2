"""The one network probe of classwatch: does a TCP server answer at a host and port (MLflow, Dask)."""

from __future__ import annotations

import socket


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
