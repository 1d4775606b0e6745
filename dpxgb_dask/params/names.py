"""The names of the training parameters: XGBoost's aliases, keyword parameters merged with a
``dp_params`` dict (a parameter given twice with different values is refused), and the
estimators' parameters given as keywords beyond their signature."""
import numpy as np

#: XGBoost's other names of parameters (``xgboost.train`` dicts, its sklearn keywords).
XGBOOST_ALIASES = {"eta": "learning_rate", "lambda": "reg_lambda", "seed": "random_state",
                   "n_jobs": "n_threads", "nthread": "n_threads"}


def take_estimator_keywords(keywords, objectives, estimator):
    """Take XGBoost's estimator keywords that name what the estimator already is, removed
    from ``keywords``: an ``objective`` among ``objectives`` (its kind's), and
    ``missing=NaN``, the only missing value.

    Raises
    ------
    ValueError
        Another objective or missing value, naming the allowed ones and ``estimator``.
    """
    objective = keywords.pop("objective", None)
    if objective is not None and objective not in objectives:
        raise ValueError(f"objective must be one of {list(objectives)} for {estimator}, got "
                         f"{objective!r}")
    missing = keywords.pop("missing", np.nan)
    if not (missing is None or (isinstance(missing, float) and np.isnan(missing))):
        raise ValueError(f"missing must be NaN (np.nan), the only missing value here: "
                         f"replace {missing!r} in X with NaN first")


def canonical_names(given):
    """``given`` with XGBoost's aliases renamed (:data:`XGBOOST_ALIASES`); a parameter
    given under both names is refused.

    Parameters
    ----------
    given : dict

    Returns
    -------
    dict
    """
    out = {k: v for k, v in given.items() if k not in XGBOOST_ALIASES}
    for alias, name in XGBOOST_ALIASES.items():
        if alias in given:
            if name in given and given[name] is not None and given[alias] is not None \
                    and given[name] != given[alias]:
                raise ValueError(f"{name} is given twice: {name}={given[name]!r} and "
                                 f"{alias}={given[alias]!r} (XGBoost's name for it); give one")
            if given[alias] is not None or name not in out:
                out[name] = given[alias]
    return out


def merge_keywords(keywords, dp_params):
    """Parameters given as keywords (None: not given) over those of a ``dp_params`` dict.

    Parameters
    ----------
    keywords, dp_params : dict
        By our names or XGBoost's (:data:`XGBOOST_ALIASES`).

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        Naming a parameter given in both with different values.
    """
    params = canonical_names(dict(dp_params))
    for name, value in canonical_names(keywords).items():
        if value is None:
            continue
        if params.get(name) is not None and not _same(params[name], value):
            raise ValueError(f"{name} is given twice: {name}={value!r} as a keyword and "
                             f"{params[name]!r} in dp_params; give it once")
        params[name] = value
    return params


def _same(a, b):
    """Whether two values of one parameter agree (arrays element-wise)."""
    try:
        return bool(np.all(np.asarray(a, dtype=object) == np.asarray(b, dtype=object)))
    except ValueError:  # (shapes differ)
        return False


class KeywordParameters:
    """Training parameters given to an estimator as keywords beyond its signature, kept by
    ``get_params``, ``set_params`` and ``clone`` (a mixin before scikit-learn's
    ``BaseEstimator``, as XGBoost's estimators take ``**kwargs``; checked at fit)."""

    def _keywords(self):
        """The training parameters given as keywords beyond the signature's."""
        signature = set(self._get_param_names())
        return {k: v for k, v in vars(self).items()
                if k not in signature and not k.startswith("_") and not k.endswith("_")}

    def get_params(self, deep=True):
        """The estimator's parameters, the keyword training parameters included.

        Parameters
        ----------
        deep : bool
            As scikit-learn's (the estimators hold no sub-estimators).

        Returns
        -------
        dict
        """
        return dict(super().get_params(deep), **self._keywords())

    def set_params(self, **params):
        """Set parameters, keyword training parameters included (checked at fit).

        Parameters
        ----------
        **params
            Parameter names and values.

        Returns
        -------
        self
        """
        signature = set(self._get_param_names())
        for name in [k for k in params if k not in signature]:
            setattr(self, name, params.pop(name))  # (a keyword parameter, checked at fit)
        return super().set_params(**params)
