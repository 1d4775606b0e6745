"""Typed warnings, errors and argument checks shared by the privacy layer and the estimators.

Every check raises :class:`ValueError` naming the argument and the allowed range, so a
message such as ``"epsilon must be a finite number > 0, got -1.0"`` tells the user what to
change. Privacy warnings are registered with an ``"always"`` filter when this module is
imported: a :class:`PrivacyLeakWarning` is shown every time it is raised, never only once
per call site as Python's default filter would do.
"""

from __future__ import annotations

import math
import numbers
import warnings

__all__ = [
    "BudgetError",
    "EPSILON_WARNING_THRESHOLD",
    "LargeEpsilonWarning",
    "NoBudgetWarning",
    "PrivacyLeakWarning",
    "check_delta",
    "check_epsilon",
    "check_positive",
    "check_sampling_rate",
    "warn_if_large_epsilon",
]

#: Total ε per fit above which :func:`warn_if_large_epsilon` warns.
EPSILON_WARNING_THRESHOLD = 10.0


class PrivacyLeakWarning(UserWarning):
    """A computation is about to release, or has released, more than its DP guarantee covers.

    Examples: bounds read off the data instead of given as public inputs, a guessable seed
    for the noise, a total ε so large that the guarantee is weak. The class is registered
    with an ``"always"`` warnings filter so that it is never silenced after its first
    occurrence.
    """


class LargeEpsilonWarning(PrivacyLeakWarning):
    """The total ε of one fit exceeds :data:`EPSILON_WARNING_THRESHOLD` (weak guarantee)."""


class BudgetError(RuntimeError):
    """A release would make the accounted privacy loss exceed the budget the user granted."""


class CalibrationError(BudgetError):
    """No noise meets a fit's ε (or δ) under its accountant: the parameters, not a budget's
    charges, are at fault. ``parameter`` names the one to change (``"epsilon"``,
    ``"delta"``, ``"bounds_epsilon"``), so that a service answers for that field.

    Parameters
    ----------
    message : str
    parameter : str
    """

    #: (an error decoded from the wire carries its message only)
    parameter = "epsilon"

    def __init__(self, message, parameter="epsilon"):
        super().__init__(message)
        self.parameter = parameter

    def __reduce__(self):
        return type(self), (str(self), self.parameter)


class DPBoundsWarning(UserWarning):
    """The DP feature-bounds estimate found nothing above the noise for some features, which
    took a public default range instead (a post-processing of the release)."""


class NoBudgetWarning(UserWarning):
    """A fit names no privacy budget across fits: nothing stops repeated fits on the same
    data from adding up (ten fits at ε = 1 spend about 3.5 under PLD, unchecked)."""


#: The warning classes a fit's coordinator may record, by name: how they cross the wire
#: to the user's process (where any other name arrives as a ``UserWarning``).
WARNING_CATEGORIES = {cls.__name__: cls for cls in (
    UserWarning, RuntimeWarning, PrivacyLeakWarning, LargeEpsilonWarning, DPBoundsWarning,
    NoBudgetWarning)}


warnings.simplefilter("always", PrivacyLeakWarning)


def _as_real(value, name):
    if type(value) is float:  # (the common case, without the ABC check of numbers.Real)
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r} of type {type(value).__name__}")
    return float(value)


def _check_range(value, name, low, high, *, include, allowed):
    """``value`` as a float if it lies in the interval from ``low`` to ``high`` (each end
    included as ``include``, a pair of flags, says), else ValueError naming ``name`` and
    ``allowed``."""
    out = _as_real(value, name)
    include_low, include_high = include
    above = out > low or (include_low and out == low)
    below = out < high or (include_high and out == high)
    if not (above and below):  # (NaN fails both)
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return out


def check_positive(value, name):
    """Validate a finite real > 0 (a sensitivity, noise scale or bound).

    Parameters
    ----------
    value : float
    name : str
        The argument's name, for the error message.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Naming ``name``, if ``value`` is not a finite real number > 0.
    """
    return _check_range(value, name, 0.0, math.inf, include=(False, False),
                        allowed="a finite number > 0")


def check_epsilon(epsilon, name="epsilon"):
    """Validate a privacy parameter ε: a finite real > 0 (ε = 0 would need infinite noise,
    ε = ∞ is no privacy at all); returns it as a float, else ValueError naming ``name``."""
    return check_positive(epsilon, name)


def check_delta(delta, name="delta"):
    """Validate a privacy parameter δ in [0, 1); returns it as a float, else ValueError
    naming ``name``."""
    return _check_range(delta, name, 0.0, 1.0, include=(True, False), allowed="in [0, 1)")


def check_sampling_rate(rate, name="sampling_rate"):
    """Validate a Poisson sampling probability γ in (0, 1]; returns it as a float, else
    ValueError naming ``name``."""
    return _check_range(rate, name, 0.0, 1.0, include=(False, True), allowed="in (0, 1]")


def warn_if_large_epsilon(epsilon, threshold=EPSILON_WARNING_THRESHOLD, stacklevel=2):
    """Warn with :class:`LargeEpsilonWarning` when the total ε of one fit exceeds ``threshold``.

    Parameters
    ----------
    epsilon : float
        Total ε of the fit (after composition).
    threshold : float, default 10.0
        Warning threshold; ε above about 10 bounds an attacker's odds ratio by e^10 ≈ 22 026,
        which is a guarantee in name only.
    stacklevel : int, default 2
        Passed to :func:`warnings.warn`.

    Returns
    -------
    bool
        True if a warning was issued.
    """
    value = _as_real(epsilon, "epsilon")
    if value > threshold:
        warnings.warn(
            f"the total privacy loss of this fit is epsilon={value:.4g}, above {threshold:g}: "
            "the differential-privacy guarantee is weak at this level",
            LargeEpsilonWarning,
            stacklevel=stacklevel,
        )
        return True
    return False
