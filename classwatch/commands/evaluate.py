"""`classwatch evaluate`: one dataset's report as rich tables (metric, 95% interval, baselines) plus its PNG plots."""

from __future__ import annotations

import json
import math
import resource
import time
import warnings
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from classwatch.commands.errors import BAD_INPUT, fail

if TYPE_CHECKING:
    from tasks.render.plot_workers import PlotWorkers

COUNT_KEYS = {"n", "tp", "fp", "fn", "tn", "support", "total_cost"}


class Task(str, Enum):
    """Task kinds `evaluate` handles (multilabel needs list columns: a later command)."""

    binary = "binary"
    multiclass = "multiclass"


# --------------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------------

def format_value(key: str, value) -> str:
    """How the tables print a value: counts with thousands separators, others with 4 decimals.

    >>> format_value("n", 1234.0), format_value("auroc", 0.87654321), format_value("mcc", float("nan"))
    ('1,234', '0.8765', 'nan')
    """
    if value is None:
        return "-"
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if key in COUNT_KEYS or key.startswith("n_"):
        whole = abs(value - round(value)) <= 1e-9 * max(1.0, abs(value))  # expected counts of baselines
        return f"{value:,.0f}" if whole else f"{value:,.2f}"
    if abs(value) < 5e-5:
        value = 0.0  # no "-0.0000" for a rounding residue
    return f"{value:.4f}" if abs(value) < 1e5 else f"{value:.4g}"


def format_interval(key: str, interval) -> str:
    """``[low, high]`` with :func:`format_value`'s digits, or ``-`` when the metric has none."""
    if interval is None:
        return "-"
    low, high = interval
    return f"[{format_value(key, low)}, {format_value(key, high)}]"


