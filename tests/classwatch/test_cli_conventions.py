"""The command line's conventions: exit codes, plain machine output, option names, --version,
classwatch.yaml picked up by monitor, several periods with a summary, the example spec used verbatim."""

from __future__ import annotations

import os
import sys
from importlib.metadata import version

import polars as pl
import pytest
import yaml
from flow_data import mlflow_runs
from test_bad_input_suite import EXPERIMENT, n_rows, project, rows
from typer.testing import CliRunner

from classwatch.cli import app
from classwatch.commands import errors

runner = CliRunner(env={"COLUMNS": "200", "CLASSWATCH_DEBUG": ""})


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output == f"classwatch {version('classwatch')}\n"


def test_example_spec_is_plain_valid_yaml_at_any_width():
    result = CliRunner(env={"COLUMNS": "40"}).invoke(app, ["monitor", "--example-spec"])
    assert result.exit_code == 0
    from tasks.config.spec import EXAMPLE

    assert result.output == EXAMPLE  # no wrapping, no markup
    parsed = yaml.safe_load(result.output)
    assert parsed["columns"]["price"] == "price" and parsed["alerts"]["price_change"] == 0.10


@pytest.mark.parametrize("args, code, words", [
    (["evaluate"], 2, ["Missing argument"]),                       # usage
    (["monitor", "--spec", "spec.yaml"], 2, ["--period"]),          # usage: --period is required
    (["monitor", "--period", "2024-01", "--spec", "nowhere.yaml"], 2, ["nowhere.yaml"]),
    (["monitor", "--period", "2024-01"], 2, ["classwatch.yaml", "--spec"]),  # no spec here
    (["recommend", "history.parquet", "--label-column", "lable"], 2, ["'lable'"]),
    (["recommend", "history.parquet", "--period-column", "periods"], 2, ["'periods' (period)", "the data has 'period', a near miss of 'periods'"]),
    (["recommend", "history.parquet", "--price-column", "prices"], 2, ["'prices' (price)", "--price-column"]),
    (["recommend", "history.parquet", "--task", "binary"], 2, ["string labels", "--positive-class"]),
    (["ui", "--tracking-uri", "sqlite:///nowhere/mlflow.db"], 1, ["classwatch demo"]),  # not the input's fault
])
def test_exit_codes(args, code, words, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "spec.yaml").write_text("name: m\n")
    rows(200, 1).write_parquet(tmp_path / "history.parquet")
    result = runner.invoke(app, args)
    assert result.exit_code == code, result.output
    for w in words:
        assert w in result.output, (w, result.output)
    assert "Traceback" not in result.output


def test_exit_code_of_an_exception():
    from metrics_core.errors import InputError
    from tasks.config.spec import SpecError

    assert errors.exit_code(InputError("x")) == errors.exit_code(SpecError("x")) == errors.BAD_INPUT == 2
    assert errors.exit_code(RuntimeError("server down")) == errors.exit_code(OSError("disk")) == errors.FAILED == 1


def test_debug_keeps_the_traceback(monkeypatch, capsys):
    monkeypatch.setenv(errors.DEBUG_ENV, "1")
    with pytest.raises(Exception) as stop:
        try:
            raise ValueError("bad column")
        except ValueError as exc:
            errors.fail(exc)
    assert stop.value.exit_code == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "Error: bad column" in err


def test_positive_class_option_and_its_old_name(tmp_path):
    df = rows(400, 3).select(pl.col("label").replace_strict({"a": "beer", "b": "wine", "c": "wine"}),
                             pl.col("score_a").alias("score"))
    df.write_parquet(tmp_path / "drinks.parquet")
    outputs = []
    for option in ("--positive-class", "--pos-label"):
        result = runner.invoke(app, ["evaluate", str(tmp_path / "drinks.parquet"), "-t", "binary", option, "beer",
                                     "--n-boot", "50", "--no-plots"])
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert outputs[0] == outputs[1]
    help_text = runner.invoke(app, ["evaluate", "--help"]).output
    assert "--positive-class" in help_text and "--pos-label" not in help_text
    assert "--positive-class" in runner.invoke(app, ["recommend", "--help"]).output


