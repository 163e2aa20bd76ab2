"""PNG plots of a metrics_core report: ROC and PR (with the ONS isolines), gain, lift and the confusion matrix."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from metrics_core.curves import average_precision_from_counts, thin
from tasks.render.isolines import ba_isoline, ba_label_point, fbeta_isoline, fbeta_label_point
from tasks.render.plot_workers import plot_paths

DPI = 120
BA_LEVELS = (0.5, 0.6, 0.7, 0.8, 0.9)
F_LEVELS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
ISOLINE_STYLE = {"color": "#9a9a9a", "linewidth": 0.7, "linestyle": "--", "alpha": 0.75, "zorder": 1}
# isoline labels sit above the curves (zorder 5) on an opaque box: a curve passing under a label
# (the F1 0.5 label sits where most PR curves cross the diagonal) would overprint a translucent one
LABEL_STYLE = {"fontsize": 7, "color": "#555555", "ha": "center", "va": "center", "zorder": 5,
               "bbox": {"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 1.0}}
MAX_LEGEND_CLASSES = 30
PLOT_POINTS = 1000


# --------------------------------------------------------------------------------------------
# Reading a report (binary: curves[name]; multiclass: curves[class][name])
# --------------------------------------------------------------------------------------------

def _xyt(curve) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(curve, Mapping):
        x, y = curve["x"], curve["y"]
    else:
        x, y = curve.x, curve.y
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size > PLOT_POINTS:  # reports thin already; this guards hand-made curves
        x, y, _ = thin(x, y, np.zeros(x.size), max_points=PLOT_POINTS)
    return x, y


def is_binary(report) -> bool:
    """True for a binary report (``report.task``), whose ``curves`` hold the curves directly."""
    task = getattr(report, "task", None)
    return task == "binary" if task is not None else "roc" in report.curves


def curve_sets(report, name: str) -> list[tuple[object, np.ndarray, np.ndarray]]:
    """``[(class label or None, x, y), ...]`` for curve ``name`` of a binary or multiclass report."""
    curves = report.curves
    if is_binary(report):
        return [(None, *_xyt(curves[name]))]
    return [(label, *_xyt(c[name])) for label, c in curves.items()]


def _metric(report, key: str, label=None) -> float:
    """A binary metric, or a per-class one (``per_class`` row whose ``class`` equals ``label``)."""
    if label is None:
        value = report.metrics.get(key, math.nan)
        return float(value) if value is not None else math.nan
    pc = getattr(report, "per_class", None)
    if pc is None or key not in pc.columns:
        return math.nan
    for row in pc.select("class", key).iter_rows():
        if row[0] == label or str(row[0]) == str(label):
            return float(row[1]) if row[1] is not None else math.nan
    return math.nan


def _beta(report, beta: float | None) -> float:
    if beta is not None:
        return float(beta)
    for holder in (report, getattr(report, "params", None), getattr(report, "options", None)):
        if holder is None:
            continue
        value = holder.get("beta") if isinstance(holder, Mapping) else getattr(holder, "beta", None)
        if value is not None:
            return float(value)
    return 1.0


def class_average_precision(report) -> dict:
    """One-vs-rest average precision per class, from the report's exact score counts.

    The per-class table has no AP column, so this calls metrics_core's step-wise sum on
    ``report.stats.scores`` (never on the thinned curve); nan for classes without counts.
    """
    scores = getattr(getattr(report, "stats", None), "scores", None)
    labels = list(report.curves)
    if scores is None or len(scores) != len(labels):
        return {label: math.nan for label in labels}
    return {label: float(average_precision_from_counts(sc.pos, sc.neg)) for label, sc in zip(labels, scores)}


def _fmt(value: float) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.3f}"


# --------------------------------------------------------------------------------------------
# Figure helpers
# --------------------------------------------------------------------------------------------

def _figure(size=(6.4, 6.0)) -> Figure:
    """A pyplot-free figure (nothing registered globally, so nothing can leak) on the Agg canvas.

    Constrained layout is the tight layout that also makes room for legends outside the axes."""
    fig = Figure(figsize=size, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _curve_figure(report, base=(6.4, 6.0), outside: bool = False) -> Figure:
    """A figure for curves, widened by about 2.6 inches per legend column when the class legend
    goes outside the axes (more than 10 classes, or ``outside``)."""
    if is_binary(report):
        return _figure(base)
    n = len(report.curves)
    if n <= 10 and not outside:
        return _figure(base)
    per_column = 2.4 if n <= 10 else 1.9  # legend font 8 pt up to 10 classes, 7 pt beyond
    entries = (n if n <= MAX_LEGEND_CLASSES else 11) + 2
    return _figure((base[0] + per_column * max(1, math.ceil(entries / 24)), base[1]))


def _save(fig: Figure, path) -> Path:
    """Write ``fig`` as a PNG at ``DPI``; returns the path.

    A figure with a layout engine is laid out here, once, and saved without it: ``savefig`` would
    otherwise draw the whole figure once more, without rendering, only to run the layout inside
    that draw (0.1 s of the 0.4 s six-panel monitoring plot; the pixels are the same, which
    ``tests/tasks/render/test_plots.py`` checks)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    engine = fig.get_layout_engine()
    if engine is not None:
        try:
            engine.execute(fig)
        except ValueError:  # as Figure.draw: a layout that cannot be made leaves the axes where they are
            pass
        fig.set_layout_engine(None)
    # zlib level 3 instead of Pillow's 6: the same pixels, 30 % less encoding time, files about 4 % larger
    fig.savefig(path, dpi=DPI, format="png", pil_kwargs={"compress_level": 3})
    fig.clear()
    return path


