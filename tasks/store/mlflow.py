"""The MLflow store adapter: one client per flow run; everything computed first, logged in few calls.

A run is found by its tag ``classwatch.run_key`` before one is created: a FINISHED run with the
key is reused (a re-run logs nothing twice), a FAILED/KILLED/RUNNING leftover is deleted and
logged again from the start (a parent left so is completed instead, :meth:`MlflowStore.ensure_parent`).
Any failure while logging marks the run FAILED and re-raises. Params, tags and metrics go in as
few ``log_batch`` calls as MLflow's limits allow; texts, files and tables (the JSON "split" layout
of ``MlflowClient.log_table``, listed in the ``mlflow.loggedArtifacts`` tag so ``load_table`` finds
them) in one artifact upload.

Concurrency: find-then-create of a run key runs under an exclusive lock file per key
(:meth:`MlflowStore.lock`, ``flock``; beside a SQLite db, else in a per-user temporary folder), so
processes of one machine (two ``classwatch monitor`` calls, a scheduled run and a manual one)
leave one parent run and one run per key; ``monitor_period`` holds its period's lock from the
look-up to the last log, so the second caller finds the period logged and returns it. Across
machines sharing a tracking server a lock file cannot help: a parent created twice is resolved
after creation (the oldest stays, the newer is deleted); the same period monitored on two
machines at once may still be logged twice (``find`` then returns the newer).
"""

from __future__ import annotations

import errno
import json
import math
import re
import tempfile
import time
import warnings
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import polars as pl

from tasks.config.spec import default_tracking_uri
from tasks.net import Unreachable
from tasks.store.outage import StoreUnreachable, check_reachable, guarded  # noqa: F401 - callers import it here
from tasks.store.keys import safe_key, safe_keys  # noqa: F401 - safe_key is part of this module's API

RUN_KEY = "classwatch.run_key"
#: Experiment tag that makes MLflow 3's UI open the classic runs view (runs table, charts), not the GenAI view.
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")
LOGGED_ARTIFACTS = "mlflow.loggedArtifacts"
MAX_METRICS, MAX_PARAMS, MAX_TAGS, MAX_ENTITIES = 1000, 100, 100, 1000
PARAM_LIMIT, TAG_LIMIT = 6000, 8000
#: The query every MLflow UI link carries: MLflow 3.17's UI keeps its view in the browser's local
#: storage (``mlflow.workflowType``, GenAI by default) unless the URL names one, so a link without
#: it opens the GenAI view (Evaluations, Judges, Prompts) instead of the runs and their charts.
UI_VIEW = "workflowType=machine_learning"


def fitted(value, limit: int, what: str) -> str:
    """``str(value)`` within MLflow's ``limit`` characters: a longer value is cut and ends with
    ``[... cut: N characters]`` so a reader of the UI sees it is incomplete, and a warning names it.

    >>> fitted("abc", 10, "param 'x'")
    'abc'
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     out = fitted("x" * 100, 40, "param 'labels'")
    >>> out, len(out), str(w[0].message)[:48]
    ('xxxxxxxxxxxxxx [... cut: 100 characters]', 40, "param 'labels' is 100 characters; MLflow keeps 4")
    """
    text = str(value)
    if len(text) <= limit:
        return text
    mark = f" [... cut: {len(text)} characters]"
    warnings.warn(f"{what} is {len(text)} characters; MLflow keeps {limit}, so the run shows its start "
                  f"ending in {mark.strip()!r}.", stacklevel=3)
    return text[:limit - len(mark)] + mark


def ui_link(experiment_id: str, run_id: str | None = None, base: str = "") -> str:
    """The MLflow UI link to an experiment's runs table, or to one run with ``run_id``, in the
    "Model training" view (:data:`UI_VIEW`). ``base`` is the UI's address (a tracking server); ""
    gives a link relative to the UI's own page, for run descriptions, which the UI renders as
    Markdown on the same page.

    >>> ui_link("7", "r1", "http://127.0.0.1:5000/")
    'http://127.0.0.1:5000/#/experiments/7/runs/r1?workflowType=machine_learning'
    >>> ui_link("7")
    '#/experiments/7/runs?workflowType=machine_learning'
    """
    page = f"#/experiments/{experiment_id}/runs" + (f"/{run_id}" if run_id else "")
    return f"{base.rstrip('/')}/{page}?{UI_VIEW}" if base else f"{page}?{UI_VIEW}"


