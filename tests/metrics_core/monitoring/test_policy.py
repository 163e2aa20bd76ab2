"""The alert policy has the documented defaults and validates its fields as declared once; a kind lives in one place."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import polars as pl
import pytest

from metrics_core import drift, monitoring as mon
from metrics_core.errors import InputError
from metrics_core.monitoring.kinds import SCORES, Job, Kind, Metric, PanelSpec, TestKey, run_tests

#: Policy fields that are no kind's threshold: the test level, the correction, the headline's floor and interval.
NOT_THRESHOLDS = {"alpha", "correction", "metric_floor", "level"}


# ---------------------------------------------------------------- the policy's bounds
@pytest.mark.parametrize("policy, words", [
    ({"psi": -1}, "field 'psi' must be greater than 0 (got -1)"),
    ({"level": 95}, "field 'level' must be less than 1 (got 95)"),
    ({"metric_drop": -0.01}, "field 'metric_drop' must be greater than or equal to 0"),
    ({"calibration_change": 0}, "field 'calibration_change' must be greater than 0"),
    ({"correction": "fdr"}, "field 'correction' must be one of 'bh', 'holm', 'bonferroni' (got 'fdr')"),
    ({"alpha": "five percent"}, "field 'alpha' must be a number"),
])
def test_the_policy_rejects_what_the_run_spec_rejects(policy, words):
    """Before, ``AlertPolicy.of({"psi": -1})`` was a policy under which every class mix alerted."""
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")):
        mon.AlertPolicy.of(policy)
    with pytest.raises(InputError, match="alert policy: field"):
        mon.AlertPolicy(**policy)


def test_the_policy_takes_numbers_as_the_run_spec_does():
    p = mon.AlertPolicy.of({"psi": "0.2", "price_change": 1, "metric_floor": None, "metric_drop": 0})
    assert (p.psi, p.price_change, p.metric_floor, p.metric_drop) == (0.2, 1.0, None, 0.0)
    assert type(p.price_change) is float and mon.AlertPolicy.of(p) is p


def test_every_field_is_declared_once_with_its_meaning():
    fields = {f.name: f for f in mon.POLICY_FIELDS}
    assert list(fields) == [f.name for f in dataclasses.fields(mon.AlertPolicy)]
    assert all(f.doc and f.default == getattr(mon.POLICY, f.name) for f in fields.values())
    assert fields["correction"].choices == ("bh", "holm", "bonferroni") and fields["metric_floor"].optional


def test_one_policy_with_the_documented_defaults():
    p = mon.AlertPolicy.of(None)
    assert (p.alpha, p.correction, p.prevalence_change, p.psi, p.score_shift, p.price_change, p.metric_drop,
            p.metric_floor, p.level) == (0.05, "bh", 0.02, 0.1, 0.02, 0.10, 0.05, None, 0.95)
    assert mon.AlertPolicy.of({"psi": 0.3, "alpha": None}) == mon.AlertPolicy(psi=0.3)
    assert mon.DEFAULT_HEADLINE == "balanced_accuracy"


@pytest.mark.parametrize("key, hint", [("prevalance_change", "did you mean 'prevalence_change'"),
                                       ("PSI", "did you mean 'psi'"), ("route_to", "the fields are alpha,")])
def test_an_unknown_policy_field_is_an_error_not_the_default(key, hint):
    """A misspelt threshold would otherwise leave the default in force (a 3-point rise alerting
    under a policy that asked for 5)."""
    with pytest.raises(InputError, match=f"alert policy: unknown field '{key}'.*{hint}"):
        mon.AlertPolicy.of({key: 0.05})
    rise = {mon.TestKey("prevalence_pred", "a"): drift.two_proportion_z(1000, 10000, 1300, 10000)}
    assert mon.decide_alert(rise).alert and not mon.decide_alert(rise, {"prevalence_change": 0.05}).alert


# ---------------------------------------------------------------- the registry
def test_every_kind_names_a_policy_field_and_every_threshold_field_is_some_kind_s():
    names = {f.name for f in dataclasses.fields(mon.AlertPolicy)}
    used = {k.policy_field for k in mon.KINDS.values() if k.policy_field is not None}
    assert used <= names
    assert names - used == NOT_THRESHOLDS
    assert all(name == k.name for name, k in mon.KINDS.items())
    assert {k: mon.POLICY.threshold(k) for k in ("prevalence_label", "class_mix_pred", "score", "price_label",
                                                  "calibration", "headline")} == \
        {"prevalence_label": 0.02, "class_mix_pred": 0.1, "score": 0.02, "price_label": 0.1, "calibration": 0.05,
         "headline": 0.05}
    with pytest.raises(InputError, match="test kind 'new_class' has no practical threshold"):
        mon.POLICY.threshold("new_class")


def test_panels_have_distinct_places_and_kinds_sharing_one_hold_the_same():
    panels = {}
    for k in mon.KINDS.values():
        if k.panel is not None:
            assert panels.setdefault(k.panel.column, k.panel) == k.panel, k.name
    assert sorted(p.position for p in panels.values()) == list(range(1, len(panels) + 1))


def _toy_render(r, tail):
    return f"toy of {r.key.cls!r} moved from {r.reference:.2f} to {r.current:.2f}", f"threshold {r.threshold:g}; {tail}"


def _toy_tests(reference, current):
    """One computed result and one distribution test run on the worker threads."""
    return [(TestKey("toy", "x"), drift.two_proportion_z(1000, 10_000, 1500, 10_000)),
            (TestKey("toy", "y"), Job(drift.ks, reference.score_distribution(0), current.score_distribution(0)))]


#: A kind added in one place: its record, registered.
TOY = Kind("toy", "score_shift", _toy_render, ("p_reference", "p_current"), tests=_toy_tests,
           metrics=lambda key, t: {f"toy/{key.cls}": t.effect_size}, worst="max_toy",
           logged=(Metric("toy/", f"{SCORES}/toy "), Metric("max_toy", f"{SCORES}/largest toy", True)),
           panel=PanelSpec(7, "toy", "max_toy", "toy\n(units)", "score_shift", scale=10.0, legend="largest"))


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(mon.KINDS, "toy", TOY)
    return TOY


def test_a_kind_registered_in_one_place_is_tested_thresholded_rendered_and_logged(toy):
    ref = pl.DataFrame({"label": ["a", "b"] * 500, "prediction": ["a", "b"] * 500,
                        "score_a": np.linspace(0.1, 0.9, 1000), "score_b": np.linspace(0.9, 0.1, 1000)})
    cur = ref.with_columns(score_a=pl.col("score_a") * 0.5, score_b=1 - pl.col("score_a") * 0.5)
    stats = [mon.scan_period(t.to_arrow(), "multiclass", ["a", "b"], mon.Bins(), label="label",
                             prediction="prediction", scores=["score_a", "score_b"]) for t in (ref, cur)]
    tests = run_tests(*stats)
    assert list(tests)[-2:] == [TestKey("toy", "x"), TestKey("toy", "y")]  # after the registered kinds, in order
    assert tests[TestKey("toy", "y")].p_value < 1e-10
    out = mon.assess_stats(*stats, {"score_shift": 0.04}, report_options={"n_boot": 0})
    row = out.decision.table.filter(pl.col("name") == "toy:x").row(0, named=True)
    assert row["threshold"] == 0.04 and row["drift"]  # its threshold is its policy field's
    assert "toy of 'x' moved from 0.10 to 0.15 (threshold 0.04; p_adj=" in " ".join(out.decision.texts)
    assert out.metrics["toy/x"] == pytest.approx(0.05) and out.metrics["max_toy"] == pytest.approx(
        max(abs(tests[TestKey("toy", k)].effect_size) for k in "xy"))
    assert mon.Reason.from_dict(out.reasons[0].to_dict()) == out.reasons[0]


def test_without_tests_a_kind_s_summary_is_nan(monkeypatch):
    monkeypatch.setitem(mon.KINDS, "toy", dataclasses.replace(TOY, tests=None))
    st = mon.update("binary", np.array([0, 1]), mon.Bins(score_bins=10), np.array([0, 1, 0, 0]))
    metrics = mon.assess_stats(st, st).metrics
    assert not any(k.startswith("toy/") for k in metrics) and math.isnan(metrics["max_toy"])
