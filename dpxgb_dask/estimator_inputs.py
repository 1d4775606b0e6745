"""The estimators' checks of their inputs in the user's process: X, y and ``sample_weight``
at fit, X at predict (a mixin of :class:`~dpxgb_dask.sklearn.DPXGBClassifier` and
:class:`~dpxgb_dask.sklearn.DPXGBRegressor`).

What each input type may be, and where its values are checked (here, or on the workers
for dask collections): :mod:`dpxgb_dask.sklearn`.
"""
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from . import categories
from .inputs import check_numeric_dtypes, feature_names_of, is_dask_collection, label_array
from .privacy.validation import PrivacyLeakWarning
from .silo_table import SiloTable


class EstimatorInputs:
    """Input checks of the estimators: scikit-learn's ``validate_data`` on in-memory
    inputs (which sets ``n_features_in_`` and ``feature_names_in_``), the public category
    lists of X's features; dask collections and silo tables pass as they are."""

    def _categories_of(self, X, xgb_model=None):
        """The public category lists of X's features (None without categorical ones):
        ``categories``, else a continued model's, and pandas category dtypes (``train``
        says where they came from: no warning here)."""
        given = self.categories
        if given is None and xgb_model is not None:
            model = xgb_model.booster_ if isinstance(xgb_model, BaseEstimator) else xgb_model
            given = getattr(model, "categories", None)
        names = feature_names_of(X)
        shape = getattr(X, "shape", None) if names is not None or hasattr(X, "shape") \
            else np.asarray(X).shape  # (no NumPy array function: array-likes refuse them)
        n_features = len(names) if names is not None else (shape[1] if len(shape) == 2 else 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            return categories.resolve(given, X, names, n_features)

    def _validate_fit_input(self, X, y, y_numeric, xgb_model=None):
        """In-memory X and y checked and converted (float64, NaN kept); dask collections and
        silo tables pass as they are (their rows stay on the cluster). Categorical features
        are checked on their codes, and handed on as their values (``train`` encodes them)."""
        if isinstance(X, SiloTable) or (y is not None and (is_dask_collection(X)
                                                           or is_dask_collection(y))):
            return X, label_array(y)  # a one-column dask frame: its series (y: train's)
        resolved = self._categories_of(X, xgb_model)
        if categories.is_frame(X):
            # (names the columns that need categories=, where float conversion would not)
            check_numeric_dtypes([d for d, c in zip(X.dtypes, resolved or [None] * X.shape[1])
                                  if c is None],
                                 [n for n, c in zip(X.columns, resolved or [None] * X.shape[1])
                                  if c is None])
        if resolved is not None:
            _, y_checked = self._check_fit_input(categories.encode(X, resolved), y, y_numeric)
            return X, y_checked
        return self._check_fit_input(X, y, y_numeric)

    def _check_fit_input(self, X, y, y_numeric):
        frame = X if hasattr(X, "columns") else None
        X_checked, y_checked = validate_data(
            self, X, y, accept_sparse=("csr", "csc"), dtype=np.float64, ensure_all_finite=False,
            y_numeric=y_numeric)
        if frame is not None and not any(
                str(dtype) in ("category", "string") or dtype == object for dtype in frame.dtypes):
            # keep the names: the model stores them and predicts on frames by name
            import pandas as pd

            X_checked = pd.DataFrame(X_checked, columns=[str(c) for c in frame.columns],
                                     index=frame.index)
        return X_checked, y_checked

    def _checked_weights(self, sample_weight, X):
        """In-memory weights as float64 of X's length (scikit-learn's check, which takes
        negative ones: they count 0); dask weights pass as they are."""
        if sample_weight is None or is_dask_collection(sample_weight) \
                or is_dask_collection(X) \
                or isinstance(X, SiloTable):  # (train refuses weights of a silo table)
            return sample_weight
        return _check_sample_weight(sample_weight, X, dtype=np.float64,
                                    ensure_non_negative=False)

    def _validate_predict_input(self, X):
        """In-memory X checked and converted to float64, categorical features encoded to
        their codes; dask collections pass as they are (encoded lazily)."""
        check_is_fitted(self, "booster_")
        if is_dask_collection(X):
            return X
        if self.booster_.categories is not None:
            X = categories.encode(self.booster_.training_columns(X), self.booster_.categories)
        return validate_data(self, X, reset=False, accept_sparse=("csr", "csc"),
                             dtype=np.float64, ensure_all_finite=False)
