"""The run spec: what to evaluate or monitor, where the data is, and when to alert (pydantic, from YAML)."""

from __future__ import annotations

import hashlib
import json
import os
import reprlib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, create_model, field_validator

from metrics_core.errors import InputError
from metrics_core.monitoring.policy import POLICY_FIELDS


def default_tracking_uri() -> str:
    """The MLflow store when none is named: $MLFLOW_TRACKING_URI, else ``sqlite:///<cwd>/mlflow.db``."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd() / 'mlflow.db'}"


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:12]


def fingerprint(*parts: Any) -> str:
    """Short stable hash of JSON-able parts (the MLflow run keys).

    >>> fingerprint("a", [1, 2]) == fingerprint("a", [1, 2]) != fingerprint("a", [2, 1])
    True
    """
    return _digest(parts)


def dask_address(runner: str) -> str | None:
    """The Dask scheduler address of a runner string (the spec's ``task_runner``, the CLI's ``--runner``).

    ``dask://HOST:PORT`` or ``tcp://HOST:PORT`` -> ``tcp://HOST:PORT``, ``tls://HOST:PORT`` as
    given; None for ``local`` (threads in this process) and ``dask`` (a new local cluster).
    Anything else is an :class:`~metrics_core.errors.InputError` naming the accepted forms.

    >>> dask_address("dask://10.0.0.5:8786"), dask_address("dask"), dask_address("local")
    ('tcp://10.0.0.5:8786', None, None)
    """
    if runner in ("local", "dask") or spark_master(runner) is not None:
        return None
    for prefix in ("dask://", "tcp://", "tls://"):
        if isinstance(runner, str) and runner.startswith(prefix):
            rest = runner[len(prefix):]
            if ":" not in rest:
                break
            return ("tls://" if prefix == "tls://" else "tcp://") + rest
    raise InputError(f"runner: expected 'local', 'dask' (a local cluster of 2 worker processes), a Dask address "
                     f"of a running scheduler, dask://HOST:PORT (or tcp://HOST:PORT, tls://HOST:PORT), 'spark' (a "
                     f"local Spark, local[2]) or a Spark master spark://HOST:PORT, got {runner!r}.")


#: The Spark master of ``runner="spark"``: two cores of this machine.
LOCAL_SPARK = "local[2]"


def spark_master(runner: str) -> str | None:
    """The Spark master of a runner string: ``spark`` -> ``local[2]``, ``spark://HOST:PORT`` as given
    (also ``local[N]``); None for any other runner (``local``, Dask's).

    >>> spark_master("spark"), spark_master("spark://10.0.0.5:7077"), spark_master("dask"), spark_master("spark://x")
    ('local[2]', 'spark://10.0.0.5:7077', None, None)
    """
    if not isinstance(runner, str):
        return None
    if runner == "spark":
        return LOCAL_SPARK
    if runner.startswith("spark://") and ":" in runner[len("spark://"):]:
        return runner
    if runner.startswith("local[") and runner.endswith("]"):
        return runner
    return None


class SpecError(ValueError):
    """A run spec that cannot be used: the message names the field, the bad value and the fix."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DataSources(_Model):
    """Where the rows are. Each source is a Parquet file or directory (hive partitions allowed), an
    Arrow IPC/Feather file or a CSV file; relative paths are resolved against the spec file's folder.

    ``current`` may contain ``{period}`` (e.g. ``deliveries/{period}.parquet``); otherwise the rows
    of the period are selected by the period column (``columns.period``) when the data has one.
    """

    train: str | None = Field(None, description="Training rows (features and labels) for the leakage and "
                              "representativeness checks of evaluate_model; None = the reference source.")
    reference: str | None = Field(None, description="Reference window: validation rows scored by the model "
                                  "(the baseline every period is compared with).")
    test: str | None = Field(None, description="Held-out test set for evaluate_model.")
    current: str | None = Field(None, description="Production deliveries for monitor_period.")
    format: Literal["auto", "parquet", "ipc", "csv"] = Field(
        "auto", description="File format; auto = from the file extension (.parquet, .arrow/.ipc/.feather, .csv).")


class ColumnMap(_Model):
    """Column roles: which column of the data holds the label, the prediction, the scores and the
    rest (docs/run-spec.md lists them); the defaults are the names classwatch writes and reads.

    A role whose column is absent is skipped when it is optional (prediction: derived from the
    scores; id, period, weight, price, features); label is required for evaluation and optional
    for monitoring (performance is then not measured).
    """

    label: str = "label"
    prediction: str = "prediction"
    score: str = Field("score", description="Binary: the positive-class score column.")
    score_prefix: str = Field("score_", description="Multiclass: per-class score columns are <prefix><class>.")
    id: str = "id"
    period: str = "period"
    weight: str | None = Field("weight", description="Row weight, e.g. expenditure (ONS); None = unweighted.")
    price: str | None = Field("price", description="Price column for the Annex E/F price checks; None = none.")
    design_weight: str | None = Field("design_weight", description="Monitoring: each labelled row's design "
                                      "weight, the inverse of its inclusion probability in the period's labelled "
                                      "sample (a null label marks an unlabelled row); absent = the labelled rows "
                                      "are a simple random sample within each predicted class; None = none.")
    features: list[str] = Field(default_factory=list, description="Model input columns (e.g. [title]); "
                                "watched for drift when monitoring, used to run a model and for "
                                "leakage/representativeness checks.")
    segments: list[str] = Field(default_factory=list, description="Segment columns (e.g. [retailer]): every "
                                "monitoring test also runs within each value, against the same value of the "
                                "reference, all corrected together; each must exist in the reference and the period.")


def _policy_model() -> type[_Model]:
    """The run spec's ``alerts`` section, built from the fields of
    :class:`metrics_core.monitoring.AlertPolicy` (:data:`~metrics_core.monitoring.POLICY_FIELDS`):
    each default, bound, allowed value and description is declared once, there."""
    fields: dict[str, Any] = {}
    for f in POLICY_FIELDS:
        kind: Any = Literal[f.choices] if f.choices else (float | None if f.optional else float)
        fields[f.name] = (kind, Field(f.default, description=f.doc[:1].upper() + f.doc[1:], **f.bounds))
    doc = ("When a period raises a retraining alert: the run spec's ``alerts`` section.\n\n"
           "The fields, defaults, bounds and the reasoning behind each number are those of\n"
           ":class:`metrics_core.monitoring.AlertPolicy`; this model validates a spec's values as it does.")
    return create_model("AlertPolicy", __base__=_Model, __doc__=doc, __module__=__name__, **fields)


#: The run spec's ``alerts`` section (a pydantic model built from the policy's declared fields).
AlertPolicy = _policy_model()


class MlflowSettings(_Model):
    """Where runs go. ``tracking_uri`` None = $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db in the
    working directory."""

    experiment: str = "classwatch"
    tracking_uri: str | None = None


class MonitorSettings(_Model):
    """How distributions are summarised (fixed bins, so every period's statistics merge)."""

    score_bins: int = Field(1000, ge=10, le=100_000, description="Equal-width score bins over score_range "
                            "(plus one overflow bin each side).")
    score_range: tuple[float, float] = (0.0, 1.0)
    price_bins_per_decade: int = Field(500, ge=10, le=10_000, description="Log-price bin resolution: "
                                       "500 per decade = 0.46 % relative width.")
    price_range: tuple[float, float] = Field((0.01, 1e6), description="Prices outside go to overflow bins.")
    batch_size: int | None = Field(None, ge=1024, description="Rows read per batch; default 262,144, or 524,288 "
                                   "with columns.segments (metrics_core.monitoring.scan.default_batch_rows).")

    @field_validator("score_range", "price_range")
    @classmethod
    def _ordered(cls, v: tuple[float, float]) -> tuple[float, float]:
        if not v[0] < v[1]:
            raise ValueError(f"must be (low, high) with low < high, got {list(v)}")
        return v

    @field_validator("price_range")
    @classmethod
    def _positive(cls, v: tuple[float, float]) -> tuple[float, float]:
        if v[0] <= 0:
            raise ValueError(f"prices are binned on a log scale: the low end must be > 0, got {v[0]}")
        return v


class TriggerSettings(_Model):
    """Which MLflow registry events make ``classwatch serve`` run evaluate_model (docs/deployments.md)."""

    models: list[str] | None = Field(None, description="Registered model names whose events count; None = the "
                                     "spec's name.")
    events: list[str] = Field(["new_version"], description="'new_version' (a version is registered) and/or "
                              "'alias:<name>' (an alias such as challenger is set on a version).")

    @field_validator("events")
    @classmethod
    def _events(cls, v: list[str]) -> list[str]:
        bad = [e for e in v if e != "new_version" and not (e.startswith("alias:") and len(e) > len("alias:"))]
        if bad:
            raise ValueError(f"{len(bad)} unknown event(s), e.g. {bad[0]!r}: use 'new_version' or 'alias:<name>'")
        return v


class RunSpec(_Model):
    """One classwatch run: model, data, column map, task, metric options, MLflow and alert policy.

    Load it with :func:`load_spec` from a YAML file or a dict (the same dict is what a Prefect
    deployment passes as the ``spec`` parameter). Unknown fields are errors, so a typo such as
    ``alert:`` for ``alerts:`` is caught rather than ignored.
    """

    name: str = Field("model", min_length=1, max_length=200, description="Model name: the MLflow "
                      "registered model, the alert resource classwatch.model.<name>.")
    task: Literal["binary", "multiclass"] = "multiclass"
    data: DataSources = Field(default_factory=DataSources)
    columns: ColumnMap = Field(default_factory=ColumnMap)
    labels: list[str | int] | None = Field(None, description="Class list (order of score columns); None = "
                                          "the distinct labels of the reference data.")
    classes: Literal["open", "closed"] = Field("open", description="Monitoring: 'open' counts the rows of a "
                                               "class outside the class list, leaves them out of the metrics "
                                               "and alerts ('class X appeared'); 'closed' stops with an error.")
    positive_class: str | int = Field(1, description="Binary: the label value of the positive class.")
    beta: float = Field(1.0, gt=0)
    threshold: float = Field(0.5, ge=0, le=1, allow_inf_nan=False, description="Binary: score >= threshold "
                             "predicts the positive class; between 0 and 1 (the scores are probabilities).")
    cost_matrix: list[list[float]] | None = Field(None, description="C[actual][predicted] over labels.")
    headline_metric: str | None = Field(None, description="Metric watched against the floor; None = the "
                                        "ONS recommendation (evaluation) / balanced_accuracy (monitoring).")
    model_uri: str | None = Field(None, description="MLflow model URI (models:/name/version, runs:/...) to "
                                  "score the test set with; None = use the score columns in the data.")
    mlflow: MlflowSettings = Field(default_factory=MlflowSettings)
    alerts: AlertPolicy = Field(default_factory=AlertPolicy)
    monitor: MonitorSettings = Field(default_factory=MonitorSettings)
    trigger: TriggerSettings = Field(default_factory=TriggerSettings)
    task_runner: str = Field("local", description="'local' (threads), 'dask' (a local Dask cluster), a "
                             "Dask scheduler address tcp://host:port, 'spark' (a local Spark, local[2]) or a "
                             "Spark master spark://host:port.")
    context: str | None = Field(None, description="ISO 5.3 context: what the model is for, where it runs, who "
                                "uses its output (the ISO report says 'not provided' without it).")
    ground_truth: str | None = Field(None, description="ISO 5.3 ground truth: who labelled the rows, how, and how "
                                     "label quality was checked.")
    n_boot: int = Field(500, ge=50, le=100_000, description="Bootstrap replicates for intervals and tests.")
    seed: int = 0

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if any(c in v for c in "\n\r\t"):
            raise ValueError("must be one line")
        return v

    @field_validator("task_runner")
    @classmethod
    def _runner(cls, v: str) -> str:
        try:
            dask_address(v)
        except InputError as exc:
            raise ValueError(str(exc).removeprefix("runner: ")) from None
        return v

    # Cross-field checks as field validators (fields are validated in declaration order, so
    # ``info.data`` holds the task and the labels): the error then names its field.
    @field_validator("labels")
    @classmethod
    def _labels(cls, v: list | None, info: ValidationInfo) -> list | None:
        if v is not None and len(set(map(str, v))) != len(v):
            raise ValueError("the class list has duplicates")
        if v is not None and info.data.get("task") == "binary" and len(v) != 2:
            raise ValueError(f"a binary task has two classes, got {len(v)}")
        return v

    @field_validator("cost_matrix")
    @classmethod
    def _cost_matrix(cls, v: list | None, info: ValidationInfo) -> list | None:
        if v is None:
            return v
        labels = info.data.get("labels")
        k = 2 if info.data.get("task") == "binary" else (len(labels) if labels else None)
        rows = len(v)
        if any(len(r) != rows for r in v) or (k is not None and rows != k):
            raise ValueError(f"must be square with one row per class ({k or 'K'} x {k or 'K'}), got {rows} rows of "
                             f"lengths {[len(r) for r in v]}")
        return v

    # ---------------------------------------------------------------- helpers for tasks and flows
    def fingerprint(self) -> str:
        """Short hash of what in the spec decides a result: part of the MLflow run keys.

        Fields left at their defaults are not hashed, so a release that adds a field (with a
        default) does not turn every logged run into a new one; ``trigger`` (which events start a
        run) and ``task_runner`` (where it runs) change no result and are left out.
        """
        return _digest(self.model_dump(mode="json", exclude_defaults=True, exclude={"trigger", "task_runner"}))

    def tracking_uri(self) -> str:
        """The MLflow store: the spec's, else :func:`default_tracking_uri`."""
        return self.mlflow.tracking_uri or default_tracking_uri()

    def report_options(self) -> dict[str, Any]:
        """The options of every report of this run (evaluation and monitoring alike): keyword
        arguments of :func:`metrics_core.binary_from_stats` / :func:`~metrics_core.multiclass_from_stats`."""
        return {"beta": self.beta, "cost_matrix": self.cost_matrix, "level": self.alerts.level, "n_boot": self.n_boot,
                "seed": self.seed}

    def flat_params(self) -> dict[str, str]:
        """The spec as flat ``section.field`` -> string pairs, for MLflow params."""
        out: dict[str, str] = {}

        def walk(prefix: str, value: Any) -> None:
            if isinstance(value, dict):
                for k, v in value.items():
                    walk(f"{prefix}.{k}" if prefix else k, v)
            else:
                out[prefix] = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

        walk("", self.model_dump(mode="json"))
        return out


def _location(loc: tuple) -> str:
    return ".".join(str(p) for p in loc) or "(top level)"


#: The largest run-spec file read (bytes). A spec is a few KB; a larger file is refused before it is read.
MAX_SPEC_BYTES = 1 << 20
#: The most values (mappings, lists, scalars) a spec may hold once its YAML aliases are expanded, each
#: alias counted at every place it is used: the example spec has about 60. Nested aliases (a
#: "billion laughs" file of 1 KB) expand to billions, which validating or printing would build in memory.
MAX_SPEC_NODES = 100_000
#: The error lines of an invalid spec shown at most (the rest are counted).
MAX_SPEC_ERRORS = 10

# Every message about a spec's value shows a bounded part of it: reprlib stops at these sizes, so
# a huge or deeply nested value costs no more to describe than a small one.
_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxlong, _SHORT.maxother = 2, 60, 40, 60
_SHORT.maxtuple = _SHORT.maxlist = _SHORT.maxarray = _SHORT.maxdict = _SHORT.maxset = _SHORT.maxfrozenset = 4
_SHORT.maxdeque = 4


def shown(value: Any, width: int = 80) -> str:
    """A short ``repr`` of ``value`` for a message: at most ``width`` characters, built in bounded
    work whatever the size or depth of ``value``.

    >>> shown("x" * 10**6)[:12], len(shown(list(range(10**6)))) <= 80
    ("'xxxxxxxxxxx", True)
    """
    return _cut(_SHORT.repr(value), width)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def expanded_size(value: Any, limit: int = MAX_SPEC_NODES) -> int:
    """The number of values in ``value`` (mappings, lists and scalars, a shared one counted at each
    place it occurs, as YAML aliases expand), counting stops once past ``limit``: so the count of
    a "billion laughs" structure costs ``limit`` steps.

    >>> a = ["lol"] * 10; b = [a] * 10; c = [b] * 10
    >>> expanded_size(c), expanded_size([c] * 1000, limit=5000)
    (1111, 5001)
    """
    n, stack = 0, [value]
    while stack and n <= limit:
        item = stack.pop()
        n += 1
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set)):
            stack.extend(item)
    return n


