"""Bad input through the command line: real files in tmp folders, a real SQLite MLflow store.

One table of cases. Each runs `classwatch evaluate` or `classwatch monitor` (which runs the monitor_period
flow) in-process and asserts: exit code 2 (bad input, docs/cli.md), a message naming the file or field, the
column, the count of bad rows and the first example where they apply, no traceback on stdout or stderr, and
nothing logged to MLflow. The cases that must work (unicode and whitespace class names, a spec path with
`..`) assert their result instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from flow_data import mlflow_runs
from sklearn.metrics import accuracy_score
from typer.testing import CliRunner

from classwatch.cli import app

runner = CliRunner(env={"COLUMNS": "200", "CLASSWATCH_DEBUG": ""})
CLASSES = ["a", "b", "c"]
EXPERIMENT = "bad-input"


def rows(n: int = 300, seed: int = 0, classes=CLASSES, period: str = "2024-01") -> pl.DataFrame:
    """Scored rows: label, prediction (argmax), one score column per class (summing to 1), price, weight."""
    rng = np.random.default_rng(seed)
    k = len(classes)
    y = rng.integers(0, k, n)
    logits = rng.standard_normal((n, k))
    logits[np.arange(n), y] += 2.0
    s = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    names = np.asarray(classes, dtype=object)
    return pl.DataFrame({"id": [f"{period}-{i}" for i in range(n)], "label": names[y].tolist(),
                         **{f"score_{c}": s[:, j] for j, c in enumerate(classes)},
                         "prediction": names[s.argmax(axis=1)].tolist(), "price": np.round(1 + 4 * rng.random(n), 2),
                         "weight": np.round(1 + rng.random(n), 2), "period": [period] * n})


def n_rows(run) -> float:
    """The period's row count logged on an MLflow run (logged under a display name: read back semantically)."""
    from tasks.metric_names import semantic_metrics

    return semantic_metrics(run.data.metrics)["n_rows"]


