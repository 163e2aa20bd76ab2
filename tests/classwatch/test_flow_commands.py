"""`classwatch demo | monitor | compare | recommend | ui` through Typer's CliRunner on real components."""

from __future__ import annotations

import os

import polars as pl
import pytest
from flow_data import PERIODS, SHIFTED, mlflow_runs, scored_rows
from typer.testing import CliRunner

from classwatch.cli import app
from tasks.config.spec import load_spec

runner = CliRunner(env={"COLUMNS": "200"})


@pytest.mark.parametrize("command, words", [
    ("demo", ["--rows-per-month", "synthetic price quotes", "classwatch ui"]),
    ("monitor", ["--spec", "--period", "--force", "practical", "threshold"]),
    ("compare", ["MODEL_URI", "McNemar", "corrected"]),
    ("recommend", ["ONS", "--positive-class", "stable"]),
    ("ui", ["--port", "127.0.0.1", "MLFLOW_TRACKING_URI"]),
])
def test_help_explains_each_command(command, words):
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0
    for w in words:
        assert w in result.output, (command, w)


def test_example_spec_is_a_valid_spec(tmp_path):
    result = runner.invoke(app, ["monitor", "--example-spec"])
    assert result.exit_code == 0
    path = tmp_path / "spec.yaml"
    path.write_text(result.output)
    assert load_spec(path).alerts.price_change == 0.10


