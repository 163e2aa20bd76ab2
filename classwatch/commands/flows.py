"""`classwatch demo | monitor | compare | recommend | ui`: the flows from the command line, with a summary."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from classwatch.commands.errors import BAD_INPUT, FAILED, INTERRUPTED, debug, exit_code, fail, message, quiet_prefect
from classwatch.commands.evaluate import Task, checked_positive_class
from classwatch.commands.summary import alert_table, estimated_line, feature_lines, next_sample_line, reason_lines

console = Console(highlight=False)

#: The run spec ``monitor`` (and ``serve``) use when no --spec is given.
DEFAULT_SPEC = "classwatch.yaml"

SPEC_HELP = ("Run-spec YAML: data sources (reference, current with {period}), column map, alert policy. "
             "`classwatch monitor --example-spec` prints a commented example.")


def _progress() -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=False)


def _ui_hint(tracking_uri: str) -> str:
    if tracking_uri.startswith(("http://", "https://")):
        return f"open {tracking_uri} in a browser"
    if tracking_uri != _default_uri():
        return f"{_classwatch()} ui --tracking-uri {tracking_uri}"
    make = Path("Makefile").is_file() and "\nui:" in Path("Makefile").read_text(errors="replace")
    return f"make ui (or {_classwatch()} ui)" if make else f"{_classwatch()} ui"


def _classwatch() -> str:
    """How to call classwatch from here: ``classwatch`` when it is on PATH, else its path (e.g.
    ``.venv/bin/classwatch`` after ``make demo``, which does not activate the virtual environment)."""
    exe = Path(sys.executable).parent / "classwatch"
    if shutil.which("classwatch") == str(exe) or not exe.exists():
        return "classwatch"
    try:
        return str(exe.relative_to(Path.cwd()))
    except ValueError:
        return str(exe)


def _default_uri() -> str:
    from tasks.config.spec import default_tracking_uri

    return default_tracking_uri()


def _fail(exc: Exception) -> None:
    """``Error: ...`` and exit 1 (demo, ui: failures that are not the input's; see errors.fail for the rest)."""
    fail(exc, code=FAILED)


def demo(
    out_dir: Annotated[Path, typer.Option(help="Folder for the generated data, the spec and copies of the plots.")]
    = Path("demo-output"),
    rows_per_month: Annotated[int, typer.Option(help="Price quotes per monthly delivery.", min=2000)] = 10_000,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic data and the models.")] = 0,
) -> None:
    """Run the whole product on synthetic price quotes, end to end, in about a minute.

    Builds web-scraped-style price quotes (product titles, 10 COICOP-like item classes with
    unequal prevalence, prices, expenditure weights), trains a logistic regression and a naive
    Bayes classifier on the titles and registers both in MLflow, then runs the three Prefect
    flows: evaluate_model on the test set, monitor_period for each of 12 monthly deliveries
    (prevalence and prices shift from month 8, so alerts fire from 2024-08 on; in 2024-09 one
    retailer's pack sizes come in kilograms), and
    compare_models on the two models. Everything goes to the MLflow store in this folder
    (sqlite:///mlflow.db unless MLFLOW_TRACKING_URI is set); open it with `classwatch ui`.
    """
    from classwatch.demo.run import MONTHS, run_demo

    start = time.perf_counter()
    with _progress() as progress:
        stages = progress.add_task("Starting (imports, Prefect API)", total=5 + len(MONTHS))
        steps = iter(range(100))

        def step(message: str) -> None:
            if next(steps):
                progress.advance(stages)
            progress.update(stages, description=message)

        try:
            result = run_demo(out_dir, rows_per_month=rows_per_month, seed=seed, step=step)
        except Exception as exc:  # noqa: BLE001 - shown to the user, with the traceback in --verbose runs
            progress.stop()
            _fail(exc)
        progress.update(stages, completed=5 + len(MONTHS), description="Done")
    console.print(alert_table(result.periods))
    ev = result.evaluation
    cmp = result.comparison
    metric = ev.get("headline")
    console.print(f"\nEvaluation of {result.models['logistic_regression']}: {metric} = "
                  f"{ev['metrics'].get(metric, float('nan')):.4f}; ONS recommends {ev.get('recommendation')}; "
                  f"{'promoted to' if ev.get('promoted') else 'kept'} champion.")
    console.print(f"Comparison ({cmp.get('metric')}): best {cmp.get('best')}; "
                  f"{int(cmp['metrics'].get('n_rejected', 0))} of {len(cmp.get('tests', []))} corrected tests reject.")
    shifted = [p.period for p in result.periods if p.alert]
    console.print(f"Alerts in {len(shifted)} of {len(result.periods)} months: {', '.join(shifted) or 'none'}.")
    for line in feature_lines(result.periods):
        console.print(line, soft_wrap=True)
    console.print(estimated_line(result.periods))
    for p in result.periods:
        if next_sample_line(p):
            console.print(next_sample_line(p), soft_wrap=True)
    console.print(f"\n[bold]Logged[/bold] to MLflow {result.tracking_uri}, experiment 'classwatch-demo': 2 training "
                  "runs with registered models, 1 evaluation run (metrics, intervals, curves, ISO report), a "
                  "monitoring parent run with 12 period runs, 1 comparison run.")
    console.print(f"Data and spec: {result.out_dir} (re-run a month: classwatch monitor --spec "
                  f"{result.out_dir / 'spec.yaml'} --period 2024-09 --force)")
    console.print(f"Plots copied to {result.out_dir / 'plots'}: {', '.join(p.name for p in result.plots)}")
    console.print(f"Look at it: [bold]{_ui_hint(result.tracking_uri)}[/bold] (MLflow UI on http://127.0.0.1:5000; "
                  "it prints the link to each experiment's runs table).")
    console.print(f"Demo finished in {time.perf_counter() - start:.0f} s.")


def _print_example_spec(value: bool) -> None:
    if value:
        from tasks.config.spec import example_yaml

        typer.echo(example_yaml(), nl=False)  # machine output: plain, never wrapped (valid YAML when redirected)
        raise typer.Exit()


def default_spec(spec: Path | None) -> Path:
    """The run spec of ``monitor``: ``--spec``, else ``classwatch.yaml`` in the current folder (as ``serve``)."""
    if spec is not None:
        return spec
    here = Path.cwd() / DEFAULT_SPEC
    if here.is_file():
        return here
    fail(ValueError(f"no run spec: pass --spec SPEC.yaml or put {DEFAULT_SPEC} in this folder ({Path.cwd()}). "
                    "`classwatch monitor --example-spec > spec.yaml` writes a commented example."))


def checked_periods(run_spec, periods: list[str]) -> tuple[list[str], list]:
    """Each period resolved ("previous" -> the month before) and checked with its sources (files,
    columns, schemas; metadata only) before Prefect starts, so a typo or a missing file is reported
    at once: (the periods to monitor, [(period, exception)] of the others)."""
    from tasks.monitor import plan_period, resolve_period

    ok, failed = [], []
    for given in periods:
        try:
            period = resolve_period(given)
            plan_period.fn(run_spec, period)  # the flow's own first check, without the engine
        except Exception as exc:  # noqa: BLE001 - reported per period in the summary
            if debug():
                traceback.print_exception(exc)
            failed.append((given, exc))
        else:
            ok.append(period)
    return ok, failed


def _not_run(exc: Exception) -> Exception:
    """The failure of a period not tried because an earlier one found a server down (``exc``)."""
    from tasks.net import Unreachable

    class NotRun(Unreachable):
        """A period not tried: an earlier one found a server down."""

    return NotRun(str(exc).split(";")[0])


def _monitor_periods(flow, run_spec, spec: Path, periods: list[str], force: bool, current: str | None = None
                     ) -> tuple[list, list, list[str]]:
    """Run every period (a failure does not stop the others, but a server found down does: the
    later periods would wait for it as long again): (results, [(period, exception)], the messages
    of the warnings raised meanwhile, each once, to be shown as ``Warning:`` lines).

    The flow gets the spec's path, not the loaded spec: Prefect stores a flow's parameters and
    refuses them over 512 KB, echoing them whole in its error.
    On Ctrl-C the periods so far are returned with the interrupted one and the rest failed as
    :class:`KeyboardInterrupt` (the period being logged is marked KILLED by the store).
    """
    from flows import runners
    from tasks.net import Unreachable

    done, failed = [], []
    with warnings.catch_warnings(record=True) as caught, runners.api_for(run_spec.task_runner), \
            runners.in_process_runs(), quiet_prefect(), _progress() as progress:
        job = progress.add_task("Monitoring", total=len(periods))
        for i, p in enumerate(periods):
            progress.update(job, description=f"monitor_period {p}")
            try:
                done.append(flow(str(Path(spec).resolve()), p, current=current, force=force))
            except KeyboardInterrupt as exc:
                failed += [(q, exc) for q in periods[i:]]
                break
            except Exception as exc:  # noqa: BLE001 - reported per period in the summary
                if debug():
                    traceback.print_exception(exc)
                failed.append((p, exc))
                if isinstance(exc, Unreachable):
                    failed += [(q, _not_run(exc)) for q in periods[i + 1:]]
                    break
            progress.advance(job)
    return done, failed, list(dict.fromkeys(str(w.message) for w in caught))


def monitor(
    period: Annotated[list[str], typer.Option(metavar="YYYY-MM", show_default=False,
                                              help="Month to monitor; repeat for several, or 'previous' for last "
                                              "month.")],
    spec: Annotated[Optional[Path], typer.Option(help=SPEC_HELP + " Default: classwatch.yaml in this folder.",
                                                 exists=True, dir_okay=False, show_default=False)] = None,
    current: Annotated[Optional[str], typer.Option(help="Override data.current of the spec (may contain "
                                                   "{period}).")] = None,
    force: Annotated[bool, typer.Option(help="Recompute and re-log a period that is already logged.")] = False,
    example_spec: Annotated[bool, typer.Option("--example-spec", help="Print a commented run spec and exit.",
                                               is_eager=True, callback=_print_example_spec)] = False,
) -> None:
    """Monitor monthly deliveries against the reference window and raise retraining alerts.

    For each period: prevalence of every class (labels where present, predictions always), each
    class's score distribution and price distribution are tested against the reference; a
    period alerts when a corrected test rejects AND its effect passes the spec's practical
    threshold (the headline metric's drop against the reference is one of those tests). Each period is
    one MLflow run (under a parent run per model and reference), logged once: re-running a
    period reuses its run unless --force. A period that fails does not stop the others; the
    summary says what was logged and what failed (exit code 2 for bad input, 1 otherwise).

    Example: classwatch monitor --spec spec.yaml --period 2024-08 --period 2024-09
    """
    spec = default_spec(spec)
    from flows import runners
    from flows.monitor_period import monitor_period
    from tasks.config.spec import load_spec

    try:
        run_spec = load_spec(spec, data={"current": current})  # checked here; each flow reads the file again
        runner = runners.task_runner(run_spec.task_runner)
        runners.check_scheduler(run_spec.task_runner)
    except Exception as exc:  # noqa: BLE001
        fail(exc)
    periods, bad = checked_periods(run_spec, period)
    if periods:
        try:
            runners.check_api(waiting=console.status)
        except runners.ApiUnreachable as exc:
            _summary([], bad)
            fail(exc)
    try:
        done, failed, said = _monitor_periods(monitor_period.with_options(task_runner=runner), run_spec, spec,
                                              periods, force, current) if periods else ([], [], [])
    except KeyboardInterrupt as exc:  # while the Prefect API or the task runner starts or stops: named to re-run
        done, failed, said = [], [(p, exc) for p in periods], []
    failed = bad + failed
    _summary(done, failed, rerun=_rerun_command(spec, current, force))
    for text in said:  # e.g. a probability threshold on percent scores (metrics_core.misread)
        typer.secho(f"Warning: {text}", fg=typer.colors.YELLOW, err=True)
    if any(isinstance(exc, KeyboardInterrupt) for _, exc in failed):
        raise typer.Exit(code=INTERRUPTED)
    if failed:  # 2 when every failure was bad input, else 1
        raise typer.Exit(code=BAD_INPUT if all(exit_code(exc) == BAD_INPUT for _, exc in failed) else FAILED)


def _rerun_command(spec: Path, current: str | None, force: bool) -> str:
    """The command that monitors again (with ``--period`` options appended by the summary)."""
    import shlex

    return " ".join([_classwatch(), "monitor", "--spec", shlex.quote(str(spec)),
                     *(["--current", shlex.quote(current)] if current else []), *(["--force"] if force else [])])


def _summary(done: list, failed: list, rerun: str | None = None) -> None:
    """The alert table and where the runs went, then each failure's message once, with the periods it
    failed (one line for periods failed by the same error, e.g. in the reference), and, for
    periods that failed for another reason than their input (a server down, an interrupt), the
    command that runs them again (``rerun`` without its ``--period`` options)."""
    from tasks.alerts import EVENT

    stopped = [p for p, exc in failed if isinstance(exc, KeyboardInterrupt)]
    if stopped:
        typer.secho(f"Interrupted during {stopped[0]}: its run is FINISHED if it was logged in full, else marked "
                    "KILLED (running it again finds it logged, or replaces it)"
                    + (f"; not run: {', '.join(stopped[1:])}" if stopped[1:] else "") + ".", err=True)
        failed = [(p, exc) for p, exc in failed if not isinstance(exc, KeyboardInterrupt)]

    if done:
        console.print(alert_table(done))
        for d in done:
            for line in reason_lines(d) if d.alert else ():
                console.print(line, soft_wrap=True)
        for d in done:
            if next_sample_line(d):
                console.print(next_sample_line(d), soft_wrap=True)
        unlabelled = [d.period for d in done if not d.labelled]
        if unlabelled:
            console.print(f"Without labels (performance not measured): {', '.join(unlabelled)}.")
        first = done[0]
        reused = sum(not d.created for d in done)
        console.print(f"\nLogged to MLflow {first.tracking_uri}, experiment {first.experiment!r}: "
                      f"{len(done) - reused} new period run(s), {reused} already logged (use --force to redo): "
                      f"{', '.join(d.period for d in done)}.")
        sent = [d.period for d in done if d.event_id]
        if sent:  # an alert is sent once, when its period is first logged (none when nothing alerted)
            console.print(f"Alerts of {', '.join(sent)} went to Prefect as {EVENT} events.")
        console.print(f"Look at it: [bold]{_ui_hint(first.tracking_uri)}[/bold]")
    by_text: dict[str, list[str]] = {}  # one line per message: a reference's error fails every period alike
    for p, exc in failed:
        by_text.setdefault(message(exc), []).append(p)
    for text, periods in by_text.items():
        typer.secho(f"Error: {', '.join(periods)}: {text}", fg=typer.colors.RED, err=True)
    if failed:
        logged = ", ".join(d.period for d in done) or "none"
        typer.secho(f"{len(failed)} of {len(failed) + len(done) + len(stopped)} period(s) failed and logged "
                    f"nothing ({', '.join(p for p, _ in failed)}); logged: {logged}.", err=True)
    elif stopped:
        typer.secho(f"Logged: {', '.join(d.period for d in done) or 'none'}.", err=True)
    again = [*stopped, *(p for p, exc in failed if exit_code(exc) != BAD_INPUT)]
    if again and rerun:
        typer.secho(f"Run them again with: {rerun} " + " ".join(f"--period {p}" for p in again), err=True)


def compare(
    model_uri: Annotated[list[str], typer.Argument(metavar="MODEL_URI...", help="Two or more MLflow model URIs, "
                                                   "e.g. models:/NAME/1 models:/NAME/2.")],
    spec: Annotated[Optional[Path], typer.Option(help=SPEC_HELP, exists=True, dir_okay=False)] = None,
    test_data: Annotated[Optional[str], typer.Option(help="Test set (overrides data.test of the spec).")] = None,
    force: Annotated[bool, typer.Option(help="Re-log a comparison that is already logged.")] = False,
) -> None:
    """Compare two or more models on the same test rows (ISO/IEC TS 4213 clause 7).

    Each model scores the test set (the spec's columns.features are its inputs); pairwise
    McNemar tests, paired bootstraps of the headline metric and paired t-tests over test folds
    are corrected together (the spec's correction, BH by default). One MLflow run holds the
    per-model metrics and the table of tests.
    """
    from flows.compare_models import compare_models
    from flows.runners import in_process_runs

    with console.status(f"compare_models: {len(model_uri)} models"), in_process_runs(), quiet_prefect():
        try:
            out = compare_models(str(spec) if spec else None, list(model_uri), test_data=test_data, force=force)
        except Exception as exc:  # noqa: BLE001
            fail(exc)
    table = Table(title=f"Model comparison on {out['metric']} (p-values corrected together)")
    for col in ("model a", "model b", "test", "effect", "p adjusted", "reject"):
        table.add_column(col)
    for r in out.get("tests", []):
        table.add_row(r["model_a"], r["model_b"], r["test"], f"{r['effect_size']:.4g}", f"{r['p_adjusted']:.3g}",
                      "yes" if r["reject"] else "no")
    console.print(table)
    where = f"MLflow {out['tracking_uri']} (run {out['run_id']})"
    console.print(f"Best on the test set: {out['best']}. " + (f"Logged to {where}." if out["created"] else
                  f"Already logged to {where}: shown as logged; --force computes it again."))
    console.print(f"Look at it: [bold]{_ui_hint(out['tracking_uri'])}[/bold]")


def recommend(
    data: Annotated[Path, typer.Argument(help="History of labelled (or classified) rows with a period column: "
                                         "Parquet file/directory, Arrow IPC or CSV.", exists=True)],
    task: Annotated[Task, typer.Option(help="binary or multiclass.")] = Task.multiclass,
    positive_class: Annotated[Optional[str], typer.Option(help="Binary: the positive class value (default: 1, "
                                                          "or True).")] = None,
    label_column: Annotated[str, typer.Option(help="Class column (labels, or predictions).")] = "label",
    period_column: Annotated[str, typer.Option(help="Period column: YYYY-MM text, YYYYMM numbers, or dates and "
                                               "timestamps (grouped by month).")] = "period",
    price_column: Annotated[Optional[str], typer.Option(help="Price column ('' for none).")] = "price",
    reference: Annotated[int, typer.Option(help="Number of first periods pooled as the reference.", min=1)] = 1,
) -> None:
    """Which metric to report, from the ONS guidance (Tables 1 and 2), measured on your history.

    Measures whether class prevalence and the classes' price distributions were stable over
    the periods of DATA (chi-squared/PSI and KS tests with practical thresholds: 2 points of
    prevalence, PSI 0.1, 10 % price change), then reads the ONS table for your task: the
    headline metric, the ROC or PR space to plot it in, averaging, weighting and beta advice.
    """
    from metrics_core import ons
    from metrics_core.contract import missing_columns
    from metrics_core.dataset import open_dataset

    try:
        ds = open_dataset(str(data))
        names = ds.schema.names
        # as in a run spec: the default price column may be absent (no prices), a name given must exist
        needed = {period_column: "period", label_column: "label", **(
            {price_column: "price"} if price_column and price_column != "price" else {})}
        missing = {c: role for c, role in needed.items() if c not in names}
        if missing:
            raise missing_columns(data, missing, names)
        cols = [c for c in (period_column, label_column, price_column) if c and c in names]
        rows = ds.to_table(columns=list(dict.fromkeys(cols)))  # Arrow: stability_from_rows reads its dates
        pos = None
        if task is Task.binary:  # the positive class as evaluate reads it: 1 or True unless given
            pos = checked_positive_class(data, rows.schema.field(label_column).type, positive_class, label_column,
                                         rows)
        st = ons.stability_from_rows(rows, period_column=period_column, label_column=label_column,
                                     price_column=price_column if price_column in rows.column_names else None,
                                     reference=reference, positive_class=pos)
        rec = st.recommend(task.value)
    except Exception as exc:  # noqa: BLE001
        fail(exc)
    table = Table(title=f"ONS recommendation ({task.value}, table column '{rec.column}')", show_header=False)
    for k, v in (("headline metric", rec.metric), ("plot in", f"{rec.space} space"),
                 ("averaging", rec.averaging or "n/a"),
                 ("prevalence weights", "yes" if rec.weight_by_prevalence else "no"),
                 ("beta", rec.beta_advice), ("why", rec.reason),
                 ("alternatives", ", ".join(f"{o.metric} ({o.space}): {o.when}" for o in rec.alternatives) or "none")):
        table.add_row(k, v)
    console.print(table)
    console.print(f"Measured on {data}: {st.reason}")
    console.print("Use it: set `headline_metric: " + rec.metric + "` in the run spec.")


def ui(
    port: Annotated[int, typer.Option(help="Port of the MLflow UI on 127.0.0.1.")] = 5000,
    tracking_uri: Annotated[Optional[str], typer.Option(help="MLflow store to show (default: $MLFLOW_TRACKING_URI "
                                                        "or sqlite:///mlflow.db here).")] = None,
    host: Annotated[str, typer.Option(help="Interface to bind; keep 127.0.0.1 unless others must reach it.")]
    = "127.0.0.1",
) -> None:
    """Open the MLflow UI on the classwatch store (runs, metrics, curves, alerts). Ctrl-C stops it.

    Shows the same store the flows log to: the SQLite file mlflow.db in this folder unless
    MLFLOW_TRACKING_URI (or --tracking-uri) points elsewhere. A remote tracking server already
    has its own UI: then this only prints its address.
    """
    uri = tracking_uri or _default_uri()
    if uri.startswith(("http://", "https://")):
        console.print(f"{uri} is a tracking server: open it in a browser.")
        return
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).exists():
        _fail(ValueError(f"no MLflow store at {uri}: run `classwatch demo` (or a flow) here first, or pass "
                         "--tracking-uri."))
    _run_ui(uri, host, port)


