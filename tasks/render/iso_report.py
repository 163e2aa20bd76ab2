"""The ISO/IEC TS 4213 clause-8 report as markdown, with a section for each 5.3 control criterion."""

from __future__ import annotations

import math
from typing import Any

from tasks.render.plot_workers import plot_paths

NOT_PROVIDED = "not provided"
#: What a plot file holds beyond its name, where the name does not say it.
PLOT_NOTES = {"pr": " (with F-beta isolines and the prevalence baseline)"}
#: Why a report without scores has no curves, when the caller gives no more precise reason.
NO_SCORES = "No scores: the evaluated predictions are labels only, so the score-based metrics and curves are missing."


def _num(v: Any) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return f"{v:.4g}"
    return str(v)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_num(c) for c in row) + " |" for row in rows]
    return out


def _check(result) -> list[str]:
    if result is None:
        return [NOT_PROVIDED + " (no reference/training data or feature columns in the spec)."]
    return [f"Status: **{result.status}**. {result.message}"]


def iso_report(*, spec, plan, report, headline: str, checks: dict, recommendation: dict, champion: dict | None,
               timing: dict | None, environment: dict, model: dict, drift_rows: int | None,
               no_scores: str | None = None) -> str:
    """Markdown report of an evaluation (ISO/IEC TS 4213 clause 8).

    Sections follow the control criteria of clause 5.3: representativeness, training and test
    data, leakage, ground truth, algorithm and hyperparameters, environment, baselines, context;
    then results (metrics with intervals), statistical comparison with the champion (clause 7),
    computational performance (6.6) and the ONS recommendation. A criterion the spec and the
    data say nothing about reads "not provided", never a guess. The report names only the plots
    the run holds (:func:`tasks.render.plot_workers.plot_paths`); without scores it says, in the
    summary and under the results, what is missing and why (``no_scores``, else a generic reason).
    """
    lines = _summary(spec, plan, report, headline, model)
    if not report.curves:
        lines[-1:-1] = [f"- **warning**: {no_scores or NO_SCORES}"]
    lines += ["## 5.3 Control criteria", "", "### Context", "", spec.context or NOT_PROVIDED, ""]
    lines += _data(spec, plan, report)
    lines += ["### Representativeness", ""] + _check(checks.get("representativeness")) + [""]
    if drift_rows is not None:
        lines += [f"Drift of the test set against the reference: {drift_rows} test(s) flag drift (table "
                  "`drift_table.json`).", ""]
    lines += ["### Leakage", ""] + _check(checks.get("leakage")) + [""]
    lines += ["### Ground truth", "", spec.ground_truth or NOT_PROVIDED, ""]
    lines += _algorithm(model)
    lines += ["", "### Environment", ""] + [f"- {k}: {v}" for k, v in environment.items()] + [""]
    lines += _baselines(report, headline) + _results(report, spec.alerts.level) + _artifacts(report, no_scores)
    lines += _champion(spec, champion) + _performance(timing) + _recommendation(recommendation)
    return "\n".join(lines)


def _summary(spec, plan, report, headline: str, model: dict) -> list[str]:
    m, iv, level = report.metrics, report.intervals, spec.alerts.level
    return [f"# Evaluation report: {spec.name}", "",
            "Prepared per ISO/IEC TS 4213:2022 clause 8 (assessment of machine learning classification "
            "performance) with the ONS guidance on classification metrics for price statistics.", "",
            "## Summary", "",
            f"- task: {spec.task}, {int(m.get('n', 0))} test rows, {len(plan.labels)} classes",
            f"- headline metric ({headline}): {_num(m.get(headline))}"
            + (f" ({level:.0%} interval {_num(iv[headline][0])} - {_num(iv[headline][1])})" if headline in iv else ""),
            f"- model: {model.get('model_uri') or 'scores and predictions read from the test data'}", ""]


