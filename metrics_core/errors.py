"""The error types of metrics_core (bad input, and its case of no rows at all) and the helpers that phrase
bad-row messages."""

from __future__ import annotations

import numpy as np


class InputError(ValueError):
    """Bad input: the message names the argument (or file and column), the number of bad rows and
    an example.

    ``bad_rows`` is ``(column, problem)`` when the error is about rows of a data column (None
    otherwise), so the same problem can be counted over a whole file
    (:func:`metrics_core.dataset.file_error`).
    """

    bad_rows: tuple[str, str] | None = None


class NoRowsError(InputError):
    """Bad input of one kind: a source, or its selection (a period's filter), holds no row at all.

    A caller that made the selection can say more than the scan can: which values there were.
    """


def rows_message(argument: str, problem: str, count: int, example: str = "", hint: str = "",
                 scope: str = "") -> str:
    """The sentence of every bad-row error.

    Parameters
    ----------
    argument : str
        What holds the rows: an argument name (``"y_score"``) or a file and column.
    problem : str
        What is wrong with them (``"NaN score"``).
    count : int
        How many rows have the problem.
    example : str
        The first bad row, e.g. ``"row 7 = nan"`` or ``"row 7: label=1, score=nan"``.
    hint : str
        How to fix it.
    scope : str
        Where the rows were counted, e.g. ``" of the file"``.

    Returns
    -------
    str
        ``"<argument>: <problem> in <count> row(s)<scope>, e.g. <example>. <hint>"``.

    Examples
    --------
    >>> rows_message("f.parquet: column 'score'", "NaN score", 3, "row 7: score=nan", "Fix it.", " of the file")
    "f.parquet: column 'score': NaN score in 3 row(s) of the file, e.g. row 7: score=nan. Fix it."
    """
    message = f"{argument}: {problem} in {count:,} row(s){scope}" + (f", e.g. {example}" if example else "") + "."
    return f"{message} {hint}" if hint else message


def bad_rows(argument: str, problem: str, mask: np.ndarray, values=None, hint: str = "", *,
             first_row: int = 0) -> InputError:
    """Build an :class:`InputError` for the rows of ``argument`` where ``mask`` is True.

    Parameters
    ----------
    argument : str
        The argument (or file and column) holding the rows.
    problem : str
        What is wrong with the rows.
    mask : numpy.ndarray
        True for a bad row; a 2-D mask (N x K scores) marks a row bad when any of its cells is.
    values : array-like, optional
        The values, to show the first bad one.
    hint : str
        How to fix it.
    first_row : int
        Row number of ``mask[0]`` (when the rows are a slice of a file).

    Returns
    -------
    InputError
        Reading ``"<argument>: <problem> in <n> row(s), e.g. row <i> = <value>. <hint>"``, so a user
        can find the first offending row.

    Examples
    --------
    >>> err = bad_rows("y_score", "NaN", np.array([False, True, True]), np.array([0.1, np.nan, np.nan]),
    ...                "Drop or impute these rows.")
    >>> str(err)
    'y_score: NaN in 2 row(s), e.g. row 1 = nan. Drop or impute these rows.'
    """
    mask = np.asarray(mask)
    if mask.ndim > 1:
        mask = mask.any(axis=tuple(range(1, mask.ndim)))
    idx = np.flatnonzero(mask)
    example = ""
    if idx.size:
        first = int(idx[0])
        example = f"row {first_row + first}"
        if values is not None:
            value = values[first]
            value = value.item() if isinstance(value, np.generic) else value
            example += f" = {value!r}"
    return InputError(rows_message(argument, problem, idx.size, example, hint))