def _colours(n: int):
    import matplotlib as mpl

    cmap = mpl.colormaps["tab10" if n <= 10 else "tab20" if n <= 20 else "turbo"]
    if n <= 20:
        return [cmap(i) for i in range(n)]
    return [cmap(v) for v in np.linspace(0.05, 0.95, n)]


def _class_legend(ax, handles, labels, n: int, title: str, inside: bool = True, loc: str = "lower right") -> None:
    """Legend inside (at ``loc``) for up to 10 curves when ``inside``; else outside on the right,
    in columns of at most 24 entries."""
    if n <= 10 and inside:
        ax.legend(handles, labels, loc=loc, fontsize=8, title=title, title_fontsize=8,
                  framealpha=0.9)
        return
    ncol = max(1, math.ceil(len(labels) / 24))
    ax.figure.legend(handles, labels, loc="outside right upper", fontsize=7 if n > 10 else 8, ncol=ncol,
                     title=title, title_fontsize=8, frameon=False)


def _plot_classes(ax, sets, values: dict, key_name: str, linewidth=1.6, more: dict | None = None):
    """Draw one line per class; for more than MAX_LEGEND_CLASSES the legend lists the ten classes
    with the lowest value (the ones to look at) and says how many it left out. ``more``: class ->
    further text of its legend entry."""
    n = len(sets)
    colours = _colours(n)
    handles, labels = [], []
    lw = linewidth if n <= 10 else 1.0
    for (label, x, y), colour in zip(sets, colours):
        (line,) = ax.plot(x, y, color=colour, linewidth=lw, zorder=3)
        handles.append(line)
        labels.append(f"{label} ({key_name} {_fmt(values.get(label, math.nan))}{(more or {}).get(label, '')})")
    if n > MAX_LEGEND_CLASSES:
        order = sorted(range(n), key=lambda i: (np.nan_to_num(values.get(sets[i][0], math.nan), nan=-1.0)))
        keep = order[:10]
        handles = [handles[i] for i in keep]
        labels = [labels[i] for i in keep] + [f"... {n - 10} more classes, higher {key_name}"]
        handles.append(ax.plot([], [], color="none")[0])
    return handles, labels


def _square(ax, xlabel: str, ylabel: str) -> None:
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.02)
    ax.set_aspect("equal")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, color="#eeeeee", linewidth=0.6, zorder=0)


def _title(report, what: str, title: str | None, subject: str | None = None) -> str:
    """``title``, else what is drawn and of what: ``subject`` (the model or the file, as the caller
    names it) on the first line, the task and the rows on the second.

    >>> from types import SimpleNamespace as R
    >>> _title(R(task="binary", metrics={"n": 30}, curves={}), "ROC", None, "model m v2 on test.parquet")
    'ROC: model m v2 on test.parquet\\nbinary, n = 30'
    """
    if title:
        return title
    kind = "binary" if is_binary(report) else f"one-vs-rest, {len(report.curves)} classes"
    return f"{what}: {subject}\n{kind}, {_size_text(report)}" if subject else f"{what}: {kind}\n{_size_text(report)}"