def _data(spec, plan, report) -> list[str]:
    train = spec.data.train or plan.reference
    lines = ["### Training and test data", "",
             f"- training data: `{train}`" if train else f"- training data: {NOT_PROVIDED}",
             f"- reference window (scored validation data): `{plan.reference}`" if plan.reference else
             f"- reference window: {NOT_PROVIDED}", f"- test data: `{plan.test}`",
             f"- classes: {', '.join(map(str, plan.labels[:40]))}" + (" ..." if len(plan.labels) > 40 else ""), ""]
    if report.per_class is not None:
        rows = report.per_class.select("class", "support", "prevalence").iter_rows(named=True)
        return lines + _table(["class", "support", "prevalence"],
                              [[r["class"], int(r["support"]), r["prevalence"]] for r in rows]) + [""]
    return lines + [f"Positive class {plan.labels[1]!r}: prevalence {_num(report.metrics.get('prevalence'))}.", ""]


def _algorithm(model: dict) -> list[str]:
    lines = ["### Algorithm and hyperparameters", ""]
    if not model:
        return lines + [NOT_PROVIDED + " (no model URI: predictions were read from the data)."]
    lines += [f"- model URI: `{model['model_uri']}`", f"- flavours: {model.get('flavors', NOT_PROVIDED)}",
              f"- training run: {model.get('run_id') or NOT_PROVIDED}"]
    params = model.get("params") or {}
    return lines + ([f"- {k}: {v}" for k, v in sorted(params.items())[:40]] or [f"- hyperparameters: {NOT_PROVIDED}"])


def _baselines(report, headline: str) -> list[str]:
    m, base = report.metrics, report.baselines
    keys = list(dict.fromkeys(k for k in (headline, "accuracy", "balanced_accuracy", "f1_macro", "fbeta", "mcc",
                                          "auroc", "auroc_ovr_macro") if k in m))
    return (["### Baselines (ISO 5.3.13, ONS Annex D)", ""]
            + _table(["metric", "model", "majority class", "prevalence-matched random"],
                     [[k, m.get(k), base["majority"].get(k), base["random"].get(k)] for k in keys]) + [""])


def _results(report, level: float) -> list[str]:
    m, iv = report.metrics, report.intervals
    return (["## Results (ISO clause 6)", ""]
            + _table(["metric", "value", f"{level:.0%} low", f"{level:.0%} high"],
                     [[k, v, *(iv.get(k) or (None, None))] for k, v in m.items() if not k.startswith("n_undefined")])
            + [""])


def _artifacts(report, no_scores: str | None) -> list[str]:
    """The plots the run holds, and without scores why it has no curves."""
    names = [f"{name}.png{PLOT_NOTES.get(name, '')}" for name in plot_paths(report, "")]
    if report.curves:
        return [f"Plots: {', '.join(names)}; thinned curve points in curves_*.json.", ""]
    return [(f"Plots: {', '.join(names)}. " if names else "No plots. ") + (no_scores or NO_SCORES), ""]


def _champion(spec, champion: dict | None) -> list[str]:
    lines = ["## Comparison with the champion (ISO clause 7)", ""]
    if not champion:
        return lines + [f"{NOT_PROVIDED}: no registered model {spec.name!r} with the alias `champion` (or it is the "
                        "evaluated model).", ""]
    mc_t, boot = champion["mcnemar"], champion["bootstrap"]
    return lines + [f"Champion: `{champion['champion_uri']}`.", "",
                    f"- McNemar: statistic {_num(mc_t.statistic)}, p = {_num(mc_t.p_value)}; {mc_t.verdict}",
                    f"- paired bootstrap of {champion['metric']} (new - champion): {_num(boot.statistic)} "
                    f"(interval {_num(boot.interval[0])} - {_num(boot.interval[1])}), p = {_num(boot.p_value)}", ""]


def _performance(timing: dict | None) -> list[str]:
    lines = ["## Computational performance (ISO 6.6)", ""]
    if not timing:
        return lines + [NOT_PROVIDED + " (the flow did not run the model).", ""]
    return lines + [f"- {k}: {_num(v)}" for k, v in timing.items()] + [""]


def _recommendation(recommendation: dict) -> list[str]:
    rec = recommendation["recommendation"]
    return ["## Recommended metric (ONS Tables 1 and 2)", "",
            f"- headline metric: **{rec.metric}** in {rec.space} space (averaging: {rec.averaging or 'n/a'}, "
            f"prevalence weights: {'yes' if rec.weight_by_prevalence else 'no'})", f"- beta: {rec.beta_advice}",
            f"- why: {rec.reason}", f"- stability measured: {recommendation['stability_reason']}", ""]
