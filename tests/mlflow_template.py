"""New SQLite MLflow stores of the test processes start from a copy of one MLflow's own migrations made.

MLflow creates the tables of a new store by running its schema migrations one by one: 0.9-1.6 s per
store on this machine, for 61 new stores in the suite's own processes (75 s of worker time, measured
with a counting hook). Here the first new SQLite store of a process is made by MLflow's own
``_initialize_tables``, into a template file, and every later one gets that database copied in
(SQLite's backup API) at the moment MLflow would have migrated it: the same tables, indexes and
schema version, so the store MLflow then opens is the one it would have made. Stores in other
processes (the command in a fresh process, the servers) are untouched, and so is any other database.
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import sqlite3
import sys
import tempfile
import threading
from pathlib import Path

#: The modules that call ``_initialize_tables`` by a name of their own (the registry store imports it).
_CALLERS = ("mlflow.store.db.utils", "mlflow.store.model_registry.sqlalchemy_store")
_patched: set[str] = set()
_template: list[Path] = []
_replacement: list = []
_lock = threading.Lock()


def _template_file(initialize) -> Path:
    """The template database of this process, made by MLflow's ``initialize`` the first time."""
    with _lock:
        if not _template:
            import sqlalchemy

            path = Path(tempfile.mkdtemp(prefix="mlflow-template-")) / "mlflow.db"
            atexit.register(shutil.rmtree, path.parent, True)
            engine = sqlalchemy.create_engine(f"sqlite:///{path}")
            try:
                initialize(engine)
            finally:
                engine.dispose()
            _template.append(path)
        return _template[0]


def _from_template(initialize):
    """``initialize`` (MLflow's ``_initialize_tables``) for any database but a SQLite file, which gets the template."""
    def initialize_tables(engine) -> None:
        url = engine.url
        if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
            initialize(engine)
            return
        raw = engine.raw_connection()
        try:
            with contextlib.closing(sqlite3.connect(_template_file(initialize))) as template:
                template.backup(raw.driver_connection)
        finally:
            raw.close()

    initialize_tables.original = initialize
    return initialize_tables


def start_new_stores_from_a_template() -> None:
    """Route MLflow's table creation through the template, in each module of :data:`_CALLERS` loaded so far."""
    utils = sys.modules.get(_CALLERS[0])
    if utils is None:
        return
    if not _replacement:
        _replacement.append(_from_template(utils._initialize_tables))
    for name in _CALLERS:
        module = sys.modules.get(name)
        if module is not None and name not in _patched:
            module._initialize_tables = _replacement[0]
            _patched.add(name)