def experiment_links(uri: str, base: str) -> list[tuple[str, str]]:
    """(name, link) of each experiment of the store: its runs table in the classic "Model training"
    view (MLflow 3.17's UI opens its GenAI view unless the link asks for this one); [] if unreadable."""
    try:
        from tasks.store.mlflow import client, ui_link

        exps = client(uri).search_experiments(max_results=50)
    except Exception:  # noqa: BLE001 - the links are a convenience; the UI itself reports store errors
        return []
    return [(e.name, ui_link(e.experiment_id, base=base))
            for e in exps if e.name != "Default" or e.experiment_id != "0"]


def _port_busy(host: str, port: int) -> str:
    return (f"port {port} on {host} is already in use (another MLflow UI or server?): pick a free one with "
            f"--port, e.g. `classwatch ui --port {port + 1}`, or stop what uses it.")


def _run_ui(uri: str, host: str, port: int) -> None:
    """Run ``mlflow ui`` in its own session until Ctrl-C, SIGTERM or SIGHUP, which stop it and its
    workers (exit 0); a busy port, or a server that stops by itself, is an error (exit 1)."""
    import signal

    from deployments.servers import port_in_use, stop_process

    reach = "127.0.0.1" if host in ("0.0.0.0", "") else host
    if port_in_use(reach, port):
        fail(_port_busy(host, port), code=FAILED)
    mlflow_bin = shutil.which("mlflow", path=str(Path(sys.executable).parent)) or "mlflow"
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    cmd = [mlflow_bin, "ui", "--backend-store-uri", uri, "--host", host, "--port", str(port), "--workers", "1"]
    console.print(f"MLflow UI for {uri} on http://{host}:{port} (starting takes ~15 s; Ctrl-C stops it)")

    def stop(signum, frame):
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    child = None
    try:
        child = subprocess.Popen(cmd, env=env, start_new_session=True)  # its own group: stopped as a whole
        for name, link in experiment_links(uri, f"http://{reach}:{port}"):  # while the server starts
            console.print(f"  {name}: {link}", soft_wrap=True)
        code = child.wait()
    except KeyboardInterrupt:
        return
    finally:
        if child is not None:
            # SIGTERM first: uvicorn re-raises a SIGINT after its shutdown, and the MLflow UI then
            # printed a KeyboardInterrupt / CancelledError traceback below "Shutting down".
            stop_process(child, timeout=10, signals=(signal.SIGTERM, signal.SIGKILL))
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    # the server never stops by itself (uvicorn even exits 0 when it cannot bind): always an error
    fail(_port_busy(host, port) if port_in_use(reach, port) else
         f"the MLflow UI stopped by itself with exit code {code} (its messages are above).", code=FAILED)


def register(app: typer.Typer) -> None:
    """Add demo, monitor, compare, recommend and ui to the ``classwatch`` app."""
    app.command()(demo)
    app.command()(monitor)
    app.command()(compare)
    app.command()(recommend)
    app.command()(ui)
