"""`classwatch evaluate` and `classwatch demo` through Typer's CliRunner, on generated Parquet files."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import metrics_core as mc
from classwatch.cli import app
from classwatch.commands.evaluate import format_interval, format_value
from classwatch.demo.data import class_names, make_binary_demo, make_multiclass_demo

N_BOOT = 200
PLOTS = ("roc", "pr", "gain", "lift", "confusion")
runner = CliRunner()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cli-data")


@pytest.fixture(scope="module")
def binary_file(data_dir):
    path = data_dir / "quotes.parquet"
    make_binary_demo(3_000, seed=21).write_parquet(path)
    return path


@pytest.fixture(scope="module")
def multiclass_file(data_dir):
    path = data_dir / "items.parquet"
    make_multiclass_demo(3_000, k=4, seed=22).write_parquet(path)
    return path


def invoke(*args: str):
    return runner.invoke(app, ["evaluate", *map(str, args), "--n-boot", str(N_BOOT)])


def table_rows(output: str) -> dict[str, list[str]]:
    """Cells of every table row, keyed by the first cell (metric key or class)."""
    rows = {}
    for line in output.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃|]", line)]
        if len(cells) > 3 and cells[0] == "" and cells[1]:
            rows.setdefault(cells[1], cells[2:-1])
    return rows


def expected_rows(report) -> dict[str, list[str]]:
    base = report.baselines
    return {key: [format_value(key, value), format_interval(key, report.intervals.get(key)),
                  format_value(key, base["majority"].get(key)), format_value(key, base["random"].get(key))]
            for key, value in report.metrics.items()}


def assert_no_traceback(result):
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_binary_table_has_every_metric_with_its_interval_and_baselines(binary_file, tmp_path):
    result = invoke(binary_file, "--task", "binary", "--out-dir", tmp_path)
    assert result.exit_code == 0, result.output
    df = pl.read_parquet(binary_file)
    report = mc.binary_report(df["label"], df["score"], n_boot=N_BOOT)
    rows = table_rows(result.stdout)
    expected = expected_rows(report)
    for key in ("n", "tp", "precision", "recall", "f1", "mcc", "auroc", "average_precision", "log_loss", "brier"):
        assert key in expected
    for key, cells in expected.items():
        assert rows[key] == cells, key
    # the printed value is the report's to the 4 decimals shown
    assert float(rows["auroc"][0]) == pytest.approx(report.metrics["auroc"], abs=5e-5)
    for name in PLOTS:
        png = tmp_path / f"quotes_{name}.png"
        assert png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size > 10_000


def test_binary_options_threshold_beta_level_weight(binary_file, tmp_path):
    result = invoke(binary_file, "-t", "binary", "--threshold", "0.3", "--beta", "2", "--level", "0.9",
                    "--weight-column", "weight", "--no-plots")
    assert result.exit_code == 0, result.output
    df = pl.read_parquet(binary_file)
    report = mc.binary_report(df["label"], df["score"], threshold=0.3, beta=2.0, sample_weight=df["weight"],
                              level=0.9, n_boot=N_BOOT)
    rows = table_rows(result.stdout)
    for key, cells in expected_rows(report).items():
        assert rows[key] == cells, key
    assert "90% interval" in result.stdout
    assert not list(binary_file.parent.glob("*.png"))  # --no-plots writes nothing (the other tests use --out-dir)


def test_plots_go_beside_the_data_by_default(tmp_path):
    path = tmp_path / "beside.parquet"
    make_binary_demo(800, seed=2).write_parquet(path)
    result = invoke(path, "--task", "binary")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.glob("*.png")) == sorted(f"beside_{n}.png" for n in PLOTS)


def test_multiclass_table_and_per_class(multiclass_file, tmp_path):
    result = invoke(multiclass_file, "--task", "multiclass", "--out-dir", tmp_path)
    assert result.exit_code == 0, result.output
    df = pl.read_parquet(multiclass_file)
    names = class_names(4)
    report = mc.multiclass_report(df["label"], df["prediction"], y_score=df.select([f"score_{c}" for c in names]),
                                  labels=names, n_boot=N_BOOT)
    rows = table_rows(result.stdout)
    expected = expected_rows(report)
    for key in ("accuracy", "f1_macro", "f1_of_macro", "balanced_accuracy_micro", "auroc_ovr_macro", "log_loss"):
        assert key in expected
    for key, cells in expected.items():
        assert rows[key] == cells, key
    for row in report.per_class.iter_rows(named=True):
        cells = rows[row["class"]]
        assert cells[0] == format_value("support", row["support"])
        assert cells[-1] == format_value("auroc", row["auroc"])
    for name in PLOTS:
        assert (tmp_path / f"items_{name}.png").stat().st_size > 10_000


def test_multiclass_with_predictions_only(tmp_path):
    path = tmp_path / "pred_only.parquet"
    make_multiclass_demo(1_000, k=3, seed=4).select("label", "prediction").write_parquet(path)
    result = invoke(path, "--task", "multiclass", "--out-dir", tmp_path)
    assert result.exit_code == 0, result.output
    assert "accuracy" in table_rows(result.stdout)
    assert (tmp_path / "pred_only_confusion.png").exists() and not (tmp_path / "pred_only_roc.png").exists()


def test_string_binary_labels_need_pos_label(tmp_path):
    df = make_binary_demo(1_000, seed=5)
    df = df.with_columns(pl.when(pl.col("label") == 1).then(pl.lit("beer")).otherwise(pl.lit("other")).alias("label"))
    path = tmp_path / "strings.parquet"
    df.write_parquet(path)
    result = invoke(path, "--task", "binary", "--no-plots")
    assert result.exit_code == 2
    assert "--positive-class" in result.output and "'label'" in result.output
    result = invoke(path, "--task", "binary", "--pos-label", "beer", "--no-plots")
    assert result.exit_code == 0, result.output
    report = mc.binary_report(df["label"], df["score"], pos_label="beer", n_boot=N_BOOT)
    assert table_rows(result.stdout)["recall"][0] == format_value("recall", report.metrics["recall"])


# ------------------------------------------------------------------------------------------
# Bad input: exit code 2, a message naming the column, the count and an example, no traceback
# ------------------------------------------------------------------------------------------

def _write(tmp_path, frame: pl.DataFrame, name: str = "bad.parquet"):
    path = tmp_path / name
    frame.write_parquet(path)
    return path


def test_nan_scores(tmp_path):
    df = make_binary_demo(500, seed=6)
    score = df["score"].to_numpy().copy()
    score[[7, 40, 41]] = np.nan
    path = _write(tmp_path, df.with_columns(pl.Series("score", score)))
    result = invoke(path, "--task", "binary", "--no-plots")
    assert result.exit_code == 2
    assert_no_traceback(result)
    message = " ".join(result.output.split())
    assert "column 'score'" in message and "NaN" in message
    assert "3 row(s)" in message and "row 7" in message


def test_missing_column(tmp_path):
    path = _write(tmp_path, make_binary_demo(200, seed=7).drop("score"))
    result = invoke(path, "--task", "binary", "--no-plots")
    assert result.exit_code == 2
    assert_no_traceback(result)
    message = " ".join(result.output.split())
    assert "column 'score'" in message and "not found" in message and "label" in message  # lists what exists
    result = invoke(path, "--task", "binary", "--label-column", "truth", "--no-plots")
    assert result.exit_code == 2 and "column 'truth'" in " ".join(result.output.split())


def test_null_labels(tmp_path):
    df = make_binary_demo(300, seed=8)
    label = df["label"].to_list()
    label[3] = label[9] = None
    path = _write(tmp_path, df.with_columns(pl.Series("label", label, dtype=pl.Int8)))
    result = invoke(path, "--task", "binary", "--no-plots")
    assert result.exit_code == 2
    assert_no_traceback(result)
    message = " ".join(result.output.split())
    assert "column 'label'" in message and "2 row(s)" in message and "row 3" in message


def test_multiclass_nan_score_names_the_score_column(tmp_path):
    df = make_multiclass_demo(300, k=3, seed=9)
    milk = df["score_milk"].to_numpy().copy()
    milk[12] = np.inf
    path = _write(tmp_path, df.with_columns(pl.Series("score_milk", milk)))
    result = invoke(path, "--task", "multiclass", "--no-plots")
    assert result.exit_code == 2
    assert_no_traceback(result)
    message = " ".join(result.output.split())
    assert "'score_milk'" in message and "1 row(s)" in message and "row 12" in message


def test_negative_weights(tmp_path):
    df = make_binary_demo(300, seed=10)
    weight = df["weight"].to_numpy().copy()
    weight[5] = -1.0
    path = _write(tmp_path, df.with_columns(pl.Series("weight", weight)))
    result = invoke(path, "--task", "binary", "--weight-column", "weight", "--no-plots")
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert "column 'weight'" in message and "1 row(s)" in message and "row 5" in message


def test_percent_scores_with_the_default_threshold_warn(tmp_path):
    """Scores in percent: AUROC is right, but 0.5 makes nearly every row positive; the command says so."""
    rng = np.random.default_rng(13)
    y = rng.integers(0, 2, 500)
    score = np.clip(0.5 * y + rng.uniform(0, 0.5, y.size), 0, 1) * 100
    path = tmp_path / "percent.csv"
    pl.DataFrame({"label": y, "score": score}).write_csv(path)
    result = invoke(path, "--task", "binary", "--positive-class", "1", "--no-plots")
    assert result.exit_code == 0, result.output
    message = " ".join(result.output.split())
    assert "Warning: The scores range from" in message and "threshold 0.5, a probability" in message
    assert f"{(score >= 0.5).mean():.1%} of the rows are predicted positive" in message
    result = invoke(path, "--task", "binary", "--positive-class", "1", "--no-plots", "--threshold", "50")
    assert result.exit_code == 0 and "a probability" not in " ".join(result.output.split())


def test_missing_file_and_help():
    result = runner.invoke(app, ["evaluate", "/no/such/file.parquet", "--task", "binary"])
    assert result.exit_code == 2 and "does not exist" in result.output
    result = runner.invoke(app, ["evaluate", "--help"])
    assert result.exit_code == 0 and "--task" in result.output and "--weight-column" in result.output


def test_reversed_scores_warning(tmp_path):
    """Scores of class 1 evaluated with --pos-label 0 gave AUROC 0.0044 with no hint."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(12)
    y = rng.integers(0, 2, 600)
    score = np.clip(0.5 * y + rng.uniform(0, 0.5, y.size) + rng.normal(0, 0.05, y.size), 0, 1)
    path = tmp_path / "bc_scores.csv"
    pl.DataFrame({"label": y, "score": score}).write_csv(path)
    result = invoke(path, "--task", "binary", "--pos-label", "0", "--no-plots")
    assert result.exit_code == 0, result.output
    auroc = roc_auc_score(y == 0, score)
    assert auroc < 0.01
    assert table_rows(result.output)["auroc"][0] == f"{auroc:.4f}"
    message = " ".join(result.output.split())
    assert f"Warning: AUROC is {auroc:.4f}" in message
    assert "the scores look reversed for the positive class 0" in message and "--positive-class 1" in message
    result = invoke(path, "--task", "binary", "--pos-label", "1", "--no-plots")
    assert result.exit_code == 0 and "look reversed" not in " ".join(result.output.split())