def test_recommend_measures_stability(tmp_path):
    rows = pl.concat([scored_rows(4_000, i, f"2024-0{i + 1}") for i in range(3)])
    rows.write_parquet(tmp_path / "history.parquet")
    result = runner.invoke(app, ["recommend", str(tmp_path / "history.parquet")])
    assert result.exit_code == 0, result.output
    assert "fbeta_of_weighted" in result.output and "stable" in result.output
    shifted = pl.concat([rows, scored_rows(4_000, 9, "2024-04", prevalence=(1, 0.1))])
    shifted.write_parquet(tmp_path / "shifted.parquet")
    result = runner.invoke(app, ["recommend", str(tmp_path / "shifted.parquet"), "--price-column", ""],
                           terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "fbeta_micro" in result.output  # neither prevalence nor (unmeasured) prices stable


def test_recommend_groups_timestamps_by_month(tmp_path):
    """A history stamped with times (with a fixed-offset zone, which polars cannot hold) is judged per month."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = pl.concat([scored_rows(2_000, i, f"2024-0{i + 1}") for i in range(3)])
    zone = dt.timezone(dt.timedelta(hours=2))
    stamps = [dt.datetime(int(p[:4]), int(p[5:]), 1 + i % 28, 12, tzinfo=zone) for i, p in enumerate(rows["period"])]
    table = rows.drop("period").to_arrow().append_column("at", pa.array(stamps, pa.timestamp("us", "+02:00")))
    pq.write_table(table, tmp_path / "stamped.parquet")
    rows.write_parquet(tmp_path / "history.parquet")
    stamped = runner.invoke(app, ["recommend", str(tmp_path / "stamped.parquet"), "--period-column", "at"],
                            terminal_width=200)
    written = runner.invoke(app, ["recommend", str(tmp_path / "history.parquet")], terminal_width=200)
    assert stamped.exit_code == 0, stamped.output
    # compared across the line breaks of the 80-column output, which move with the length of tmp_path
    # (the file names are as long as each other, so both outputs break at the same places)
    assert "stable over 2 period(s) against reference ['2024-01']" in " ".join(stamped.output.split())
    assert stamped.output.replace("\n", "").replace("stamped.parquet", "history.parquet") == \
        written.output.replace("\n", "")


def test_ui_without_a_store_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    result = runner.invoke(app, ["ui"])
    assert result.exit_code == 1 and "classwatch demo" in result.output
    result = runner.invoke(app, ["ui", "--tracking-uri", "http://127.0.0.1:5999"])
    assert result.exit_code == 0 and "open it in a browser" in result.output


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_monitor_command_summarises_what_was_logged(monitoring_spec, tmp_path, store):
    import yaml

    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(monitoring_spec))
    args = ["monitor", "--spec", str(spec), "--period", PERIODS[0], "--period", SHIFTED]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    # across the line breaks of the 80-column output, which move with the length of tmp_path
    words, letters = " ".join(result.output.split()), "".join(result.output.split())
    assert "RETRAIN" in words and "2 new period run(s)" in words and store in letters
    assert f"Alerts of {SHIFTED} went to Prefect" in words
    result = runner.invoke(app, args)
    assert "0 new period run(s), 2 already logged" in " ".join(result.output.split())
    assert "went to Prefect" not in " ".join(result.output.split())  # sent once, when the period was first logged
    bad = runner.invoke(app, ["monitor", "--spec", str(spec), "--period", "2024-13"])
    assert bad.exit_code == 2 and "YYYY-MM" in bad.output  # bad input (docs/cli.md)


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_demo_alerts_in_the_shifted_months_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    result = runner.invoke(app, ["demo", "--rows-per-month", "4000"])
    assert result.exit_code == 0, result.output
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    periods = {r.data.tags["classwatch.period"]: r.data.tags["classwatch.alert"]
               for r in mlflow_runs(store, "classwatch-demo", kind="monitor") if "classwatch.period" in r.data.tags}
    assert periods == {f"2024-{m:02d}": "retrain" if m >= 8 else "none" for m in range(1, 13)}
    assert "Alerts in 5 of 12 months: 2024-08, 2024-09, 2024-10, 2024-11, 2024-12" in result.output
    # the pack-size drift of 2024-09 is named, though the month's strongest reason is another test's
    assert "Input features: 2024-09 feature pack_size: distribution shifted" in " ".join(result.output.split())
    assert "classwatch ui" in result.output
    plots = {p.name for p in (tmp_path / "demo-output" / "plots").iterdir()}
    assert {"evaluation_roc.png", "evaluation_pr.png", "evaluation_confusion.png",
            "monitoring_over_time.png"} <= plots
    kinds = [r.data.tags.get("classwatch.kind") for r in mlflow_runs(store, "classwatch-demo")]
    assert kinds.count("evaluate") == 1 and kinds.count("compare") == 1 and kinds.count("train") == 2
    # the README's compare command on the demo's models: the logged comparison is read back and shown
    compared = runner.invoke(app, ["compare", "--spec", str(tmp_path / "demo-output" / "spec.yaml"),
                                   "models:/price-classifier/1", "models:/price-classifier/2"], terminal_width=200)
    assert compared.exit_code == 0, compared.output
    assert "McNemar" in compared.output and "Already logged" in compared.output
    # the demo logs its models through MLflow's process-wide URIs (mirrored in the environment) and puts them back
    assert "MLFLOW_TRACKING_URI" not in os.environ and "MLFLOW_REGISTRY_URI" not in os.environ


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_monitor_command_shows_warnings_as_warning_lines(tmp_path, store):
    """Binary scores in percent with the default threshold: the period is logged, and the command says,
    once per source and as a plain ``Warning:`` line, that 0.5 made nearly every row positive."""
    import numpy as np
    import yaml

    (tmp_path / "deliveries").mkdir()
    for name, seed in (("reference.parquet", 1), ("deliveries/2025-01.parquet", 2)):
        rng = np.random.default_rng(seed)
        y = (rng.random(2_000) < 0.3).astype(int)
        pl.DataFrame({"label": y, "score": np.clip(0.3 * y + rng.random(y.size) * 0.7, 0, 1) * 100}).write_parquet(
            tmp_path / name)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "percent-model", "task": "binary", "positive_class": 1,
                                    "data": {"reference": str(tmp_path / "reference.parquet"),
                                             "current": str(tmp_path / "deliveries" / "{period}.parquet")},
                                    "mlflow": {"experiment": "percent", "tracking_uri": store}, "n_boot": 50}))
    result = runner.invoke(app, ["monitor", "--spec", str(spec), "--period", "2025-01"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("Warning: ")]
    # the two sources are read side by side, so their warnings come in either order
    assert sorted(line.split(":")[1].strip() for line in lines if "a probability" in line) == [
        str(tmp_path / "deliveries" / "2025-01.parquet"), str(tmp_path / "reference.parquet")]
    assert "1 new period run(s)" in result.output and "UserWarning" not in result.output


@pytest.mark.parametrize("alert, enough, shown", [(True, 0.0, "RETRAIN"), (False, 1.0, "not enough labels"),
                                                  (False, 0.0, "none")])
def test_the_alert_table_says_when_there_were_not_enough_labels(alert, enough, shown):
    """A month whose headline test could not see a drop read "none", as a month that was judged."""
    from rich.console import Console

    from classwatch.commands.summary import alert_table
    from tasks.monitor import PeriodResult

    result = PeriodResult("m", "2024-10", "sqlite://", "e", None, "r", None, True, alert, (),
                          {"n_rows": 1, "not_enough_labels": enough, "perf/accuracy": 0.0})
    assert result.verdict == {"RETRAIN": "retrain", "none": "no alert"}.get(shown, "not enough labels to judge")
    console = Console(width=200, record=True)
    console.print(alert_table([result]))
    row = next(line for line in console.export_text().splitlines() if "2024-10" in line)
    assert shown in row and (shown == "none") == ("none" in row)


def test_an_unreliable_estimate_is_marked_in_the_table_and_the_estimated_line():
    """A broken scoring step's estimate was printed as a plain "0.000 [0.000, 0.000]"."""
    from rich.console import Console

    from classwatch.commands.summary import alert_table, estimated_line
    from tasks.monitor import PeriodResult

    def period(name, **m):
        return PeriodResult("m", name, "sqlite://", "e", None, "r", None, False, False, (),
                            {"n_rows": 1, "estimated/accuracy": 0.35, "estimated/accuracy_ci_low": 0.0,
                             "estimated/accuracy_ci_high": 0.42, **m})

    periods = [period("2024-11", **{"estimated/reliable": 0.0, "estimated/degenerate": 1.0}),
               period("2024-12", **{"estimated/reliable": 1.0, "estimated/label_shift": 1.0}),
               period("2025-01", **{"estimated/reliable": 1.0, "estimated/label_shift": 0.0})]
    line = estimated_line(periods, "accuracy")
    assert "2024-11 0.350 [0.000, 0.420] UNRELIABLE (degenerate scores);" in line
    assert "2024-12 0.350 [0.000, 0.420] (label shift);" in line and "2025-01 0.350 [0.000, 0.420]." in line
    console = Console(width=200, record=True)
    console.print(alert_table(periods))
    rows = [line for line in console.export_text().splitlines() if "20" in line and "│" in line]
    assert "no, estimate UNRELIABLE" in rows[0] and "UNRELIABLE" not in rows[1] + rows[2]


def test_the_tables_strongest_reason_keeps_its_caveat_whole_when_cut():
    """A long reason cut to 90 characters lost its closing "UNRELIABLE: ..." clause in the table; the
    clause is kept, without its figures in brackets."""
    from classwatch.commands.summary import strongest
    from metrics_core.monitoring import Reason, TestKey

    caveat = "UNRELIABLE: degenerate scores (one score value per class)"
    reason = Reason(TestKey("prevalence_pred", "bread", ("retailer", "shop_" + "x" * 40)),
                    0.2, 0.02, 1e-4, 0.1, 0.3, caveat=caveat)
    assert len(reason.summary) > 90 and reason.summary.endswith(caveat)
    cut = strongest(reason)
    assert cut.endswith(", UNRELIABLE: degenerate scores") and " ..." in cut and cut.startswith("retailer=shop_")
    plain = Reason(TestKey("prevalence_pred", "bread"), 0.03, 0.02, 1e-4, 0.1, 0.13)
    assert strongest(plain) == plain.summary  # short: as it is



def _closed_port() -> int:
    """A port nothing listens on (bound and released): any Prefect call to it fails to connect."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("period, said", [("2025-7", "YYYY-MM"), ("2024-11", "2024-11.parquet")])
def test_monitor_reports_a_bad_period_or_missing_file_before_prefect_starts(monitoring_spec, tmp_path, period,
                                                                            said):
    """A period typo and a missing month file are found by checking the spec, the periods and the
    files first: in a fresh process whose PREFECT_API_URL points at a closed port, the command says
    what is wrong (exit 2) and nothing touches Prefect (which would fail to connect, or start the
    embedded API for 15-20 s without one)."""
    import subprocess
    import sys
    from pathlib import Path

    import yaml

    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(monitoring_spec))
    env = {**os.environ, "PREFECT_API_URL": f"http://127.0.0.1:{_closed_port()}/api", "COLUMNS": "200"}
    done = subprocess.run([str(Path(sys.executable).parent / "classwatch"), "monitor", "--spec", str(spec),
                           "--period", period], capture_output=True, text=True, env=env, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert f"Error: {period}: " in out and said in out
    assert "1 of 1 period(s) failed and logged nothing" in out
    for prefect_said in ("connect", "Prefect API", "Traceback"):
        assert prefect_said not in out, out


def test_the_summary_lists_the_strongest_reasons_and_says_where_alerts_went(capsys, monkeypatch):
    """25 reasons: the first three one per line, "and 22 more"; the table's cell cut at a word;
    "Alerts ... went to Prefect" only for a period whose alert was sent."""
    from classwatch.commands import flows
    from classwatch.commands.flows import _summary
    from metrics_core.monitoring import Reason, TestKey
    from tasks.monitor import PeriodResult

    monkeypatch.setattr(flows.console, "width", 250)
    name = "[fresh] bread, cakes and other cereal products of bakeries and of supermarkets"
    reasons = tuple(Reason(TestKey("price", f"class {i:02d} {name}"),
                           0.5 - i / 100, 0.1, 1e-6, 2.0, 3.0) for i in range(25))
    quiet = PeriodResult("m", "2024-07", "sqlite://", "e", None, "r1", None, True, False, (), {"n_rows": 10})
    shifted = PeriodResult("m", "2024-08", "sqlite://", "e", None, "r2", None, True, True, reasons, {"n_rows": 10},
                           event_id="ev")
    _summary([quiet], [])
    assert "went to Prefect" not in capsys.readouterr().out
    _summary([quiet, shifted], [])
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("2024-08: 25 reason(s), the strongest:")
    assert lines[start + 1:start + 4] == [f"  - {r.text}" for r in reasons[:3]]
    assert lines[start + 4] == "  and 22 more (all of them in alert.md of the period's run)"
    assert "Alerts of 2024-08 went to Prefect as classwatch.alert.retrain events." in lines
    cell = next(line for line in lines if "2024-08" in line and "│" in line)
    words = reasons[0].summary.split()
    shown = cell.split("│")[5].strip().removesuffix("(25)").strip()
    assert shown.endswith(" ...") and shown[:-4].split() == words[:len(shown[:-4].split())]


def _classwatch_monitor(spec, periods, env, **kw):
    import subprocess
    import sys
    from pathlib import Path

    args = [str(Path(sys.executable).parent / "classwatch"), "monitor", "--spec", str(spec)]
    for p in periods:
        args += ["--period", p]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "COLUMNS": "200", **env}, **kw)


def test_a_prefect_api_that_never_answers_is_one_error_after_the_health_check(monitoring_spec, tmp_path):
    """PREFECT_API_URL at a server that accepts connections and never answers: each period waited
    430 s with nothing on screen. Now its /health gets CLASSWATCH_PREFECT_TIMEOUT seconds (here 2),
    then one Error line names the URL, and nothing is logged."""
    import socket
    import time

    import yaml

    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(monitoring_spec))
    with socket.socket() as silent:  # the kernel accepts connections into the backlog; nobody answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/api"
        t0 = time.monotonic()
        proc = _classwatch_monitor(spec, [PERIODS[0], PERIODS[1]], {"PREFECT_API_URL": url,
                                                                    "CLASSWATCH_PREFECT_TIMEOUT": "2"})
        out, err = proc.communicate(timeout=120)
        seconds = time.monotonic() - t0
    assert proc.returncode == 1, out + err
    errors = [line for line in err.splitlines() if line.startswith("Error:")]
    assert errors == [f"Error: ApiUnreachable: the Prefect API at {url} did not answer {url}/health within 2 s (timed out); nothing "
                      "was computed or logged. Check that server (`classwatch server` or `prefect server start` starts "
                      "one), point PREFECT_API_URL at a running one, or unset it to use the embedded API; "
                      "CLASSWATCH_PREFECT_TIMEOUT=60 waits longer."], err
    assert "Traceback" not in out + err and seconds < 60
    assert not (tmp_path / "mlflow.db").exists()


@pytest.mark.usefixtures("prefect_harness")
def test_ctrl_c_in_monitor_says_what_was_logged_and_leaves_no_run_running(monitoring_spec, tmp_path, store):
    """Ctrl-C once the first of four periods is logged: the command exited 130 without a word of what
    was logged, and once left the period being written RUNNING. Now it says it was interrupted, which
    periods are logged and the command that runs the others; a run being written is KILLED."""
    import re
    import signal
    import time

    import yaml
    from prefect.settings import PREFECT_API_URL

    from tasks.store.mlflow import client as mlflow_client

    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(monitoring_spec))
    periods = [*PERIODS, SHIFTED]
    proc = _classwatch_monitor(spec, periods, {"PREFECT_API_URL": PREFECT_API_URL.value()})
    first = f"tags.`classwatch.period` = '{PERIODS[0]}' and attributes.status = 'FINISHED'"
    try:
        deadline, client = time.monotonic() + 240, None
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.25)
            if client is None and (tmp_path / "mlflow.db").exists():
                client = mlflow_client(store)  # under the store's creation lock: the command may be creating it
            exp = client.get_experiment_by_name("monitor-tests") if client else None
            if exp is not None and client.search_runs([exp.experiment_id], filter_string=first):
                break
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    logged = re.search(r"Logged: (.*)\.", err) or re.search(r"logged: (.*)\.", err)
    interrupted = re.search(r"^Interrupted during (\S+): ", err, re.M)
    assert logged and interrupted, err
    done = [p for p in logged.group(1).split(", ") if p != "none"]
    assert PERIODS[0] in done + [interrupted.group(1)], err
    rerun = re.search(r"^Run them again with: .*classwatch monitor --spec (\S+) (.*)$", err, re.M)
    assert rerun and rerun.group(1) == str(spec), err
    again = rerun.group(2).replace("--period ", "").split()
    assert sorted(done + again) == periods, err  # every period is logged or named to run again
    runs = mlflow_runs(store, "monitor-tests")
    assert {r.info.status for r in runs} <= {"FINISHED", "KILLED"}, [(r.info.run_name, r.info.status) for r in runs]
    finished = {r.data.tags.get("classwatch.period") for r in runs if r.info.status == "FINISHED"} - {None}
    assert set(done) <= finished
    assert "Traceback" not in err, err


def test_a_huge_spec_is_one_line_of_bad_input(monitoring_spec, tmp_path):
    """A 50 MB spec exited 1 and wrote 105 MB to stderr (Prefect refused the flow's parameters over
    512 KB and its error echoed them twice). A spec over 1 MiB is now refused before it is read."""
    import yaml

    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({**monitoring_spec, "context": "x" * (2 << 20)}))
    proc = _classwatch_monitor(spec, [PERIODS[0]], {"PREFECT_API_URL": f"http://127.0.0.1:{_closed_port()}/api"})
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err[-500:]
    assert err.splitlines() == [f"Error: Run spec {spec} is 2.0 MiB; a run spec is at most 1 MiB (a few KB is usual). "
                                "Is it the right file? Data goes in the files that data.reference and data.current "
                                "name, not in the spec."] and out == ""


@pytest.mark.usefixtures("prefect_harness")
def test_a_spec_over_prefects_parameter_limit_is_monitored(monitoring_spec, tmp_path, store):
    """The flow gets the spec's path, not the loaded spec: a 600 KB spec (a long context text) was
    refused by Prefect, whose flow parameters are at most 512 KB."""
    import yaml

    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({**monitoring_spec, "context": "x" * 600_000}))
    result = runner.invoke(app, ["monitor", "--spec", str(spec), "--period", PERIODS[0]])
    assert result.exit_code == 0, result.output[-800:]
    runs = mlflow_runs(store, "monitor-tests")
    assert [r.info.status for r in runs if r.data.tags.get("classwatch.period") == PERIODS[0]] == ["FINISHED"]


@pytest.mark.usefixtures("prefect_harness")
def test_a_store_found_down_stops_the_later_periods_and_says_what_to_run_again(monitoring_spec, tmp_path):
    """A tracking server that is down fails the first period at once; the later ones are not tried
    (each would wait for MLflow's retries again), and the command names them all to run again."""
    import yaml

    uri = f"http://127.0.0.1:{_closed_port()}"
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({**monitoring_spec, "mlflow": {"experiment": "down", "tracking_uri": uri}}))
    result = runner.invoke(app, ["monitor", "--spec", str(spec), *(a for p in PERIODS for a in ("--period", p))])
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert errors[0].startswith(f"Error: {PERIODS[0]}: StoreUnreachable: the MLflow tracking server {uri} is "
                                "unreachable (")
    reason = errors[0].split(" is unreachable (")[1].split(")")[0]
    # the periods not tried share one message: said once, naming them all
    assert errors[1:] == [f"Error: {', '.join(PERIODS[1:])}: NotRun: the MLflow tracking server {uri} is unreachable "
                          f"({reason})"]
    last = result.output.splitlines()[-1]
    assert last.endswith(f"monitor --spec {spec} " + " ".join(f"--period {p}" for p in PERIODS)), last
