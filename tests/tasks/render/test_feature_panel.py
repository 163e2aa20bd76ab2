"""tasks.render.feature_panel: the input features over time on the report pages, drawn from what each period logged."""

from __future__ import annotations

import math
import re
from html import unescape
from pathlib import Path

import numpy as np
import pytest
from flow_data import LABELS, scored_rows
from mlflow import MlflowClient

from metrics_core.monitoring import Reason, TestKey
from metrics_core.monitoring.kinds import features as kinds
from tasks.config.spec import load_spec
from tasks.log import REPORT_PAGE, log_period
from tasks.metric_names import semantic_metrics
from tasks.monitor import assess_against_reference, monitoring_history, open_store, plan_period, scan_source_stats
from tasks.render.feature_panel import FEATURE_PLOT, PANELS, feature_frame, feature_table, plot_features
from tasks.render.report_page import FEATURES_CAPTION, MAX_BYTES

PERIODS = ["2024-01", "2024-02"]
DRIFTED = "2024-02"


def test_the_panels_are_the_feature_kinds_summary_metrics_with_their_thresholds():
    """Every feature kind is marked on the panel of the summary metric that holds its largest effect,
    and that panel's threshold is the kind's."""
    by_kind = {k: p for p in PANELS for k in p.kinds}
    assert set(by_kind) == {k.name for k in kinds.FEATURE_KINDS}
    for kind in kinds.FEATURE_KINDS:
        assert by_kind[kind.name].metric == kinds._WORST[kind.name]
        assert by_kind[kind.name].policy_field == kind.policy_field


def test_an_alert_is_marked_at_its_features_effect_and_named_on_its_kinds_line_only(tmp_path):
    shift = Reason(TestKey("feature_numeric", "pack_size"), 0.31, 0.1, 1e-9)
    tokens = Reason(TestKey("feature_tokens", "title"), -0.12, 0.1, 1e-5)
    domain = Reason(TestKey("feature_domain"), 0.66, 0.6, 1e-4)
    metrics = [{"max_feature_shift": 0.02, "feature_domain_auroc": 0.5, "n_features_tested": 2.0,
                "n_features_alerting": 0.0},
               {"max_feature_shift": 0.31, "feature_domain_auroc": 0.66, "n_features_tested": 2.0,
                "n_features_alerting": 2.0}]
    frame = feature_frame(["2024-01", "2024-02"], metrics, [(), (shift, tokens, domain)])
    assert frame["max_feature_shift_named"].to_list() == ["", "pack_size, title"]
    assert frame["max_feature_shift_alert_at"][1] == 0.31  # the largest |effect| of its reasons
    assert frame["feature_domain_auroc_named"].to_list() == ["", "all features"]
    assert frame["max_feature_psi_named"].to_list() == ["", ""] and frame["max_feature_psi"].is_nan().all()
    table = feature_table(frame)
    assert table["features named by alerts"].to_list() == ["", "pack_size, title, all features"]
    assert table["features alerting"].to_list() == [0, 2]
    png = plot_features(frame, {p.metric: 0.1 for p in PANELS}, tmp_path / FEATURE_PLOT)
    assert png.stat().st_size > 10_000


def _write(folder: Path) -> dict:
    """A reference and three months of scored rows with a numeric ``pack_size``; in DRIFTED one
    retailer in seven gives it in kilograms (the demo's drift), nothing else moves."""
    (folder / "deliveries").mkdir(parents=True)
    for name, seed, period in (("reference", 0, "2023-12"), *((f"deliveries/{p}", 10 + i, p)
                                                            for i, p in enumerate(PERIODS))):
        frame = scored_rows(2_000, seed, period)
        rng = np.random.default_rng(seed + 100)
        pack = rng.choice([150, 250, 400, 500, 750, 1000, 227, 454, 330, 568, 1136, 45, 110, 200, 300, 600, 800,
                           375, 240, 145, 340, 100], frame.height).astype(float)
        if period == DRIFTED:
            pack = np.where(rng.random(frame.height) < 1 / 7, pack / 1000, pack)
        frame.with_columns(pack_size=pack).write_parquet(folder / f"{name}.parquet")
    return {"name": "panel-model", "task": "multiclass", "labels": LABELS,
            "columns": {"features": ["pack_size"]},
            "data": {"reference": str(folder / "reference.parquet"),
                     "current": str(folder / "deliveries" / "{period}.parquet")},
            "n_boot": 50}


