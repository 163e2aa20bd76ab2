"""Manual checking (ONS future work): sample size, a seeded stratified sample, the stratified estimate."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import polars as pl
import pyarrow as pa

from metrics_core._validate import to_numpy
from metrics_core.errors import InputError, bad_rows
from metrics_core.significance.proportions import wilson, z_critical


@dataclass(frozen=True)
class ManualCheckPlan:
    """What to label by hand: the sample size, its allocation to strata and the rows drawn.

    Parameters
    ----------
    n : int
        The sample size the margin needs (after the finite-population correction).
    n0 : float
        The sample size before the finite-population correction (:func:`sample_size`).
    n_sample : int
        The rows actually drawn (``n`` plus any raise to ``min_per_stratum``).
    population_size : int
        N, rows in the population.
    margin, level, expected : float
        The settings the plan was made with.
    seed : int
        Seed of the row draw.
    allocation : polars.DataFrame
        One row per stratum: ``stratum``, ``population`` (N_h), ``sample`` (n_h) and
        ``weight`` (N_h / N).
    sample : polars.DataFrame
        The drawn rows: ``row`` (0-based index into the population), ``stratum`` and, when the
        population was a table, its columns.

    Examples
    --------
    >>> manual_check_plan(1000, 0.1).population_sizes
    {'all': 1000}
    """

    n: int
    n0: float
    n_sample: int
    population_size: int
    margin: float
    level: float
    expected: float
    seed: int
    allocation: pl.DataFrame
    sample: pl.DataFrame

    @property
    def population_sizes(self) -> dict:
        """``{stratum: N_h}``, the ``population`` argument of :func:`estimate_from_sample`."""
        return dict(zip(self.allocation["stratum"].to_list(), self.allocation["population"].to_list()))


@dataclass(frozen=True)
class SampleEstimate:
    """A proportion metric estimated from a stratified sample (:func:`estimate_from_sample`).

    Parameters
    ----------
    estimate : float
        sum_h W_h p_h.
    lower, upper : float
        The interval at ``level`` by ``method``; nan when the variance cannot be estimated.
    std_error : float
        The stratified standard error with the finite-population correction.
    n : int
        Labelled rows.
    n_effective : float
        p (1 - p) / variance, the Kish effective sample size used by the Wilson interval (inf
        for a census).
    level : float
        Confidence level.
    method : str
        "wilson" or "normal".
    per_stratum : polars.DataFrame
        One row per stratum: stratum, population, sample, weight, proportion, variance_term.

    Examples
    --------
    >>> estimate_from_sample([1, 0, 1, 1], population=100).estimate
    0.75
    """

    estimate: float
    lower: float
    upper: float
    std_error: float
    n: int
    n_effective: float
    level: float
    method: str
    per_stratum: pl.DataFrame


def _z(level: float) -> float:
    """The two-sided normal critical value of a checked confidence level."""
    if not isinstance(level, (int, float)) or not 0 < level < 1:
        raise InputError(f"level: the confidence level must be in (0, 1), got {level!r}. Use e.g. 0.95.")
    return float(z_critical(level))


def sample_size(margin: float, level: float = 0.95, expected: float = 0.5,
                population_size: int | None = None) -> tuple[int, float]:
    """Rows to label to estimate a proportion within +-``margin`` at confidence ``level``.

    Parameters
    ----------
    margin : float
        Half-width of the interval wanted, in (0, 1).
    level : float
        Confidence level, in (0, 1).
    expected : float
        Anticipated proportion p, in (0, 1); 0.5 is the worst case (largest sample).
    population_size : int, optional
        N, rows in the population, for the finite-population correction.

    Returns
    -------
    (int, float)
        ``(n, n0)``: the sample size (rounded up, capped at N) and the size before the
        finite-population correction.

    Notes
    -----
    ``n0 = z^2 p (1 - p) / m^2`` with z = Phi^-1(1/2 + level/2) (normal approximation) and,
    for a finite population of ``N`` rows, ``n = n0 / (1 + (n0 - 1) / N)`` (Cochran 1977,
    eq. 4.2).

    Examples
    --------
    >>> sample_size(0.05)
    (385, 384.14588206941244)
    >>> sample_size(0.05, population_size=1000)[0]
    278
    """
    if not isinstance(margin, (int, float)) or not 0 < margin < 1:
        raise InputError(f"margin: the half-width must be in (0, 1), got {margin!r}. Use e.g. 0.05 for +-5 points.")
    if not isinstance(expected, (int, float)) or not 0 < expected < 1:
        raise InputError(f"expected: the anticipated proportion must be in (0, 1), got {expected!r}. "
                         "Use 0.5 when unknown (the largest sample).")
    z = _z(level)
    n0 = z * z * expected * (1 - expected) / (margin * margin)
    if population_size is None:
        return math.ceil(n0 - 1e-9), n0
    n = n0 / (1 + (n0 - 1) / population_size)
    return min(population_size, math.ceil(n - 1e-9)), n0


def _allocate(n: int, sizes: np.ndarray, min_per_stratum: int) -> np.ndarray:
    """Proportional allocation n_h = n N_h / N by largest remainder, raised to min(N_h, minimum)."""
    quota = n * sizes / sizes.sum()
    alloc = np.floor(quota).astype(np.int64)
    left = n - int(alloc.sum())
    if left:
        order = np.argsort(-(quota - alloc), kind="stable")
        alloc[order[:left]] += 1
    return np.maximum(alloc, np.minimum(sizes, min_per_stratum))


def _population_strata(population: Any, strata: Any) -> tuple[int, np.ndarray, pl.DataFrame | None]:
    frame = None
    if isinstance(population, pa.Table):
        population = pl.from_arrow(population)
    if isinstance(population, pl.DataFrame):
        frame = population
        size = frame.height
    elif isinstance(population, (int, np.integer)) and not isinstance(population, bool):
        size = int(population)
    else:
        raise InputError(f"population: expected a row count (int) or a table of rows (polars DataFrame or "
                         f"pyarrow Table), got {type(population).__name__}.")
    if size < 1:
        raise InputError(f"population: the population is empty ({size} rows). There is nothing to sample.")
    if strata is None:
        return size, np.full(size, "all", dtype=object), frame
    if isinstance(strata, str):
        if frame is None:
            raise InputError(f"strata: a column name ({strata!r}) needs the population as a table; "
                             "pass the stratum of every row as an array instead.")
        if strata not in frame.columns:
            raise InputError(f"strata: column {strata!r} is not in the population (columns: {frame.columns}).")
        strata = frame[strata]
    labels = to_numpy(strata, "strata")
    if labels.shape[0] != size:
        raise InputError(f"strata: has {labels.shape[0]} values but the population has {size} rows. "
                         "Give one stratum per population row.")
    return size, labels, frame


def manual_check_plan(population: Any, margin: float, level: float = 0.95, strata: Any = None,
                      expected: float = 0.5, seed: int = 0, *, min_per_stratum: int = 2) -> ManualCheckPlan:
    """Plan a manual check: how many rows to label, how to spread them, and which rows.

    The sample size is :func:`sample_size` for the whole population (simple random sampling;
    proportional stratification has a variance no larger to first order, so the margin holds).
    It is allocated to strata in proportion to their size by the largest-remainder rule (ties go
    to the first stratum in sorted order), and
    every stratum gets at least ``min(N_h, min_per_stratum)`` rows so that its variance can be
    estimated (``n_sample`` may then exceed ``n``). Within each stratum, rows are drawn without
    replacement with ``numpy.random.default_rng(seed)``, strata in sorted order, so the same
    seed gives the same rows.

    To check precision, pass as population only the rows classified positive; for recall, the
    rows labelled positive (when known); for accuracy, all rows.

    Parameters
    ----------
    population : int, polars.DataFrame or pyarrow.Table
        The number of rows, or the rows themselves.
    margin : float
        Half-width of the interval wanted, e.g. 0.03 for +-3 points.
    level : float
        Confidence level of the interval.
    strata : None, str or array-like
        A column of ``population`` or one stratum value per row (e.g. the predicted class).
    expected : float
        Anticipated value of the proportion (0.5 is the conservative choice).
    seed : int
        Seed of the row draw.

    Returns
    -------
    ManualCheckPlan

    Examples
    --------
    >>> plan = manual_check_plan(1000, 0.1, strata=["a"] * 800 + ["b"] * 200)
    >>> plan.n, plan.allocation["sample"].to_list()
    (88, [70, 18])
    """
    size, labels, frame = _population_strata(population, strata)
    n, n0 = sample_size(margin, level, expected, size)
    if not isinstance(min_per_stratum, (int, np.integer)) or min_per_stratum < 0:
        raise InputError(f"min_per_stratum: expected a non-negative integer, got {min_per_stratum!r}.")
    values, inverse, sizes = np.unique(labels, return_inverse=True, return_counts=True)
    alloc = _allocate(n, sizes, int(min_per_stratum))
    rng = np.random.default_rng(seed)
    order = np.argsort(inverse, kind="stable")
    starts = np.concatenate(([0], np.cumsum(sizes)))
    chosen = [rng.choice(order[starts[h]:starts[h + 1]], size=int(alloc[h]), replace=False)
              for h in range(values.size)]
    rows = np.sort(np.concatenate(chosen)) if chosen else np.empty(0, np.int64)
    stratum_values = values.tolist()
    allocation = pl.DataFrame({"stratum": stratum_values, "population": sizes.astype(np.int64),
                               "sample": alloc.astype(np.int64), "weight": sizes / size})
    sample = pl.DataFrame({"row": rows.astype(np.int64),
                           "stratum": [stratum_values[i] for i in inverse[rows]]})
    if frame is not None:
        extra = frame[rows].drop([c for c in ("row", "stratum") if c in frame.columns])
        sample = pl.concat([sample, extra], how="horizontal")
    return ManualCheckPlan(n=n, n0=n0, n_sample=int(alloc.sum()), population_size=size, margin=float(margin),
                           level=float(level), expected=float(expected), seed=seed, allocation=allocation,
                           sample=sample)


def _population_sizes(population: Any) -> dict:
    if isinstance(population, ManualCheckPlan):
        return population.population_sizes
    if isinstance(population, Mapping):
        return dict(population)
    if isinstance(population, (int, np.integer)) and not isinstance(population, bool):
        return {"all": int(population)}
    raise InputError("population: expected the ManualCheckPlan, a mapping {stratum: rows in the population} "
                     f"or the population size (int), got {type(population).__name__}.")


def _outcome(outcome: Any) -> np.ndarray:
    """The labelled outcomes as float64 0/1; NaN or any other value is an error naming the row."""
    y = to_numpy(outcome, "outcome")
    if y.dtype.kind == "f" and np.isnan(y).any():
        raise bad_rows("outcome", "NaN", np.isnan(y), y, "Label every sampled row (1 = success, 0 = failure).")
    if y.dtype.kind not in "biuf" or not np.isin(y, (0, 1)).all():
        bad = ~np.isin(y, (0, 1)) if y.dtype.kind in "biuf" else np.ones(y.shape, bool)
        raise bad_rows("outcome", "value other than 0/1", bad, y, "Use 1 for a success and 0 for a failure.")
    return y.astype(np.float64)


def _sample_strata(strata: Any, sizes: dict, n_rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(strata, stratum of each row, n_h, N_h): every sampled stratum known, every population stratum sampled."""
    if strata is None:
        if len(sizes) != 1:
            raise InputError(f"strata: the population has {len(sizes)} strata; give the stratum of every sample row.")
        labels = np.full(n_rows, next(iter(sizes)), dtype=object)
    else:
        labels = to_numpy(strata, "strata")
        if labels.shape[0] != n_rows:
            raise InputError(f"Mismatched lengths: outcome has {n_rows} rows, strata has {labels.shape[0]}.")
    for key, value in sizes.items():
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError(f"population: stratum {key!r} has size {value!r}; sizes must be positive integers.")
    values, inverse, n_h = np.unique(labels, return_inverse=True, return_counts=True)
    unknown = [v for v in values.tolist() if v not in sizes]
    if unknown:
        raise bad_rows("strata", f"stratum not in the population (known: {list(sizes)})",
                       np.isin(labels, unknown), labels, "Give the size of every sampled stratum.")
    missing = [k for k in sizes if k not in set(values.tolist())]
    if missing:
        raise InputError(f"strata: stratum {missing[0]!r} has {sizes[missing[0]]} population rows but none in the "
                         f"sample ({len(missing)} such strata); the estimate would not cover it. Label rows from it.")
    big_n = np.array([sizes[v] for v in values.tolist()], dtype=np.float64)
    over = n_h > big_n
    if over.any():
        k = int(np.flatnonzero(over)[0])
        raise InputError(f"strata: stratum {values[k]!r} has {n_h[k]} sample rows but only {int(big_n[k])} in the "
                         "population. Check the population sizes.")
    return values, inverse, n_h, big_n


