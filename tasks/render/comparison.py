"""The model comparison as markdown: the table of clause-7 tests, corrected together."""

from __future__ import annotations

from tasks.config.spec import RunSpec


def comparison_markdown(result: dict, spec: RunSpec) -> str:
    """The comparison run's ``comparison.md``: the best model and every test with its adjusted p-value."""
    lines = [f"# Model comparison ({result['metric']})", "", f"Best on the test set: **{result['best']}**.", "",
             f"All p-values corrected together ({spec.alerts.correction}, alpha {spec.alerts.alpha}).", "",
             "| model a | model b | test | effect | p (adjusted) | reject |", "|---|---|---|---|---|---|"]
    for r in result["tests"].iter_rows(named=True):
        lines.append(f"| {r['model_a']} | {r['model_b']} | {r['test']} | {r['effect_size']:.4g} | "
                     f"{r['p_adjusted']:.3g} | {'yes' if r['reject'] else 'no'} |")
    return "\n".join(lines) + "\n"
