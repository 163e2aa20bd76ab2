"""The one task-runner factory of classwatch, and the one place that decides whether a Prefect API server is needed."""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

from tasks.config.spec import dask_address, spark_master
from tasks.net import Unreachable

#: The local Dask cluster of ``runner="dask"``: 2 worker processes of 1 thread each.
LOCAL_CLUSTER = {"n_workers": 2, "processes": True, "threads_per_worker": 1, "dashboard_address": "127.0.0.1:0"}

# The Dask settings of classwatch's own clusters' workers, each measured on the 100M-row benchmark.
# - Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536 (to hand freed memory back to
#   the OS). Setting it also switches off glibc's adaptive mmap threshold, so every large temporary
#   of the sorts and merges is a fresh mmap that is page-faulted in again: a 50M-row exact scan
#   took 15.8 s with it against 12.8 s without (+23% CPU). Statistics tasks free their temporaries
#   at once anyway, so the workers keep glibc's default tuning.
# - The worker's statistical profiler (it feeds the dashboard's Profile tab) samples every thread's
#   stack every 10 ms under the GIL, between the scan's many short numpy calls: the two 50M-row map
#   tasks took 10.8-12.6 s (mean 11.6) with it and 9.6-10.8 s (mean 10.4) without, in alternation.
# - Dask cuts every frame a worker sends into 64 MiB shards, and the receiver reads each shard into
#   a buffer of its own and then copies them into one array again: for the 100M-row benchmark's
#   statistics (arrays of 90-180 MB) that copy cost the client 1.5-2 CPU-s of its 3.7-4.1. Shards
#   of 1 GiB send such arrays whole. (The worker reads the setting when it imports Dask, so it goes
#   in the environment the nanny spawns it with; a user's own setting is kept.)
WORKER_CONFIG = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
                 "distributed.worker.profile.enabled": False,
                 "distributed.nanny.pre-spawn-environ.DASK_DISTRIBUTED__COMM__SHARD": "1GiB"}

# A Dask client outside the cluster gathers results through the scheduler unless told otherwise,
# and the scheduler speaks pickle protocol 4 (distributed 2026.8's "common denominator"): a
# statistic's arrays are then copied into the pickle on the worker and forwarded by the
# scheduler, which runs in this process for a local cluster. The final 0.5 GiB statistic of the
# 100M-row benchmark took 2.3-3.5 s to pickle on the worker alone, and the flow 18.1-19.3 s
# against 14.1-15.4 s gathered straight from the worker (protocol 5: the arrays travel as
# out-of-band buffers, no copy).
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def local_cluster(**kwargs):
    """A :class:`distributed.LocalCluster` (``LOCAL_CLUSTER`` defaults, overridden by ``kwargs``)
    whose workers keep glibc's default malloc tuning, run no statistical profiler and send large
    arrays unsplit (``WORKER_CONFIG``)."""
    import dask
    from distributed import LocalCluster

    config = dict(WORKER_CONFIG)
    default_shard = dask.utils.parse_bytes(dask.config.get("distributed.comm.shard")) == 64 << 20
    if "DASK_DISTRIBUTED__COMM__SHARD" in os.environ or not default_shard:
        del config["distributed.nanny.pre-spawn-environ.DASK_DISTRIBUTED__COMM__SHARD"]  # the user's shards
    with dask.config.set(config):
        return LocalCluster(**{**LOCAL_CLUSTER, **kwargs})


def task_runner(runner: str = "local", cluster_kwargs: dict | None = None):
    """The Prefect task runner for a runner string (the spec's ``task_runner``, the CLI's ``--runner``).

    ``local``: threads in this process (2, so a flow's independent reads overlap); ``dask``: a new
    local Dask cluster (:func:`local_cluster`); ``dask://HOST:PORT`` / ``tcp://`` / ``tls://``: a
    running Dask scheduler. Anything else is an error naming the accepted forms
    (:func:`tasks.config.spec.dask_address`). Dask workers need a Prefect API they can reach:
    wrap the flow call in :func:`api_for`.
    """
    from prefect.task_runners import ThreadPoolTaskRunner

    address = dask_address(runner)
    if runner == "local" or spark_master(runner) is not None:  # Spark: the tasks submit Spark jobs from here
        return ThreadPoolTaskRunner(max_workers=2)
    from prefect_dask import DaskTaskRunner

    if address is None:
        return DaskTaskRunner(cluster_class=local_cluster, cluster_kwargs=dict(cluster_kwargs or {}),
                              client_kwargs=gather_kwargs(None))
    return DaskTaskRunner(address=address, client_kwargs=gather_kwargs(address))


