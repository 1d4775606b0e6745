"""Training parameters: :class:`~dpxgb_dask.params.fields.TrainParams` (its fields,
``fields.py``), how a fit's are resolved from a preset or the default and the user's own
(:func:`~dpxgb_dask.params.resolution.resolve_params`, ``resolution.py``, whose docstring
lists the precedence), and their validation (``validation.py``).

The papers' presets are in :mod:`~dpxgb_dask.params.presets`, the default's ε schedule in
:mod:`~dpxgb_dask.params.defaults`. Every parameter is public: it is saved with the model.
This package's ``__init__`` only re-exports.
"""
from .bounds import check_feature_bounds, check_label_bounds
from .fields import (ACCOUNTANTS, FEATURE_SELECTIONS, FILTER_SPENDINGS, GAIN_ESTIMATES,
                     GAIN_SENSITIVITIES, GRADIENT_RULES, INIT_SCORES, INTERACTION_THRESHOLDS,
                     LEAF_CLIPPINGS, LEAF_METHODS, MAX_DEPTH_LIMIT, SPLIT_CANDIDATES,
                     SPLIT_METHODS, TRAIN_PARAMETERS, TrainParams)
from .presets import PRESETS
from .resolution import resolve_params, with_overrides
from .validation import validate

__all__ = ["ACCOUNTANTS", "FEATURE_SELECTIONS", "FILTER_SPENDINGS", "GAIN_ESTIMATES",
           "GAIN_SENSITIVITIES", "GRADIENT_RULES", "INIT_SCORES", "INTERACTION_THRESHOLDS",
           "LEAF_CLIPPINGS", "LEAF_METHODS", "MAX_DEPTH_LIMIT", "PRESETS", "SPLIT_CANDIDATES",
           "SPLIT_METHODS", "TRAIN_PARAMETERS", "TrainParams", "check_feature_bounds",
           "check_label_bounds", "resolve_params", "validate", "with_overrides"]