# --------------------------------------------------------------------------------------------
# Public plots
# --------------------------------------------------------------------------------------------

def plot_roc(report, path, *, title: str | None = None, ba_levels: Sequence[float] = BA_LEVELS,
             subject: str | None = None) -> Path:
    """ROC curve(s) with balanced-accuracy isolines and the chance diagonal; AUROC in the legend.

    Isolines ``TPR = FPR + 2 BA - 1`` (ONS Annex D, Figure 1) are drawn light and labelled on the
    anti-diagonal; ``BA = 0.5`` is the chance diagonal. Multiclass reports draw every class's
    one-vs-rest curve on the same axes.

    Returns the path of the PNG written.
    """
    fig = _curve_figure(report)
    ax = fig.add_subplot()
    for ba in ba_levels:
        fx, fy = ba_isoline(ba)
        if ba == 0.5:
            ax.plot(fx, fy, color="#666666", linewidth=1.0, linestyle=":", zorder=2)
        else:
            ax.plot(fx, fy, **ISOLINE_STYLE)
        lx, ly, angle = ba_label_point(ba)
        text = f"BA {ba:g}" + (" (chance)" if ba == 0.5 else "")
        ax.text(lx, ly, text, rotation=angle, rotation_mode="anchor", transform_rotates_text=True,
                **LABEL_STYLE)
    sets = curve_sets(report, "roc")
    if is_binary(report):
        auroc = _metric(report, "auroc")
        (line,) = ax.plot(sets[0][1], sets[0][2], color="C0", linewidth=2.0, zorder=3)
        handles, labels = [line], [f"ROC curve (AUROC {_fmt(auroc)})"]
        chance = ax.plot([], [], color="#666666", linewidth=1.0, linestyle=":")[0]
        iso = ax.plot([], [], **ISOLINE_STYLE)[0]
        ax.legend(handles + [chance, iso], labels + ["chance (BA 0.5)", "balanced-accuracy isolines"],
                  loc="lower right", fontsize=8, framealpha=0.9)
    else:
        values = {label: _metric(report, "auroc", label) for label, _, _ in sets}
        handles, labels = _plot_classes(ax, sets, values, "AUROC")
        macro = report.metrics.get("auroc_ovr_macro")
        title_text = "class (AUROC)" + (f"; macro {_fmt(macro)}" if macro is not None else "")
        _class_legend(ax, handles, labels, len(sets), title_text)
    _square(ax, "False positive rate, FP / (FP + TN) (fraction)", "True positive rate, TP / (TP + FN) (fraction)")
    ax.set_title(_title(report, "ROC", title, subject))
    return _save(fig, path)