@pytest.mark.parametrize("task, options, named", [
    ("multiclass", ["--threshold", "0.7"], "--threshold applies only to a binary task"),
    ("multiclass", ["--positive-class", "a", "--score-column", "s"],
     "--positive-class, --score-column apply only to a binary task"),
    ("binary", ["--score-prefix", "p_"], "--score-prefix applies only to a multiclass task"),
])
def test_an_option_of_the_other_task_is_a_usage_error(binary_file, multiclass_file, task, options, named):
    """Ignored, it would hide a misread run (a threshold that was never applied)."""
    path = binary_file if task == "binary" else multiclass_file
    result = runner.invoke(app, ["evaluate", str(path), "--task", task, "--no-plots", *options], terminal_width=200)
    unboxed = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())  # the usage error's box wraps lines
    assert result.exit_code == 2 and named in unboxed, result.output
    assert_no_traceback(result)
    defaults_written_out = ["--threshold", "0.5"] if task == "binary" else ["--score-prefix", "score_"]
    same_task = runner.invoke(app, ["evaluate", str(path), "--task", task, "--no-plots", *defaults_written_out,
                                    "--n-boot", "50"])
    assert same_task.exit_code == 0, same_task.output


@pytest.fixture(scope="module")
def ten_classes_without_score_9(data_dir):
    """Ten classes whose file has the score columns score_0 .. score_8: score_9 is missing."""
    rng = np.random.default_rng(32)
    scores = rng.dirichlet(np.ones(10), 2_000)
    path = data_dir / "ten.parquet"
    pl.DataFrame({"label": scores.argmax(axis=1), **{f"score_{k}": scores[:, k] for k in range(9)}}).write_parquet(path)
    return path


