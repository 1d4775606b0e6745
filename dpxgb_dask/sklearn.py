"""scikit-learn estimators: ``DPXGBClassifier`` and ``DPXGBRegressor``.

They follow the estimator contract (parameters stored as given in ``__init__``, fitted
attributes ending in ``_``, ``get_params`` / ``set_params`` / ``clone``), and Dask's:
``client=None`` uses the default client or an embedded LocalCluster, dask inputs predict
lazily, and pickling drops the client.
"""
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin

from .plan import model_privacy_report
from .training import train


def _is_dask(obj):
    return hasattr(obj, "__dask_graph__") and obj.__dask_graph__() is not None


class _DPXGBModel(BaseEstimator):
    """Shared parameters and plumbing of the DP estimators.

    Parameters
    ----------
    n_estimators, max_depth, learning_rate, reg_lambda, subsample, min_child_weight, max_bin
        Boosting parameters (see :class:`dpxgb_dask.params.TrainParams`); None takes the
        preset's (or the default's) value.
    epsilon : float, optional
        Total privacy budget of the fit (default 1.0 unless ``dp_epsilon_per_tree``).
    delta : float, optional
        δ of (ε, δ)-DP.
    dp_epsilon_per_tree : float, optional
        DP-XGBoost's budget per tree, instead of ``epsilon``.
    feature_bounds : array of shape (n_features, 2) or "data", optional
        Public per-feature (lo, hi). "data" reads them from the data (not private: warns).
    label_bounds : tuple (lo, hi), optional
        Public label range (regression: required).
    bounds_epsilon : float, optional
        Budget for a DP estimate of the feature bounds when they are not given.
    preset : {"dp-xgboost", "dpboost", "maddock", "s-bdt"}, optional
    random_state : int, optional
        Seed of all noise and sampling (use a secret of >= 128 bits, or None).
    client : distributed.Client, optional
    dp_params : dict, optional
        Any other field of ``TrainParams`` (e.g. ``split_method``, ``accountant``).
    verbose : bool
    """

    _objective = None

    def __init__(self, n_estimators=None, max_depth=None, learning_rate=None, reg_lambda=None,
                 subsample=None, min_child_weight=None, max_bin=None, epsilon=None, delta=None,
                 dp_epsilon_per_tree=None, feature_bounds=None, label_bounds=None,
                 bounds_epsilon=None, preset=None, random_state=None, client=None,
                 dp_params=None, verbose=False):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.reg_lambda = reg_lambda
        self.subsample = subsample
        self.min_child_weight = min_child_weight
        self.max_bin = max_bin
        self.epsilon = epsilon
        self.delta = delta
        self.dp_epsilon_per_tree = dp_epsilon_per_tree
        self.feature_bounds = feature_bounds
        self.label_bounds = label_bounds
        self.bounds_epsilon = bounds_epsilon
        self.preset = preset
        self.random_state = random_state
        self.client = client
        self.dp_params = dp_params
        self.verbose = verbose

    def _train_params(self):
        params = dict(self.dp_params or {})
        for name in ("n_estimators", "max_depth", "learning_rate", "reg_lambda", "subsample",
                     "min_child_weight", "max_bin", "epsilon", "delta", "dp_epsilon_per_tree",
                     "feature_bounds", "label_bounds", "bounds_epsilon", "random_state"):
            value = getattr(self, name)
            if value is not None:
                params[name] = value
        params["objective"] = self._objective
        params["preset"] = self.preset
        return params

    def _fit(self, X, y):
        booster = train(self._train_params(), X, y, client=self.client, verbose=self.verbose)
        self.booster_ = booster
        self.n_features_in_ = booster.n_features
        if booster.feature_names is not None:
            self.feature_names_in_ = np.asarray(booster.feature_names, dtype=object)
        self.epsilon_spent_ = float(booster.ledger["epsilon"])
        return self

    def privacy_report(self):
        """ε of the fit under every accountant, and the ledger's events as rows.

        Returns
        -------
        dict
            ``{"delta", "basic", "rdp", "pld", "best", "n_events", "accountant",
            "epsilon", "events": [dict, ...]}``
        """
        return model_privacy_report(self.booster_.ledger)

    def _margin(self, X):
        return self.booster_.predict(X, output_margin=True)

    def __sklearn_clone__(self):
        """Clone the parameters; the client is shared, not copied (it holds a connection)."""
        from sklearn.base import clone

        params = self.get_params(deep=False)
        client = params.pop("client")
        return type(self)(client=client, **{k: clone(v, safe=False) for k, v in params.items()})

    def __getstate__(self):
        state = self.__dict__.copy()
        state["client"] = None  # a Client is bound to a process and an event loop
        return state


class DPXGBClassifier(ClassifierMixin, _DPXGBModel):
    """Differentially private gradient-boosted binary classifier.

    Fitted attributes: ``booster_`` (:class:`dpxgb_dask.Booster`), ``classes_``,
    ``epsilon_spent_`` (under the chosen accountant), ``n_features_in_``.
    See :class:`_DPXGBModel` for the parameters.
    """

    _objective = "binary:logistic"

    def fit(self, X, y):
        """Fit on X (n_rows, n_features) and binary labels y (n_rows,).

        NumPy / pandas labels may be any two values (mapped to 0/1 in sorted order); dask
        labels must already be 0 and 1 (reading their set would need a pass over the data).
        """
        if _is_dask(y):
            self.classes_ = np.array([0, 1])
            encoded = y
        else:
            y_values = np.asarray(y).reshape(-1)
            classes = np.unique(y_values)
            if classes.size > 2:
                raise ValueError(f"y has {classes.size} classes; DPXGBClassifier is binary")
            if classes.size < 2:
                raise ValueError("y has a single class; a classifier needs two")
            self.classes_ = classes
            encoded = (y_values == classes[1]).astype(np.float64)
        return self._fit(X, encoded)

    def predict_proba(self, X):
        """Probabilities, shape (n_rows, 2) (a lazy dask array for dask inputs)."""
        margin = self._margin(X)
        if _is_dask(margin):
            import dask.array as da

            p1 = 1.0 / (1.0 + da.exp(-_as_dask_array(margin)))
            return da.stack([1.0 - p1, p1], axis=1)
        p1 = 1.0 / (1.0 + np.exp(-margin))
        return np.stack([1.0 - p1, p1], axis=1)

    def predict(self, X):
        """Class labels from ``classes_``, shape (n_rows,) (lazy for dask inputs)."""
        margin = self._margin(X)
        if _is_dask(margin):
            import dask.array as da

            return da.where(_as_dask_array(margin) > 0, self.classes_[1], self.classes_[0])
        return self.classes_[(margin > 0).astype(int)]


def _as_dask_array(margin):
    return margin.to_dask_array() if hasattr(margin, "to_dask_array") else margin


class DPXGBRegressor(RegressorMixin, _DPXGBModel):
    """Differentially private gradient-boosted regressor (squared error).

    ``label_bounds`` (the public label range) is required. Fitted attributes as for
    :class:`DPXGBClassifier`, without ``classes_``.
    """

    _objective = "reg:squarederror"

    def fit(self, X, y):
        """Fit on X (n_rows, n_features) and real labels y (n_rows,) within label_bounds."""
        return self._fit(X, y)

    def predict(self, X):
        """Predictions, shape (n_rows,) (lazy for dask inputs)."""
        return self._margin(X)