def metric_table(report, level: float) -> Table:
    """Every key of ``report.metrics`` with its interval and its majority / random baselines."""
    intervals, baselines = report.intervals, report.baselines
    majority, random = baselines.get("majority", {}), baselines.get("random", {})
    table = Table(title=f"{report.task.capitalize()} metrics", title_justify="left", header_style="bold")
    table.add_column("metric", style="cyan", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column(f"{level:.0%} interval", justify="right", no_wrap=True)
    table.add_column("majority class", justify="right", no_wrap=True)
    table.add_column("random (prevalence)", justify="right", no_wrap=True)
    for key, value in report.metrics.items():
        table.add_row(key, format_value(key, value), format_interval(key, intervals.get(key)),
                      format_value(key, majority.get(key)), format_value(key, random.get(key)))
    return table


def per_class_table(report) -> Table:
    """The per-class one-vs-rest table of a multiclass report, one row per class."""
    frame = report.per_class
    table = Table(title="Per class (one-vs-rest)", title_justify="left", header_style="bold")
    for column in frame.columns:
        table.add_column(column, justify="left" if column == "class" else "right", no_wrap=True,
                         style="cyan" if column == "class" else None)
    for row in frame.iter_rows():
        table.add_row(*(str(v) if c == "class" else format_value(c, v) for c, v in zip(frame.columns, row)))
    return table


# --------------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------------

def checked_positive_class(path, label_type, given, column: str, rows=None):
    """The positive class ``given`` (text from ``--positive-class``; None: the default) as a value of
    the label ``column`` of ``path``
    (:func:`metrics_core.contract.positive_class`). A value the column's type cannot hold
    (``yes`` for integer labels) is reported as any class the labels do not hold
    (:func:`metrics_core.contract.binary_classes`): one message naming the file, the column, the
    labels found there (read from ``rows``, an Arrow table, else from the file) and the option."""
    from metrics_core.contract import binary_classes, positive_class
    from metrics_core.errors import InputError

    try:
        return positive_class(label_type, given, column=column, where=path)
    except InputError:
        if given is None:
            raise
        if rows is None:
            from metrics_core.dataset import open_dataset

            rows = open_dataset(str(path)).to_table(columns=[column])
        labels = sorted(v for v in rows.column(column).unique().to_pylist() if v is not None)
        binary_classes(labels, given, where=f"{path}: column {column!r}")  # raises: not one of the labels
        raise


def build_report(path: Path | str, task: Task, *, threshold: float = 0.5, beta: float = 1.0,
                 pos_label: str | None = None,
                 level: float = 0.95, label_column: str = "label", score_column: str = "score",
                 score_prefix: str = "score_", prediction_column: str = "prediction",
                 weight_column: str | None = None, n_boot: int = 1000, seed: int = 0,
                 bins: int | None = None, batch_rows: int = 1_000_000, runner: str = "local", progress=None):
    """The metrics_core report of the data in ``path``, read batch by batch.

    The command line's columns become the input contract's :class:`~metrics_core.contract.Columns`
    and its layout (:func:`~metrics_core.contract.resolve_layout`). Binary: ``label`` and
    ``score`` (or ``prediction`` when there is no score column); the positive class is
    ``pos_label`` (default 1, or True for a boolean label). Multiclass: ``label`` with the
    ``score_<class>`` columns (classes in column order) and/or ``prediction``. ``weight_column``
    weights every count (expenditure). Bad input raises the contract's ``metrics_core.InputError``
    (file, column, count and an example row).

    The statistics are mergeable (:func:`metrics_core.dataset.scan_stats`, or the Prefect flow of
    :mod:`flows.compute_stats` on a Dask cluster when ``runner`` is ``dask`` / ``dask://HOST:PORT``, on
    Spark when it is ``spark`` / ``spark://HOST:PORT``); ``path`` may be an object-store URL (``s3://``),
    so memory is bounded whatever the row count and the report is identical to the in-memory
    one; ``bins`` gives constant-memory binned score statistics, ``progress(rows_done, rows_total)``
    follows the reading.
    """
    import metrics_core as mc  # here, not at the top: `classwatch --help` and other commands start without it
    from metrics_core.contract import Columns, resolve_layout
    from metrics_core.dataset import scan_stats, schema_of

    columns = Columns(label=label_column, prediction=prediction_column, score=score_column, score_prefix=score_prefix,
                      weight=weight_column)
    schema = schema_of(path)
    layout = resolve_layout(schema, task.value, columns, require=["label"] + (["weight"] if weight_column else []),
                            where=path)
    if task is Task.binary:  # the scores decide when there are scores
        pos = checked_positive_class(path, schema.field(label_column).type, pos_label, label_column)
        labels, use_prediction = None, not layout.scores
    else:
        pos, labels, use_prediction = 1, layout.labels or None, None
    options = dict(labels=labels, pos_label=pos, threshold=threshold, bins=bins, batch_rows=batch_rows,
                   progress=progress, use_prediction=use_prediction)
    try:
        if runner == "local":
            stats = scan_stats(path, task.value, columns, **options)
        else:
            from flows.compute_stats import compute_stats

            stats = compute_stats(path, task.value, columns, runner=runner, **options)
    except mc.InputError:
        if labels is not None:  # the score columns named the classes: a labelled class may lack its column
            _score_columns_of_every_class(path, columns, schema, weight_column)
        raise
    to_report = mc.binary_from_stats if task is Task.binary else mc.multiclass_from_stats
    return to_report(stats, beta=beta, level=level, n_boot=n_boot, seed=seed)


def _score_columns_of_every_class(path: Path, columns, schema, weight_column: str | None) -> None:
    """Raise the contract's missing-score-column error when a class of the rows of ``path`` has no
    ``score_<class>`` column. A row with such a label was reported as outside the class list the
    score columns make, with the advice to drop it: the class would have gone from the evaluation.
    (Checked only once the scan has failed: a correct file pays no second pass.)"""
    from metrics_core.contract import resolve_layout
    from metrics_core.dataset import class_labels, dataset_class_rows
    from metrics_core.errors import InputError

    classes = class_labels(path, columns, with_prediction=False).tolist()
    try:
        resolve_layout(schema, "multiclass", columns, labels=classes, require=["label"] + (
            ["weight"] if weight_column else []), where=path)
    except InputError as exc:  # a class in one stray row is more likely a typo of a label: say where it is
        raise InputError(f"{exc} Where the classes are: {dataset_class_rows(path, columns)}.") from None


class _RowProgress:
    """A rich progress bar over rows read (rows_done, rows_total) for build_report's ``progress``."""

    def __init__(self, console: Console, description: str):
        self.progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("rows"), TimeElapsedColumn(), console=console, transient=True)
        self.description = description
        self.task = None

    def __enter__(self):
        self.progress.__enter__()
        self.task = self.progress.add_task(self.description, total=None)
        return self

    def __exit__(self, *exc):
        return self.progress.__exit__(*exc)

    def update(self, done: int, total: int | None) -> None:
        self.progress.update(self.task, completed=done, total=total)


