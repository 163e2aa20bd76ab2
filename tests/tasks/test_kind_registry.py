"""The MLflow names, the parent's time series and the over-time panels come from the registry of test kinds."""

from __future__ import annotations

import pytest

from metrics_core import monitoring as mon
from metrics_core.monitoring.kinds import PRICES, Kind, Metric, PanelSpec, TestKey
from tasks.log import Panel, over_time, panels
from tasks.metric_names import mlflow_key, semantic_key, series_keys
from tasks.monitor import History

TOY = Kind("toy", "price_change", lambda r, tail: (f"toy of {r.key.cls!r} moved", tail),
           logged=(Metric("toy/", f"{PRICES}/toy "), Metric("max_toy", f"{PRICES}/largest toy", True)),
           panel=PanelSpec(7, "toy", "max_toy", "toy\n(%)", "price_change", scale=100.0, legend="largest",
                           extra=(("toy_label", "max_toy_label", "labelled"),)))


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(mon.KINDS, "toy", TOY)


def test_a_registered_kind_s_metrics_get_their_section_and_series(toy):
    assert mlflow_key("toy/tea") == "5 prices/toy tea" and semantic_key("5 prices/toy tea") == "toy/tea"
    assert mlflow_key("max_toy") == "5 prices/largest toy" and semantic_key("5 prices/largest toy") == "max_toy"
    assert "max_toy" in series_keys() and "toy/" not in series_keys()


def test_without_the_kind_its_metrics_are_unknown():
    assert mlflow_key("max_toy") == "7 other/max_toy" and "max_toy" not in series_keys()


def test_a_registered_kind_s_panel_is_drawn_with_its_threshold_and_alerts(toy):
    shown = panels(mon.AlertPolicy(price_change=0.2), "f1")
    assert shown[-1] == Panel("toy", "toy\n(%)", 20.0, ("toy",), "largest", (("toy_label", "labelled"),))
    assert [p.column for p in shown[:-1]] == ["prevalence_change", "psi_class_mix_pred", "max_score_wasserstein",
                                              "price_change", "calibration_change", "f1"]  # the others stay in place
    reason = mon.Reason(TestKey("toy", "tea"), 0.3, 0.2, 0.01)
    frame, drawn, alerts = over_time(History("2024-02", "p", "p|2024-02"), "2024-02",
                                     {"alert": 1.0, "max_toy": 0.3, "max_toy_label": 0.1}, [reason], "f1")
    assert frame["toy"].to_list() == [30.0] and frame["toy_label"].to_list() == [10.0]
    assert [p.column for p in drawn] == ["toy"] and alerts == {"toy": ["2024-02"]}