def _table(page: str, caption: str) -> list[dict]:
    """The rows of the page's table under ``caption``, cells as text."""
    section = page.split(f"<h2>{caption}</h2>", 1)[1].split("</table>", 1)[0]
    head = [unescape(h) for h in re.findall(r"<th>(.*?)</th>", section)]
    rows = re.findall(r"<tr(?: class=\"alert\")?>(<td.*?)</tr>", section)
    return [dict(zip(head, (unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r)))) for r in rows]


def _cell(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.4g}"


def test_the_parents_page_shows_each_periods_logged_feature_metrics_and_names_the_drifted_feature(tmp_path, store):
    spec = load_spec({**_write(tmp_path / "data"), "mlflow": {"experiment": "panel", "tracking_uri": store}})
    for period in PERIODS:
        plan = plan_period.fn(spec, period)
        ref = scan_source_stats.fn(spec, plan.reference, plan.ref_layout)
        cur = scan_source_stats.fn(spec, plan.current, plan.cur_layout, plan.current_filter)
        logged = log_period.fn(spec, open_store(spec), plan, assess_against_reference.fn(spec, ref, cur),
                               monitoring_history.fn(spec, open_store(spec), period))
    client = MlflowClient(store)
    parent = logged.parent_run_id
    assert {a.path for a in client.list_artifacts(parent)} >= {FEATURE_PLOT, REPORT_PAGE}
    page = Path(client.download_artifacts(parent, REPORT_PAGE, str(tmp_path))).read_text()
    assert len(page.encode()) < MAX_BYTES and f'<img alt="{FEATURES_CAPTION}" src="data:image/png;base64,' in page
    shown = {r["period"]: r for r in _table(page, "input features per period")}
    assert list(shown) == PERIODS[::-1]  # newest first, as the periods table
    runs = {r.data.tags["classwatch.period"]: semantic_metrics(r.data.metrics)
            for r in client.search_runs([client.get_run(parent).info.experiment_id],
                                        f"tags.`mlflow.parentRunId` = '{parent}'")}
    columns = {"max_feature_shift": "largest shift (reference SDs)", "max_feature_psi": "largest PSI",
               "max_feature_unseen": "largest unseen-token excess", "feature_domain_auroc": "domain AUROC",
               "n_features_tested": "features tested", "n_features_alerting": "features alerting"}
    for period in PERIODS:
        logged_metrics = runs[period]
        assert "max_feature_shift" in logged_metrics  # read back under its semantic key
        for key, column in columns.items():
            value = logged_metrics.get(key, math.nan)
            expected = str(int(value)) if key.startswith("n_") else _cell(value)
            assert shown[period][column] == expected, (period, key)
    assert runs[DRIFTED]["max_feature_shift"] > 0.1 > max(runs[p]["max_feature_shift"] for p in PERIODS
                                                           if p != DRIFTED)
    assert {p: r["features named by alerts"] for p, r in shown.items()} == {DRIFTED: "pack_size", "2024-01": ""}
    # the period's own page shows the panel too
    period_run = next(r for r in client.search_runs([client.get_run(parent).info.experiment_id],
                                                    "tags.`classwatch.period` = '2024-01'"))
    own = Path(client.download_artifacts(period_run.info.run_id, REPORT_PAGE, str(tmp_path / "p"))).read_text()
    assert f'<img alt="{FEATURES_CAPTION}"' in own


@pytest.mark.parametrize("rows", [[{"alert": 0.0}], []])
def test_no_features_watched_no_panel(rows):
    assert feature_frame([f"2024-0{i + 1}" for i in range(len(rows))], rows, [()] * len(rows)) is None