def plot_pr(report, path, *, beta: float | None = None, title: str | None = None,
            f_levels: Sequence[float] = F_LEVELS, subject: str | None = None) -> Path:
    """Precision-recall curve(s) with F-beta isolines and the prevalence baseline; AP in the legend.

    The isolines are ``P = F R / ((1 + b^2) R - b^2 F)`` for the report's beta (ONS Annex D,
    Figure 2), labelled where ``P = R = F``. The baseline is precision = prevalence of the positive
    class (the uniform random and naive classifiers). Multiclass: per class, one-vs-rest, each
    class's prevalence (its baseline) in its legend entry (ticks beside the axis merged into one
    block when classes have similar prevalences).

    Returns the path of the PNG written.
    """
    beta = _beta(report, beta)
    fig = _curve_figure(report, outside=True)
    ax = fig.add_subplot()
    name = "F1" if beta == 1 else f"F{beta:g}"
    for f in f_levels:
        rx, py = fbeta_isoline(f, beta)
        ax.plot(rx, py, **ISOLINE_STYLE)
        lx, ly, angle = fbeta_label_point(f, beta)
        ax.text(lx, ly, f"{name} {f:g}", rotation=angle, rotation_mode="anchor",
                transform_rotates_text=True, **LABEL_STYLE)
    iso = ax.plot([], [], **ISOLINE_STYLE)[0]
    sets = curve_sets(report, "pr")
    if is_binary(report):
        ap = _metric(report, "average_precision")
        prevalence = _metric(report, "prevalence")
        (line,) = ax.plot(sets[0][1], sets[0][2], color="C1", linewidth=2.0, zorder=3)
        base = ax.axhline(prevalence, color="#c0392b", linewidth=1.0, linestyle=":", zorder=2)
        fig.legend([line, base, iso], [f"PR curve (AP {_fmt(ap)})", f"baseline: prevalence {_fmt(prevalence)}",
                                       f"{name} isolines"], loc="outside lower center", ncol=3, fontsize=8,
                   frameon=False)
    else:
        values = class_average_precision(report)
        baselines = {label: f", baseline {_fmt(_metric(report, 'prevalence', label))}" for label, _, _ in sets}
        handles, labels = _plot_classes(ax, sets, values, "AP", more=baselines)
        _class_legend(ax, handles + [iso], labels + [f"{name} isolines"], len(sets),
                      "class (AP, baseline = prevalence)", inside=False)
    _square(ax, "Recall, TP / (TP + FN) (fraction)", "Precision, TP / (TP + FP) (fraction)")
    ax.set_title(_title(report, f"Precision-recall, {name} isolines", title, subject))
    return _save(fig, path)


def plot_gain(report, path, *, title: str | None = None, subject: str | None = None) -> Path:
    """Cumulative gain (fraction predicted positive vs TPR) with random and perfect references.

    The random model's gain is the diagonal; the perfect model reaches TPR 1 once the fraction
    predicted positive equals the prevalence (ISO 6.3.8). Multiclass: one-vs-rest per class.

    Returns the path of the PNG written.
    """
    fig = _curve_figure(report)
    ax = fig.add_subplot()
    rand = ax.plot([0, 1], [0, 1], color="#666666", linestyle=":", linewidth=1.0, zorder=2)[0]
    sets = curve_sets(report, "gain")
    if is_binary(report):
        prevalence = _metric(report, "prevalence")
        (line,) = ax.plot(sets[0][1], sets[0][2], color="C2", linewidth=2.0, zorder=3)
        handles, labels = [line], ["cumulative gain"]
        if np.isfinite(prevalence):
            perfect = ax.plot([0, prevalence, 1], [0, 1, 1], color="#444444", linestyle="--", linewidth=1.0,
                              zorder=2)[0]
            handles.append(perfect)
            labels.append(f"perfect model (prevalence {_fmt(prevalence)})")
        ax.legend(handles + [rand], labels + ["random model"], loc="lower right", fontsize=8, framealpha=0.9)
    else:
        values = {label: _metric(report, "prevalence", label) for label, _, _ in sets}
        handles, labels = _plot_classes(ax, sets, values, "prev.")
        for (label, _, _), colour in zip(sets, _colours(len(sets))):
            prevalence = values[label]
            if np.isfinite(prevalence):
                ax.plot([0, prevalence, 1], [0, 1, 1], color=colour, linestyle="--", linewidth=0.8, alpha=0.5,
                        zorder=2)
        perfect = ax.plot([], [], color="#444444", linestyle="--", linewidth=0.8, alpha=0.6)[0]
        handles, labels = handles + [perfect, rand], labels + ["perfect model (per class, dashed)", "random model"]
        _class_legend(ax, handles, labels, len(sets), "class (prevalence)")
    _square(ax, "Fraction of rows predicted positive (highest scores first)",
            "Fraction of positives captured (TPR)")
    ax.set_title(_title(report, "Cumulative gain", title, subject))
    return _save(fig, path)


