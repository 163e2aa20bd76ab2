"""The monitoring time-series PNG: one panel per watched quantity over periods, its threshold, alerts marked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from tasks.render.plots import _figure, _save

ALERT_RED, THRESHOLD_GREY = "#c0392b", "#7f7f7f"


def _values(frame, column: str) -> np.ndarray:
    return np.asarray(list(frame[column]), dtype=float)


def _threshold(ax, frame, positions, threshold, text: str) -> list:
    """A dashed line at a constant threshold, or a step line when ``threshold`` is a column (per period)."""
    if threshold is None:
        return []
    if isinstance(threshold, str):
        level = _values(frame, threshold)
        if not np.isfinite(level).any():
            return []
        line = ax.step(positions, level, where="mid", color=THRESHOLD_GREY, linestyle="--", linewidth=1.1,
                       zorder=2)[0]
    else:
        line = ax.axhline(float(threshold), color=THRESHOLD_GREY, linestyle="--", linewidth=1.1, zorder=2)
    return [(line, text)]


def _alerts(ax, positions, values, periods, alert_periods, within: np.ndarray | None = None) -> list:
    """Shade the alert periods and mark them: filled, or hollow where ``within`` (the test raised the
    alert only within segments, so the panel's whole-period line need not cross its threshold)."""
    flagged = np.array([p in alert_periods for p in periods], dtype=bool)
    if not flagged.any():
        return []
    for pos in positions[flagged]:
        ax.axvspan(pos - 0.4, pos + 0.4, color="#e74c3c", alpha=0.12, zorder=1, linewidth=0)
    height = np.where(np.isfinite(values), values, np.nanmin(values) if np.isfinite(values).any() else 0.0)
    within = np.zeros(flagged.size, dtype=bool) if within is None else within & flagged
    out = []
    for which, face, text in ((flagged & ~within, ALERT_RED, "alert raised by this test"),
                              (within, "white", "alert raised by this test within a segment")):
        if which.any():
            marks = ax.plot(positions[which], height[which], linestyle="none", marker="v", markersize=8,
                            color=ALERT_RED, markerfacecolor=face, markeredgewidth=1.5, zorder=4)[0]
            out.append((marks, f"{text} ({int(which.sum())})"))
    return out


def plot_time_series(frame, metrics: Sequence[str], path, *, alerts=None, period_column: str = "period",
                     units: Mapping[str, str] | None = None, title: str | None = None,
                     labels: Mapping[str, str] | None = None, thresholds: Mapping[str, object] | None = None,
                     bands: Mapping[str, tuple[str, str]] | None = None,
                     extra: Mapping[str, Sequence[tuple[str, str]]] | None = None,
                     legends: Mapping[str, str] | None = None, threshold_legends: Mapping[str, str] | None = None,
                     xlabel: str | None = None, marks: Mapping[str, str] | None = None,
                     within: Mapping[str, str] | None = None) -> Path:
    """One panel per metric column over periods: its threshold, interval, alert periods marked.

    Parameters
    ----------
    frame : polars.DataFrame (or anything with ``[column]`` giving a sequence)
        One row per period, in time order.
    metrics : list of str
        Columns to draw, one panel each, e.g. ``["prevalence", "psi", "f1"]``.
    alerts : sequence of periods, or mapping metric -> sequence of periods, optional
        Periods with an alert; a plain sequence marks every panel, a mapping only the panels it names
        (the panels whose test raised the alert).
    units : mapping, optional
        Axis unit per metric, appended to its label (default: none with ``labels``, else "fraction"
        for prevalence-like columns and "index" for PSI).
    labels : mapping, optional
        The y-axis label of a panel in words (default: the column name).
    thresholds : mapping, optional
        Per metric, a constant threshold (drawn as a dashed line) or the name of a column holding one
        per period (drawn as a dashed step line, e.g. the headline metric's floor). Without it, a
        panel whose name contains ``psi`` gets the customary 0.1 (watch) and 0.25 (act) lines.
    bands : mapping, optional
        Per metric, the (low, high) columns of an interval drawn as a shaded band.
    extra : mapping, optional
        Per metric, further (column, legend) lines in the same panel (e.g. labelled beside predicted).
    legends : mapping, optional
        Per metric, the legend of its main line (default: its label).
    threshold_legends : mapping, optional
        Per metric, the legend of its threshold line (default "alert threshold").
    xlabel : str, optional
        The x-axis label (default "Period (<period_column>)").
    marks : mapping, optional
        Per metric, the column holding the height of each period's alert mark (the value of the
        line whose test raised it; nan where that is unknown). Without it, or where it is nan, the
        mark sits on the highest line of the panel.
    within : mapping, optional
        Per metric, the column saying (true) in which periods only tests within segments raised the
        panel's alert: those marks are drawn hollow, with their own legend.

    Returns the path of the PNG written.
    """
    periods = [str(p) for p in list(frame[period_column])]
    positions = np.arange(len(periods))
    units, labels, thresholds = dict(units or {}), dict(labels or {}), dict(thresholds or {})
    bands, extra, legends = dict(bands or {}), dict(extra or {}), dict(legends or {})
    threshold_legends = dict(threshold_legends or {})
    alerts = {} if alerts is None else alerts
    if not isinstance(alerts, Mapping):
        alerts = {m: list(alerts) for m in metrics}
    fig = _figure((max(6.4, 0.5 * len(periods) + 3.5), max(3.6, 2.1 * len(metrics) + 1.2)))
    axes = fig.subplots(len(metrics), 1, sharex=True, squeeze=False)[:, 0]
    for ax, metric in zip(axes, metrics):
        values = _values(frame, metric)
        shown = [(ax.plot(positions, values, marker="o", markersize=3.5, linewidth=1.5, color="C0", zorder=3)[0],
                  legends.get(metric, labels.get(metric, metric)))]
        for i, (column, legend) in enumerate(extra.get(metric, ())):
            shown.append((ax.plot(positions, _values(frame, column), marker="s", markersize=3, linewidth=1.1,
                                  linestyle=":", color=f"C{i + 1}", zorder=3)[0], legend))
        if metric in bands:
            low, high = (_values(frame, c) for c in bands[metric])
            shown.append((ax.fill_between(positions, low, high, color="C0", alpha=0.15, linewidth=0, zorder=2),
                          "95 % interval"))
        if metric in thresholds:
            shown += _threshold(ax, frame, positions, thresholds[metric],
                                threshold_legends.get(metric, "alert threshold"))
        elif "psi" in metric.lower():
            for level, word in ((0.1, "watch"), (0.25, "act")):
                ax.axhline(level, color="#999999", linestyle="--", linewidth=0.7, zorder=1)
                ax.text(1.0, level, f" {word} {level:g}", transform=ax.get_yaxis_transform(), fontsize=7,
                        color="#555555", va="center", ha="left")
        top = np.fmax.reduce(np.vstack([values, *(_values(frame, c) for c, _ in extra.get(metric, ()))]), axis=0) \
            if metric in extra else values  # without a mark's own height, the highest line of the panel
        if metric in (marks or {}):
            at = _values(frame, marks[metric])
            top = np.where(np.isfinite(at), at, top)
        inside = np.asarray([bool(v) for v in frame[within[metric]]]) if metric in (within or {}) else None
        shown += _alerts(ax, positions, top, periods, {str(p) for p in alerts.get(metric, [])}, inside)
        unit = units.get(metric) or (None if metric in labels else "index" if "psi" in metric.lower() else "fraction")
        ax.set_ylabel(labels.get(metric, metric) + (f"\n({unit})" if unit else ""), fontsize=9)
        ax.grid(True, color="#eeeeee", linewidth=0.6, zorder=0)
        ax.legend([h for h, _ in shown], [t for _, t in shown], loc="best", fontsize=7, framealpha=0.9)
    axes[-1].set_xticks(positions, periods, rotation=45 if len(periods) > 6 else 0,
                        ha="right" if len(periods) > 6 else "center", fontsize=8)
    axes[-1].set_xlabel(xlabel or f"Period ({period_column})")
    axes[0].set_title(title or "Monitoring over periods (alerts marked)", fontsize=10)
    return _save(fig, path)
