"""The input features over periods: each summary of the feature tests, its threshold, each alert named by its feature.

A period logs no metric per feature (a period may watch a thousand of them): it logs the largest
effect of each family of feature tests and the features tested and alerting
(:func:`metrics_core.monitoring.kinds.features.feature_metrics`), and its reasons name the features
that alerted (the run's reason records). This panel draws those, one period run's logged values a
point, so the parent run can draw it from the period runs alone: a line per summary metric with
its practical threshold, each alert marked at the effect of the feature that raised it and
labelled with that feature's name, and the features alerting out of those tested.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

__all__ = ["FeaturePanel", "PANELS", "FEATURE_PLOT", "feature_frame", "feature_table", "plot_features"]

#: The file name of the panel's PNG.
FEATURE_PLOT = "features_over_time.png"
_RED, _GREY = "#c0392b", "#7f7f7f"


@dataclass(frozen=True)
class FeaturePanel:
    """One line of the panel: the period's summary ``metric`` (semantic key), its ``label``, the
    :class:`~metrics_core.monitoring.AlertPolicy` field of its threshold, and the test ``kinds``
    whose alerts it marks (those whose largest effect the metric is)."""

    metric: str
    label: str
    policy_field: str
    kinds: tuple[str, ...]


#: The lines, top to bottom (the summary metrics of :mod:`metrics_core.monitoring.kinds.features`).
PANELS = (
    FeaturePanel("max_feature_shift", "largest shift of a numeric\nor text feature (reference SDs)", "feature_shift",
                 ("feature_numeric", "feature_tokens")),
    FeaturePanel("max_feature_psi", "largest PSI of a\ncategorical feature", "feature_psi", ("feature_category",)),
    FeaturePanel("max_feature_unseen", "largest excess share of\ntokens unseen in the reference", "feature_unseen",
                 ("feature_unseen",)),
    FeaturePanel("feature_domain_auroc", "domain classifier AUROC\n(all features at once)", "feature_auroc",
                 ("feature_domain",)),
)
_COUNTS = ("n_features_tested", "n_features_alerting")


def _name(reason) -> str:
    key = reason.key
    return (key.cls or "all features") + (f" @{key.segment_text}" if key.segment else "")


def feature_frame(periods: Sequence[str], metrics: Sequence[Mapping[str, float]],
                  reasons: Sequence[Sequence]) -> pl.DataFrame | None:
    """The panel's table: one row per period, in the order given.

    Parameters
    ----------
    periods : sequence of str
        The periods, in time order.
    metrics : sequence of mappings
        Each period's metrics under their semantic keys, as logged (a missing key reads nan).
    reasons : sequence of sequences of Reason
        Each period's alert reasons (:class:`metrics_core.monitoring.Reason`).

    Returns
    -------
    polars.DataFrame or None
        ``period``, each panel's metric, ``n_features_tested``, ``n_features_alerting``, and per
        panel ``<metric>_named`` (the features its reasons name, ``""`` without) and
        ``<metric>_alert_at`` (the largest ``|effect|`` of those reasons, nan without); None when
        no period logged a feature metric (no features watched).

    Examples
    --------
    >>> from metrics_core.monitoring import Reason, TestKey
    >>> r = Reason(TestKey("feature_numeric", "pack_size"), 0.256, 0.1, 1e-70)
    >>> f = feature_frame(["2024-08", "2024-09"], [{"max_feature_shift": 0.02}, {"max_feature_shift": 0.256}],
    ...                   [(), (r,)])
    >>> f["max_feature_shift_named"].to_list(), f["max_feature_shift_alert_at"].to_list()
    (['', 'pack_size'], [nan, 0.256])
    >>> feature_frame(["2024-08"], [{"alert": 0.0}], [()]) is None
    True
    """
    keys = [p.metric for p in PANELS] + list(_COUNTS)
    if not any(math.isfinite(float(m.get(k, math.nan))) for m in metrics for k in keys):
        return None
    columns: dict[str, list] = {"period": list(periods)}
    for k in keys:
        columns[k] = [float(m.get(k, math.nan)) for m in metrics]
    for p in PANELS:
        why = [[r for r in rs if r.kind in p.kinds] for rs in reasons]
        columns[f"{p.metric}_named"] = [", ".join(dict.fromkeys(_name(r) for r in w)) for w in why]
        columns[f"{p.metric}_alert_at"] = [max((abs(r.effect) for r in w if math.isfinite(r.effect)), default=math.nan)
                                           for w in why]
    return pl.DataFrame(columns, schema={k: (pl.String if k == "period" or k.endswith("_named") else pl.Float64)
                                         for k in columns})


def feature_table(frame: pl.DataFrame) -> pl.DataFrame:
    """The page's table of :func:`feature_frame`: per period the logged values, the features tested
    and alerting, and the features the alerts name.

    >>> f = feature_frame(["2024-09"], [{"max_feature_shift": 0.25, "n_features_tested": 2.0}], [()])
    >>> feature_table(f).columns
    ['period', 'largest shift (reference SDs)', 'largest PSI', 'largest unseen-token excess', 'domain AUROC', 'features tested', 'features alerting', 'features named by alerts']
    """
    names = dict(zip([p.metric for p in PANELS], ("largest shift (reference SDs)", "largest PSI",
                                                  "largest unseen-token excess", "domain AUROC")))
    named = pl.concat_str([pl.col(f"{p.metric}_named") for p in PANELS], separator=", ")
    return frame.select(
        "period", *(pl.col(m).alias(n) for m, n in names.items()),
        pl.col("n_features_tested").cast(pl.Int64, strict=False).alias("features tested"),
        pl.col("n_features_alerting").cast(pl.Int64, strict=False).alias("features alerting"),
        named.str.replace_all(r"(, )+", ", ").str.strip_chars(", ").alias("features named by alerts"))


def _line(ax, x, frame: pl.DataFrame, panel: FeaturePanel, threshold: float) -> list:
    """One summary metric: its line, its threshold, and each alert's band, mark and feature names."""
    values = frame[panel.metric].to_numpy()
    shown = [(ax.plot(x, values, marker="o", markersize=3.5, linewidth=1.5, color="C0", zorder=3)[0],
              "largest effect of the period's tests")]
    shown.append((ax.axhline(threshold, color=_GREY, linestyle="--", linewidth=1.1, zorder=2),
                  f"practical threshold ({panel.policy_field} = {threshold:g})"))
    at = frame[f"{panel.metric}_alert_at"].to_numpy()
    hit = np.isfinite(at)
    if hit.any():
        for pos in x[hit]:
            ax.axvspan(pos - 0.4, pos + 0.4, color="#e74c3c", alpha=0.12, zorder=1, linewidth=0)
        shown.append((ax.plot(x[hit], at[hit], linestyle="none", marker="v", markersize=8, color=_RED, zorder=4)[0],
                      f"alert raised by a feature ({int(hit.sum())})"))
        for pos, y, text in zip(x[hit], at[hit], np.asarray(frame[f"{panel.metric}_named"].to_list())[hit]):
            ax.annotate(text, (pos, y), xytext=(0, 7), textcoords="offset points", ha="center", va="bottom",
                        fontsize=7, color=_RED, zorder=5)
    top = np.nanmax(np.concatenate([values[np.isfinite(values)], at[hit], [threshold]]))
    ax.set_ylim(top=top * 1.25 if top > 0 else None)
    ax.set_ylabel(panel.label, fontsize=8)
    return shown


