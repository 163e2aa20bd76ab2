"""The reliability diagram as a PNG: observed frequency against mean score per bin, with the rows per bin."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from metrics_core.calibration import TOP_LABEL, Reliability
from tasks.render.plots import _count_text, _save


def _panel(ax, counts_ax, rel: Reliability, title: str) -> None:
    """One reliability diagram: the diagonal, the bins' (mean score, observed) points; below it, on
    ``counts_ax``, the rows per bin as bars (numbers printed over the bars overlapped where bins
    crowd near 1 and were unreadable at the size of MLflow's preview)."""
    full = rel.count > 0
    centres = (rel.edges[:-1] + rel.edges[1:]) / 2
    widths = np.diff(rel.edges)
    ax.plot([0, 1], [0, 1], color="#9a9a9a", linestyle="--", linewidth=0.8, label="perfect calibration")
    ax.bar(centres, np.where(full, rel.observed, 0), width=widths * 0.9, color="#c6dbef", edgecolor="#6baed6",
           label="observed frequency per bin")
    ax.plot(rel.mean_score[full], rel.observed[full], marker="o", color="#08519c", linewidth=1.2,
            label="mean score vs observed frequency")
    top = np.nanmax(np.where(full, rel.observed, 0)) if full.any() else 0.0
    ax.set_xlim(0, 1)
    ax.set_ylim(0, max(1.02, top + 0.05))
    ax.set_ylabel("observed frequency")
    ax.tick_params(labelbottom=False)
    ax.set_title(f"{title}\nECE {rel.ece:.3f}, MCE {rel.mce:.3f} ({rel.strategy} bins)", fontsize=10)
    ax.legend(loc="upper left", fontsize=8)
    counts_ax.bar(centres, np.where(full, rel.count, 0), width=widths * 0.9, color="#9ecae1", edgecolor="#6baed6")
    counts_ax.set_xlim(0, 1)
    counts_ax.set_ylabel("rows", fontsize=9)
    counts_ax.set_xlabel("score (predicted probability)")
    counts_ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _count_text(v) if v else "0"))
    counts_ax.locator_params(axis="y", nbins=3)


def _target(name: str) -> str:
    """A diagram's target in words.

    >>> _target("top_label"), _target("1")
    ('top-label confidence', "class '1'")
    """
    return "top-label confidence" if name == TOP_LABEL else f"class {name!r}"


def plot_reliability(diagrams: dict[str, tuple[Reliability, Reliability]], path, *, title: str = "",
                     subject: str | None = None) -> Path:
    """Write a reliability-diagram PNG: one row per target, fixed-width bins left, equal-mass right,
    each over a strip of its rows per bin.

    Parameters
    ----------
    diagrams : dict of str to (Reliability, Reliability)
        Target name (binary: the positive class; multiclass: ``top_label``, classes) to its
        fixed-width and equal-mass reliability (:func:`metrics_core.calibration.reliability`).
    path : str or Path
        The PNG to write.
    title : str
        Prefix of each panel's title.
    subject : str, optional
        What was evaluated (the model, the file), first in each panel's title.

    Returns
    -------
    Path
        ``path``.
    """
    rows = max(len(diagrams), 1)
    fig = Figure(figsize=(10, 5.2 * rows))
    FigureCanvasAgg(fig)
    axes = fig.subplots(2 * rows, 2, squeeze=False, sharex=True, gridspec_kw={"height_ratios": [3, 1] * rows})
    for i, (name, pair) in enumerate(diagrams.items()):
        for j, rel in enumerate(pair):
            head = f"{title}{subject + ': ' if subject else ''}{_target(name)}"
            _panel(axes[2 * i, j], axes[2 * i + 1, j], rel, head)
    fig.tight_layout()
    return _save(fig, path)