def gather_kwargs(address: str | None) -> dict:
    """Client options that gather results straight from the workers when they are on this machine:
    our own local cluster (``address`` None) or a scheduler on a loopback address. Otherwise, or
    when the user set ``distributed.client.direct-to-workers`` in Dask's configuration, Dask's own
    setting applies (through the scheduler by default, which works wherever only the scheduler's
    port is reachable).

    >>> gather_kwargs(None), gather_kwargs("tcp://127.0.0.1:8786"), gather_kwargs("tcp://10.0.0.5:8786")
    ({'direct_to_workers': True}, {'direct_to_workers': True}, {})
    """
    import dask

    if (address is None or _host_port(address)[0] in LOOPBACK_HOSTS) and \
            dask.config.get("distributed.client.direct-to-workers", None) is None:
        return {"direct_to_workers": True}
    return {}


def _host_port(address: str) -> tuple[str, str]:
    """``("127.0.0.1", "8786")`` of ``tcp://127.0.0.1:8786`` (an IPv6 host without its brackets)."""
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    return host.strip("[]"), port


class SchedulerUnreachable(Unreachable):
    """The Dask scheduler of ``--runner`` / the spec's ``task_runner`` does not answer; nothing ran."""


def check_scheduler(runner: str, timeout: float = 5.0) -> None:
    """For a running scheduler's address, one TCP connection to it; :class:`SchedulerUnreachable`
    naming the address when it is refused or times out. The Dask client would instead retry for
    its connect timeout (30 s), after the Prefect API has started, and end in a traceback. Nothing
    to check for ``local`` and ``dask`` (a cluster of our own)."""
    from tasks.net import connect_error

    address = dask_address(runner)
    master = spark_master(runner)
    if master is not None and master.startswith("spark://"):
        host, port = _host_port(master)
        reason = connect_error(host, int(port), timeout) if port.isdigit() else f"no port number in {port!r}"
        if reason is not None:
            raise SchedulerUnreachable(
                f"the Spark master {master} is unreachable ({reason}); nothing was computed or logged. Start it "
                "(`start-master.sh`, and workers with `start-worker.sh spark://HOST:7077`), check the address, or "
                "use --runner spark (task_runner: spark in a spec) for a local Spark, local[2].")
        return
    if address is None:
        return
    host, port = _host_port(address)
    reason = connect_error(host, int(port), timeout) if port.isdigit() else f"no port number in {port!r}"
    if reason is None:
        return
    raise SchedulerUnreachable(
        f"the Dask scheduler {address} is unreachable ({reason}); nothing was computed or logged. Start it "
        "(`dask scheduler --port 8786`, and workers with `dask worker tcp://HOST:8786`), check the address, or use "
        "--runner dask (task_runner: dask in a spec) for a local cluster of 2 workers.")


def needs_api_server(runner: str) -> bool:
    """Whether tasks of ``runner`` run in other processes, which must reach a Prefect API server.

    >>> needs_api_server("local"), needs_api_server("dask"), needs_api_server("tcp://127.0.0.1:8786")
    (False, True, True)
    >>> needs_api_server("spark")  # Spark's executors run no Prefect task
    False
    """
    return is_dask(runner)


def running_on_dask() -> bool:
    """Whether the flow run in progress has a Dask task runner (False outside a flow run)."""
    from prefect.context import FlowRunContext

    ctx = FlowRunContext.get()
    return ctx is not None and type(ctx.task_runner).__name__ == "DaskTaskRunner"


