"""mlflow_template: a new SQLite MLflow store made from the template is the store MLflow's migrations make."""

from __future__ import annotations

import sqlite3

from mlflow_template import start_new_stores_from_a_template


def _schema(path) -> tuple[list, list]:
    with sqlite3.connect(path) as db:
        return (sorted(db.execute("select type, name, tbl_name, sql from sqlite_master").fetchall()),
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
    assert _schema(copied) == _schema(migrated)
    assert [e.name for e in MlflowClient(f"sqlite:///{migrated}").search_experiments()] == ["Default"]
