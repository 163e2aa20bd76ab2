"""Data checks: leakage, representativeness, prevalence and price stability (ISO 5.3.2-5.3.9, ONS Annex F)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import polars as pl
import pyarrow as pa
from scipy import stats

from metrics_core import drift
from metrics_core.errors import InputError
from metrics_core.significance import correct

STATUSES = ("pass", "warn", "fail")
MAX_EXAMPLES = 5


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one data check, for a flow to log and a person to read.

    ``status`` is "pass", "warn" or "fail"; ``table`` a tidy polars DataFrame with one row per
    item checked; ``message`` one or more sentences with the counts and examples; ``figures``
    scalar numbers (ready for ``mlflow.log_metrics``).
    """

    name: str
    status: str
    table: pl.DataFrame
    message: str
    figures: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise InputError(f"status: expected one of {STATUSES}, got {self.status!r}.")

    def __str__(self) -> str:
        return f"[{self.status}] {self.name}: {self.message}"


# ---------------------------------------------------------------- shared frame helpers
def as_frame(x: Any, name: str) -> pl.DataFrame:
    """A polars DataFrame from polars (eager or lazy) or pyarrow (Table, RecordBatch) input."""
    if isinstance(x, pl.LazyFrame):
        return x.collect()
    if isinstance(x, pl.DataFrame):
        return x
    if isinstance(x, (pa.Table, pa.RecordBatch)):
        return pl.from_arrow(x)
    raise InputError(f"{name}: expected a polars DataFrame or a pyarrow Table, got {type(x).__name__}.")


def require_columns(frame: pl.DataFrame, name: str, columns: Sequence[str]) -> None:
    """Every name in ``columns`` is a column of ``frame``; the error lists the missing ones."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        shown = frame.columns[:12] + (["..."] if frame.width > 12 else [])
        raise InputError(f"{name}: column(s) {missing} not found (columns: {shown}). "
                         "Fix the column map or the data.")


def _nonempty(frame: pl.DataFrame, name: str) -> None:
    if frame.height == 0:
        raise InputError(f"{name}: the table is empty (0 rows). Check the data source.")


def _feature_list(feature_columns: Any) -> list[str]:
    if isinstance(feature_columns, str):
        return [feature_columns]
    cols = list(feature_columns) if feature_columns is not None else []
    if not cols or not all(isinstance(c, str) for c in cols):
        raise InputError(f"feature_columns: expected a non-empty list of column names, got {feature_columns!r}.")
    if len(set(cols)) != len(cols):
        raise InputError(f"feature_columns: duplicate names in {cols}.")
    return cols


def _label_not_a_feature(label_column: str | None, features: list[str]) -> None:
    if label_column is not None and label_column in features:
        raise InputError(f"feature_columns: the label column {label_column!r} is listed as a feature; "
                         "remove it (a label always separates itself).")


def _same_dtypes(a: pl.DataFrame, b: pl.DataFrame, columns: Sequence[str]) -> None:
    for c in columns:
        if a.schema[c] != b.schema[c]:
            raise InputError(f"feature_columns: column {c!r} is {a.schema[c]} in train but {b.schema[c]} in test; "
                             "the schema changed between the sets. Cast them to one type.")


def _numeric(dtype: pl.DataType) -> bool:
    return dtype.is_numeric()


def _py(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _adjust(p_values: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """BH-adjusted p-values and rejections for the finite entries (nan stays nan, never rejected)."""
    p = np.asarray(p_values, dtype=np.float64)
    adjusted, reject = np.full(p.size, np.nan), np.zeros(p.size, dtype=bool)
    ok = np.isfinite(p)
    if ok.any():
        res = correct(p[ok], "bh", alpha)
        adjusted[ok], reject[ok] = res.p_adjusted, res.reject
    return adjusted, reject


def _examples(values: Sequence) -> str:
    shown = [repr(_py(v)) for v in list(values)[:MAX_EXAMPLES]]
    return ", ".join(shown) + (", ..." if len(values) > MAX_EXAMPLES else "")


def _status(fail: bool, warn: bool) -> str:
    return "fail" if fail else ("warn" if warn else "pass")


# ---------------------------------------------------------------- leakage
def _auroc_per_class(values: np.ndarray, y_idx: np.ndarray, k: int) -> np.ndarray:
    """One-vs-rest AUROC of one feature for every class at once, from mid-ranks.

    ``(R_c - n_c (n_c + 1) / 2) / (n_c (N - n_c))`` with R_c the sum of the average ranks of
    class c: the Mann-Whitney U with ties counted 1/2 (seed 003), the quantity of
    :func:`metrics_core.curves.auroc_from_counts`, for K classes with one sort. Rank sums are
    half-integers, exact in float64 below 2^52. nan for a class that is absent or alone.
    """
    ranks = stats.rankdata(values)
    n_c = np.bincount(y_idx, minlength=k).astype(np.float64)
    r_c = np.bincount(y_idx, weights=ranks, minlength=k)
    den = n_c * (values.size - n_c)
    return np.divide(r_c - n_c * (n_c + 1) / 2, den, out=np.full(k, np.nan), where=den > 0)


def _indicator_auroc(values: np.ndarray, y_idx: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Best one-vs-rest AUROC of a category indicator (x == v) per class, and that category.

    For a 0/1 score the AUROC is the balanced accuracy (TPR + TNR) / 2; it is 1 exactly when the
    category and the class map one-to-one. Only (category, class) pairs that occur are scored
    (an absent pair has TPR 0, so AUROC <= 1/2), keeping memory linear in the rows.
    """
    cats, inverse = np.unique(values, return_inverse=True)
    pair, n_pair = np.unique(inverse.astype(np.int64) * k + y_idx, return_counts=True)
    v, c = pair // k, pair % k
    n_class, n_cat, n = np.bincount(y_idx, minlength=k), np.bincount(inverse), values.size
    with np.errstate(divide="ignore", invalid="ignore"):
        tpr = n_pair / n_class[c]
        tnr = 1 - (n_cat[v] - n_pair) / (n - n_class[c])
    auc = np.where(n_class[c] < n, (tpr + tnr) / 2, np.nan)
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