def test_monitor_help_marks_period_required_and_names_the_default_spec():
    text = runner.invoke(app, ["monitor", "--help"]).output
    assert "required" in text and "classwatch.yaml" in text


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_several_periods_go_on_after_a_failure_and_summarise(tmp_path, monkeypatch):
    """classwatch.yaml in the folder is the spec; 2024-03 has no file, 2024-02 has no labels (a warning)."""
    p = project(tmp_path)
    rows(300, 4, period="2024-02").drop("label").write_parquet(p.delivery("2024-02"))
    (p.root / "classwatch.yaml").write_text(yaml.safe_dump(p.spec))
    monkeypatch.chdir(p.root)
    result = runner.invoke(app, ["monitor", "--period", "2024-01", "--period", "2024-03", "--period", "2024-02"])
    assert result.exit_code == 2, result.output
    out = " ".join(result.output.split())  # the tables and long lines wrap at the console width
    assert "Error: 2024-03: " in out and "2024-03.parquet: no such file" in out
    assert "1 of 3 period(s) failed and logged nothing (2024-03); logged: 2024-01, 2024-02." in out
    assert "2 new period run(s), 0 already logged (use --force to redo): 2024-01, 2024-02." in out
    assert "Without labels (performance not measured): 2024-02." in out
    assert "Traceback" not in out
    logged = {r.data.tags.get("classwatch.period"): r.info.status for r in mlflow_runs(p.store, EXPERIMENT)
              if r.data.tags.get("classwatch.period")}
    assert logged == {"2024-01": "FINISHED", "2024-02": "FINISHED"}


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_example_spec_verbatim_works_without_price_and_weight_columns(tmp_path, monkeypatch):
    """A default written out (columns.price: price) is not a requirement: the data here has no price,
    weight or title column, and the spec is the example as printed."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    (tmp_path / "data" / "deliveries").mkdir(parents=True)
    rows(600, 1, period="2023-12").drop("price", "weight").write_parquet(tmp_path / "data" / "reference.parquet")
    rows(300, 2).drop("price", "weight").write_parquet(tmp_path / "data" / "deliveries" / "2024-01.parquet")
    (tmp_path / "spec.yaml").write_text(runner.invoke(app, ["monitor", "--example-spec"]).output)
    result = runner.invoke(app, ["monitor", "--spec", "spec.yaml", "--period", "2024-01"])
    assert result.exit_code == 0, result.output
    runs = [r for r in mlflow_runs(f"sqlite:///{tmp_path / 'mlflow.db'}", "classwatch")
            if r.data.tags.get("classwatch.period") == "2024-01"]
    assert [r.info.status for r in runs] == ["FINISHED"] and n_rows(runs[0]) == 300


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


def test_evaluate_imports_only_what_it_uses(tmp_path):
    """`classwatch evaluate` starts in about 2 s because it never loads scipy.special (0.3 s), scipy.stats,
    Prefect, MLflow, scikit-learn, polars (0.3 s) or scipy.sparse (0.1 s) for a binary report (benchmarks/bench_cli.py);
    an eager import anywhere on its path would bring seconds back.
    numpy is first imported after the command's process settings, so its huge-page setting applies."""
    import os
    import subprocess

    data = tmp_path / "small.csv"
    data.write_text("label,score\n" + "".join(f"{i % 2},{(i % 7) / 7:.3f}\n" for i in range(40)))
    code = (
        "import os, sys\nfrom classwatch.cli import ALLOCATOR_ENV, main\nassert 'pyarrow' not in sys.modules\n"
        f"sys.argv = ['classwatch', 'evaluate', {str(data)!r}, '-t', 'binary', '--positive-class', '1']\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "heavy = ('scipy.special', 'scipy.stats', 'prefect', 'mlflow', 'sklearn', 'statsmodels', 'polars',\n"
        "         'scipy.sparse')\n"
        "print('LOADED', [m for m in heavy if m in sys.modules])\n"
        "import numpy\nprint('HUGEPAGE', numpy._core.multiarray._get_madvise_hugepage())\n"
        "print('ALLOCATOR', all(os.environ[k] == v for k, v in ALLOCATOR_ENV.items()))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert "LOADED []" in out.stdout, out.stdout[-300:]
    assert "HUGEPAGE False" in out.stdout, out.stdout[-300:]
    assert "ALLOCATOR True" in out.stdout, out.stdout[-300:]  # set before pyarrow (mimalloc) was loaded


_FREED_RSS = """
import os, sys
import numpy as np
if sys.argv[1] == "tuned":
    from classwatch.cli import tune_allocators
    print("APPLIED", sorted(tune_allocators()))
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
a = np.ones(20 << 17)  # 20 MiB, written: a batch's array
b = np.ones(64 << 17)  # 64 MiB: above glibc's largest mmap threshold (a large statistic's array)
before = rss()
del a, b
print("RETURNED", (before - rss()) >> 20)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
@pytest.mark.parametrize("mode", ["default", "tuned"])
def test_the_command_keeps_freed_batch_memory_for_the_next_batch(mode):
    """glibc hands freed 20 and 64 MiB arrays back to the kernel at once by default (the next batch
    faults them in again); after tune_allocators they stay in the heap (mallopt: glibc reads its
    variables only at start). The default case shows the measurement sees the difference."""
    import os
    import subprocess

    from classwatch.cli import ALLOCATOR_ENV

    env = {k: v for k, v in os.environ.items() if k not in ALLOCATOR_ENV}
    env["MALLOC_ARENA_MAX"] = "2"  # a user's own value: kept
    out = subprocess.run([sys.executable, "-c", _FREED_RSS, mode], capture_output=True, text=True, timeout=60,
                         env=env)
    assert out.returncode == 0, out.stderr
    returned = int(out.stdout.split("RETURNED")[1])
    if mode == "default":
        assert returned >= 83, out.stdout
    else:
        assert returned <= 1, out.stdout
        assert "APPLIED ['MALLOC_MMAP_MAX_', 'MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_', " \
               "'MIMALLOC_PURGE_DELAY']" in out.stdout


@pytest.mark.parametrize("command", [["evaluate"], ["demo"], ["monitor"], ["compare"], ["recommend"], ["ui"],
                                     ["serve"], ["notify-trained"], ["server"], ["alerts", "setup"],
                                     ["hooks", "setup"]], ids=" ".join)
def test_help_paragraphs_flow_in_an_80_column_terminal(command):
    """A docstring wrapped at 100 columns must not come out as alternating long and short lines."""
    text = CliRunner(env={"COLUMNS": "80"}).invoke(app, [*command, "--help"]).output
    prose = text.split("Usage:", 1)[1].split("╭", 1)[0].splitlines()[1:]
    ragged = [line for line, after in zip(prose, prose[1:]) if after.strip() and 0 < len(line.strip()) < 50]
    assert not ragged, ragged


def test_mlflow_gives_up_on_a_dead_server_within_a_minute(monkeypatch):
    """MLflow's defaults (7 retries, backoff 2, 120 s a request) spent about 4 minutes on each call to
    a tracking server that had died. classwatch sets its own, a user's value winning; the waits
    between tries are urllib3's, computed by urllib3 itself here."""
    from mlflow.environment_variables import MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR, MLFLOW_HTTP_REQUEST_MAX_RETRIES
    from urllib3.exceptions import NewConnectionError
    from urllib3.util.retry import Retry

    from classwatch import cli

    for key in cli.MLFLOW_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")  # the user's
    cli._process_settings(debug=False, version=False)
    retries, factor = MLFLOW_HTTP_REQUEST_MAX_RETRIES.get(), MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR.get()
    assert (retries, factor) == (4, 2) and os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "30"
    retry, waited = Retry(total=retries, connect=retries, backoff_factor=factor), 0.0
    for _ in range(retries):
        retry = retry.increment("GET", "/api/2.0/mlflow/runs/search", error=NewConnectionError(None, "refused"))
        waited += retry.get_backoff_time()
    assert waited == 28.0  # plus up to 1 s of jitter a try: about 30 s, against about 4 minutes before
