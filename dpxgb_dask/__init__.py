"""dpxgb_dask: differentially private gradient-boosted trees on dask.distributed.

Public API: :class:`DPXGBClassifier`, :class:`DPXGBRegressor` (scikit-learn estimators),
:func:`train` (``train(params, X, y, client=None) -> Booster``), :class:`SiloTable` (the
rows of a fit as its silos hold them), :class:`Booster`,
:func:`load_model`, :func:`plot_importance`, the privacy budgets across fits
(:func:`create_budget`, :func:`budget_status`, :func:`list_budgets`), and the typed
warnings and errors of :mod:`dpxgb_dask.privacy`.
"""
from ._lazy import lazy_exports

# Eager: cheap, and importing it registers the typed warnings' filters, which a user's own
# filters set after ``import dpxgb_dask`` must be able to override.
from .privacy.validation import (BudgetError, CalibrationError, DPBoundsWarning,
                                 LargeEpsilonWarning, NoBudgetWarning, PrivacyLeakWarning)

__version__ = "0.1.0.dev0"

#: Public name -> module that defines it. Imported on first use (PEP 562), like the
#: submodules: a worker process imports only what its calls need (the partition state
#: and the kernels), not scikit-learn, pandas and the accountants, which took 1.5 s on
#: each fresh worker.
_EXPORTS = {
    "Booster": ".model.booster",
    "load_model": ".model.booster",
    "plot_importance": ".model.plotting",
    "DPXGBClassifier": ".sklearn",
    "DPXGBRegressor": ".sklearn",
    "SiloTable": ".silo_table",
    "train": ".training",
    "budget_status": ".budgets",
    "create_budget": ".budgets",
    "list_budgets": ".budgets",
}

__all__ = [
    "Booster",
    "BudgetError",
    "CalibrationError",
    "DPBoundsWarning",
    "DPXGBClassifier",
    "DPXGBRegressor",
    "LargeEpsilonWarning",
    "NoBudgetWarning",
    "PrivacyLeakWarning",
    "SiloTable",
    "budget_status",
    "create_budget",
    "list_budgets",
    "load_model",
    "plot_importance",
    "train",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