def _peak_rss() -> int:
    """Peak resident memory of this process in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def write_json(path: Path, report, seconds: float) -> None:
    """``{"metrics": {...}, "n_rows": N, "seconds": s, "peak_rss_bytes": b}``; nan and inf become null.
    The folder of ``path`` is created if it does not exist (as ``--out-dir`` is)."""
    metrics = {k: (float(v) if v is not None and math.isfinite(v) else None) for k, v in report.metrics.items()}
    payload = {"metrics": metrics, "n_rows": int(report.stats.n_rows), "seconds": round(seconds, 3),
               "peak_rss_bytes": _peak_rss()}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(payload, indent=2) + "\n")


#: Options that only one task reads: given with the other task, they would be ignored without a word.
TASK_OPTIONS = {Task.binary: ("threshold", "positive_class", "pos_label", "score_column"),
                Task.multiclass: ("score_prefix",)}


def _check_task_options(ctx: typer.Context, task: Task) -> None:
    """A usage error (exit 2) for an option given on the command line that ``task`` does not read."""
    other = Task.binary if task is Task.multiclass else Task.multiclass
    # by name: typer carries its own copy of click, whose ParameterSource is not click's
    given = [p for p in TASK_OPTIONS[other] if getattr(ctx.get_parameter_source(p), "name", "") == "COMMANDLINE"]
    if given:
        names = ", ".join("--" + p.replace("_", "-") for p in given)
        many = len(given) > 1
        raise typer.BadParameter(f"{names} {'apply' if many else 'applies'} only to a {other.value} task; this is "
                                 f"--task {task.value}. Drop {'them' if many else 'it'}, or change --task.",
                                 param_hint="--task")


def evaluate(
    ctx: typer.Context,
    path: Annotated[str, typer.Argument(help="Parquet file or directory (hive partitions); .arrow/.feather "
                                             "and .csv work too; or an object-store URL, s3://BUCKET/PREFIX/ "
                                             "(AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...) or gs://.",
                                        show_default=False)],
    task: Annotated[Task, typer.Option("--task", "-t", help="binary: columns label + score. multiclass: "
                                       "label + score_<class> columns and/or prediction.", case_sensitive=False)],
    threshold: Annotated[float, typer.Option(help="Binary: a row is predicted positive when score >= threshold.")]
    = 0.5,
    beta: Annotated[float, typer.Option(help="The beta of F-beta (beta > 1 weights recall more).", min=0.0)] = 1.0,
    positive_class: Annotated[str | None, typer.Option(help="Binary: the positive class value (default: 1, or "
                                                         "True).")] = None,
    pos_label: Annotated[str | None, typer.Option(hidden=True, help="Old name of --positive-class.")] = None,
    level: Annotated[float, typer.Option(help="Confidence level of the intervals.", min=0.5, max=0.999)] = 0.95,
    out_dir: Annotated[Path | None, typer.Option(help="Where the PNGs go (default: beside the data; the "
                                                      "current folder for a URL).",
                                                 file_okay=False)] = None,
    label_column: Annotated[str, typer.Option(help="Column with the labelled (true) class.")] = "label",
    score_column: Annotated[str, typer.Option(help="Binary: column with the positive-class score.")] = "score",
    score_prefix: Annotated[str, typer.Option(help="Multiclass: prefix of the per-class score columns.")]
    = "score_",
    prediction_column: Annotated[str, typer.Option(help="Column with the predicted class.")] = "prediction",
    weight_column: Annotated[str | None, typer.Option(help="Column of row weights, e.g. expenditure "
                                                           "(default: unweighted).")] = None,
    n_boot: Annotated[int, typer.Option(help="Bootstrap replicates for the non-proportion intervals.", min=50)]
    = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Write ROC / PR / gain / lift / confusion "
                                                                   "PNGs.")] = True,
    binned: Annotated[int | None, typer.Option("--binned", metavar="BINS", min=1,
                                               help="Keep score counts in BINS equal bins over [0, 1] (each "
                                                    "class's scores for multiclass): constant memory for any row "
                                                    "count; AUROC then comes with auroc_error_bound, its largest "
                                                    "possible error. Default: exact.")]
    = None,
    batch_rows: Annotated[int, typer.Option(help="Rows read per batch: memory is about one batch of the columns "
                                                 "used plus the statistics.", min=1_000)] = 1_000_000,
    runner: Annotated[str, typer.Option(help="local (this process), dask (a local Dask cluster of 2 worker "
                                             "processes, through Prefect), dask://HOST:PORT (a running Dask "
                                             "scheduler; the workers must see the same data path), spark (a "
                                             "local Spark, local[2]) or spark://HOST:PORT (a Spark cluster).")]
    = "local",
    json_out: Annotated[Path | None, typer.Option("--json", metavar="OUT", dir_okay=False,
                                                  help="Also write {metrics, n_rows, seconds, peak_rss_bytes} "
                                                       "as JSON to OUT (nan and inf as null).")] = None,
) -> None:
    """Evaluate a classifier's predictions in PATH: every metric, its interval and two baselines.

    Prints every metric of the report (ISO/IEC TS 4213 names) with its confidence
    interval (Wilson for proportions, bootstrap otherwise) and the same metric
    for the majority-class and the prevalence-matched random classifier;
    multiclass adds a per-class table.

    Writes NAME_roc.png, NAME_pr.png, NAME_gain.png, NAME_lift.png and
    NAME_confusion.png beside the data (or into --out-dir). Bad input (missing
    column, NaN score, null label, ...) is reported by column and exits with 2;
    other failures exit with 1.

    The data is read batch by batch (--batch-rows) into exact mergeable
    statistics, so memory stays bounded at any row count; --runner dask
    spreads the files over Dask workers.
    """
    _check_task_options(ctx, task)
    source = _source(path)
    from tasks.render.plot_workers import PlotWorkers

    # First thing: the plot workers import matplotlib while this process reads the data.
    workers = PlotWorkers.start() if plots else None
    try:
        _evaluate(source, task, workers, threshold=threshold, beta=beta,
                  pos_label=positive_class if positive_class is not None else pos_label, level=level,
                  out_dir=out_dir, label_column=label_column, score_column=score_column,
                  score_prefix=score_prefix, prediction_column=prediction_column, weight_column=weight_column,
                  n_boot=n_boot, seed=seed, binned=binned, batch_rows=batch_rows, runner=runner, json_out=json_out)
    finally:
        if workers is not None:
            workers.close()


def _source(path: str) -> Path | str:
    """The data argument: an object-store URL as it is, else a local path that must exist (a usage error, exit 2)."""
    from metrics_core.dataset.location import is_url

    if is_url(path):
        return path
    if not Path(path).exists():
        raise typer.BadParameter(f"Path '{path}' does not exist.", param_hint="'PATH'")
    return Path(path)


def _name(path: Path | str) -> tuple[str, str]:
    """``(name, stem)`` of a local path or the last part of a URL (``s3://b/d/test.parquet`` -> test.parquet, test)."""
    name = Path(path).name if isinstance(path, Path) else path.rstrip("/").rsplit("/", 1)[-1]
    return name, name.split(".", 1)[0] if isinstance(path, str) else Path(path).stem


def _evaluate(path: Path | str, task: Task, workers: PlotWorkers | None, *, threshold: float, beta: float,
              pos_label: str | None, level: float, out_dir: Path | None, label_column: str, score_column: str,
              score_prefix: str, prediction_column: str, weight_column: str | None, n_boot: int, seed: int,
              binned: int | None, batch_rows: int, runner: str, json_out: Path | None) -> None:
    """The body of :func:`evaluate`: the report, its tables and (with ``workers``) its PNGs."""
    console = Console(highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 120)
    errors = Console(stderr=True, highlight=False)
    name, stem = _name(path)
    try:
        started = time.perf_counter()
        with _RowProgress(console, f"Reading {name}") as progress, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")  # metrics_core's warnings, shown plainly below the table
            report = build_report(path, task, threshold=threshold, beta=beta, pos_label=pos_label, level=level,
                                  label_column=label_column, score_column=score_column, score_prefix=score_prefix,
                                  prediction_column=prediction_column, weight_column=weight_column,
                                  n_boot=n_boot, seed=seed, bins=binned, batch_rows=batch_rows, runner=runner,
                                  progress=progress.update)
        seconds = time.perf_counter() - started
        if json_out is not None:
            write_json(json_out, report, seconds)
        with console.status(f"Intervals ({n_boot:,} bootstrap replicates of the statistics) and baselines..."):
            table = metric_table(report, level)
        if workers is not None:  # only now: a command that fails draws nothing; they draw while the tables print
            # never inside a dataset directory (readers would trip on PNGs); for a URL, the current folder
            target = out_dir or (path.parent if isinstance(path, Path) else Path.cwd())
            workers.send(report, target, prefix=f"{stem}_", beta=beta, subject=name)
    except ValueError as exc:  # the input contract's message, as it is
        errors.print(f"[bold red]Error:[/] [red]{escape(str(exc))}[/]", soft_wrap=True)
        raise typer.Exit(code=BAD_INPUT) from None
    except Exception as exc:  # noqa: BLE001 - a failure that is not the input's (memory, a Dask cluster)
        fail(exc)
    weighted = f", weighted by {weight_column!r}" if weight_column else ""
    details = f"threshold {threshold:g}, " if task is Task.binary else ""
    console.print(f"[bold]{path}[/]: {task.value}, {report.stats.n_rows:,} rows{weighted}; "
                  f"{details}beta {beta:g}; {level:.0%} intervals")
    console.print(table)
    for message in dict.fromkeys(str(w.message) for w in caught):  # undefined metrics, reversed scores
        errors.print(f"[yellow]Warning:[/] {escape(message)}", soft_wrap=True)
    if json_out is not None:
        console.print(f"JSON: {json_out} ({seconds:.1f} s, peak RSS {_peak_rss() / 2**20:,.0f} MiB)")
    if report.per_class is not None:
        console.print(per_class_table(report))
    if workers is not None:
        with console.status("Drawing plots..."):
            written = workers.finish()
        console.print("Plots: " + ", ".join(str(p) for p in written.values()), soft_wrap=True)
