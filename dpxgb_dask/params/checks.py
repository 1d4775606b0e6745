"""The checks every parameter's validation is made of: a choice among allowed values, a
number in a range. Each error names the parameter and what it allows."""
import math
import numbers


def check_choice(name, value, allowed):
    """Raise ValueError unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")


def check_number(name, value, *, lo=None, hi=None, lo_open=False, hi_open=False,
                 integer=False):
    """Raise ValueError unless ``value`` is a finite number (an integer with ``integer``) in
    the range from ``lo`` to ``hi``, each end open or closed."""
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite {'integer' if integer else 'number'}, "
                         f"got {value!r}")
    bad_lo = lo is not None and (value <= lo if lo_open else value < lo)
    bad_hi = hi is not None and (value >= hi if hi_open else value > hi)
    if bad_lo or bad_hi:
        left, right = "(" if lo_open else "[", ")" if hi_open else "]"
        lo_s, hi_s = ("-inf" if lo is None else lo), ("inf" if hi is None else hi)
        raise ValueError(f"{name} must be in {left}{lo_s}, {hi_s}{right}, got {value!r}")