def is_dask(runner: str) -> bool:
    """Whether ``runner`` runs a flow's tasks on Dask: ``dask`` (a local cluster) or a scheduler's address.

    >>> is_dask("dask"), is_dask("dask://10.0.0.5:8786"), is_dask("local"), is_dask("spark")
    (True, True, False, False)
    """
    dask_address(runner)  # validates the string
    return runner != "local" and spark_master(runner) is None


def require_api_server(why: str) -> str:
    """The URL of the Prefect API server in ``PREFECT_API_URL``; a RuntimeError saying ``why`` one is needed when unset.

    Serving deployments, sending events and creating automations need a server that outlives
    this process (the ephemeral API would drop them when the process ends).
    """
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    if not url:
        raise RuntimeError(f"PREFECT_API_URL is not set: {why} Start a server with `classwatch server` (or `prefect "
                           "server start`) and `export PREFECT_API_URL=http://127.0.0.1:4200/api`, or set it to your "
                           "team's server.")
    return url


#: Seconds the Prefect API in PREFECT_API_URL has to answer its health check before a flow starts;
#: $CLASSWATCH_PREFECT_TIMEOUT overrides it.
API_TIMEOUT = 15.0
API_TIMEOUT_ENV = "CLASSWATCH_PREFECT_TIMEOUT"


class ApiUnreachable(Unreachable):
    """The Prefect API server in PREFECT_API_URL does not answer; nothing ran."""


def check_api(timeout: float | None = None, waiting=None) -> str | None:
    """When ``PREFECT_API_URL`` is set, one GET of its ``/health`` within ``timeout`` seconds
    (default :data:`API_TIMEOUT`, or $CLASSWATCH_PREFECT_TIMEOUT); :class:`ApiUnreachable` naming
    the URL and what to do when it does not answer. Returns the URL (None when none is set: the
    embedded API is then started by the flow).

    A server that accepts connections and never answers (stopped in a debugger, its database
    locked, overloaded) held each flow call for Prefect's own timeouts and retries, 430 s a period,
    without a word. ``waiting(text)``, a context manager factory (e.g. ``rich.console.Console.status``),
    shows what is waited for while the check runs.
    """
    from contextlib import nullcontext

    from prefect.settings import PREFECT_API_URL

    from tasks.net import http_error

    url = PREFECT_API_URL.value()
    if not url:
        return None
    if timeout is None:
        try:
            timeout = float(os.environ.get(API_TIMEOUT_ENV) or API_TIMEOUT)
        except ValueError:
            timeout = API_TIMEOUT
    health = url.rstrip("/") + "/health"
    with waiting(f"Waiting for the Prefect API at {url} to answer (up to {timeout:.0f} s) ...") if waiting \
            else nullcontext():
        reason = http_error(health, timeout)
    if reason is None:
        return url
    raise ApiUnreachable(
        f"the Prefect API at {url} did not answer {health} within {timeout:.0f} s ({reason}); nothing was computed "
        "or logged. Check that server (`classwatch server` or `prefect server start` starts one), point "
        f"PREFECT_API_URL at a running one, or unset it to use the embedded API; {API_TIMEOUT_ENV}=60 waits longer.")


STARTING_MESSAGE = ("Starting the embedded Prefect API (the first run with a new Prefect home takes up to a minute; "
                    "set PREFECT_API_URL to use a running server) ...")


def start_embedded_api(echo=None) -> str | None:
    """Start Prefect's embedded (ephemeral) API server now, saying so, when no ``PREFECT_API_URL``
    is set and it is not running yet; return its URL (None when a server URL is set).

    The first flow call would start the same server silently (Prefect keeps one per process), so
    a user would see a command hang for up to a minute without a word. ``echo`` gets
    :data:`STARTING_MESSAGE`, then "Embedded Prefect API ready after X s." (default: lines on stderr). The wait is
    ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``, which the ``classwatch`` entry point
    raises from Prefect's 20 s (``classwatch.cli.STARTUP_ENV``).
    """
    import sys
    import time

    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return None
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    if not server.running:
        say = echo or (lambda m: print(m, file=sys.stderr, flush=True))
        say(STARTING_MESSAGE)
        t0 = time.perf_counter()
        _start_own_server(server)
        say(f"Embedded Prefect API ready after {time.perf_counter() - t0:.1f} s.")
    return server.api_url