def _names_the_missing_score_column(message: str) -> None:
    message = " ".join(message.split())
    assert "missing per-class score column(s) ['score_9'] (1 of 10 classes)" in message
    assert "named score_<class> (the model's score of that class)" in message and "Add the missing column" in message
    assert "not in the class list" not in message and "or drop these rows" not in message


def test_a_missing_score_column_is_named_not_reported_as_labels_outside_the_class_list(ten_classes_without_score_9):
    """The score columns score_0 .. score_8 made the class list, so the rows of class 9 were 'label not in
    the class list ... drop these rows': advice that removes a class. The error names score_9."""
    from classwatch.commands.evaluate import Task, build_report

    path = ten_classes_without_score_9
    with pytest.raises(mc.InputError) as err:
        build_report(path, Task.multiclass, n_boot=50)
    _names_the_missing_score_column(str(err.value))
    with pytest.raises(mc.InputError) as err:  # metrics_core's scan, whose class list comes from the rows
        mc.dataset.scan_stats(path, "multiclass")
    _names_the_missing_score_column(str(err.value))


def test_the_command_names_a_missing_score_column_in_a_fresh_process(ten_classes_without_score_9):
    import subprocess
    import sys
    from pathlib import Path

    path = ten_classes_without_score_9
    done = subprocess.run([str(Path(sys.executable).parent / "classwatch"), "evaluate", str(path), "--task",
                           "multiclass", "--no-plots"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    _names_the_missing_score_column(done.stderr)


@pytest.mark.parametrize("given", ["yes", "2"])
def test_a_positive_class_the_labels_do_not_hold_gets_one_message(tmp_path, given):
    """`yes` for integer labels (a value of another type) and `2` (a value of the type that no row
    holds) are the same mistake: one message names the file, the column, the labels and the option."""
    df = make_binary_demo(1_000, seed=5)
    path = tmp_path / "ints.parquet"
    df.write_parquet(path)
    result = invoke(path, "--task", "binary", "--positive-class", given, "--no-plots")
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    expected = (f"ints.parquet: column 'label': pos_label={int(given) if given.isdigit() else given!r} is not one of "
                f"the labels {sorted(df['label'].unique().to_list())!r}.")
    assert expected in message and "--positive-class" in message
