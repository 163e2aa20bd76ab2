"""The reliability diagram as a PNG: observed frequency against mean score per bin, with the rows per bin."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from metrics_core.calibration import Reliability
from tasks.render.plots import _save


def _panel(ax, rel: Reliability, title: str) -> None:
    """One reliability diagram: the diagonal, the bins' (mean score, observed) points and the counts."""
    full = rel.count > 0
    centres = (rel.edges[:-1] + rel.edges[1:]) / 2
    widths = np.diff(rel.edges)
    ax.plot([0, 1], [0, 1], color="#9a9a9a", linestyle="--", linewidth=0.8, label="perfect calibration")
    ax.bar(centres, np.where(full, rel.observed, 0), width=widths * 0.9, color="#c6dbef", edgecolor="#6baed6",
           label="observed frequency per bin")
    ax.plot(rel.mean_score[full], rel.observed[full], marker="o", color="#08519c", linewidth=1.2,
            label="mean score vs observed frequency")
    top = np.nanmax(np.where(full, rel.observed, 0)) if full.any() else 0.0
    wide = widths >= 0.025  # equal-mass bins crowd near 1: a count over a sliver of a bin would overprint its neighbours
    for x, y, n in zip(centres[full & wide], rel.observed[full & wide], rel.count[full & wide]):
        ax.text(x, min(y + 0.03, 1.02), f"{int(round(n)):,}", ha="center", va="bottom", fontsize=6, rotation=90)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, max(1.08, top + 0.1))
    ax.set_xlabel("score (predicted probability)")
    ax.set_ylabel("observed frequency")
    counts = "numbers: rows per bin" + ("" if wide[full].all() else
                                        f", about {int(round(np.median(rel.count[full & ~wide]))):,} in each narrow one")
    ax.set_title(f"{title}\nECE {rel.ece:.3f}, MCE {rel.mce:.3f} ({rel.strategy} bins)\n{counts}", fontsize=8)
    ax.legend(loc="upper left", fontsize=6)


def plot_reliability(diagrams: dict[str, tuple[Reliability, Reliability]], path, *, title: str = "") -> Path:
    """Write a reliability-diagram PNG: one row per target, fixed-width bins left, equal-mass right.

    Parameters
    ----------
    diagrams : dict of str to (Reliability, Reliability)
        Target name (binary: the positive class; multiclass: ``top_label``, classes) to its
        fixed-width and equal-mass reliability (:func:`metrics_core.calibration.reliability`).
    path : str or Path
        The PNG to write.
    title : str
        Prefix of each panel's title.

    Returns
    -------
    Path
        ``path``.
    """
    rows = max(len(diagrams), 1)
    fig = Figure(figsize=(9, 3.8 * rows))
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, 2, squeeze=False)
    for i, (name, pair) in enumerate(diagrams.items()):
        for j, rel in enumerate(pair):
            _panel(axes[i, j], rel, f"{title}{name}")
    fig.tight_layout()
    return _save(fig, path)