def plot_lift(report, path, *, title: str | None = None, subject: str | None = None) -> Path:
    """Lift (TPR / fraction predicted positive) against the fraction predicted positive; lift 1 = random.

    The point at fraction 0 (lift undefined) is not drawn. The perfect model's lift is
    ``1 / prevalence`` up to the prevalence, then ``1 / fraction`` (ISO 6.3.9).

    Returns the path of the PNG written.
    """
    fig = _curve_figure(report, base=(6.8, 5.0))
    ax = fig.add_subplot()
    ref = ax.axhline(1.0, color="#666666", linestyle=":", linewidth=1.0, zorder=2)
    sets = [(label, x[keep], y[keep]) for label, x, y in curve_sets(report, "lift")
            for keep in [(x > 0) & np.isfinite(y)]]
    top = max([float(np.max(y)) for _, _, y in sets if y.size] + [1.0])
    if is_binary(report):
        prevalence = _metric(report, "prevalence")
        (line,) = ax.plot(sets[0][1], sets[0][2], color="C3", linewidth=2.0, zorder=3)
        handles, labels = [line], ["lift"]
        if np.isfinite(prevalence) and prevalence > 0:
            xs = np.linspace(max(prevalence / 50, 1e-3), 1.0, 400)
            perfect = ax.plot(xs, 1.0 / np.maximum(xs, prevalence), color="#444444", linestyle="--",
                              linewidth=1.0, zorder=2)[0]
            handles.append(perfect)
            labels.append(f"perfect model (1 / prevalence = {1 / prevalence:.2f})")
            top = max(top, 1.0 / prevalence)
        # below the axes: the curve and the perfect model's fill the upper corners, wherever the prevalence is
        fig.legend(handles + [ref], labels + ["random model (lift 1)"], loc="outside lower center", ncol=3,
                   fontsize=8, frameon=False)
    else:
        values = {label: _metric(report, "prevalence", label) for label, _, _ in sets}
        handles, labels = _plot_classes(ax, sets, values, "prev.")
        _class_legend(ax, handles + [ref], labels + ["random model (lift 1)"], len(sets), "class (prevalence)",
                      loc="upper right")
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, top * 1.08)
    ax.set_xlabel("Fraction of rows predicted positive (highest scores first)")
    ax.set_ylabel("Lift, TPR / fraction predicted positive (x random)")
    ax.grid(True, color="#eeeeee", linewidth=0.6, zorder=0)
    ax.set_title(_title(report, "Lift", title, subject))
    return _save(fig, path)


def confusion_of(report) -> tuple[np.ndarray, list[str]]:
    """The confusion matrix (rows actual, columns predicted) and class names of a report.

    Uses ``report.stats.confusion`` (a ``ConfusionCounts``; binary labels ``[negative,
    positive]``), else the binary counts ``tn fp / fn tp`` of ``report.metrics``.
    """
    conf = getattr(getattr(report, "stats", None), "confusion", None)
    if conf is not None:
        labels = [str(v.item() if hasattr(v, "item") else v) for v in conf.labels]
        if is_binary(report) and len(labels) == 2:
            labels = [f"{labels[0]} (negative)", f"{labels[1]} (positive)"]
        return np.asarray(conf.matrix, dtype=float), labels
    m = report.metrics
    matrix = np.array([[m["tn"], m["fp"]], [m["fn"], m["tp"]]], dtype=float)
    return matrix, ["negative", "positive"]


def _count_text(v: float) -> str:
    """Counts as 12,345 (weighted ones with a decimal below 1,000), millions and up as 3.55M.

    >>> _count_text(172205.0), _count_text(3551234.7), _count_text(12.25)
    ('172,205', '3.55M', '12.2')
    """
    v = float(v)
    for scale, unit in ((1e9, "B"), (1e6, "M")):
        if abs(v) >= scale:
            return f"{v / scale:.3g}{unit}"
    return f"{v:,.0f}" if v.is_integer() or abs(v) >= 1000 else f"{v:,.1f}"


def _size_text(report) -> str:
    """``n = 200,000`` rows, with the total weight when the counts are weighted."""
    stats = getattr(report, "stats", None)
    rows = getattr(stats, "n_rows", None)
    n = report.metrics.get("n", math.nan)
    confusion = getattr(stats, "confusion", None)
    if rows is None:
        return f"n = {_count_text(n)}" if np.isfinite(n) else "n = ?"
    if confusion is not None and getattr(confusion, "weighted", False):
        return f"n = {rows:,} rows, total weight {_count_text(confusion.total)}"
    return f"n = {rows:,}"