@dataclass
class RunContent:
    """Everything one run will hold, computed before the run is created."""

    name: str
    params: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    tags: dict = field(default_factory=dict)
    files: dict = field(default_factory=dict)       # artifact path -> local file
    tables: dict = field(default_factory=dict)      # artifact file (.json) -> polars DataFrame
    texts: dict = field(default_factory=dict)       # artifact file -> text
    step: int = 0
    timestamp_ms: int | None = None


@dataclass(frozen=True)
class RunSummary:
    """What a logged run holds, as returned by a search: enough for a flow that skips its work."""

    run_id: str
    status: str
    tags: dict
    metrics: dict
    experiment_id: str

    @classmethod
    def of(cls, run) -> "RunSummary":
        return cls(run.info.run_id, run.info.status, dict(run.data.tags), dict(run.data.metrics),
                   run.info.experiment_id)


#: The lock name under which a process makes its first client on a local SQLite store (:func:`client`).
CREATE_THE_STORE = "\ncreate the store"


def client(tracking_uri: str | None = None):
    """An MlflowClient on the store (registry on the same URI).

    MLflow creates and migrates a new local SQLite db when a process makes its first client on it;
    two processes doing that at once fail ("table _alembic_tmp_latest_metrics already exists",
    "CircularDependencyError"; seen in the CI of three ``monitor_period`` processes started
    together), so for a SQLite store the client is made under the store's creation lock, one
    process at a time."""
    from mlflow import MlflowClient

    uri = tracking_uri or default_tracking_uri()
    if uri.startswith("sqlite:///"):
        with key_lock(lock_dir(uri), CREATE_THE_STORE):
            return MlflowClient(tracking_uri=uri, registry_uri=uri)
    return MlflowClient(tracking_uri=uri, registry_uri=uri)