def _train_test(train, test, feature_columns, label_column):
    """The two frames and the feature list, checked the same way by every train-vs-test check."""
    tr, te = as_frame(train, "train"), as_frame(test, "test")
    _nonempty(tr, "train")
    _nonempty(te, "test")
    features = _feature_list(feature_columns)
    require_columns(tr, "train", features)
    require_columns(te, "test", features)
    _same_dtypes(tr, te, features)
    _label_not_a_feature(label_column, features)
    return tr, te, features


def leakage(train: Any, test: Any, *, id_column: str | None = "id", feature_columns: Sequence[str],
            label_column: str | None = "label", auroc_threshold: float = 0.99) -> CheckResult:
    """Leakage between a training set and a test/current set (ISO 4213 5.3.x, ONS Annex F).

    Three findings, each a row group of the table (column ``check``):

    - ``id_overlap``: ids present in both sets (``statistic`` = number of shared ids, ``count``
      = test rows carrying one);
    - ``duplicate_rows``: test rows whose feature values equal a training row's. Rows are
      matched on ``DataFrame.hash_rows`` of the feature columns and each candidate pair is then
      compared value by value (nulls equal), so a hash collision cannot create a duplicate.
      ``label_conflicts`` counts duplicates whose test label is none of the matching training
      rows' labels;
    - ``separation``: per set with labels, feature and class, the one-vs-rest AUROC of the
      feature alone (Mann-Whitney with ties 1/2; nulls and NaN dropped). For a categorical
      feature the score is the indicator of its best category, whose AUROC is the balanced
      accuracy of "x == v" and equals 1 when the category maps one-to-one to the class.
      Flagged when AUROC >= ``auroc_threshold`` or <= 1 - ``auroc_threshold``.

    Status: "fail" when ids overlap or rows are duplicated (test metrics would be optimistic),
    "warn" when a feature alone separates a class (a person should check whether it is derived
    from the label), else "pass". ``figures``: n_train, n_test, n_id_overlap,
    n_id_overlap_rows, n_duplicate_rows, n_duplicate_label_conflicts, n_separating_features.

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
    rows: list[dict] = []
    figures = {"n_train": tr.height, "n_test": te.height}
    notes = []

    if id_column is not None:
        require_columns(tr, "train", [id_column])
        require_columns(te, "test", [id_column])
        shared = te.select(id_column).drop_nulls().unique().join(
            tr.select(id_column).drop_nulls().unique(), on=id_column, how="semi").sort(id_column)[id_column]
        n_rows = int(te[id_column].is_in(shared.implode()).sum()) if shared.len() else 0
        figures["n_id_overlap"], figures["n_id_overlap_rows"] = shared.len(), n_rows
        rows.append({"check": "id_overlap", "set": "both", "feature": id_column, "statistic": float(shared.len()),
                     "threshold": 0.0, "flagged": shared.len() > 0, "count": n_rows,
                     "example": _examples(shared.to_list()) or None})
        if shared.len():
            notes.append(f"{shared.len()} id(s) of column {id_column!r} are in both sets "
                         f"({n_rows} test rows), e.g. {_examples(shared.to_list())}.")

    if label_column is not None:
        require_columns(tr, "train", [label_column])
    has_labels = label_column is not None and label_column in te.columns
    extra = [label_column] if has_labels else []
    grouped = tr.select(features + extra).with_row_index("_train_row").group_by(
        features, maintain_order=True).agg(pl.col("_train_row").first(),
                                           *([pl.col(label_column).unique().alias("_labels")] if has_labels else []))
    grouped = grouped.with_columns(_h=_row_hash(grouped, features))
    test_side = te.select(features + extra).with_row_index("_test_row")
    test_side = test_side.with_columns(_h=_row_hash(test_side, features))
    pairs = test_side.join(grouped, on="_h", how="inner", suffix="_train")
    same = pl.all_horizontal([pl.col(f).eq_missing(pl.col(f"{f}_train")) for f in features])
    pairs = pairs.filter(same).sort("_test_row")
    n_dup = pairs.height
    conflicts = int(pairs.filter(~pl.col("_labels").list.contains(pl.col(label_column))).height) if has_labels \
        and n_dup else 0
    figures["n_duplicate_rows"], figures["n_duplicate_label_conflicts"] = n_dup, conflicts
    dup_examples = [f"test row {a} = train row {b}" for a, b in
                    zip(pairs["_test_row"].head(MAX_EXAMPLES), pairs["_train_row"].head(MAX_EXAMPLES))]
    rows.append({"check": "duplicate_rows", "set": "both", "feature": ", ".join(features), "statistic": float(n_dup),
                 "threshold": 0.0, "flagged": n_dup > 0, "count": conflicts,
                 "example": "; ".join(dup_examples) or None})
    if n_dup:
        notes.append(f"{n_dup} test row(s) ({n_dup / te.height:.1%}) duplicate a training row on the features, "
                     f"e.g. {dup_examples[0]}" + (f"; {conflicts} of them with a different label." if conflicts
                                                  else "."))

    if label_column is not None:
        for name, frame in (("train", tr), ("test", te)):
            if label_column in frame.columns:
                rows.extend(_separation_rows(frame, name, features, label_column, float(auroc_threshold)))
    separating = sorted({r["feature"] for r in rows if r["check"] == "separation" and r["flagged"]})
    figures["n_separating_features"] = len(separating)
    if separating:
        worst = max((r for r in rows if r["check"] == "separation" and r["flagged"]),
                    key=lambda r: abs(r["statistic"] - 0.5))
        value = f" (category {worst['value']!r})" if worst["value"] is not None else ""
        notes.append(f"{len(separating)} feature(s) alone separate a class almost perfectly: {separating[:5]}; "
                     f"e.g. {worst['feature']!r}{value} vs class {worst['class']!r} in {worst['set']}: "
                     f"AUROC {worst['statistic']:.4f}. Check that they are not derived from the label.")
    schema = {"check": pl.String, "set": pl.String, "feature": pl.String, "class": pl.String, "value": pl.String,
              "statistic": pl.Float64, "threshold": pl.Float64, "flagged": pl.Boolean, "count": pl.Int64,
              "example": pl.String}
    table = pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema)
    status = _status(bool(figures.get("n_id_overlap", 0) or n_dup), bool(separating))
    return CheckResult("leakage", status, table, " ".join(notes) or "No id overlap, duplicate rows or "
                       "single-feature separation found.", figures)


# ---------------------------------------------------------------- representativeness
def _category_counts(a: pl.Series, b: pl.Series) -> tuple[list, np.ndarray, np.ndarray]:
    ca = a.cast(pl.String).fill_null("<null>").value_counts(name="n")
    cb = b.cast(pl.String).fill_null("<null>").value_counts(name="n")
    both = ca.join(cb, on=a.name, how="full", coalesce=True, suffix="_b").fill_null(0).sort(a.name)
    return both[a.name].to_list(), both["n"].to_numpy(), both["n_b"].to_numpy()


def representativeness(train: Any, test: Any, *, feature_columns: Sequence[str], label_column: str | None = "label",
                       min_support: int = 30, alpha: float = 0.05, psi_threshold: float = 0.1,
                       ks_threshold: float = 0.1, bins: int = 10) -> CheckResult:
    """Is the test/current set drawn from the training distribution? (ISO 4213 5.3.x, ONS Annex F)

    Per feature (table rows with ``kind="feature"``), train as reference:

    - numeric: two-sample KS (:func:`metrics_core.drift.ks`) and PSI over ``bins`` reference
      quantile bins (:func:`metrics_core.drift.psi`), nulls and NaN dropped and their share
      reported (``missing_train``, ``missing_test``);
    - categorical (strings, booleans, categoricals; null is a category): chi-squared test of
      the 2 x C table of category counts (:func:`metrics_core.drift.chi_squared_counts`), PSI
      over the category shares, and the test rows whose category never occurs in train
      (``unseen``).

    p-values are BH-adjusted together. A feature is flagged when its adjusted p-value is below
    ``alpha`` and its effect passes a practical threshold (PSI >= ``psi_threshold`` or, numeric,
    KS statistic >= ``ks_threshold``), or when it has unseen categories.

    Per class (``kind="class"``, with ``label_column``): support in each set; flagged when the
    class is absent from one set or has fewer than ``min_support`` rows in a set where it occurs.
    A test set without labels (no column, or all null) has only the training support checked.

    Status: "fail" when a class of the test set never occurs in train (the model cannot predict
    it), "warn" for any other flag, else "pass".

    Examples
    --------
    >>> train = pl.DataFrame({"shop": ["a"] * 50 + ["b"] * 50, "label": [0, 1] * 50})
    >>> test = pl.DataFrame({"shop": ["a"] * 40 + ["c"] * 10, "label": [0, 1] * 25})
    >>> r = representativeness(train, test, feature_columns=["shop"])
    >>> r.status, r.figures["n_unseen_category_rows"]
    ('warn', 10)
    """
    tr, te, features = _train_test(train, test, feature_columns, label_column)
    if not isinstance(min_support, (int, np.integer)) or min_support < 0:
        raise InputError(f"min_support: expected a non-negative integer, got {min_support!r}.")
    rows = []
    for f in features:
        a, b = tr[f], te[f]
        row = {"kind": "feature", "name": f, "test": None, "n_train": 0, "n_test": 0, "statistic": np.nan,
               "p_value": np.nan, "psi": np.nan, "unseen": 0, "missing_train": 0.0, "missing_test": 0.0, "note": None}
        if _numeric(a.dtype):
            fa, fb = a.cast(pl.Float64), b.cast(pl.Float64)
            xa = fa.filter(fa.is_finite().fill_null(False)).to_numpy()
            xb = fb.filter(fb.is_finite().fill_null(False)).to_numpy()
            row.update(test="ks", n_train=xa.size, n_test=xb.size,
                       missing_train=1 - xa.size / tr.height, missing_test=1 - xb.size / te.height)
            if xa.size and xb.size:
                res = drift.ks(xa, xb)
                row.update(statistic=float(res.statistic), p_value=float(res.p_value),
                           psi=float(drift.psi(xa, xb, bins=bins).statistic))
            else:
                row["note"] = "no finite values in " + ("train" if not xa.size else "test")
        else:
            cats, na, nb = _category_counts(a, b)
            unseen = (na == 0) & (nb > 0)
            row.update(test="chi_squared", n_train=int(na.sum()), n_test=int(nb.sum()), unseen=int(nb[unseen].sum()),
                       psi=float(drift.psi(dict(zip(cats, na)), dict(zip(cats, nb))).statistic),
                       missing_train=a.null_count() / tr.height, missing_test=b.null_count() / te.height)
            if len(cats) > 1:
                res = drift.chi_squared_counts(na, nb)
                row.update(statistic=float(res.statistic), p_value=float(res.p_value))
            else:
                row["note"] = "a single category in both sets: no test"
            if unseen.any():
                row["note"] = f"categories not in train: {_examples([c for c, u in zip(cats, unseen) if u])}"
        rows.append(row)
    adjusted, reject = _adjust(np.array([r["p_value"] for r in rows]), alpha)
    for r, adj, rej in zip(rows, adjusted, reject):
        effect = r["psi"] >= psi_threshold or (r["test"] == "ks" and r["statistic"] >= ks_threshold)
        r["p_adjusted"], r["flagged"] = float(adj), bool(rej and effect) or r["unseen"] > 0

    absent_in_train = []
    if label_column is not None:
        require_columns(tr, "train", [label_column])
        support_tr = tr[label_column].drop_nulls().value_counts(name="n_train")
        test_labelled = label_column in te.columns and te[label_column].null_count() < te.height
        if test_labelled:  # an unlabelled current period only has its training support checked
            support_te = te[label_column].drop_nulls().value_counts(name="n_test")
            support = support_tr.join(support_te, on=label_column, how="full", coalesce=True)
        else:
            support = support_tr.with_columns(n_test=pl.lit(None, dtype=pl.UInt32))
        for cls, ntr, nte in support.sort(label_column).iter_rows():
            ntr, notes = ntr or 0, []
            if ntr == 0:
                notes.append("absent from train")
                absent_in_train.append(cls)
            if test_labelled and not nte:
                notes.append("absent from test")
                nte = 0
            for set_name, n in (("train", ntr), ("test", nte)):
                if n is not None and 0 < n < min_support:
                    notes.append(f"support {n} < {min_support} in {set_name}")
            rows.append({"kind": "class", "name": str(cls), "test": None, "n_train": ntr, "n_test": nte or 0,
                         "statistic": np.nan, "p_value": np.nan, "psi": np.nan, "unseen": 0, "missing_train": 0.0,
                         "missing_test": 0.0, "note": "; ".join(notes) or None, "p_adjusted": np.nan,
                         "flagged": bool(notes)})
    table = pl.DataFrame(rows, schema={"kind": pl.String, "name": pl.String, "test": pl.String,
                                       "n_train": pl.Int64, "n_test": pl.Int64, "statistic": pl.Float64,
                                       "p_value": pl.Float64, "p_adjusted": pl.Float64, "psi": pl.Float64,
                                       "unseen": pl.Int64, "missing_train": pl.Float64, "missing_test": pl.Float64,
                                       "flagged": pl.Boolean, "note": pl.String})
    shifted = table.filter(pl.col("flagged") & (pl.col("kind") == "feature"))
    classes = table.filter(pl.col("flagged") & (pl.col("kind") == "class"))
    figures = {"n_features": len(features), "n_shifted_features": shifted.height,
               "n_unseen_category_rows": int(table["unseen"].sum()), "n_flagged_classes": classes.height,
               "n_classes_absent_from_train": len(absent_in_train),
               "max_psi": float(np.nanmax(table["psi"].to_numpy())) if table["psi"].is_not_nan().any() else np.nan}
    notes = []
    if shifted.height:
        notes.append(f"{shifted.height} feature(s) differ between train and test: "
                     + "; ".join(f"{n} (PSI {p:.3f}{', ' + t if t else ''})" for n, p, t in
                                 shifted.select("name", "psi", "note").head(MAX_EXAMPLES).iter_rows()) + ".")
    if classes.height:
        notes.append(f"{classes.height} class(es) flagged: " + "; ".join(
            f"{n!r}: {t}" for n, t in classes.select("name", "note").head(MAX_EXAMPLES).iter_rows()) + ".")
    return CheckResult("representativeness", _status(bool(absent_in_train), bool(shifted.height or classes.height)),
                       table, " ".join(notes) or "Test set looks like the training set.", figures)

