"""What the service's requests may hold (Pydantic models; any other field is refused,
naming it) and how a dataset's public schema and an analyst's job become training
parameters.

An analyst chooses only the parameters of :class:`JobParams`, each within its range (any
other, such as ``reproducible_noise``, ``feature_bounds`` or ``budget``, is refused); the
public facts of the data (feature bounds, category lists, classes, label bounds) come from
the dataset's registration by its owner, never from the analyst, and every noise follows
from them and the job's ε through :func:`~dpxgb_dask.params.resolution.resolve_params` and the
scheduler's own plan.
"""
from typing import Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, StrictInt, model_validator

from ..params import ACCOUNTANTS, SPLIT_METHODS, resolve_params
from ..params.presets import PRESETS

#: Names of datasets and principals: letters, digits, ``.``, ``_`` and ``-``.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"

#: The smallest ``subsample`` a job may ask for. Planning the noise under Poisson
#: subsampling at rate q takes longer as q falls (100 trees of depth 6 at ε = 1: 0.4 s at
#: q = 0.1, 2.6 s at 0.01 on a loaded 2-core machine; 59 s at 1e-6, and 1e-300 did not end):
#: the floor bounds what one request can cost the service.
SUBSAMPLE_FLOOR = 0.01


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Feature(_Strict):
    """A feature's public description: numeric with bounds, or categorical with its list
    of categories (the codes 0..k-1 in the data)."""

    name: str = Field(min_length=1, max_length=200)
    bounds: Optional[tuple[FiniteFloat, FiniteFloat]] = None
    categories: Optional[list[Union[str, int]]] = Field(default=None, min_length=1,
                                                        max_length=10_000)

    @model_validator(mode="after")
    def _one_kind(self):
        if (self.bounds is None) == (self.categories is None):
            raise ValueError(f"feature {self.name!r} needs bounds or categories (one of them)")
        if self.bounds is not None and not self.bounds[0] < self.bounds[1]:
            raise ValueError(f"feature {self.name!r}: bounds must have lo < hi")
        if self.categories is not None and len(set(self.categories)) < len(self.categories):
            raise ValueError(f"feature {self.name!r}: categories must be distinct")
        return self


class DatasetSchema(_Strict):
    """A dataset's public schema: its features, label and objective."""

    features: list[Feature] = Field(min_length=1, max_length=10_000)
    label: str = Field(min_length=1, max_length=200)
    objective: Literal["binary:logistic", "reg:squarederror", "multi:softprob"]
    classes: Optional[list[Union[int, str]]] = Field(default=None, min_length=2,
                                                     max_length=1000)
    label_bounds: Optional[tuple[FiniteFloat, FiniteFloat]] = None
    row_count_public: bool = False

    @model_validator(mode="after")
    def _label(self):
        names = [f.name for f in self.features]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"features must have distinct names; repeated: {repeated}")
        if self.label in names:
            raise ValueError(f"the label {self.label!r} is listed among the features")
        if self.classes is not None and len(set(self.classes)) < len(self.classes):
            raise ValueError("classes must be distinct")
        if self.label_bounds is not None and not self.label_bounds[0] < self.label_bounds[1]:
            raise ValueError("label_bounds must have lo < hi")
        if self.objective == "reg:squarederror" and self.label_bounds is None:
            raise ValueError("a regression dataset needs label_bounds")
        if self.objective != "reg:squarederror" and self.classes is None:
            raise ValueError(f"a {self.objective} dataset needs its classes")
        if self.objective == "binary:logistic" and len(self.classes) != 2:
            raise ValueError("a binary:logistic dataset has exactly 2 classes")
        return self


class DatasetRegistration(_Strict):
    """The owner's registration of a dataset: its name, where the workers read it
    (a Parquet or CSV path or glob, on storage the workers see), and its schema."""

    name: str = Field(pattern=NAME_PATTERN)
    location: str = Field(min_length=1, max_length=2000)
    format: Literal["parquet", "csv"]
    dataset_schema: DatasetSchema = Field(alias="schema")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class AnalystCreation(_Strict):
    """A new analyst (the response holds its token, shown once)."""

    name: str = Field(pattern=NAME_PATTERN)


class BudgetSetting(_Strict):
    """An analyst's budget on a dataset, set by the owner."""

    epsilon: float = Field(gt=0, le=100)
    delta: float = Field(default=1e-6, ge=0, lt=0.01)
    accountant: Literal["pld", "rdp", "basic", "best"] = "pld"


class JobParams(_Strict):
    """The training parameters an analyst may choose, each within its range (XGBoost's
    names; what each means under DP: ``docs/getting-started.md``)."""

    # (strict integers: a JSON true is no tree count; finite floats: NaN is no δ)
    epsilon: FiniteFloat = Field(gt=0, le=100)
    delta: FiniteFloat = Field(default=1e-6, ge=0, lt=0.01)
    n_estimators: StrictInt = Field(default=100, ge=1, le=1000)
    max_depth: StrictInt = Field(default=6, ge=1, le=10)
    learning_rate: Optional[FiniteFloat] = Field(default=None, gt=0, le=1)
    reg_lambda: Optional[FiniteFloat] = Field(default=None, ge=0, le=10_000)
    max_bin: StrictInt = Field(default=64, ge=2, le=256)
    subsample: FiniteFloat = Field(default=1.0, ge=SUBSAMPLE_FLOOR, le=1)
    split_method: Optional[Literal[SPLIT_METHODS]] = None
    preset: Optional[Literal[PRESETS]] = None
    accountant: Optional[Literal[ACCOUNTANTS]] = None
    random_state: Optional[StrictInt] = Field(default=None, ge=0, lt=2**63)


class JobRequest(_Strict):
    """An analyst's job: a dataset it has a budget on, and the parameters."""

    dataset: str = Field(pattern=NAME_PATTERN)
    params: JobParams


def train_params(schema, params):
    """The validated training parameters of a job on a dataset.

    Parameters
    ----------
    schema : DatasetSchema
        The dataset's public facts (bounds, categories, classes).
    params : JobParams

    Returns
    -------
    TrainParams

    Raises
    ------
    ValueError
        From :func:`~dpxgb_dask.params.resolution.resolve_params`, naming the parameter.
    """
    chosen = params.model_dump(exclude_none=True)
    preset = chosen.pop("preset", None)
    bounds = [list(f.bounds) if f.bounds is not None else [0.0, float(len(f.categories) - 1)]
              for f in schema.features]
    categories = [None if f.categories is None else list(f.categories)
                  for f in schema.features]
    # a label outside the registered classes (a file changed after its registration)
    # leaves its row out: a refusal would make the job's outcome depend on that row
    public = {"feature_bounds": bounds, "unknown_labels": "missing"}
    if any(c is not None for c in categories):
        public["categories"] = categories
    if schema.objective == "reg:squarederror":
        public["label_bounds"] = tuple(schema.label_bounds)
    if schema.objective == "multi:softprob":
        public["num_class"] = len(schema.classes)
    return resolve_params(schema.objective, preset=preset, n_features=len(schema.features),
                          **chosen, **public)
