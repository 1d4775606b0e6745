"""Validation of the public bounds a fit is given: feature bounds and label bounds."""
import numpy as np


def _as_float_array(name, value, expected):
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {expected}, got {value!r}") from None


def check_feature_bounds(bounds, n_features):
    """Validate public feature bounds: array (n_features, 2) of finite lo < hi."""
    arr = _as_float_array("feature_bounds", bounds, "an (n_features, 2) array of numbers")
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"feature_bounds must have shape (n_features, 2), got {arr.shape}")
    if arr.shape[0] != n_features:
        raise ValueError(f"feature_bounds has {arr.shape[0]} rows, X has {n_features} features")
    if not np.all(np.isfinite(arr)):
        raise ValueError("feature_bounds must be finite")
    bad = np.flatnonzero(arr[:, 0] >= arr[:, 1])
    if bad.size:
        raise ValueError(f"feature_bounds must have lo < hi; not so for features {bad.tolist()}")
    return arr


def check_label_bounds(bounds):
    """Validate public label bounds (lo, hi) with finite lo < hi."""
    arr = _as_float_array("label_bounds", bounds, "(lo, hi) with finite lo < hi").ravel()
    if arr.shape != (2,) or not np.all(np.isfinite(arr)) or arr[0] >= arr[1]:
        raise ValueError(f"label_bounds must be (lo, hi) with finite lo < hi, got {bounds!r}")
    return float(arr[0]), float(arr[1])
