"""ε schedules: parameters chosen from a fit's total ε, which is public.

A schedule is a tuple of points ``(ε, overrides)``; a fit of total budget ``e`` takes the
overrides of the point nearest to ``e`` in log ε (the bands switch at the geometric
midpoints, ties go to the smaller ε). Choosing parameters from ε costs no privacy. The
default's schedule is in :mod:`~dpxgb_dask.params.defaults`, S-BDT's in
:mod:`~dpxgb_dask.params.presets`.
"""
import math
import numbers

import numpy as np


def nearest(points, epsilon):
    """The ``(ε, overrides)`` pair of ``points`` nearest to ``epsilon`` in log ε.

    Parameters
    ----------
    points : tuple of (float, dict)
    epsilon : float or None

    Returns
    -------
    tuple (float, dict) or None
        None for a missing or invalid ``epsilon`` (``validate`` reports a bad one by name).
    """
    if epsilon is None or isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) \
            or not math.isfinite(epsilon) or epsilon <= 0:
        return None
    distance = [abs(math.log(epsilon / at)) for at, _ in points]
    return points[int(np.argmin(distance))]


def nearest_overrides(points, epsilon):
    """A copy of the overrides of the point nearest to ``epsilon`` (:func:`nearest`);
    ``{}`` without a valid ``epsilon``.

    Returns
    -------
    dict
    """
    point = nearest(points, epsilon)
    return {} if point is None else dict(point[1])