def _check_size(raw: Any, source: str) -> None:
    """A :class:`SpecError` when ``raw`` expands to more than :data:`MAX_SPEC_NODES` values."""
    if expanded_size(raw) > MAX_SPEC_NODES:
        raise SpecError(f"Run spec {source} holds more than {MAX_SPEC_NODES:,} values once its YAML aliases "
                        "(*name) are expanded; a run spec holds a few hundred. Write the values out, without "
                        "nested aliases.")


def _explain(exc: ValidationError, source: str) -> SpecError:
    lines = []
    errors = exc.errors(include_url=False)
    for err in errors[:MAX_SPEC_ERRORS]:
        field = _cut(_location(err["loc"]), 120)
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field (check the spelling; see `classwatch monitor --help` for the spec format)"
        shown_value = "" if err["type"] in ("missing", "extra_forbidden") else f" (got {shown(err.get('input'))})"
        lines.append(f"  - field '{field}': {_cut(msg, 300)}{shown_value}")
    if len(errors) > MAX_SPEC_ERRORS:
        lines.append(f"  and {len(errors) - MAX_SPEC_ERRORS} more")
    return SpecError(f"Invalid run spec {source}:\n" + "\n".join(lines))


def _resolve_paths(raw: dict, base: Path) -> dict:
    data = raw.get("data")
    if isinstance(data, dict):
        data = dict(data)
        for key in ("train", "reference", "test", "current"):
            value = data.get(key)
            if isinstance(value, str) and value and not Path(value).is_absolute() and "://" not in value:
                data[key] = str(base / value)
        raw = {**raw, "data": data}
    return raw


