"""Leakage between a training set and a test set: shared ids, duplicated rows, single-feature separation."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import polars as pl

from metrics_core.checks.frames import (
    MAX_EXAMPLES,
    CheckResult,
    _examples,
    _numeric,
    _py,
    _status,
    _train_test,
    require_columns,
)
from metrics_core.contract.classes import check_label_kinds
from metrics_core.curves import ranking_areas
from metrics_core.errors import InputError

SCHEMA = {"check": pl.String, "set": pl.String, "feature": pl.String, "class": pl.String, "value": pl.String,
          "statistic": pl.Float64, "threshold": pl.Float64, "flagged": pl.Boolean, "count": pl.Int64,
          "example": pl.String}


def _auroc_per_class(values: np.ndarray, y_idx: np.ndarray, k: int) -> np.ndarray:
    """One-vs-rest AUROC of one numeric feature for every class (:func:`ranking_areas`).

    The distinct values are found with one sort; for class c the rows of c at each value are
    the positives and the other rows the negatives, so the AUROC is the Mann-Whitney U with ties
    counted 1/2, in exact integer arithmetic. nan for a class that is absent or alone.
    """
    _, inverse = np.unique(values, return_inverse=True)
    total = np.bincount(inverse)
    by_class = np.argsort(y_idx, kind="stable")
    bounds = np.searchsorted(y_idx[by_class], np.arange(k + 1))
    out = np.full(k, np.nan)
    for c in range(k):
        pos = np.bincount(inverse[by_class[bounds[c]:bounds[c + 1]]], minlength=total.size)
        out[c] = ranking_areas(pos, total - pos)["auroc"]
    return out


def _indicator_auroc(values: np.ndarray, y_idx: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Best one-vs-rest AUROC of a category indicator (x == v) per class, and that category.

    The indicator's AUROC (:func:`ranking_areas` over its two scores) is the balanced accuracy
    (TPR + TNR) / 2 of "x == v"; it is 1 exactly when the category and the class map
    one-to-one. Only (category, class) pairs that occur are scored (an absent pair has TPR 0,
    so AUROC <= 1/2), keeping memory linear in the rows.
    """
    cats, inverse = np.unique(values, return_inverse=True)
    pair, n_pair = np.unique(inverse.astype(np.int64) * k + y_idx, return_counts=True)
    v, c = pair // k, pair % k
    n_class, n_cat, n = np.bincount(y_idx, minlength=k), np.bincount(inverse), values.size
    # Counts of each pair's indicator at its two scores, ascending: 0 (another category), 1 (category v).
    pos = np.stack([n_class[c] - n_pair, n_pair], axis=-1)
    neg = np.stack([n - n_class[c] - (n_cat[v] - n_pair), n_cat[v] - n_pair], axis=-1)
    auc = np.asarray(ranking_areas(pos, neg)["auroc"], dtype=np.float64).reshape(-1)  # nan: class is every row
    order = np.lexsort((-np.nan_to_num(auc, nan=-1.0), c))  # by class, best first
    first = order[np.r_[True, c[order][1:] != c[order][:-1]]]
    best, best_cat = np.full(k, np.nan), np.empty(k, dtype=object)
    best[c[first]], best_cat[c[first]] = auc[first], cats[v[first]]
    return best, best_cat


def _separation_rows(frame: pl.DataFrame, set_name: str, features: list[str], label: str,
                     threshold: float) -> list[dict]:
    data = frame.filter(pl.col(label).is_not_null())
    if data.height == 0:
        return []
    classes, y_idx = np.unique(data[label].to_numpy(), return_inverse=True)
    rows = []
    for f in features:
        col = data[f]
        keep = col.is_not_null()
        if _numeric(col.dtype):
            keep = keep & col.cast(pl.Float64).is_finite().fill_null(False)
        x, y = col.filter(keep).to_numpy(), y_idx[keep.to_numpy()]
        if x.size == 0:
            continue
        if _numeric(col.dtype):
            auc, value = _auroc_per_class(x.astype(np.float64), y, classes.size), [None] * classes.size
        else:
            auc, cats = _indicator_auroc(x.astype(str), y, classes.size)
            value = [None if v is None else str(v) for v in cats]
        for c in range(classes.size):
            a = float(auc[c])
            flagged = bool(a >= threshold or a <= 1 - threshold) if a == a else False
            rows.append({"check": "separation", "set": set_name, "feature": f, "class": str(_py(classes[c])),
                         "value": value[c], "statistic": a, "threshold": threshold, "flagged": flagged,
                         "count": int(x.size), "example": None})
    return rows


