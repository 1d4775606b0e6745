"""dpxgb_dask: differentially private gradient-boosted trees on dask.distributed.

Public API: :class:`DPXGBClassifier`, :class:`DPXGBRegressor` (scikit-learn estimators),
:func:`train` (``train(params, X, y, client=None) -> Booster``), :class:`Booster`,
:func:`load_model`, and the typed warnings and errors of :mod:`dpxgb_dask.privacy`.
"""
import importlib

__version__ = "0.1.0.dev0"

#: Public name -> module that defines it. Imported on first use (PEP 562): a worker
#: process imports only what its calls need (the partition state and the kernels), not
#: scikit-learn, pandas and the accountants, which took 1.5 s on each fresh worker.
_EXPORTS = {
    "Booster": ".model",
    "load_model": ".model",
    "BudgetError": ".privacy.validation",
    "LargeEpsilonWarning": ".privacy.validation",
    "PrivacyLeakWarning": ".privacy.validation",
    "DPXGBClassifier": ".sklearn",
    "DPXGBRegressor": ".sklearn",
    "train": ".training",
}

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


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
