"""The one error type of metrics_core and the helper that phrases bad-row messages."""

from __future__ import annotations

import numpy as np


class InputError(ValueError):
    """Bad input: the message names the argument, the number of bad rows and an example."""


def bad_rows(argument: str, problem: str, mask: np.ndarray, values=None, hint: str = "") -> InputError:
    """Build an :class:`InputError` for the rows of ``argument`` where ``mask`` is True.

    The message reads ``"<argument>: <problem> in <n> row(s), e.g. row <i> = <value>. <hint>"``,
    so a user can find the first offending row.

    >>> err = bad_rows("y_score", "NaN", np.array([False, True, True]), np.array([0.1, np.nan, np.nan]),
    ...                "Drop or impute these rows.")
    >>> str(err)
    'y_score: NaN in 2 row(s), e.g. row 1 = nan. Drop or impute these rows.'
    """
    mask = np.asarray(mask)
    if mask.ndim > 1:
        mask = mask.any(axis=tuple(range(1, mask.ndim)))
    idx = np.flatnonzero(mask)
    count = idx.size
    first = int(idx[0]) if count else -1
    example = ""
    if count and values is not None:
        value = values[first]
        if isinstance(value, np.generic):
            value = value.item()
        example = f", e.g. row {first} = {value!r}"
    elif count:
        example = f", e.g. row {first}"
    message = f"{argument}: {problem} in {count} row(s){example}."
    if hint:
        message += f" {hint}"
    return InputError(message)
