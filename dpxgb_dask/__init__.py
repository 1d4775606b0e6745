"""dpxgb_dask: differentially private gradient-boosted trees on dask.distributed.

Public API: :class:`DPXGBClassifier`, :class:`DPXGBRegressor` (scikit-learn estimators),
:func:`train` (``train(params, X, y, client=None) -> Booster``), :class:`Booster`,
:func:`load_model`, and the typed warnings and errors of :mod:`dpxgb_dask.privacy`.
"""
from .model import Booster, load_model
from .privacy.validation import BudgetError, LargeEpsilonWarning, PrivacyLeakWarning
from .sklearn import DPXGBClassifier, DPXGBRegressor
from .training import train

__version__ = "0.1.0.dev0"

__all__ = [
    "Booster",
    "BudgetError",
    "DPXGBClassifier",
    "DPXGBRegressor",
    "LargeEpsilonWarning",
    "PrivacyLeakWarning",
    "load_model",
    "train",
]