def _row_hash(frame: pl.DataFrame, features: list[str]) -> pl.Series:
    """``hash_rows`` of the features, with categoricals as strings and -0.0 as 0.0 so equal values hash equally."""
    cols = []
    for f in features:
        dtype = frame.schema[f]
        if isinstance(dtype, (pl.Categorical, pl.Enum)):
            cols.append(pl.col(f).cast(pl.String))
        elif dtype.is_float():
            cols.append(pl.col(f) + 0.0)
        else:
            cols.append(pl.col(f))
    return frame.select(cols).hash_rows(seed=42)


def _first(frame: pl.DataFrame, column: str) -> str:
    """The first non-null value of a column, as repr, for an error message ("no value" when all are null)."""
    return _examples(frame[column].drop_nulls().head(1).to_list()) or "no value"


def _null_typed_as_other(tr: pl.DataFrame, te: pl.DataFrame, column: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The two frames with a column of polars type Null (every value null, e.g. built from Nones) cast to the
    other set's type of that column: it holds no value, so it cannot differ in type."""
    a, b = tr.schema[column], te.schema[column]
    if a == pl.Null and b != pl.Null:
        tr = tr.with_columns(pl.col(column).cast(b))
    elif b == pl.Null and a != pl.Null:
        te = te.with_columns(pl.col(column).cast(a))
    return tr, te


def _same_label_kind(tr: pl.DataFrame, te: pl.DataFrame, label_column: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The two frames, their labels checked to be of one kind (:func:`metrics_core.contract.classes.check_label_kinds`:
    strings are never compared with numbers) so that test labels can be compared with training labels."""
    tr, te = _null_typed_as_other(tr, te, label_column)
    if pl.Null not in (tr.schema[label_column], te.schema[label_column]):  # all null in both: nothing to compare
        kinds = [pl.Series(dtype=f.schema[label_column]).to_arrow().type for f in (tr, te)]  # as the contract has them
        check_label_kinds(*kinds, label=f"train column {label_column!r} (e.g. {_first(tr, label_column)})",
                          prediction=f"test column {label_column!r} (e.g. {_first(te, label_column)})",
                          rule="a test label is compared with the training labels")
    return tr, te


def _id_overlap(tr: pl.DataFrame, te: pl.DataFrame, id_column: str) -> tuple[list[dict], list[str], dict]:
    """Step 1 of :func:`leakage`: ids present in both sets (row, notes, figures)."""
    require_columns(tr, "train", [id_column])
    require_columns(te, "test", [id_column])
    tr, te = _null_typed_as_other(tr, te, id_column)
    try:
        shared = te.select(id_column).drop_nulls().unique().join(
            tr.select(id_column).drop_nulls().unique(), on=id_column, how="semi").sort(id_column)[id_column]
    except (pl.exceptions.SchemaError, pl.exceptions.InvalidOperationError, pl.exceptions.ComputeError) as e:
        # polars decides which key types join (Int32 with Int64 does, String with Int64 does not)
        raise InputError(f"id_column: column {id_column!r} is {tr.schema[id_column]} in train (e.g. "
                         f"{_first(tr, id_column)}) but {te.schema[id_column]} in test (e.g. {_first(te, id_column)}); "
                         "ids of these types cannot be compared. Cast them to one type.") from e
    n_rows = int(te[id_column].is_in(shared.implode()).sum()) if shared.len() else 0
    row = {"check": "id_overlap", "set": "both", "feature": id_column, "statistic": float(shared.len()),
           "threshold": 0.0, "flagged": shared.len() > 0, "count": n_rows,
           "example": _examples(shared.to_list()) or None}
    notes = [f"{shared.len()} id(s) of column {id_column!r} are in both sets ({n_rows} test rows), "
             f"e.g. {_examples(shared.to_list())}."] if shared.len() else []
    return [row], notes, {"n_id_overlap": shared.len(), "n_id_overlap_rows": n_rows}


def _duplicate_pairs(tr: pl.DataFrame, te: pl.DataFrame, features: list[str], label_column: str | None,
                     has_labels: bool) -> pl.DataFrame:
    """(test row, first equal training row[, its labels]) for every test row equal to a training row.

    Rows are matched on ``hash_rows`` of the features, then compared value by value (nulls
    equal), so a hash collision cannot create a duplicate.
    """
    extra = [label_column] if has_labels else []
    if has_labels and tr.schema[label_column] != te.schema[label_column]:
        # Labels of one kind but two types (Int64 and Float64, String and Categorical): list.contains needs one
        # type, and 1 == 1.0 as a label (as numpy compares them in the metrics).
        numbers = all(f.schema[label_column].is_numeric() or f.schema[label_column] == pl.Boolean for f in (tr, te))
        common = pl.Float64 if numbers else pl.String
        tr, te = (f.with_columns(pl.col(label_column).cast(common)) for f in (tr, te))
    grouped = tr.select(features + extra).with_row_index("_train_row").group_by(
        features, maintain_order=True).agg(pl.col("_train_row").first(),
                                           *([pl.col(label_column).drop_nulls().unique().alias("_labels")]
                                             if has_labels else []))
    grouped = grouped.with_columns(_h=_row_hash(grouped, features))
    test_side = te.select(features + extra).with_row_index("_test_row")
    test_side = test_side.with_columns(_h=_row_hash(test_side, features))
    pairs = test_side.join(grouped, on="_h", how="inner", suffix="_train")
    same = pl.all_horizontal([pl.col(f).eq_missing(pl.col(f"{f}_train")) for f in features])
    return pairs.filter(same).sort("_test_row")


def _duplicates(tr: pl.DataFrame, te: pl.DataFrame, features: list[str], label_column: str | None
                ) -> tuple[list[dict], list[str], dict]:
    """Step 2 of :func:`leakage`: test rows duplicating a training row, and their label conflicts."""
    has_labels = label_column is not None and label_column in te.columns
    pairs = _duplicate_pairs(tr, te, features, label_column, has_labels)
    n_dup = pairs.height
    conflicts = 0
    if has_labels and n_dup:
        # A missing label is no label, not a different one: a conflict needs a test label and at least one
        # training label of the matching rows (``_labels`` holds the non-null ones), none of them equal to it.
        conflicts = pairs.filter(pl.col(label_column).is_not_null() & (pl.col("_labels").list.len() > 0)
                                 & ~pl.col("_labels").list.contains(pl.col(label_column))).height
    examples = [f"test row {a} = train row {b}" for a, b in
                zip(pairs["_test_row"].head(MAX_EXAMPLES), pairs["_train_row"].head(MAX_EXAMPLES))]
    row = {"check": "duplicate_rows", "set": "both", "feature": ", ".join(features), "statistic": float(n_dup),
           "threshold": 0.0, "flagged": n_dup > 0, "count": conflicts, "example": "; ".join(examples) or None}
    notes = [f"{n_dup} test row(s) ({n_dup / te.height:.1%}) duplicate a training row on the features, "
             f"e.g. {examples[0]}" + (f"; {conflicts} of them with a different label." if conflicts else ".")
             ] if n_dup else []
    return [row], notes, {"n_duplicate_rows": n_dup, "n_duplicate_label_conflicts": conflicts}


def _separation(tr: pl.DataFrame, te: pl.DataFrame, features: list[str], label_column: str | None,
                threshold: float) -> tuple[list[dict], list[str], dict]:
    """Step 3 of :func:`leakage`: features that alone separate a class, in each set with labels."""
    rows = []
    if label_column is not None:
        for name, frame in (("train", tr), ("test", te)):
            if label_column in frame.columns:
                rows.extend(_separation_rows(frame, name, features, label_column, threshold))
    flagged = [r for r in rows if r["flagged"]]
    separating = sorted({r["feature"] for r in flagged})
    notes = []
    if separating:
        worst = max(flagged, key=lambda r: abs(r["statistic"] - 0.5))
        value = f" (category {worst['value']!r})" if worst["value"] is not None else ""
        notes.append(f"{len(separating)} feature(s) alone separate a class almost perfectly: {separating[:5]}; "
                     f"e.g. {worst['feature']!r}{value} vs class {worst['class']!r} in {worst['set']}: "
                     f"AUROC {worst['statistic']:.4f}. Check that they are not derived from the label.")
    return rows, notes, {"n_separating_features": len(separating)}


def leakage(train: Any, test: Any, *, id_column: str | None = "id", feature_columns: Sequence[str],
            label_column: str | None = "label", auroc_threshold: float = 0.99) -> CheckResult:
    """Leakage between a training set and a test/current set (ISO/IEC TS 4213 5.3, ONS Annex F).

    Parameters
    ----------
    train, test : polars.DataFrame, polars.LazyFrame or pyarrow.Table
        The two sets, with the same feature columns and dtypes.
    id_column : str or None
        Column identifying a row across sets; None to skip the id check.
    feature_columns : sequence of str
        The model's features (not the label).
    label_column : str or None
        The label; None to skip the label checks. A test set without it is checked without
        labels.
    auroc_threshold : float
        In (0.5, 1]: a feature whose one-vs-rest AUROC is at least this (or at most
        1 - this) separates a class.

    Returns
    -------
    CheckResult
        ``table`` with one row group per finding (column ``check``), ``figures``: n_train,
        n_test, n_id_overlap, n_id_overlap_rows, n_duplicate_rows,
        n_duplicate_label_conflicts, n_separating_features.

    Notes
    -----
    Three findings:

    - ``id_overlap``: ids present in both sets (``statistic`` = number of shared ids, ``count``
      = test rows carrying one);
    - ``duplicate_rows``: test rows whose feature values equal a training row's, matched on
      ``DataFrame.hash_rows`` of the features and then compared value by value (nulls equal),
      so a hash collision cannot create a duplicate. ``count`` holds the label conflicts:
      duplicates whose test label is none of the matching training rows' labels. A missing
      (null) label is no label, not a different one: a test row without a label, or whose
      matching training rows have none, is no conflict;
    - ``separation``: per set with labels, feature and class, the one-vs-rest AUROC of the
      feature alone (:func:`metrics_core.curves.ranking_areas`: Mann-Whitney with ties 1/2;
      nulls and NaN dropped; nan for a class that is every row). For a categorical feature the
      score is the indicator of its best category, whose AUROC is the balanced accuracy of
      "x == v" and equals 1 when the category maps one-to-one to the class.

    The id column is compared across sets as polars joins it (Int32 with Int64, not String with
    Int64), the labels when both are strings or both are not
    (:func:`metrics_core.contract.classes.check_label_kinds`; 1 and 1.0 are one label); other types are an
    :class:`~metrics_core.errors.InputError` naming the column and both types. A column that is
    all null (polars type Null) takes the other set's type.

    Status: "fail" when ids overlap or rows are duplicated (test metrics would be optimistic),
    "warn" when a feature alone separates a class (a person should check whether it is derived
    from the label), else "pass".

    Examples
    --------
    >>> train = pl.DataFrame({"id": [1, 2, 3, 4], "x": [0.1, 0.2, 0.8, 0.9], "label": [0, 0, 1, 1]})
    >>> test = pl.DataFrame({"id": [4, 5], "x": [0.9, 0.3], "label": [1, 0]})
    >>> r = leakage(train, test, feature_columns=["x"])
    >>> r.status, r.figures["n_id_overlap"], r.figures["n_duplicate_rows"]
    ('fail', 1, 1)
    """
    tr, te, features = _train_test(train, test, feature_columns, label_column)
    if not isinstance(auroc_threshold, (int, float)) or not 0.5 < auroc_threshold <= 1:
        raise InputError(f"auroc_threshold: expected a number in (0.5, 1], got {auroc_threshold!r}.")
    steps = [_id_overlap(tr, te, id_column)] if id_column is not None else []
    if label_column is not None:
        require_columns(tr, "train", [label_column])
        if label_column in te.columns:
            tr, te = _same_label_kind(tr, te, label_column)
    steps.append(_duplicates(tr, te, features, label_column))
    steps.append(_separation(tr, te, features, label_column, float(auroc_threshold)))
    rows: list[dict] = []
    notes: list[str] = []
    figures = {"n_train": tr.height, "n_test": te.height}
    for step_rows, step_notes, step_figures in steps:
        rows.extend(step_rows)
        notes.extend(step_notes)
        figures.update(step_figures)
    table = pl.DataFrame([{k: r.get(k) for k in SCHEMA} for r in rows], schema=SCHEMA)
    status = _status(bool(figures.get("n_id_overlap", 0) or figures["n_duplicate_rows"]),
                     bool(figures["n_separating_features"]))
    return CheckResult("leakage", status, table, " ".join(notes) or "No id overlap, duplicate rows or "
                       "single-feature separation found.", figures)