@contextmanager
def process_uris(tracking_uri: str) -> Iterator[None]:
    """MLflow's process-wide tracking and registry URIs set to one store for the block, then put
    back as they were: the fluent API (``mlflow.start_run``, ``log_model``) reads only those, and a
    caller in the same process (a notebook, the test suite) must not find them changed.

    ``mlflow.set_*_uri`` mirror the URI into $MLFLOW_TRACKING_URI / $MLFLOW_REGISTRY_URI, so the
    environment is the state to restore; ``None`` clears the process-wide value behind it.
    """
    import os

    import mlflow

    names = ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI")
    saved = {name: os.environ.get(name) for name in names}
    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_registry_uri(tracking_uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(None)
        mlflow.set_registry_uri(None)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _local_artifact_root(tracking_uri: str) -> str | None:
    """For a local SQLite store: ``<folder of the db>/mlruns``, so the store is self-contained."""
    if tracking_uri.startswith("sqlite:///"):
        db = Path(tracking_uri[len("sqlite:///"):])
        return (db.parent / "mlruns").resolve().as_uri()
    return None


def lock_dir(tracking_uri: str) -> Path:
    """Where the run-key lock files of a store live: beside a local SQLite db (every process that
    opens the db sees them), else in a per-user temporary folder named after the store's URI."""
    if tracking_uri.startswith("sqlite:///"):
        return Path(tracking_uri[len("sqlite:///"):]).resolve().parent / ".classwatch-locks"
    import hashlib
    import os

    digest = hashlib.sha1(tracking_uri.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"classwatch-locks-{os.getuid()}" / digest


@contextmanager
def key_lock(folder: Path, name: str, timeout: float = 3600.0, poll: float = 0.1) -> Iterator[Path | None]:
    """An exclusive lock (``flock``) on ``folder/<hash of name>.lock`` for the block: processes and
    threads of this machine that lock the same name run the block one after another. The kernel
    drops the lock of a process that dies. Yields the lock file, or None when the folder cannot be
    written (then nothing is locked: the callers' post-create checks still hold). Raises
    TimeoutError naming the lock file after ``timeout`` seconds."""
    import fcntl
    import hashlib

    path = folder / (hashlib.sha1(name.encode()).hexdigest()[:24] + ".lock")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = open(path, "a")  # noqa: SIM115 - closed below, which releases the lock
    except OSError:
        yield None
        return
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"another classwatch process has held {path} ({name}) for over "
                                       f"{timeout:.0f} s; stop it, or delete the file if no process uses it") from None
                time.sleep(poll)
        yield path
    finally:
        fd.close()


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "experiment"


def _value(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _quoted(text: str) -> str:
    return text.replace("'", "\\'")


class MlflowStore:
    """One MLflow store and experiment: one client, the experiment id looked up once.

    Create one per flow run and pass it to the tasks; it pickles without its client (a Dask
    worker opens its own).
    """

    def __init__(self, tracking_uri: str | None = None, experiment: str = "classwatch", mlflow_client=None):
        self.tracking_uri = tracking_uri or default_tracking_uri()
        self.experiment = experiment
        self._client = mlflow_client
        self._experiment_id: str | None = None
        self._failed: dict[str, list[str]] = {}  # run key -> runs this store left FAILED (a retry replaces them)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_client": None}

    def __repr__(self) -> str:
        return f"MlflowStore({self.tracking_uri!r}, {self.experiment!r})"

    @property
    def client(self):
        if self._client is None:
            made = client(self.tracking_uri)
            self._client = guarded(made, self.tracking_uri)
        return self._client

    # ---------------------------------------------------------------- experiment and runs
    def experiment_id(self, create: bool = True) -> str | None:
        """The experiment's id, created when missing (artifacts beside a local SQLite db); None
        when it does not exist and ``create`` is False."""
        if self._experiment_id is not None:
            return self._experiment_id
        check_reachable(self.tracking_uri)
        c = self.client  # a new SQLite db is created by the first client, one process at a time (client)
        exp = c.get_experiment_by_name(self.experiment)
        if exp is not None:
            if exp.lifecycle_stage == "deleted":
                c.restore_experiment(exp.experiment_id)
            # missing (created before the tag, or by others) or guessed by the UI; a kind set by hand stays
            if "inferred" in exp.tags.get(EXPERIMENT_KIND[0], "inferred"):
                c.set_experiment_tag(exp.experiment_id, *EXPERIMENT_KIND)
            self._experiment_id = exp.experiment_id
        elif create:
            root = _local_artifact_root(self.tracking_uri)
            try:
                self._experiment_id = c.create_experiment(
                    self.experiment, artifact_location=f"{root}/{_slug(self.experiment)}" if root else None,
                    tags=dict([EXPERIMENT_KIND]))
            except Exception:  # noqa: BLE001 - created concurrently by another process
                exp = c.get_experiment_by_name(self.experiment)
                if exp is None:
                    raise
                self._experiment_id = exp.experiment_id
        return self._experiment_id

    def _search(self, filter_string: str, max_results: int = 1000, all_pages: bool = True) -> list:
        exp_id = self.experiment_id(create=False)
        if exp_id is None:
            return []
        runs, token = [], None
        while True:
            page = self.client.search_runs([exp_id], filter_string=filter_string, max_results=max_results,
                                           order_by=["attributes.start_time DESC"], page_token=token)
            runs.extend(page)
            token = page.token
            if not all_pages or not token:
                return runs

    @contextmanager
    def lock(self, run_key: str) -> Iterator[Path | None]:
        """Run the block alone among the processes of this machine that lock ``run_key`` on this
        store and experiment (:func:`key_lock`): find-then-create of a run key becomes atomic."""
        with key_lock(lock_dir(self.tracking_uri), f"{self.experiment}\n{run_key}") as path:
            yield path

    def find(self, run_key: str):
        """The newest active run tagged ``classwatch.run_key = run_key`` (any status), or None."""
        runs = self._search(f"tags.`{RUN_KEY}` = '{_quoted(run_key)}'", max_results=5, all_pages=False)
        return runs[0] if runs else None

    def runs_under(self, prefix: str) -> list:
        """Every active run whose run key is ``prefix`` or starts with ``prefix + "|"``, newest
        first, in one search (e.g. a monitoring parent and all its periods)."""
        # "_" and "%" in the prefix match any character in LIKE: the exact test below drops such runs
        runs = self._search(f"tags.`{RUN_KEY}` LIKE '{_quoted(prefix)}%'")
        return [r for r in runs if r.data.tags.get(RUN_KEY, "") == prefix
                or r.data.tags.get(RUN_KEY, "").startswith(prefix + "|")]

    def finished(self, run_key: str) -> RunSummary | None:
        """The FINISHED run with ``run_key`` (no extra read: the search returns tags and metrics), or None."""
        run = self.find(run_key)
        return RunSummary.of(run) if run is not None and run.info.status == "FINISHED" else None

    # ---------------------------------------------------------------- logging
    def log_batches(self, run_id: str, metrics: dict | None = None, params: dict | None = None,
                    tags: dict | None = None, step: int = 0, timestamp_ms: int | None = None) -> None:
        """Params, tags and metrics in as few ``log_batch`` calls as MLflow's limits allow."""
        from mlflow.entities import Metric, Param, RunTag

        ts = timestamp_ms or int(time.time() * 1000)
        queues = [[Param(k, fitted(v, PARAM_LIMIT, f"param {k!r}")) for k, v in safe_keys(params or {}, "params").items()],
                  [RunTag(k, fitted(v, TAG_LIMIT, f"tag {k!r}")) for k, v in (tags or {}).items()],
                  [Metric(k, _value(v), ts, step) for k, v in safe_keys(metrics or {}, "metrics").items()]]
        limits = (MAX_PARAMS, MAX_TAGS, MAX_METRICS)
        while any(queues):
            room = MAX_ENTITIES
            batch = []
            for queue, limit in zip(queues, limits):
                n = min(limit, room, len(queue))
                batch.append(queue[:n])
                del queue[:n]
                room -= n
            self.client.log_batch(run_id, params=batch[0], tags=batch[1], metrics=batch[2])

    def log_artifacts(self, run_id: str, texts: dict | None = None, files: dict | None = None,
                      tables: dict | None = None) -> None:
        """Texts, copies of local files and tables (JSON "split" layout) in one upload."""
        if not (texts or files or tables):
            return
        try:
            self._upload(run_id, texts, files, tables)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
            names = ", ".join([*(texts or {}), *(files or {}), *(tables or {})])
            raise OSError(errno.ENOSPC, f"no space left on device while logging the artifacts of MLflow run {run_id} "
                          f"({names}) to {self.tracking_uri}: the run is not marked FINISHED. Free space "
                          f"(artifacts and temporary files: {tempfile.gettempdir()}) and run the same command "
                          f"again. ({exc})") from exc

    def _upload(self, run_id: str, texts: dict | None, files: dict | None, tables: dict | None) -> None:
        with tempfile.TemporaryDirectory(prefix="classwatch-") as tmp:
            root = Path(tmp)
            for name, text in (texts or {}).items():
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                (root / name).write_text(text)
            for name, path in (files or {}).items():
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                (root / name).write_bytes(Path(path).read_bytes())
            for name, table in (tables or {}).items():
                frame = table if isinstance(table, pl.DataFrame) else pl.DataFrame(table)
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                frame.to_pandas().to_json(root / name, orient="split", index=False, date_format="iso")
            self.client.log_artifacts(run_id, str(root))

    def read_table(self, run_id: str, name: str) -> pl.DataFrame:
        """A table logged by :meth:`log_artifacts` (JSON "split" layout), read back. The JSON writes
        NaN and null alike as null: a float column's nulls come back as NaN."""
        with tempfile.TemporaryDirectory(prefix="classwatch-") as tmp:
            data = json.loads(Path(self.client.download_artifacts(run_id, name, tmp)).read_text())
        frame = pl.DataFrame(data["data"], schema=data["columns"], orient="row")
        return frame.with_columns(pl.col(pl.Float64).fill_null(math.nan))

    def write(self, run_id: str, content: RunContent) -> None:
        """Everything of ``content`` on run ``run_id``: params, tags, metrics, then the artifacts."""
        tags = dict(content.tags)
        if content.tables:
            tags[LOGGED_ARTIFACTS] = json.dumps([{"path": name, "type": "table"} for name in content.tables])
        self.log_batches(run_id, content.metrics, content.params, tags, content.step, content.timestamp_ms)
        self.log_artifacts(run_id, content.texts, content.files, content.tables)

    @contextmanager
    def new_run(self, run_key: str, name: str, *, parent_run_id: str | None = None,
                replaces: list[str] = ()) -> Iterator[str]:
        """Create the run tagged ``run_key`` (after deleting the runs ``replaces`` and any run of the
        key this store left FAILED before, e.g. in an earlier try of a retried task) and yield its
        id; FINISHED when the block completes, FAILED (and re-raised) on any exception."""
        c = self.client
        exp_id = self.experiment_id()
        for old in dict.fromkeys([*replaces, *self._failed.pop(run_key, [])]):
            c.delete_run(old)
        tags = {RUN_KEY: run_key, "mlflow.runName": name}
        if parent_run_id:
            tags["mlflow.parentRunId"] = parent_run_id
        run_id = c.create_run(exp_id, tags=tags, run_name=name).info.run_id
        try:
            yield run_id
            c.set_terminated(run_id, "FINISHED")
        except BaseException as exc:
            self._failed.setdefault(run_key, []).append(run_id)
            if not isinstance(exc, Unreachable):  # a store that is down would make this wait as long again
                self._terminate(run_id, "KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED")
            raise

    def _terminate(self, run_id: str, status: str) -> None:
        """Mark a run that failed (FAILED) or was interrupted (KILLED), trying twice, with a further
        Ctrl-C held back meanwhile (in the main thread): a Ctrl-C that lands inside a SQLite store's
        transaction can fail the first call, a second one would interrupt this one, and a run left
        RUNNING looks like one still being written."""
        import signal
        import threading

        held = threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler
        if held:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            for attempt in range(2):
                try:
                    self.client.set_terminated(run_id, status)
                    return
                except Exception:  # noqa: BLE001 - the store itself may be down; the original error matters
                    if attempt == 0:
                        time.sleep(0.2)
        finally:
            if held:
                signal.signal(signal.SIGINT, signal.default_int_handler)

    def log_run(self, run_key: str, content: RunContent, *, parent_run_id: str | None = None, force: bool = False,
                before_finish: Callable[[str], None] | None = None) -> tuple[str, bool]:
        """Log ``content`` as one run; return ``(run_id, created)``.

        A FINISHED run with the same ``run_key`` is returned untouched (``created`` False) unless
        ``force``; any other run with the key (FAILED, KILLED, a crashed RUNNING) is deleted first.
        Order: params, tags, metrics, then artifacts and tables, then ``before_finish(run_id)``
        (e.g. the parent's time series), then FINISHED. Any exception marks the run FAILED and
        propagates.
        """
        with self.lock(run_key):
            existing = self.find(run_key)
            if existing is not None and existing.info.status == "FINISHED" and not force:
                return existing.info.run_id, False
            with self.new_run(run_key, content.name, parent_run_id=parent_run_id,
                              replaces=[existing.info.run_id] if existing is not None else []) as run_id:
                self.write(run_id, content)
                if before_finish is not None:
                    before_finish(run_id)
        return run_id, True

    def ensure_parent(self, run_key: str, name: str, params: dict, tags: dict, existing: str | None = None) -> str:
        """The id of the complete (FINISHED) parent run with ``run_key``: ``existing`` (its id, found
        FINISHED already), else searched, else a new run with params and tags, FINISHED at once.

        A parent found unfinished (RUNNING, FAILED or KILLED: a process died or failed between its
        creation and the end of its params and tags) is completed under the lock
        (:meth:`complete`), so the periods logged under it before stay its children.

        Two processes that ask at the same moment get the same parent: the search and the
        creation run under :meth:`lock` (processes of one machine); for processes on other
        machines sharing a tracking server, a new parent is checked after its creation and, when
        an older parent with the key exists, deleted in favour of the oldest."""
        if existing is not None:
            return existing
        with self.lock(run_key):
            found = self.find(run_key)
            if found is not None and found.info.status == "FINISHED":
                return found.info.run_id
            if found is not None:
                run_id = self.complete(found, params, tags)
            else:
                with self.new_run(run_key, name) as run_id:
                    self.write(run_id, RunContent(name, params=params, tags=tags))
        return self.keep_oldest(run_key, run_id)

    def complete(self, run, params: dict, tags: dict) -> str:
        """Finish a half-written run (a search result): the ``params`` it lacks (one it has keeps
        its value: MLflow refuses to change a param), every tag, then FINISHED; its id."""
        run_id = run.info.run_id
        self._failed.pop(run.data.tags.get(RUN_KEY, ""), None)  # kept, not replaced by a later new_run
        have = set(run.data.params)
        self.log_batches(run_id, params={k: v for k, v in safe_keys(params, "params").items() if k not in have},
                         tags=tags)
        self.client.set_terminated(run_id, "FINISHED")
        return run_id

    def keep_oldest(self, run_key: str, run_id: str) -> str:
        """The oldest active run with ``run_key`` (start time, then run id: one order for every
        process); ``run_id`` is deleted when it is not that run."""
        runs = self._search(f"tags.`{RUN_KEY}` = '{_quoted(run_key)}'")
        oldest = min(runs, key=lambda r: (r.info.start_time or 0, r.info.run_id), default=None)
        if oldest is None or oldest.info.run_id == run_id:
            return run_id
        self.client.delete_run(run_id)
        return oldest.info.run_id


# ---------------------------------------------------------------- one-call forms (a store per call)
def experiment_id(mlflow_client, name: str) -> str:
    """The id of experiment ``name`` on ``mlflow_client``'s store, created when missing."""
    return MlflowStore(mlflow_client.tracking_uri, name, mlflow_client).experiment_id()


def find_run(mlflow_client, exp_id: str, run_key: str):
    """The newest active run tagged ``classwatch.run_key = run_key`` in experiment ``exp_id``, or None."""
    runs = mlflow_client.search_runs([exp_id], filter_string=f"tags.`{RUN_KEY}` = '{_quoted(run_key)}'",
                                     order_by=["attributes.start_time DESC"], max_results=5)
    return runs[0] if runs else None


def log_run(tracking_uri: str, experiment: str, run_key: str, content: RunContent, **kw) -> tuple[str, bool]:
    """:meth:`MlflowStore.log_run` on a store opened for this call."""
    return MlflowStore(tracking_uri, experiment).log_run(run_key, content, **kw)


def ensure_parent(tracking_uri: str, experiment: str, run_key: str, name: str, params: dict, tags: dict) -> str:
    """:meth:`MlflowStore.ensure_parent` on a store opened for this call."""
    return MlflowStore(tracking_uri, experiment).ensure_parent(run_key, name, params, tags)


def log_series(tracking_uri: str, run_id: str, metrics: dict, step: int, timestamp_ms: int | None = None) -> None:
    """Metrics at ``step`` on an existing run (e.g. a parent's time series; the run may be FINISHED)."""
    MlflowStore(tracking_uri).log_batches(run_id, metrics, step=step, timestamp_ms=timestamp_ms)


def finished_run(tracking_uri: str, experiment: str, key: str) -> dict | None:
    """The FINISHED run tagged ``classwatch.run_key`` = ``key`` in ``experiment`` as a dict (run_id,
    status, tags, metrics, experiment_id), or None: a flow returns it instead of computing again."""
    done = MlflowStore(tracking_uri, experiment).finished(key)
    return None if done is None else asdict(done)