def socket_port() -> int:
    """A port the OS has just handed out on 127.0.0.1 (from its ephemeral range, not Prefect's 8000-8999)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


_free_port = socket_port  # the port chooser of _start_own_server (a test hands it a taken port first)


def _start_own_server(server, attempts: int = 3) -> None:
    """Start ``server`` on a port of its own and make sure the API that answers is its own.

    Prefect picks the port at random in 8000-8999 and takes the first healthy answer on it. Two
    cold starts at once can pick the same port: the second server fails to bind (exit code 3)
    after the first one already answered its health check, and the second command then talks to
    the first one's API, and fails with "Connection refused" when that command ends (seen once in
    three simultaneous cold starts here). So the port comes from the OS, and after the health
    check the server process must still be alive; if not, it is started again on another port.
    """
    import time

    for attempt in range(attempts):
        server.port = _free_port()
        if not server.is_port_available(server.port):  # answered by someone else already
            continue
        server.start()
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and server.server_process.poll() is None:
            time.sleep(0.1)
        if server.server_process.poll() is None:
            return
        server.running = False  # ours exited (the port was taken): the answer came from another server
    raise RuntimeError(f"The embedded Prefect API could not bind a port of its own after {attempts} tries; "
                       "set PREFECT_API_URL to a running server (`classwatch server`).")


@contextmanager
def in_process_runs() -> Iterator[None]:
    """Run the enclosed flow calls without Prefect's flow-run heartbeat.

    Heartbeats (every 180 s by default) let a server mark a run whose process died as crashed.
    A flow called in this process (the command line, the demo, a notebook) is watched by this
    process, which reports its failure itself; and the engine waits for the heartbeat thread
    when a flow ends, which cost 0.5 s (up to 1 s) of every monitored period here. Served
    deployments run in their own processes and keep their heartbeats. Without a server URL the
    embedded API is started first, with a message (:func:`start_embedded_api`).
    """
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    start_embedded_api()
    freeze_start_up_objects()
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


_start_up_frozen = False


def freeze_start_up_objects() -> None:
    """Leave the objects this process has made so far out of the garbage collector's full walks, once per process.

    With Prefect, MLflow, matplotlib and SQLAlchemy loaded, a process tracks about 580,000 objects
    (modules, classes, caches), and each full collection walked them all: 0.27-0.34 s, which fell
    on about every second monitored period of 1M rows with 50 segments (benchmarks/RESULTS.md).
    ``gc.freeze`` moves them to a generation the collector skips; they are still used, and freed
    at exit, but never collected. So it runs once, at the first :func:`in_process_runs` (the
    command line, the demo), when the imports are done and little is garbage yet: later calls
    would keep the earlier runs' cyclic garbage for good.
    """
    global _start_up_frozen
    if not _start_up_frozen:
        import gc

        gc.freeze()
        _start_up_frozen = True


@contextmanager
def api_for(runner: str) -> Iterator[None]:
    """Run the enclosed flow call with a Prefect API that the runner's worker processes can reach.

    Nothing to do for ``local`` or when ``PREFECT_API_URL`` is set. Otherwise Prefect's ephemeral
    API lives inside this process only, and each Dask worker would start its own on the same
    SQLite file (and hang on its lock); so this process's ephemeral server is started as a
    subprocess and its URL put in the settings that prefect-dask sends to the workers with every
    task. ``SubprocessASGIServer`` is not a public Prefect API; it is the per-process singleton
    the Prefect client itself starts for the ephemeral mode, and no public call exposes its URL.
    This is the only place classwatch touches it.
    """
    from prefect.settings import PREFECT_API_URL, temporary_settings

    if not needs_api_server(runner) or PREFECT_API_URL.value():
        yield
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    server.start()
    with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
        yield
