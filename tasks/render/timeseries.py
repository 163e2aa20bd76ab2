"""The monitoring time-series PNG: one panel per watched quantity over periods, alerts marked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from tasks.render.plots import _figure, _save


def plot_time_series(frame, metrics: Sequence[str], path, *, alerts=None, period_column: str = "period",
                     units: Mapping[str, str] | None = None, title: str | None = None) -> Path:
    """One panel per metric column over periods, with alert periods shaded and marked.

    Parameters
    ----------
    frame : polars.DataFrame (or anything with ``[column]`` giving a sequence)
        One row per period, in time order.
    metrics : list of str
        Columns to draw, e.g. ``["prevalence", "psi", "f1"]``.
    alerts : sequence of periods, or mapping metric -> sequence of periods, optional
        Periods with an alert; a plain sequence marks every panel.
    units : mapping, optional
        Axis unit per metric (defaults: "fraction" for prevalence-like columns, "index" for PSI).
    A panel whose name contains ``psi`` gets the customary 0.1 (watch) and 0.25 (act) lines.

    Returns the path of the PNG written.
    """
    periods = [str(p) for p in list(frame[period_column])]
    positions = np.arange(len(periods))
    units = dict(units or {})
    if alerts is None:
        alerts = {}
    if not isinstance(alerts, Mapping):
        alerts = {m: list(alerts) for m in metrics}
    fig = _figure((max(6.4, 0.45 * len(periods) + 2.5), max(3.6, 1.9 * len(metrics) + 1.1)))
    axes = fig.subplots(len(metrics), 1, sharex=True, squeeze=False)[:, 0]
    for ax, metric in zip(axes, metrics):
        values = np.asarray(list(frame[metric]), dtype=float)
        line = ax.plot(positions, values, marker="o", markersize=3.5, linewidth=1.5, color="C0", zorder=3)[0]
        handles, labels = [line], [metric]
        alert_periods = {str(p) for p in alerts.get(metric, [])}
        flagged = np.array([p in alert_periods for p in periods], dtype=bool)
        if flagged.any():
            for pos in positions[flagged]:
                ax.axvspan(pos - 0.4, pos + 0.4, color="#e74c3c", alpha=0.12, zorder=1, linewidth=0)
            marks = ax.plot(positions[flagged], values[flagged], linestyle="none", marker="v", markersize=8,
                            color="#c0392b", zorder=4)[0]
            handles.append(marks)
            labels.append(f"alert ({int(flagged.sum())})")
        if "psi" in metric.lower():
            for level, word in ((0.1, "watch"), (0.25, "act")):
                ax.axhline(level, color="#999999", linestyle="--", linewidth=0.7, zorder=1)
                ax.text(1.0, level, f" {word} {level:g}", transform=ax.get_yaxis_transform(), fontsize=7,
                        color="#555555", va="center", ha="left")
        unit = units.get(metric) or ("index" if "psi" in metric.lower() else "fraction")
        ax.set_ylabel(f"{metric}\n({unit})", fontsize=9)
        ax.grid(True, color="#eeeeee", linewidth=0.6, zorder=0)
        ax.legend(handles, labels, loc="best", fontsize=7, framealpha=0.9)
    axes[-1].set_xticks(positions, periods, rotation=45 if len(periods) > 6 else 0,
                        ha="right" if len(periods) > 6 else "center", fontsize=8)
    axes[-1].set_xlabel(f"Period ({period_column})")
    axes[0].set_title(title or "Monitoring over periods (alerts marked)")
    return _save(fig, path)