def load_spec(spec: "RunSpec | dict | str | os.PathLike | None" = None, **overrides: Any) -> RunSpec:
    """A :class:`RunSpec` from a spec, a dict (flow parameters) or a YAML file path.

    ``overrides`` replace top-level fields (e.g. ``model_uri=``); ``data={...}`` merges into the
    data sources. Relative data paths in a YAML file are relative to the file's folder. A wrong
    spec raises :class:`SpecError` naming every bad field.

    >>> load_spec({"name": "m", "alerts": {"psi": 0.2}}).alerts.psi
    0.2
    >>> load_spec({"alerts": {"psi": -1}})
    Traceback (most recent call last):
    ...
    tasks.config.spec.SpecError: Invalid run spec (dict):
      - field 'alerts.psi': Input should be greater than 0 (got -1)
    """
    source = "(dict)"
    if spec is None:
        raw: dict = {}
    elif isinstance(spec, RunSpec):
        raw = spec.model_dump(mode="json")
        source = f"for {spec.name!r}"
    elif isinstance(spec, dict):
        raw = dict(spec)
    elif isinstance(spec, (str, os.PathLike)):
        path = Path(spec)
        source = str(path)
        if not path.is_file():
            raise SpecError(f"Run spec file {path} not found. Pass the path of a YAML file "
                            "(see docs/run-spec.md).")
        size = path.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise SpecError(f"Run spec {path} is {size / 2**20:.1f} MiB; a run spec is at most "
                            f"{MAX_SPEC_BYTES / 2**20:.0f} MiB (a few KB is usual). Is it the right file? Data goes "
                            "in the files that data.reference and data.current name, not in the spec.")
        try:
            raw = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise SpecError(f"Run spec {path} is not valid YAML: {_cut(str(exc), 400)}") from None
        except RecursionError:
            raise SpecError(f"Run spec {path} nests lists or mappings too deeply to read; a run spec nests "
                            "three levels at most.") from None
        if not isinstance(raw, dict):
            raise SpecError(f"Run spec {path}: expected a mapping of fields at the top level, "
                            f"got {type(raw).__name__}.")
        raw = _resolve_paths(raw, path.resolve().parent)
    else:
        raise SpecError(f"Run spec: expected a YAML path, a dict or a RunSpec, got {type(spec).__name__}.")
    for key, value in overrides.items():
        if value is None:
            continue
        if key == "data" and isinstance(value, dict):
            raw["data"] = {**(raw.get("data") or {}), **{k: v for k, v in value.items() if v is not None}}
        else:
            raw[key] = value
    _check_size(raw, source)
    try:
        return RunSpec.model_validate(raw)
    except ValidationError as exc:
        raise _explain(exc, source) from None


