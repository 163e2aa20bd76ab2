"""Plots of metrics_core reports: files written, sizes, no leaked figures, isoline geometry."""

from __future__ import annotations

import gc
import math

import matplotlib.figure
import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import pytest
from PIL import Image

import metrics_core as mc
from metrics_core import calibration as calibration_counts
from classwatch.demo.data import class_names, make_binary_demo, make_multiclass_demo
from metrics_core.formulas import fbeta as fbeta_from_counts
from tasks.render import isolines, plots, timeseries

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _multiclass(n: int, k: int, seed: int = 3, **kwargs):
    df = make_multiclass_demo(n, k, seed)
    names = class_names(k)
    return mc.multiclass_report(df["label"], df["prediction"], y_score=df.select([f"score_{c}" for c in names]),
                                labels=names, n_boot=20, **kwargs)


@pytest.fixture(scope="module")
def binary_report():
    df = make_binary_demo(5_000, seed=11)
    return mc.binary_report(df["label"], df["score"], beta=2.0, n_boot=20)


@pytest.fixture(scope="module")
def multiclass_report():
    return _multiclass(4_000, 4)


def _figures_alive() -> int:
    gc.collect()
    return sum(isinstance(o, matplotlib.figure.Figure) for o in gc.get_objects())


def _check_png(path, size=None):
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    with Image.open(path) as image:
        width, height = image.size
        pixels = np.asarray(image.convert("L"))
    if size is not None:
        assert (width, height) == size
    assert 500 <= width <= 2000 and 400 <= height <= 1600
    # not blank: dark ink (axes, text, curves) on a white background
    assert pixels.min() < 80 and pixels.max() == 255 and (pixels < 128).mean() > 0.005
    return width, height


# ------------------------------------------------------------------------------------------
# Isolines (ONS Annex D): the geometry is checked numerically
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("ba", plots.BA_LEVELS + (0.55, 0.95))
def test_ba_isoline_points_have_that_balanced_accuracy(ba):
    fpr, tpr = isolines.ba_isoline(ba)
    assert fpr.size > 10
    np.testing.assert_allclose((tpr + 1 - fpr) / 2, ba, atol=1e-12)
    np.testing.assert_allclose(tpr - fpr, 2 * ba - 1, atol=1e-12)
    assert fpr.min() >= 0 and tpr.max() <= 1
    # the visible segment runs from the left edge (FPR 0) to the top edge (TPR 1)
    assert fpr[0] == pytest.approx(0.0) and tpr[-1] == pytest.approx(1.0)


def test_ba_isoline_point_of_the_brief():
    fpr, tpr = isolines.ba_isoline(0.8, fpr=np.array([0.1, 0.3, 0.5]))
    # FPR 0.5 would need TPR 1.1: outside ROC space, dropped
    np.testing.assert_allclose(fpr, [0.1, 0.3])
    np.testing.assert_allclose(tpr - fpr, 0.6)


@pytest.mark.parametrize("ba", plots.BA_LEVELS)
def test_ba_label_sits_on_its_isoline_at_45_degrees(ba):
    x, y, angle = isolines.ba_label_point(ba)
    assert (y + 1 - x) / 2 == pytest.approx(ba)
    assert x + y == pytest.approx(1.0)  # on the anti-diagonal
    assert angle == 45.0


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("f", plots.F_LEVELS)
def test_fbeta_isoline_points_have_that_fbeta(f, beta):
    recall, precision = isolines.fbeta_isoline(f, beta)
    assert recall.size > 10
    assert (precision >= 0).all() and (precision <= 1).all() and (recall <= 1).all()
    # oracle: F-beta from counts (metrics_core.formulas), with tp fixed and fn, fp from R and P
    tp = 1e6
    fn = tp * (1 - recall) / recall
    fp = tp * (1 - precision) / precision
    np.testing.assert_allclose(fbeta_from_counts(tp, fp, fn, beta), f, rtol=1e-9)
    # the curve spans from the top edge (precision 1) to the right edge (recall 1)
    assert precision[0] == pytest.approx(1.0, abs=1e-9)
    assert recall[-1] == pytest.approx(1.0)
    assert precision[-1] == pytest.approx(f / (1 + beta**2 - f * beta**2))


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("f", [0.3, 0.6, 0.9])
def test_fbeta_label_on_isoline_with_its_slope(f, beta):
    r, p, angle = isolines.fbeta_label_point(f, beta)
    assert float(mc.formulas.f_of(p, r, beta)) == pytest.approx(f)
    h = 1e-6
    rs, ps = isolines.fbeta_isoline(f, beta, recall=np.array([r - h, r + h]))
    slope = (ps[1] - ps[0]) / (rs[1] - rs[0])
    assert math.degrees(math.atan(slope)) == pytest.approx(angle, abs=1e-4)


