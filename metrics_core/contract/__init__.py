"""The input contract: column roles, the layout of a source, the rules of a row and the one batch check.

Schema side in :mod:`.schema` (:class:`Columns`, :func:`resolve_layout`), row side in :mod:`.rows`
(:func:`value_problems`, :func:`check_batch`). The naming of classes (:mod:`metrics_core.contract.classes`)
is part of the contract and importable from here.
"""

from metrics_core.contract.classes import (TASKS, binary_classes, check_class_list, check_label_kinds, check_task,
                                           class_indices, class_rows, class_value, format_class_rows, positive_class,
                                           predicted_class, same_kind, type_kind)
from metrics_core.contract.rows import (SCORE_SUM_HINT, SCORE_SUM_TOLERANCE, Problem, check_batch, counted_rows,
                                        problem_error, row_problems, score_sum_problem, score_sums_off, value_problems)
from metrics_core.contract.schema import (Columns, Layout, check_label_spelling, check_same_schema, decimals_as_floats,
                                          missing_columns, near_misses, read_type, resolve_layout, schema_changes,
                                          score_column_classes)

__all__ = ["Columns", "Layout", "Problem", "SCORE_SUM_HINT", "SCORE_SUM_TOLERANCE", "TASKS", "binary_classes",
           "check_batch", "check_class_list", "check_label_kinds", "check_label_spelling", "check_same_schema",
           "check_task", "class_indices", "class_rows", "class_value", "counted_rows", "decimals_as_floats",
           "format_class_rows", "missing_columns", "near_misses",
           "positive_class", "predicted_class", "problem_error", "read_type", "resolve_layout", "row_problems",
           "same_kind", "schema_changes", "score_column_classes", "score_sum_problem", "score_sums_off", "type_kind",
           "value_problems"]
