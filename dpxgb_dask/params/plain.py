"""Training parameters as plain data, what a fit request carries to the scheduler, and back.

The scheduler rebuilds and validates the parameters itself (:func:`from_plain`) and
derives the release plan, hence every clip and every noise, from them: it never reads a
plan or any other privacy number a client computed.
"""
from dataclasses import asdict

import numpy as np

from . import (TRAIN_PARAMETERS, TrainParams, check_feature_bounds, check_label_bounds,
               validate)


def to_plain(params):
    """``params`` as a dict of plain values (arrays and tuples as lists; ``random_state``
    kept, unlike the model's :meth:`~dpxgb_dask.params.fields.TrainParams.to_dict`, as a string
    of decimal digits: it may exceed msgpack's 64-bit integers).

    Parameters
    ----------
    params : TrainParams

    Returns
    -------
    dict
    """
    def plain(value):
        if isinstance(value, np.ndarray):
            return value.tolist()
        if isinstance(value, tuple):
            return list(value)
        return value

    values = {name: plain(value) for name, value in asdict(params).items()}
    if values["random_state"] is not None:  # (msgpack's integers have 64 bits)
        values["random_state"] = str(values["random_state"])
    return values


def from_plain(values, n_features):
    """Validated :class:`~dpxgb_dask.params.fields.TrainParams` from :func:`to_plain`'s dict.

    Parameters
    ----------
    values : dict
    n_features : int
        The fit's number of features (public): array bounds must have one row per feature.

    Returns
    -------
    TrainParams

    Raises
    ------
    ValueError
        Naming an unknown field or the first bad value.
    """
    if not isinstance(values, dict):
        raise ValueError(f"params must be a dict of training parameters, got "
                         f"{type(values).__name__}")
    unknown = sorted(set(values) - TRAIN_PARAMETERS)
    if unknown:
        raise ValueError(f"params has unknown fields {unknown}")
    values = dict(values)
    seed = values.get("random_state")
    if seed is not None:
        if not (isinstance(seed, str) and seed.isdigit() and len(seed) <= 1000):
            raise ValueError(f"params' random_state must be a string of decimal digits, got "
                             f"{seed!r:.80}")
        values["random_state"] = int(seed)
    bounds = values.get("feature_bounds")
    if bounds is not None and not isinstance(bounds, str):
        values["feature_bounds"] = check_feature_bounds(bounds, n_features)
    if values.get("label_bounds") is not None:
        values["label_bounds"] = check_label_bounds(values["label_bounds"])
    if values.get("eval_metric") is not None and not isinstance(values["eval_metric"], str):
        values["eval_metric"] = tuple(values["eval_metric"])
    params = TrainParams(**values)
    validate(params)
    return params