def _stratified_interval(p: float, var: float, n: int, census: bool, z: float, level: float, method: str
                         ) -> tuple[float, float, float, float]:
    """(lower, upper, std_error, n_effective) of the stratified estimate p with variance ``var``."""
    if np.isnan(var):
        warnings.warn("estimate_from_sample: a stratum has a single sampled row, so its variance cannot be "
                      "estimated; the interval is nan. Label at least 2 rows per stratum.", stacklevel=3)
        return float("nan"), float("nan"), float("nan"), float("nan")
    se = math.sqrt(var)
    if census:
        return p, p, se, float("inf")
    n_eff = p * (1 - p) / var if var > 0 else float(n)
    if method == "normal":
        return max(0.0, p - z * se), min(1.0, p + z * se), se, n_eff
    lower, upper = wilson(p * n_eff, n_eff, level)
    return lower, upper, se, n_eff


def estimate_from_sample(outcome: Any, strata: Any = None, *, population: Any, level: float = 0.95,
                         method: str = "wilson") -> SampleEstimate:
    """Stratum-weighted proportion from a labelled stratified sample, with its interval.

    ``outcome`` is 1 where the sampled row counts as a success (e.g. prediction == label for
    accuracy; label == positive class for precision when the population was the classified
    positives). With W_h = N_h / N, p_h the sample proportion and f_h = n_h / N_h:

    - estimate ``p = sum_h W_h p_h``;
    - variance ``v = sum_h W_h^2 (1 - f_h) p_h (1 - p_h) / (n_h - 1)`` (Cochran 1977, 5.7 with
      s_h^2 = n_h p_h (1 - p_h) / (n_h - 1)); a census stratum (f_h = 1) adds 0;
    - ``method="normal"``: ``p +- z sqrt(v)`` clipped to [0, 1];
      ``method="wilson"``: the Wilson interval with the effective size ``n_eff = p (1 - p) / v``
      (Korn and Graubard 1998), which stays inside [0, 1] and is not degenerate at p = 0 or 1;
      when ``v = 0`` without a full census, ``n_eff`` is the sample size.

    A stratum sampled once (n_h = 1 < N_h) has no variance estimate: the variance and interval
    are then nan, with a warning.

    Parameters
    ----------
    outcome : array-like of 0/1 or bool
        One value per labelled sample row.
    strata : None or array-like
        The stratum of each sample row (``plan.sample["stratum"]``); None for one stratum.
    population : ManualCheckPlan, mapping or int
        Rows per stratum in the population (N_h); an int for an unstratified sample.
    level : float
        Confidence level.
    method : {"wilson", "normal"}

    Returns
    -------
    SampleEstimate

    Examples
    --------
    >>> est = estimate_from_sample([1, 1, 0, 1, 1, 1], ["a", "a", "a", "b", "b", "b"],
    ...                            population={"a": 30, "b": 10}, method="normal")
    >>> round(est.estimate, 4), round(est.std_error, 4)
    (0.75, 0.2372)
    """
    if method not in ("wilson", "normal"):
        raise InputError(f"method: expected 'wilson' or 'normal', got {method!r}.")
    z = _z(level)
    y = _outcome(outcome)
    sizes = _population_sizes(population)
    values, inverse, n_h, big_n = _sample_strata(strata, sizes, y.size)
    successes = np.bincount(inverse, weights=y, minlength=values.size)
    p_h = successes / n_h
    weight = big_n / big_n.sum()
    fpc = 1 - n_h / big_n
    census = fpc == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(census, 0.0, weight**2 * fpc * p_h * (1 - p_h) / (n_h - 1))
    p = float(np.dot(weight, p_h))
    n = int(n_h.sum())
    lower, upper, se, n_eff = _stratified_interval(p, float(term.sum()), n, bool(census.all()), z, level, method)
    per_stratum = pl.DataFrame({"stratum": values.tolist(), "population": big_n.astype(np.int64),
                                "sample": n_h.astype(np.int64), "weight": weight, "proportion": p_h,
                                "variance_term": term})
    return SampleEstimate(estimate=p, lower=lower, upper=upper, std_error=se, n=n, n_effective=n_eff,
                          level=float(level), method=method, per_stratum=per_stratum)
