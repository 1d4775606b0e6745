"""The names of the training parameters: XGBoost's aliases, and keyword parameters merged
with a ``dp_params`` dict (a parameter given twice with different values is refused)."""
import numpy as np

#: XGBoost's other names of parameters (``xgboost.train`` dicts, its sklearn keywords).
XGBOOST_ALIASES = {"eta": "learning_rate", "lambda": "reg_lambda", "seed": "random_state",
                   "n_jobs": "n_threads", "nthread": "n_threads"}


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
