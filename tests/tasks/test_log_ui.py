"""What the MLflow UI shows of a monitored period: run names, chart sections, descriptions, the experiment kind."""

from __future__ import annotations

import pytest
from flow_data import PERIODS, SHIFTED
from mlflow import MlflowClient

from tasks.config.spec import load_spec
from tasks.log import NOTE, log_period
from tasks.metric_names import P_VALUES, mlflow_key, semantic_metrics
from tasks.monitor import assess_against_reference, monitoring_history, open_store, plan_period, scan_source_stats
from tasks.store.mlflow import EXPERIMENT_KIND, MlflowStore


def _sections(keys) -> list[str]:
    """The chart sections in MLflow 3.17's order: prefixed sections sorted (JavaScript's default
    sort, code-unit order, which is Python's for these ASCII keys), then the unprefixed ones."""
    named = sorted({k.rsplit("/", 1)[0] for k in keys if "/" in k})
    return named + (["Model metrics"] if any("/" not in k for k in keys) else [])


def test_sections_put_headline_and_alert_first_and_p_values_last():
    semantic = ["n_rows", "n_rows_reference", "perf/accuracy", "f1_macro", "f1_macro_ci_low", "f1_macro_floor",
                "p_adj/prevalence_pred:tea", "prevalence_pred/tea", "prevalence_label/tea", "psi_class_mix_pred",
                "score_wasserstein/tea", "score_psi/tea", "price_median/tea", "price_shift/tea",
                "max_abs_prevalence_change_pred", "max_score_wasserstein", "max_abs_price_shift", "n_tests",
                "n_alert_reasons", "alert", "estimated/f1_macro", "estimated/f1_macro_ci_low", "new_class_rows",
                "price_label_shift/tea", "price_false_positive_shift/tea", "price_false_negative_shift/tea",
                "max_abs_price_shift_label", "max_abs_price_shift_cells", "calibration_change/tea",
                "max_calibration_change", "prevalence_estimated/tea", "prevalence_estimated/tea_ci_low"]
    logged = {mlflow_key(k, "f1_macro"): k for k in semantic}
    assert len(logged) == len(semantic)  # no two metrics share a name
    assert _sections(logged) == ["1 headline and alert", "2 prevalence", "3 performance", "4 scores", "5 prices",
                                 "6 counts", "estimated", P_VALUES]
    assert {logged[k] for k in logged if k.startswith("1 ")} == {
        "alert", "n_alert_reasons", "f1_macro", "f1_macro_ci_low", "f1_macro_floor", "new_class_rows"}
    assert "estimated/f1_macro" in logged  # E's keys keep their prefix
    assert semantic_metrics({k: 1.0 for k in logged}) == {k: 1.0 for k in semantic}


@pytest.fixture
def spec(monitoring_spec):
    return load_spec(monitoring_spec)


def _log(spec, period):
    store = open_store(spec)
    plan = plan_period.fn(spec, period)
    ref = scan_source_stats.fn(spec, plan.reference, plan.ref_layout)
    cur = scan_source_stats.fn(spec, plan.current, plan.cur_layout, plan.current_filter)
    a = assess_against_reference.fn(spec, ref, cur)
    return a, log_period.fn(spec, store, plan, a, monitoring_history.fn(spec, store, period))


def test_period_runs_read_well_in_the_ui(spec, store):
    quiet, logged_quiet = _log(spec, PERIODS[0])
    shifted, logged = _log(spec, SHIFTED)
    c = MlflowClient(store)
    exp = c.get_experiment(logged.experiment_id)
    assert exp.tags[EXPERIMENT_KIND[0]] == "custom_model_development"

    run, calm = c.get_run(logged.run_id), c.get_run(logged_quiet.run_id)
    assert run.info.run_name == f"{SHIFTED} ALERT · test-model"
    assert calm.info.run_name == f"{PERIODS[0]} ok · test-model"
    decision = shifted.assessment.decision
    assert run.data.tags["alert reasons"] == "; ".join(decision.texts)
    note = run.data.tags[NOTE]
    assert note.startswith(f"{SHIFTED}, test-model: retraining alert, {len(decision.reasons)} reason(s).")
    assert decision.texts[0] in note and "\n" not in note
    assert calm.data.tags[NOTE].startswith(f"{PERIODS[0]}, test-model: no alert")
    # logged under the chart names, in chart order (the Overview's metrics table keeps the logging order)
    assert semantic_metrics(run.data.metrics) == pytest.approx(shifted.metrics, nan_ok=True)
    names = list(run.data.metrics)
    assert names[0].startswith("1 headline and alert/") and names == sorted(names)
    assert _sections(names)[-1] == P_VALUES

    parent = c.get_run(logged.parent_run_id)
    assert "'Time (wall)'" in parent.data.tags[NOTE] and f"alerts in {SHIFTED} (1)" in parent.data.tags[NOTE]
    assert f"{PERIODS[0]} to {SHIFTED}" in parent.data.tags[NOTE]
    history = c.get_metric_history(parent.info.run_id, mlflow_key("alert"))
    # each point at the period read as a number (2024-01 -> 202401), and the note links each period to its run
    assert sorted((h.step, h.value) for h in history) == [(int(PERIODS[0].replace("-", "")), 0.0),
                                                           (int(SHIFTED.replace("-", "")), 1.0)]
    exp = run.info.experiment_id
    assert (f"[{SHIFTED} ALERT](#/experiments/{exp}/runs/{run.info.run_id}?workflowType=machine_learning)"
            in parent.data.tags[NOTE])
    floor = f"{shifted.assessment.headline_metric}_floor"
    assert mlflow_key(floor, shifted.assessment.headline_metric) in run.data.metrics
    assert mlflow_key(floor, shifted.assessment.headline_metric) not in parent.data.metrics  # constant: not a series


def test_existing_experiment_without_kind_gets_it(store):
    c = MlflowClient(store)
    plain = c.create_experiment("made-elsewhere")
    chosen = c.create_experiment("chosen", tags={EXPERIMENT_KIND[0]: "genai_development"})
    assert MlflowStore(store, "made-elsewhere").experiment_id() == plain
    assert c.get_experiment(plain).tags[EXPERIMENT_KIND[0]] == "custom_model_development"
    MlflowStore(store, "chosen").experiment_id()
    assert c.get_experiment(chosen).tags[EXPERIMENT_KIND[0]] == "genai_development"  # a kind set by hand stays
