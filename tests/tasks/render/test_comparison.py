"""tasks.render.comparison.comparison_markdown: the comparison run's markdown table of clause-7 tests."""

from __future__ import annotations

import math

import polars as pl
import pytest

from tasks.config.spec import load_spec
from tasks.render.comparison import comparison_markdown

TESTS = pl.DataFrame({"model_a": ["m v1", "m v1", "all"], "model_b": ["m v2", "m v2", "all"],
                      "test": ["McNemar", "paired bootstrap (f1_macro)", "ANOVA over folds"],
                      "effect_size": [0.0421, -0.123456, math.nan], "p_value": [0.001, 0.2, math.nan],
                      "p_adjusted": [0.003, 0.3, math.nan], "reject": [True, False, False]})


@pytest.mark.parametrize("correction, alpha", [("bh", 0.05), ("holm", 0.01)])
def test_markdown_names_the_best_model_the_correction_and_every_test(correction, alpha):
    spec = load_spec({"alerts": {"correction": correction, "alpha": alpha}})
    text = comparison_markdown({"metric": "f1_macro", "best": "m v1", "tests": TESTS}, spec)
    lines = text.splitlines()
    assert lines[0] == "# Model comparison (f1_macro)"
    assert "Best on the test set: **m v1**." in lines
    assert f"All p-values corrected together ({correction}, alpha {alpha})." in lines
    rows = lines[lines.index("| model a | model b | test | effect | p (adjusted) | reject |") + 2:]
    assert rows == ["| m v1 | m v2 | McNemar | 0.0421 | 0.003 | yes |",
                    "| m v1 | m v2 | paired bootstrap (f1_macro) | -0.1235 | 0.3 | no |",
                    "| all | all | ANOVA over folds | nan | nan | no |"]
    assert text.endswith("|\n")


def test_markdown_without_tests_has_the_header_only():
    empty = TESTS.clear()
    text = comparison_markdown({"metric": "accuracy", "best": "a", "tests": empty}, load_spec({}))
    assert text.splitlines()[-1] == "|---|---|---|---|---|---|"