def test_fbeta_isoline_outside_pr_space_is_dropped():
    # F1 = 0.5 needs recall >= 1/3; recall 0.2 has no precision in [0, 1]
    recall, precision = isolines.fbeta_isoline(0.5, 1.0, recall=np.array([0.2, 0.5, 1.0]))
    np.testing.assert_allclose(recall, [0.5, 1.0])
    np.testing.assert_allclose(precision, [0.5, 1 / 3])


# ------------------------------------------------------------------------------------------
# Files written
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["binary", "multiclass"])
def test_plot_report_writes_every_png(which, binary_report, multiclass_report, tmp_path):
    report = binary_report if which == "binary" else multiclass_report
    before = _figures_alive()
    written = plots.plot_report(report, tmp_path, prefix=f"{which}_")
    assert set(written) == {"roc", "pr", "gain", "lift", "confusion"}
    for name, path in written.items():
        assert path.parent == tmp_path and name in path.name and path.suffix == ".png"
        _check_png(path)
    assert plt.get_fignums() == []
    assert _figures_alive() <= before


def test_plot_report_draws_only_the_names_asked(binary_report, tmp_path):
    """``names`` (each plot worker's half) writes those PNGs and returns only their paths."""
    written = plots.plot_report(binary_report, tmp_path, prefix="x_", names=["pr", "confusion"])
    assert written == {"pr": tmp_path / "x_pr.png", "confusion": tmp_path / "x_confusion.png"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x_confusion.png", "x_pr.png"]


def _savefig_as_matplotlib_does(fig, path):
    """The plain way: ``savefig`` runs the layout engine inside a draw of its own."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=plots.DPI, format="png")
    return path


@pytest.mark.parametrize("which", ["binary", "multiclass"])
def test_each_png_has_the_pixels_of_a_plain_savefig(which, binary_report, multiclass_report, tmp_path,
                                                      monkeypatch):
    """``_save`` lays a figure out once and saves it without its layout engine (one draw less):
    every plot, the over-time plot and the reliability diagram come out pixel for pixel as before."""
    from tasks.render import calibration

    report = binary_report if which == "binary" else multiclass_report
    frame = pl.DataFrame({"period": [f"2024-{m:02d}" for m in range(1, 10)], "a": np.linspace(0.1, 0.9, 9),
                          "b": np.linspace(3, 1, 9), "lo": np.full(9, 0.05), "hi": np.full(9, 0.95)})
    rng = np.random.default_rng(4)
    score = rng.random(3_000)
    counts = calibration_counts.CalibrationCounts.from_arrays(rng.random(3_000) < score, score)
    rel = (calibration_counts.reliability(counts), calibration_counts.reliability(counts, strategy="quantile"))

    def draw_all(folder):
        out = plots.plot_report(report, folder)
        out["over_time"] = timeseries.plot_time_series(frame, ["a", "b"], folder / "t.png", alerts={"a": ["2024-05"]},
                                                       bands={"a": ("lo", "hi")}, thresholds={"b": 2.0}, title="x\ny")
        out["reliability"] = calibration.plot_reliability({"1": rel}, folder / "r.png")
        return out

    ours = draw_all(tmp_path / "ours")
    for module in (plots, timeseries, calibration):
        monkeypatch.setattr(module, "_save", _savefig_as_matplotlib_does)
    plain = draw_all(tmp_path / "plain")
    assert set(ours) == set(plain) and len(ours) == 7
    for name in ours:
        with Image.open(ours[name]) as a, Image.open(plain[name]) as b:
            assert np.array_equal(np.asarray(a), np.asarray(b)), name


def test_binary_sizes_follow_figsize_and_dpi(binary_report, tmp_path):
    # 6.4 x 6.0 inches at 120 dpi; the lift plot is 6.8 x 5.0
    _check_png(plots.plot_roc(binary_report, tmp_path / "roc.png"), size=(768, 720))
    _check_png(plots.plot_pr(binary_report, tmp_path / "pr.png"), size=(768, 720))
    _check_png(plots.plot_lift(binary_report, tmp_path / "lift.png"), size=(816, 600))


def test_many_classes_widen_the_figure_for_the_legend(tmp_path):
    report = _multiclass(3_000, 35, seed=5)
    before = _figures_alive()
    w10, _ = _check_png(plots.plot_roc(_multiclass(2_000, 10), tmp_path / "roc10.png"))
    w35, _ = _check_png(plots.plot_roc(report, tmp_path / "roc35.png"))
    assert w35 > w10
    _check_png(plots.plot_pr(report, tmp_path / "pr35.png"))
    _check_png(plots.plot_confusion(report, tmp_path / "confusion35.png"))
    assert _figures_alive() <= before


def test_class_average_precision_equals_scikit_learn(multiclass_report):
    from sklearn.metrics import average_precision_score

    df = make_multiclass_demo(4_000, 4, 3)
    ap = plots.class_average_precision(multiclass_report)
    for name in class_names(4):
        expected = average_precision_score(df["label"].to_numpy() == name, df[f"score_{name}"].to_numpy())
        assert ap[name] == pytest.approx(expected, abs=1e-12)


def test_confusion_of_binary_is_negative_then_positive(binary_report):
    matrix, labels = plots.confusion_of(binary_report)
    m = binary_report.metrics
    np.testing.assert_array_equal(matrix, [[m["tn"], m["fp"]], [m["fn"], m["tp"]]])
    assert labels == ["0 (negative)", "1 (positive)"]


def test_weighted_report_and_report_without_scores(tmp_path):
    df = make_multiclass_demo(2_000, 3, seed=8)
    weighted = mc.multiclass_report(df["label"], df["prediction"], sample_weight=df["weight"], n_boot=20)
    assert weighted.curves == {}
    written = plots.plot_report(weighted, tmp_path)
    assert set(written) == {"confusion"}
    _check_png(written["confusion"])


def test_time_series_with_alerts(tmp_path):
    periods = [f"2024-{m:02d}" for m in range(1, 13)]
    rng = np.random.default_rng(0)
    frame = pl.DataFrame({
        "period": periods,
        "prevalence": np.r_[np.full(7, 0.12), np.full(5, 0.17)] + rng.normal(0, 0.003, 12),
        "psi": np.r_[rng.uniform(0.01, 0.05, 7), rng.uniform(0.26, 0.3, 5)],
        "f1": rng.uniform(0.5, 0.6, 12),
    })
    before = _figures_alive()
    path = timeseries.plot_time_series(frame, ["prevalence", "psi", "f1"], tmp_path / "monitor.png",
                                  alerts={"psi": periods[7:], "prevalence": periods[7:]})
    _check_png(path)
    path2 = timeseries.plot_time_series(frame, ["f1"], tmp_path / "f1.png", alerts=["2024-03"])
    _check_png(path2)
    assert plt.get_fignums() == [] and _figures_alive() <= before


def test_time_series_thresholds_and_alerts_only_on_their_panels(tmp_path):
    from PIL import Image

    periods = [f"2024-{m:02d}" for m in range(1, 7)]
    frame = pl.DataFrame({"period": periods, "change": [1.0, 1.2, 0.9, 5.0, 6.0, 1.1],
                          "shift": [0.01, 0.01, 0.02, 0.01, 0.01, 0.01]})
    path = timeseries.plot_time_series(
        frame, ["change", "shift"], tmp_path / "over_time.png", alerts={"change": periods[3:5], "shift": []},
        labels={"change": "largest prevalence change,\npoints", "shift": "largest score shift"},
        thresholds={"change": 2.0, "shift": 0.05})
    _check_png(path)
    rgb = np.asarray(Image.open(path).convert("RGB")).astype(int)

    def rows_of(colour: str) -> np.ndarray:
        target = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
        return np.nonzero((np.abs(rgb - target).sum(axis=2) < 30).any(axis=1))[0]

    red, grey = rows_of(timeseries.ALERT_RED), rows_of(timeseries.THRESHOLD_GREY)
    middle = rgb.shape[0] / 2  # two panels of equal height: the top one holds the alerts
    assert red.size and red.max() < middle  # alert marks on the panel whose test raised them only
    assert grey.size and (grey < middle).any() and (grey > middle).any()  # a threshold line in each panel


def _drawn(monkeypatch, module=plots) -> list:
    """Keep each figure a plot saves, laid out, before ``_save`` clears it."""
    figures, save = [], module._save

    def keep(fig, path):
        engine = fig.get_layout_engine()
        if engine is not None:
            engine.execute(fig)
        fig.canvas.draw()
        figures.append({"legends": list(fig.legends), "axes": list(fig.axes),
                        "labels": [(a.get_xlabel(), a.get_ylabel(), [p.get_height() for p in a.patches])
                                   for a in fig.axes],
                        "texts": [(a.get_title(), [t for t in a.texts]) for a in fig.axes],
                        "lines": [line for a in fig.axes for line in a.lines],
                        "renderer": fig.canvas.get_renderer()})
        return save(fig, path)

    monkeypatch.setattr(module, "_save", keep)
    return figures


def test_plots_name_what_was_evaluated_and_keep_legends_off_the_curves(binary_report, tmp_path, monkeypatch):
    """Titles name the subject (the model or the file) instead of "ROC: binary"; the binary lift
    legend sits below the axes, not over the curve."""
    figures = _drawn(monkeypatch)
    plots.plot_report(binary_report, tmp_path, subject="quotes.parquet")
    titles = [f["texts"][0][0] for f in figures]
    assert [t.split("\n")[0] for t in titles] == [
        "ROC: quotes.parquet", "Precision-recall, F2 isolines: quotes.parquet", "Cumulative gain: quotes.parquet",
        "Lift: quotes.parquet", "Confusion matrix (cells: count and row %)"]
    assert titles[-1].split("\n")[1].startswith("quotes.parquet, n = ")
    lift = figures[3]
    ax = lift["axes"][0]
    assert ax.get_legend() is None and len(lift["legends"]) == 1
    legend_box = lift["legends"][0].get_window_extent(lift["renderer"])
    assert legend_box.y1 <= ax.get_window_extent(lift["renderer"]).y0  # wholly below the axes


def test_multiclass_pr_names_each_baseline_in_its_legend_and_labels_stay_readable(tmp_path, monkeypatch):
    """Ten classes of similar prevalence: no ticks past recall 1 (they merged into one block), each
    class's prevalence in its legend entry; the isoline labels are on opaque boxes above the curves."""
    report = _multiclass(3_000, 10)
    figures = _drawn(monkeypatch)
    plots.plot_pr(report, tmp_path / "pr.png", subject="items.parquet")
    fig = figures[0]
    assert all(np.max(line.get_xdata(), initial=0) <= 1.0 for line in fig["lines"])
    entries = [t.get_text() for t in fig["legends"][0].get_texts()]
    prevalence = {str(r[0]): r[1] for r in report.per_class.select("class", "prevalence").iter_rows()}
    for label, value in prevalence.items():
        assert any(e.startswith(f"{label} (AP ") and e.endswith(f", baseline {value:.3f})") for e in entries), entries
    labels = [t for t in fig["texts"][0][1] if t.get_text().startswith("F1 ")]
    assert labels and all(t.get_bbox_patch().get_alpha() == 1.0 and t.get_zorder() > 3 for t in labels)


def test_the_reliability_counts_are_a_strip_of_bars_not_numbers_over_the_points(tmp_path, monkeypatch):
    """Bins crowd near 1: the rows per bin printed over the bars overlapped there; they are bars of
    their own under each diagram, and the panel's title names the subject and the target."""
    from tasks.render import calibration

    rng = np.random.default_rng(4)
    score = rng.beta(5, 1, 20_000)
    counts = calibration_counts.CalibrationCounts.from_arrays(rng.random(score.size) < score ** 1.3, score)
    rel = (calibration_counts.reliability(counts), calibration_counts.reliability(counts, strategy="quantile"))
    figures = _drawn(monkeypatch, calibration)
    calibration.plot_reliability({"1": rel}, tmp_path / "r.png", subject="model m on t.parquet")
    fig = figures[0]
    assert len(fig["axes"]) == 4 and all(not texts for _, texts in fig["texts"])
    assert fig["texts"][0][0].startswith("model m on t.parquet: class '1'\nECE ")
    strips = [(x, heights) for x, y, heights in fig["labels"] if y == "rows"]
    assert len(strips) == 2 and strips[0][0] == "score (predicted probability)"
    heights = strips[0][1]  # under the fixed-width diagram
    assert sorted(round(h) for h in heights if h > 0) == sorted(round(float(n)) for n in rel[0].count if n > 0)
