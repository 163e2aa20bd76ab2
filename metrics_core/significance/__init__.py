"""Significance tests, intervals and multiple-testing corrections (ISO/IEC TS 4213 clause 7).

Modules by family: ``base`` (the common :class:`TestResult`), ``paired`` (t-tests, Wilcoxon,
McNemar), ``groups`` (ANOVA, Kruskal-Wallis), ``tables`` (chi-squared, Fisher), ``proportions``
(the Wilson interval), ``corrections`` (BH, Holm, Bonferroni), ``bootstrap`` (the paired
bootstrap of a metric) and ``compare`` (several models on the same test rows, every test
corrected together). Every public name is importable from this package; each module is
imported on first use (PEP 562), because the tests pull in scipy.stats (a second and more of
start-up) and a report needs only the Wilson interval.
"""

_LAZY = {
    "TestResult": "base", "paired_bootstrap": "bootstrap", "Corrected": "corrections", "correct": "corrections",
    "anova": "groups", "kruskal_wallis": "groups", "corrected_resampled_t_test": "paired", "mcnemar": "paired",
    "paired_t_test": "paired", "wilcoxon_signed_rank": "paired", "proportion_interval": "proportions",
    "wilson": "proportions", "chi_squared": "tables", "fisher_exact": "tables", "FOLDS": "compare",
    "fold_metrics": "compare", "model_comparison": "compare",
}

__all__ = [
    "TestResult", "Corrected", "paired_t_test", "corrected_resampled_t_test", "anova",
    "kruskal_wallis", "chi_squared", "wilcoxon_signed_rank", "fisher_exact", "mcnemar",
    "proportion_interval", "wilson", "paired_bootstrap", "correct", "FOLDS", "fold_metrics", "model_comparison",
]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'metrics_core.significance' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"metrics_core.significance.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