def plot_confusion(report, path, *, title: str | None = None, matrix=None, labels=None,
                   subject: str | None = None) -> Path:
    """Heatmap of the confusion matrix: counts and row-normalised percentages (share of each actual class).

    Colour is the row-normalised share, so small classes are as visible as large ones; each cell
    shows the count and the percentage of its actual class (the per-class recall on the diagonal).
    Up to 20 classes are annotated; beyond that only the colours are drawn.

    Returns the path of the PNG written.
    """
    if matrix is None:
        matrix, labels = confusion_of(report)
    matrix = np.asarray(matrix, dtype=float)
    labels = [str(v) for v in (labels if labels is not None else range(matrix.shape[0]))]
    k = matrix.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = matrix / matrix.sum(axis=1, keepdims=True)
    size = min(12.0, max(5.0, 0.62 * k + 2.6))
    fig = _figure((size + 1.3, size + 0.3))
    ax = fig.add_subplot()
    image = ax.imshow(np.nan_to_num(share * 100.0), cmap="Blues", vmin=0.0, vmax=100.0)
    colorbar = fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    colorbar.set_label("Share of actual class (%)")
    if k <= 20:
        fontsize = 9 if k <= 6 else 7 if k <= 12 else 5.5
        for i in range(k):
            for j in range(k):
                pct = share[i, j] * 100.0
                colour = "white" if np.isfinite(pct) and pct > 55 else "#222222"
                pct_text = "n/a" if not np.isfinite(pct) else f"{pct:.1f}%"
                ax.text(j, i, f"{_count_text(matrix[i, j])}\n{pct_text}", ha="center", va="center",
                        fontsize=fontsize, color=colour)
    ax.set_xticks(range(k), labels, rotation=45 if k > 4 else 0, ha="right" if k > 4 else "center",
                  fontsize=8)
    ax.set_yticks(range(k), labels, fontsize=8)
    ax.set_xlabel("Predicted class")
    ax.set_ylabel("Actual (labelled) class")
    total = matrix.sum()
    size = _size_text(report) if report is not None else f"n = {_count_text(total)}"
    weighted = "weighted " if "weight" in size else ""
    of = f"{subject}, " if subject else ""
    text = title or f"Confusion matrix (cells: {weighted}count and row %)\n{of}{size}"
    ax.set_title(text)
    for i in range(k):  # outline the diagonal: the correctly classified cells
        ax.add_patch(Rectangle((i - 0.5, i - 0.5), 1.0, 1.0, fill=False, edgecolor="#d35400",
                               linewidth=1.4 if k <= 20 else 0.8))
    outline = Rectangle((0, 0), 1, 1, fill=False, edgecolor="#d35400", linewidth=1.4)
    fig.legend([outline], ["correct class (diagonal): row % = recall of the actual class"],
               loc="outside lower center", fontsize=8, frameon=False)
    return _save(fig, path)


def plot_report(report, out_dir, *, prefix: str = "", beta: float | None = None,
                names: Sequence[str] | None = None, subject: str | None = None) -> dict[str, Path]:
    """Write the ROC, PR, gain, lift and confusion PNGs of a report into ``out_dir``.

    File names are ``<prefix>roc.png``, ``<prefix>pr.png``, ``<prefix>gain.png``, ``<prefix>lift.png``
    and ``<prefix>confusion.png`` (:func:`tasks.render.plot_workers.plot_paths`); curves are skipped
    when the report has none (no scores), the confusion matrix when it has no single K x K matrix
    (multilabel). ``names`` draws only those of them (the plot workers of `classwatch evaluate` each
    draw half). ``subject`` names what was evaluated in each title (the model, the file).

    Returns a mapping plot name -> path written.
    """
    paths = plot_paths(report, out_dir, prefix)
    draw = {"roc": lambda p: plot_roc(report, p, subject=subject),
            "pr": lambda p: plot_pr(report, p, beta=beta, subject=subject),
            "gain": lambda p: plot_gain(report, p, subject=subject),
            "lift": lambda p: plot_lift(report, p, subject=subject),
            "confusion": lambda p: plot_confusion(report, p, subject=subject)}
    if names is not None:
        paths = {name: path for name, path in paths.items() if name in names}
    for name, path in paths.items():
        draw[name](path)
    return paths