def truncated(path: Path) -> None:
    """Cut a written file in half (a copy interrupted mid-way)."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@dataclass
class Project:
    """A project folder: spec.yaml, data/reference.parquet, data/deliveries/{period}.parquet, an MLflow store."""

    root: Path
    spec: dict = field(default_factory=dict)

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def store(self) -> str:
        return f"sqlite:///{self.root / 'mlflow.db'}"

    def delivery(self, period: str = "2024-01", suffix: str = ".parquet") -> Path:
        return self.data / "deliveries" / f"{period}{suffix}"

    def write_spec(self) -> Path:
        path = self.root / "spec.yaml"
        path.write_text(yaml.safe_dump(self.spec, allow_unicode=True))
        return path

    def monitor(self, *periods: str, spec: Path | None = None) -> list[str]:
        args = ["monitor", "--spec", str(spec or self.write_spec())]
        for p in periods or ("2024-01",):
            args += ["--period", p]
        return args


def project(tmp: Path, classes=CLASSES) -> Project:
    root = tmp / "project"
    (root / "data" / "deliveries").mkdir(parents=True)
    rows(600, 1, classes, "2023-12").write_parquet(root / "data" / "reference.parquet")
    rows(300, 2, classes).write_parquet(root / "data" / "deliveries" / "2024-01.parquet")
    spec = {"name": "bad-input-model", "task": "multiclass", "labels": list(classes),
            "data": {"reference": "data/reference.parquet", "current": "data/deliveries/{period}.parquet"},
            "mlflow": {"experiment": EXPERIMENT, "tracking_uri": f"sqlite:///{root / 'mlflow.db'}"}, "n_boot": 50}
    return Project(root, spec)


# ---------------------------------------------------------------------------------------------------
# The cases: setup(tmp) -> command line arguments; fragments the message must contain (regexes)
# ---------------------------------------------------------------------------------------------------

def ev(path: Path, *options: str) -> list[str]:
    return ["evaluate", str(path), "--n-boot", "50", "--no-plots", *options]


def e_zero_byte(tmp):
    (tmp / "zero.parquet").write_bytes(b"")
    return ev(tmp / "zero.parquet", "-t", "multiclass")


def e_truncated(tmp):
    rows().write_parquet(tmp / "cut.parquet")
    truncated(tmp / "cut.parquet")
    return ev(tmp / "cut.parquet", "-t", "multiclass")


def e_corrupt_fragment(tmp):
    (tmp / "parts").mkdir()
    rows(300, 1).write_parquet(tmp / "parts" / "part-0.parquet")
    rows(300, 2).write_parquet(tmp / "parts" / "part-1.parquet")
    truncated(tmp / "parts" / "part-1.parquet")
    return ev(tmp / "parts", "-t", "multiclass")


def e_csv_header_typo(tmp):
    rows().rename({"label": "lable"}).write_csv(tmp / "typo.csv")
    return ev(tmp / "typo.csv", "-t", "multiclass")


def e_scores_as_strings(tmp):
    df = rows().select(pl.col("label") == "a", pl.col("score_a").cast(pl.Utf8).alias("score"))
    df.rename({"label": "label"}).write_parquet(tmp / "strings.parquet")
    return ev(tmp / "strings.parquet", "-t", "binary", "--positive-class", "true")


def e_scores_as_words_csv(tmp):
    df = rows().select((pl.col("label") == "a").cast(pl.Int8), pl.lit("high").alias("score"))
    df.write_csv(tmp / "words.csv")
    return ev(tmp / "words.csv", "-t", "binary")


def e_scores_not_summing(tmp):
    rows().with_columns(pl.col("score_a") * 3).write_parquet(tmp / "unnormalised.parquet")
    return ev(tmp / "unnormalised.parquet", "-t", "multiclass")


def e_all_null_label(tmp):
    rows().with_columns(pl.lit(None, dtype=pl.Utf8).alias("label")).write_parquet(tmp / "nolabels.parquet")
    return ev(tmp / "nolabels.parquet", "-t", "multiclass")


def e_duplicated_columns(tmp):
    df = rows()
    table = pa.table([df["label"].to_arrow(), df["score_a"].to_arrow(), df["score_b"].to_arrow(),
                      df["score_c"].to_arrow(), df["score_b"].to_arrow()],
                     names=["label", "score_a", "score_b", "score_c", "score_b"])
    pq.write_table(table, tmp / "dup.parquet")
    return ev(tmp / "dup.parquet", "-t", "multiclass")


def e_duplicated_columns_csv(tmp):
    df = rows()
    lines = ["label,score,score"] + [f"{int(y == 'a')},{s},{s}" for y, s in zip(df["label"], df["score_a"])]
    (tmp / "dup.csv").write_text("\n".join(lines) + "\n")
    return ev(tmp / "dup.csv", "-t", "binary")


def e_ten_thousand_classes(tmp):
    rng = np.random.default_rng(3)
    y = rng.integers(0, 10_000, 40_000)
    pl.DataFrame({"label": y, "prediction": (y + (rng.random(y.size) < 0.2)) % 10_000}).write_parquet(tmp / "k.parquet")
    return ev(tmp / "k.parquet", "-t", "multiclass")


def e_nan_scores(tmp):
    df = rows().with_columns(pl.when(pl.int_range(pl.len()) % 100 == 7).then(float("nan")).otherwise(
        pl.col("score_b")).alias("score_b"))
    df.write_parquet(tmp / "nan.parquet")
    return ev(tmp / "nan.parquet", "-t", "multiclass")


def e_label_outside_score_classes(tmp):
    df = rows().with_columns(pl.when(pl.int_range(pl.len()) == 5).then(pl.lit("zz")).otherwise(
        pl.col("label")).alias("label"))
    df.write_parquet(tmp / "extra.parquet")
    return ev(tmp / "extra.parquet", "-t", "multiclass")


def e_empty_file(tmp):
    rows().head(0).write_parquet(tmp / "empty.parquet")
    return ev(tmp / "empty.parquet", "-t", "multiclass")


def e_unknown_extension(tmp):
    rows().write_csv(tmp / "rows.txt")
    return ev(tmp / "rows.txt", "-t", "multiclass")


def e_string_labels_without_positive_class(tmp):
    rows().select("label", "score_a").rename({"score_a": "score"}).filter(pl.col("label") != "c").write_parquet(
        tmp / "words.parquet")
    return ev(tmp / "words.parquet", "-t", "binary")


def m_truncated_delivery(tmp):
    p = project(tmp)
    truncated(p.delivery())
    return p.monitor()


def m_class_named_top_label(tmp):
    return project(tmp, classes=["a", "b", "top_label"]).monitor()


def m_segment_column_typo(tmp):
    p = project(tmp)
    p.spec["columns"] = {"segments": ["retaler"]}
    return p.monitor()


def m_segment_column_typo_two_periods(tmp):
    """The same typo over two periods: the reference fails both alike, and the error is said once for both."""
    p = project(tmp)
    rows(300, 3, period="2024-02").write_parquet(p.delivery("2024-02"))
    p.spec["columns"] = {"segments": ["retaler"]}
    return p.monitor("2024-01", "2024-02")


def m_zero_byte_delivery(tmp):
    p = project(tmp)
    p.delivery().write_bytes(b"")
    return p.monitor()


def m_corrupt_fragment(tmp):
    p = project(tmp)
    folder = p.data / "deliveries" / "2024-01"
    folder.mkdir()
    rows(300, 5).write_parquet(folder / "part-0.parquet")
    rows(300, 6).write_parquet(folder / "part-1.parquet")
    truncated(folder / "part-1.parquet")
    p.spec["data"]["current"] = "data/deliveries/{period}"
    return p.monitor()


def m_csv_label_typo(tmp):
    p = project(tmp)
    rows(300, 2).rename({"label": "lable"}).write_csv(p.delivery(suffix=".csv"))
    p.spec["data"]["current"] = "data/deliveries/{period}.csv"
    rows(600, 1, period="2023-12").write_csv(p.data / "reference.csv")
    p.spec["data"]["reference"] = "data/reference.csv"
    return p.monitor()


def m_scores_as_strings(tmp):
    p = project(tmp)
    rows(300, 2).with_columns(pl.col("score_b").cast(pl.Utf8)).write_parquet(p.delivery())
    return p.monitor()


def m_scores_not_summing(tmp):
    p = project(tmp)
    rows(300, 2).with_columns(pl.col("score_c") + 0.5).write_parquet(p.delivery())
    return p.monitor()


def m_class_never_seen(tmp):
    p = project(tmp)
    p.spec["classes"] = "closed"  # the default (open) makes a new class an alert reason (docs/alerts.md)
    df = rows(300, 2).with_columns(pl.when(pl.int_range(pl.len()) % 50 == 3).then(pl.lit("d")).otherwise(
        pl.col("label")).alias("label"))
    df.write_parquet(p.delivery())
    return p.monitor()


def m_all_null_label(tmp):
    # a delivery's null labels are unlabelled rows (a labelled sample); the reference must be labelled
    p = project(tmp)
    rows(600, 1, CLASSES, "2023-12").with_columns(pl.lit(None, dtype=pl.Utf8).alias("label")).write_parquet(
        p.root / "data" / "reference.parquet")
    return p.monitor()


def m_duplicated_columns(tmp):
    p = project(tmp)
    table = rows(300, 2).to_arrow()
    table = table.append_column("price", table.column("price"))
    pq.write_table(table, p.delivery())
    return p.monitor()


def m_period_path_missing(tmp):
    return project(tmp).monitor("2024-02")


def m_unknown_spec_field(tmp):
    p = project(tmp)
    p.spec["alert"] = {"psi": 0.2}
    return p.monitor()


def m_negative_alert_threshold(tmp):
    p = project(tmp)
    p.spec["alerts"] = {"psi": -0.1}
    return p.monitor()


def m_negative_threshold(tmp):
    p = project(tmp)
    p.spec["threshold"] = -0.5
    return p.monitor()


def m_bad_month(tmp):
    return project(tmp).monitor("2024-13")


def m_period_with_dots(tmp):
    return project(tmp).monitor("../../etc")


def m_schema_changed(tmp):
    p = project(tmp)
    rows(300, 2).with_columns(pl.col("price").cast(pl.Utf8)).write_parquet(p.delivery())
    return p.monitor()


def m_negative_prices(tmp):
    p = project(tmp)
    rows(300, 2).with_columns(pl.when(pl.int_range(pl.len()) % 30 == 4).then(-1.0).otherwise(
        pl.col("price")).alias("price")).write_parquet(p.delivery())
    return p.monitor()


def m_spec_not_yaml(tmp):
    p = project(tmp)
    bad = p.root / "broken.yaml"
    bad.write_text("name: [unclosed\n")
    return p.monitor(spec=bad)


def m_unknown_headline(tmp):
    p = project(tmp)
    p.spec["headline_metric"] = "accuracy_of_everything"
    return p.monitor()


def m_label_named_in_spec_missing(tmp):
    p = project(tmp)
    p.spec["columns"] = {"label": "true_class"}
    rows(600, 1, period="2023-12").rename({"label": "true_class"}).write_parquet(p.data / "reference.parquet")
    rows(300, 2).rename({"label": "true_klass"}).write_parquet(p.delivery())
    return p.monitor()


def m_price_column_named_missing(tmp):
    p = project(tmp)
    p.spec["columns"] = {"price": "unit_price"}
    return p.monitor()


CASES = [
    # id, setup, fragments of the message (regexes)
    ("evaluate zero-byte parquet", e_zero_byte, ["zero.parquet", "0 bytes"]),
    ("evaluate truncated parquet", e_truncated, ["cut.parquet", "cannot be read"]),
    ("evaluate directory with one corrupt fragment", e_corrupt_fragment, ["part-1.parquet: cannot be read"]),
    ("evaluate csv header typo", e_csv_header_typo, ["typo.csv", "'label'", "the data has 'lable', a near miss"]),
    ("evaluate scores as strings", e_scores_as_strings, ["strings.parquet", "'score'", "must be numbers"]),
    ("evaluate csv scores that are words", e_scores_as_words_csv, ["words.csv", "'score'", "must be numbers"]),
    ("evaluate multiclass scores not summing to 1", e_scores_not_summing,
     ["unnormalised.parquet", "score_a", "do not sum to 1", r"in \d+ row\(s\)", r"e\.g\. row \d+: label="]),
    ("evaluate all-null label column", e_all_null_label,
     ["nolabels.parquet", "'label'", r"null label in 300 row\(s\)", "e.g. row 0"]),
    ("evaluate duplicated column names", e_duplicated_columns, ["dup.parquet", "duplicate"]),
    ("evaluate duplicated csv header", e_duplicated_columns_csv, ["dup.csv", "multiple columns named score"]),
    ("evaluate 10,000 classes", e_ten_thousand_classes, ["k.parquet", "'label'", r"\d,\d{3} classes", "1,000"]),
    ("evaluate NaN scores", e_nan_scores, ["nan.parquet", "'score_b'", r"NaN score.* in 3 row\(s\)", "e.g. row 7"]),
    ("evaluate label outside the score columns' classes", e_label_outside_score_classes,
     ["extra.parquet", "'label'", "'score_zz'", r"'zz' in 1 \(first: row 5 of extra\.parquet\)"]),
    ("evaluate empty file", e_empty_file, ["empty.parquet", "no (rows|class values)"]),
    ("evaluate unknown extension", e_unknown_extension, ["rows.txt", "extension"]),
    ("evaluate string labels need --positive-class", e_string_labels_without_positive_class,
     ["words.parquet", "'label'", "--positive-class"]),
    ("monitor truncated delivery", m_truncated_delivery, ["2024-01.parquet", "2024-01"]),
    ("monitor a class named top_label", m_class_named_top_label, ["'top_label'", "Rename that class"]),
    ("monitor a segment column that is not in the data", m_segment_column_typo,
     [r"'retaler' \(segment\)", r"columns\.segments \(the run spec", "rename the column in the data"]),
    ("monitor two periods failed by one error", m_segment_column_typo_two_periods,
     [r"^Error: 2024-01, 2024-02: .*'retaler' \(segment\)"]),
    ("monitor zero-byte delivery", m_zero_byte_delivery, ["2024-01.parquet", "0 bytes"]),
    ("monitor directory with one corrupt fragment", m_corrupt_fragment, ["part-1.parquet"]),
    ("monitor csv label typo (lable)", m_csv_label_typo,
     ["2024-01.csv", "'label'", "'lable' looks like a misspelling", "nothing was logged"]),
    ("monitor scores as strings", m_scores_as_strings, ["2024-01.parquet", "'score_b'", "changed type"]),
    ("monitor scores not summing to 1", m_scores_not_summing,
     ["2024-01.parquet", "score_a", "do not sum to 1", r"in 300 row\(s\)", "e.g. row 0"]),
    ("monitor class the reference never saw (closed class list)", m_class_never_seen,
     ["2024-01.parquet", "'label'", r"not in the class list \['a', 'b', 'c'\] in 6 row\(s\)", "e.g. row 3", "'d'"]),
    ("monitor all-null label column in the reference", m_all_null_label,
     ["reference.parquet", "'label'", r"null label in 600 row\(s\)", "e.g. row 0"]),
    ("monitor duplicated column names", m_duplicated_columns, ["2024-01.parquet", "duplicate"]),
    ("monitor {period} path that does not exist", m_period_path_missing,
     ["2024-02.parquet", "no such file"]),
    ("monitor unknown spec field", m_unknown_spec_field, ["spec.yaml", "field 'alert'", "unknown field"]),
    ("monitor negative alert threshold", m_negative_alert_threshold,
     ["spec.yaml", "field 'alerts.psi'", "greater than 0", r"-0\.1"]),
    ("monitor negative threshold", m_negative_threshold, ["spec.yaml", "field 'threshold'", r"-0\.5"]),
    ("monitor period 2024-13", m_bad_month, ["period", "YYYY-MM", "'2024-13'"]),
    ("monitor period with ..", m_period_with_dots, ["period", "YYYY-MM", r"'\.\./\.\./etc'"]),
    ("monitor schema changed", m_schema_changed, ["2024-01.parquet", "'price'", "changed type"]),
    ("monitor negative prices", m_negative_prices,
     ["2024-01.parquet", "'price'", r"non-positive price in 10 row\(s\)", "row 4 = -1.0"]),
    ("monitor spec that is not YAML", m_spec_not_yaml, ["broken.yaml", "not valid YAML"]),
    ("monitor unknown headline metric", m_unknown_headline, ["headline_metric", "accuracy_of_everything"]),
    ("monitor label column named in the spec, misspelt in a delivery", m_label_named_in_spec_missing,
     ["2024-01.parquet", "'true_class'", "'true_klass' looks like a misspelling"]),
    ("monitor price column named in the spec and missing", m_price_column_named_missing,
     ["'unit_price'", "price"]),
]


PARAMS = [pytest.param(*case, id=case[0], marks=[pytest.mark.slow] if case[0].startswith("monitor") else [])
          for case in CASES]


@pytest.mark.parametrize("name, setup, fragments", PARAMS)
def test_bad_input_exits_2_with_one_clear_message(name, setup, fragments, tmp_path, monkeypatch, capfd, request):
    monkeypatch.chdir(tmp_path)
    args = setup(tmp_path)
    if args[0] == "monitor":
        request.getfixturevalue("prefect_harness")
    result = runner.invoke(app, args)
    captured = capfd.readouterr()
    output = result.output
    assert result.exit_code == 2, (result.exit_code, output, result.exception)
    assert output.count("Error:") == 1, output
    message = output[output.index("Error:"):]
    for fragment in fragments:
        assert re.search(fragment, message), (fragment, message)
    for text in (output, captured.out, captured.err):
        assert "Traceback" not in text and "Encountered exception" not in text, text
    # nothing logged: no MLflow run in the monitoring store (when it was created at all), no plots, no other store
    store = tmp_path / "project" / "mlflow.db"
    assert not store.exists() or mlflow_runs(f"sqlite:///{store}", EXPERIMENT) == []
    assert not list(tmp_path.rglob("*.png")) and not (tmp_path / "mlflow.db").exists()


# ---------------------------------------------------------------------------------------------------
# Inputs that must work
# ---------------------------------------------------------------------------------------------------

ODD_CLASSES = ["café", " leading space", "trailing space ", "食品 · grocery", "a/b"]


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
@pytest.mark.parametrize("setup, says", [
    (m_class_named_top_label, ["a class is named 'top_label'", "Rename that class"]),
    (m_segment_column_typo, ["'retaler' (segment)", "Correct the name in columns.segments"]),
    (m_segment_column_typo_two_periods, ["Error: 2024-01, 2024-02: ", "'retaler' (segment)"]),
], ids=["class named top_label", "segment column typo", "two periods failed by one error"])
def test_a_bad_monitor_input_is_refused_by_the_command_in_a_fresh_process(tmp_path, setup, says):
    """Bad-input cases above, through the installed command in a process of its own: exit 2, one
    Error line that says what to change, and no run in the store."""
    import os
    import subprocess
    import sys

    from prefect.settings import PREFECT_API_URL

    args = setup(tmp_path)
    p = tmp_path / "project"
    command = [str(Path(sys.executable).parent / "classwatch"), *args]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env={**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "COLUMNS": "400"})
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    errors = [line for line in output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and all(text in errors[0] for text in says), output
    assert "Traceback" not in output
    store = p / "mlflow.db"
    assert not store.exists() or mlflow_runs(f"sqlite:///{store}", EXPERIMENT) == []


def test_unicode_and_whitespace_class_names_evaluate(tmp_path):
    df = rows(2_000, 7, ODD_CLASSES)
    df.write_parquet(tmp_path / "odd.parquet")
    result = runner.invoke(app, ev(tmp_path / "odd.parquet", "-t", "multiclass"))
    assert result.exit_code == 0, result.output
    expected = accuracy_score(df["label"].to_list(), df["prediction"].to_list())
    line = next(ln for ln in result.output.splitlines() if ln.strip("│┃ ").startswith("accuracy "))
    assert f"{expected:.4f}" in line
    for c in ODD_CLASSES:
        assert c.strip() in result.output


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_unicode_and_whitespace_class_names_monitor(tmp_path):
    p = project(tmp_path, ODD_CLASSES)
    result = runner.invoke(app, p.monitor())
    assert result.exit_code == 0, result.output
    runs = [r for r in mlflow_runs(p.store, EXPERIMENT) if r.data.tags.get("classwatch.period") == "2024-01"]
    assert [r.info.status for r in runs] == ["FINISHED"]
    assert n_rows(runs[0]) == 300
    assert sorted(yaml.safe_load(runs[0].data.params["labels"])) == sorted(ODD_CLASSES)


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_spec_paths_may_leave_the_project_folder(tmp_path):
    """Decision (docs/run-spec.md): `..` in a data path of the spec is allowed, like an absolute path."""
    p = project(tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    (p.data / "reference.parquet").rename(shared / "reference.parquet")
    p.spec["data"]["reference"] = "../shared/reference.parquet"
    result = runner.invoke(app, p.monitor())
    assert result.exit_code == 0, result.output
    assert [r.info.status for r in mlflow_runs(p.store, EXPERIMENT)
            if r.data.tags.get("classwatch.period") == "2024-01"] == ["FINISHED"]


FLOW_CASES = [c for c in CASES if c[0] in ("monitor csv label typo (lable)", "monitor scores not summing to 1",
                                          "monitor class the reference never saw (closed class list)",
                                          "monitor {period} path that does not exist")]


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
@pytest.mark.parametrize("name, setup, fragments", FLOW_CASES, ids=[c[0] for c in FLOW_CASES])
def test_bad_input_through_the_flow(name, setup, fragments, tmp_path):
    """The same cases through the monitor_period flow as a deployment calls it: the contract's ValueError
    with the same message, raised before anything is logged."""
    from flows.monitor_period import monitor_period

    args = setup(tmp_path)
    spec, period = args[args.index("--spec") + 1], args[args.index("--period") + 1]
    with pytest.raises(ValueError) as raised:
        monitor_period(spec, period)
    for fragment in fragments:
        assert re.search(fragment, str(raised.value)), (fragment, str(raised.value))
    store = tmp_path / "project" / "mlflow.db"
    assert not store.exists() or mlflow_runs(f"sqlite:///{store}", EXPERIMENT) == []
