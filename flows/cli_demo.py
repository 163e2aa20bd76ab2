"""`classwatch demo` (temporary, until the Prefect demo flow): generate two datasets and evaluate each."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from flows.cli_evaluate import Task, evaluate
from flows.demo_data import write_demo_data


def demo(
    out_dir: Annotated[Path, typer.Option(help="Where the datasets and plots go.", file_okay=False)]
    = Path("demo-output"),
    rows: Annotated[int, typer.Option(help="Rows per dataset.", min=100)] = 200_000,
    classes: Annotated[int, typer.Option(help="Classes of the multiclass dataset.", min=3)] = 10,
    seed: Annotated[int, typer.Option(help="Seed of the generated data.")] = 0,
) -> None:
    """Generate a binary and a multiclass price-quote dataset in OUT_DIR and evaluate each.

    Writes binary.parquet and multiclass.parquet (labels, scores, prediction, expenditure weight,
    price, period), then runs `classwatch evaluate` on each: metric tables with intervals and
    baselines, and ROC / PR / gain / lift / confusion PNGs beside the data.
    """
    console = Console(highlight=False)
    start = time.perf_counter()
    with console.status(f"Generating {rows:,} binary and {rows:,} {classes}-class rows in {out_dir}..."):
        paths = write_demo_data(out_dir, n=rows, k=classes, seed=seed)
    console.print(f"Wrote {paths['binary']} and {paths['multiclass']} in {time.perf_counter() - start:.1f} s.")
    evaluate(paths["binary"], task=Task.binary)
    console.rule()
    evaluate(paths["multiclass"], task=Task.multiclass)
    console.print(f"Demo done in {time.perf_counter() - start:.1f} s; open the PNGs in {out_dir}.")