def plot_features(frame: pl.DataFrame, thresholds: Mapping[str, float], path, *, title: str | None = None) -> Path:
    """The panel: one row per summary metric that has a value in some period, then the features
    alerting out of those tested, over the periods of ``frame`` (:func:`feature_frame`).

    Parameters
    ----------
    frame : polars.DataFrame
        :func:`feature_frame`'s table, one row per period in time order.
    thresholds : mapping of str to float
        The practical threshold of each panel's metric (its :attr:`FeaturePanel.policy_field` under
        the run's alert policy), drawn as a dashed line.
    path : str or Path
        Where the PNG goes.
    title : str, optional
        The figure's title.

    Returns
    -------
    Path
        The PNG written.
    """
    from tasks.render.plots import _figure, _save

    panels = [p for p in PANELS if np.isfinite(frame[p.metric].to_numpy()).any()]
    periods = frame["period"].to_list()
    x = np.arange(len(periods), dtype=float)
    fig = _figure((max(6.4, 0.5 * len(periods) + 3.5), 1.9 * len(panels) + 1.2 + 1.2))
    axes = fig.subplots(len(panels) + 1, 1, sharex=True, squeeze=False,
                        gridspec_kw={"height_ratios": [1.0] * len(panels) + [0.6]})[:, 0]
    for ax, panel in zip(axes, panels):
        shown = _line(ax, x, frame, panel, float(thresholds[panel.metric]))
        ax.grid(True, color="#eeeeee", linewidth=0.6, zorder=0)
        ax.legend([h for h, _ in shown], [t for _, t in shown], loc="upper left", fontsize=7, framealpha=0.9)
    ax = axes[-1]
    tested, alerting = frame["n_features_tested"].to_numpy(), frame["n_features_alerting"].to_numpy()
    bars = ax.bar(x, np.nan_to_num(alerting), width=0.6, color=_RED, alpha=0.8, zorder=3)
    line = ax.plot(x, tested, marker="_", markersize=14, linestyle="none", color=_GREY, zorder=4)[0]
    ax.set_ylim(0, max(1.0, float(np.nanmax(np.concatenate([tested, alerting, [0.0]])))) * 1.6)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_ylabel("features", fontsize=8)
    ax.grid(True, axis="y", color="#eeeeee", linewidth=0.6, zorder=0)
    ax.legend([bars, line], ["features alerting", "features tested"], loc="upper left", ncol=2, fontsize=7,
              framealpha=0.9)
    ax.set_xticks(x, periods, rotation=45 if len(periods) > 6 else 0, ha="right" if len(periods) > 6 else "center",
                  fontsize=8)
    ax.set_xlabel("period")
    axes[0].set_title(title or "Input features over periods (alerts marked with the features they name)", fontsize=10)
    return _save(fig, path)