def example_yaml() -> str:
    """A commented example spec (printed by ``classwatch monitor --example-spec``; docs/run-spec.md shows it)."""
    return EXAMPLE


EXAMPLE = """\
# classwatch run spec (all fields optional; defaults shown where useful)
name: price-classifier          # model name: MLflow registered model, alert resource
task: multiclass                # binary | multiclass
context: Classifies web-scraped grocery quotes to ONS item codes for the CPI.
ground_truth: Price collectors label a stratified sample of 5,000 quotes a month.
data:
  train: data/train.parquet           # training rows, for the leakage/representativeness checks
  reference: data/reference.parquet   # validation rows scored by the model (the baseline)
  test: data/test.parquet             # held-out rows for evaluate
  current: data/deliveries/{period}.parquet   # or one dataset with a period column
columns:                        # column roles: the defaults; a default column the data lacks is skipped
  label: label
  prediction: prediction
  score_prefix: score_          # multiclass scores: score_<class>; binary: score
  price: price                  # price: null = no price column (a name other than the default must exist)
  weight: weight                # expenditure weight; weight: null = unweighted
  design_weight: design_weight  # monitoring: a labelled row's 1 / inclusion probability (labelled samples)
  period: period
  features: []                  # model inputs, e.g. [title, pack_size]: watched for drift; scored with model_uri
  segments: []                  # e.g. [retailer]: every monitoring test also per value (docs/alerts.md)
labels: null                    # class list; null = distinct labels of the reference
classes: open                   # open: a new class in a period alerts; closed: it is an error
beta: 1.0
model_uri: null                 # e.g. models:/price-classifier/3 to score the test set
mlflow:
  experiment: classwatch
  tracking_uri: null            # null = $MLFLOW_TRACKING_URI or sqlite:///mlflow.db
alerts:
  alpha: 0.05
  correction: bh                # bh | holm | bonferroni
  prevalence_change: 0.02       # absolute, any class
  psi: 0.1                      # whole class distribution
  score_shift: 0.02             # Wasserstein-1 of a class's scores
  calibration_change: 0.05      # calibration error against the reference's calibration map
  price_change: 0.10            # relative price shift of a class
  metric_floor: null            # null = reference headline minus metric_drop
  metric_drop: 0.05
  level: 0.95                   # confidence level of the headline metric's interval
  feature_shift: 0.1            # Wasserstein-1 of a numeric feature, in reference SDs
  feature_psi: 0.1              # PSI of a categorical feature
  feature_unseen: 0.05          # excess share of a text feature's tokens unseen in the reference
  feature_auroc: 0.6            # AUROC of the domain classifier on all features
"""
