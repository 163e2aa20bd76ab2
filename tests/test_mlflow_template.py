"""mlflow_template: a new SQLite MLflow store made from the template is the store MLflow's migrations make."""

from __future__ import annotations

import sqlite3

from mlflow_template import start_new_stores_from_a_template


def _schema(path) -> tuple[set, list]:
    """Every table, index and trigger with its SQL as a set of lines, and the schema version.

    As a set: MLflow's own migrations write the CHECK constraints of the runs table in an order
    that varies from one run of them to the next (alembic recreates the table from a set), so two
    stores MLflow migrated itself differ in that order alone.
    """
    def lines(sql):
        return None if sql is None else frozenset(line.strip().rstrip(",").strip() for line in sql.splitlines())

    with sqlite3.connect(path) as db:
        return ({(kind, name, table, lines(sql)) for kind, name, table, sql in
                 db.execute("select type, name, tbl_name, sql from sqlite_master")},
                db.execute("select version_num from alembic_version").fetchall())


def test_a_store_from_the_template_has_the_schema_mlflow_makes(tmp_path):
    import mlflow.store.db.utils as db_utils
    from mlflow.tracking import MlflowClient

    start_new_stores_from_a_template()
    replacement = db_utils._initialize_tables
    import mlflow.store.model_registry.sqlalchemy_store as registry

    start_new_stores_from_a_template()
    assert registry._initialize_tables is replacement  # the registry store's own name for it, too
    original = replacement.original
    assert callable(original) and original is not replacement

    copied, migrated = tmp_path / "copied.db", tmp_path / "migrated.db"
    client = MlflowClient(f"sqlite:///{copied}")
    run = client.create_run(client.create_experiment("x")).info.run_id
    client.log_metric(run, "m", 1.0)
    assert client.get_run(run).data.metrics == {"m": 1.0}
    MlflowClient(f"sqlite:///{tmp_path / 'other.db'}").search_experiments()  # a second copy of the same template

    import sqlalchemy

    engine = sqlalchemy.create_engine(f"sqlite:///{migrated}")
    original(engine)  # MLflow's own migrations, from an empty file
    engine.dispose()
    (ours, version), (theirs, migrated_version) = _schema(copied), _schema(migrated)
    assert version == migrated_version
    assert ours == theirs, ("only in the copy:", ours - theirs, "only in MLflow's:", theirs - ours)
    assert [e.name for e in MlflowClient(f"sqlite:///{migrated}").search_experiments()] == ["Default"]
