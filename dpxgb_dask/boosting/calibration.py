"""The calibration of a fit's release plan: the one budget scale ``s`` whose plan spends the
fit's ε under its accountant, found by a root finder on the accountant's ε of the plan's
ledger, put on a grid that every CPU computes alike, and cached by the public parameters
(a fit's client checks its budget with the plan and its scheduler builds it again).

Nothing here reads data: the plan is a function of public parameters only
(:mod:`~dpxgb_dask.boosting.plan`).
"""
import contextlib
import contextvars
import functools
import json
import math
import threading
import time
import weakref

from ..params import TrainParams
from ..privacy.accountants import PLDAccountant, get_accountant
from ..privacy.validation import CalibrationError
from .plan import ReleasePlan


#: The monotonic time after which a calibration in this context gives up (None: never).
_DEADLINE = contextvars.ContextVar("dpxgb_dask_calibration_deadline", default=None)


@contextlib.contextmanager
def calibration_time_limit(seconds):
    """Within this context (this thread), a calibration still searching after ``seconds``
    gives up with a ``ValueError``: a service bounds what one request may cost it. A plan
    that calls the accountant many times (ε = 0.001 with 1000 trees of depth 10: 19 s)
    is refused, a usual one (below 0.4 s) is not. The limit is a public fact (the
    parameters and the machine's speed), never the data's."""
    token = _DEADLINE.set(time.monotonic() + float(seconds))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def calibrate_budget_scale(params, n_features, rtol=1e-3):
    """The budget scale s whose plan spends ``params.epsilon`` under ``params.accountant``.

    ε(s) is increasing and close to a power law in s, so a safeguarded secant search
    (Illinois) on (log s, log ε) converges in a few accountant calls. For PLD the search
    uses a coarser discretisation (pessimistic, so its ε is an upper bound of the fine
    one), and the result is then moved up to the target with the reporting accountant,
    by Newton steps on the scale grid from the coarse search's slope
    (``_refine_on_grid``: usually one to three calls of the reporting accountant, the slow
    one). Either way the returned s is checked with the reporting accountant: it never
    spends more than the target.

    With ``dp_epsilon_per_tree`` (pure-ε methods only) s is that value and nothing is
    calibrated.

    Returns
    -------
    float

    Raises
    ------
    CalibrationError
        The target cannot be met (e.g. the bounds estimate alone spends it); a
        :class:`~dpxgb_dask.privacy.validation.BudgetError`, naming the parameter at fault.
    ValueError
        Past the time limit of :func:`calibration_time_limit`.
    """
    p = params
    if p.dp_epsilon_per_tree is not None:
        return float(p.dp_epsilon_per_tree)
    target = p.epsilon
    gaussian = sorted(r.purpose for r in ReleasePlan(p, n_features, 1.0).releases.values()
                      if r.mechanism == "gaussian")
    if p.delta == 0.0 and gaussian:
        raise CalibrationError(
            f"delta=0 cannot be met: this method's {', '.join(gaussian)} releases use the "
            "Gaussian mechanism, whose epsilon at delta=0 is infinite. Give delta > 0 (e.g. "
            "1e-6), or a method with pure-epsilon releases only (preset='dp-xgboost' or "
            "'dpboost').", "delta")
    if p.bounds_epsilon is not None and p.feature_bounds is None and p.bounds_epsilon >= target:
        raise CalibrationError(f"bounds_epsilon={p.bounds_epsilon} leaves nothing of "
                               f"epsilon={target}", "bounds_epsilon")
    final = get_accountant(p.accountant)
    search = PLDAccountant(value_discretization_interval=1e-3) if p.accountant == "pld" else final

    deadline = _DEADLINE.get()

    def log_excess(s, accountant):
        if deadline is not None and time.monotonic() > deadline:
            raise ValueError("planning the noise of these parameters takes longer than this "
                             "service allows: fewer trees (n_estimators) or levels "
                             "(max_depth), a larger epsilon or another accountant plan "
                             "faster")
        eps = accountant.get_epsilon(ReleasePlan(p, n_features, s).ledger(), p.delta)
        return math.log(eps / target) if eps > 0 else -math.inf

    s, slope = _solve_log(lambda s: log_excess(s, search), rtol)
    if search is not final:
        # Refine with the reporting accountant from the coarse answer, on the grid.
        s, excess = _refine_on_grid(lambda s: log_excess(s, final), s, slope, rtol)
    else:
        s = snap_to_scale_grid(s)
        excess = log_excess(s, final)
    if excess > 0.0:
        raise CalibrationError(f"could not calibrate the noise to epsilon={target}",
                               "epsilon")
    if excess < math.log1p(-10 * rtol):
        # ε(s) jumps over the target: the plan would silently spend far less than asked.
        raise CalibrationError(
            f"could not calibrate the noise to epsilon={target} within rtol={rtol}: the "
            f"{p.accountant} accountant's epsilon jumps over the target (it reaches only "
            f"{target * math.exp(excess):.4g}); a larger epsilon, or another accountant",
            "epsilon")
    return s


#: Mantissa bits of a calibrated budget scale (:func:`snap_to_scale_grid`): steps of at most
#: 2**-19 (1.9e-6) relative, far inside the calibration's ``rtol``.
SCALE_GRID_BITS = 20


def snap_to_scale_grid(s):
    """Round a budget scale down to a float with :data:`SCALE_GRID_BITS` mantissa bits.

    The accountants' ε differs between CPUs in its last 7-9 digits (NumPy's SIMD ``exp`` and
    ``log`` inside dp-accounting), and the root finder carries that into the scale's last
    digits. On the grid, the scale, and every noise multiplier and ε per release computed
    from it by IEEE arithmetic, are the same bits on every machine unless a root lies
    within ~3e-10 of a grid point (a chance of about 3e-4 per calibration). Rounding down
    only adds noise: the plan never spends more than the unrounded one.

    Parameters
    ----------
    s : float
        A positive budget scale.

    Returns
    -------
    float
        The largest grid value ``<= s`` (exact: ``frexp``, ``floor`` and ``ldexp`` do not
        round).
    """
    mantissa, exponent = math.frexp(s)
    return math.ldexp(math.floor(math.ldexp(mantissa, SCALE_GRID_BITS)),
                      exponent - SCALE_GRID_BITS)


def _solve_log(f, rtol, start=1.0, step=8.0):
    """Largest s with f(s) <= 0 (f increasing in s), to relative precision ``rtol``; the
    bracket grows from ``start`` by factors of ``step``.

    Returns
    -------
    s : float
    slope : float
        The secant slope of f against log s over the last bracket (its true values, not
        the Illinois-halved ones): where a refinement starts its Newton steps.
    """
    lo, hi = start, start
    f_lo = f_hi = f(start)
    while f_lo > 0:
        hi, f_hi = lo, f_lo
        lo /= step
        if lo < 1e-12:
            raise CalibrationError("epsilon is too small for the fixed releases of this "
                                   "plan (e.g. bounds_epsilon)", "epsilon")
        f_lo = f(lo)
    while f_hi <= 0:
        lo, f_lo = hi, f_hi
        hi *= step
        if hi > 1e12:
            raise CalibrationError("epsilon cannot be reached by this plan", "epsilon")
        f_hi = f(hi)
    x_lo, x_hi = math.log(lo), math.log(hi)
    true_lo, true_hi = f_lo, f_hi
    side = 0
    for _ in range(100):
        if x_hi - x_lo < rtol:
            break
        if math.isfinite(f_lo) and math.isfinite(f_hi) and f_hi != f_lo:
            x = x_hi - f_hi * (x_hi - x_lo) / (f_hi - f_lo)
            x = min(max(x, x_lo + 0.1 * rtol), x_hi - 0.1 * rtol)
        else:
            x = 0.5 * (x_lo + x_hi)
        fx = f(math.exp(x))
        if fx <= 0:
            x_lo, f_lo, true_lo = x, fx, fx
            if side == -1:
                f_hi /= 2.0  # Illinois: halve the stale end so the bracket shrinks from both
            side = -1
        else:
            x_hi, f_hi, true_hi = x, fx, fx
            if side == 1:
                f_lo /= 2.0
            side = 1
        if abs(fx) < 0.25 * rtol and fx <= 0:
            break
    return math.exp(x_lo), (true_hi - true_lo) / (x_hi - x_lo)


#: The refinement stops once the plan spends this share of ``rtol`` or less short of the
#: target ε in log ε: 8e-6 at the default rtol, within the five digits a model states
#: (``model.certificate.STATED_DIGITS``, rounded up), so that a fit asked for ε = 1 states
#: 1.0; it aims its steps half as far below the target (the scale grid's step moves ε by
#: up to about 4e-6).
_SPENT_SHORT, _AIM_SHORT = 0.008, 0.004


def _refine_on_grid(f, start, slope, rtol):
    """The largest grid scale (:func:`snap_to_scale_grid`) with f <= 0 near ``start``, to
    within ``_SPENT_SHORT * rtol`` of the root in f (or ``rtol`` in s), and its f: Newton
    steps on (log s, f) from ``start``, each aimed ``_AIM_SHORT * rtol`` below the root,
    the slope the coarse search's (``slope``) and then each step's secant; a step past the
    root bounds the rest.

    f is the reporting accountant's excess, and ``start`` the coarse (pessimistic)
    answer, so f(start) <= 0 and one or two steps reach the root; should f(start) be
    positive, the bracketing search of :func:`_solve_log` takes over.

    Returns
    -------
    s : float
        On the grid, f(s) <= 0.
    excess : float
        f(s).
    """
    s_lo = snap_to_scale_grid(start)
    f_lo = f(s_lo)
    if f_lo > 0 or not (math.isfinite(slope) and slope > 0):
        s_lo = snap_to_scale_grid(_solve_log(f, rtol, start=s_lo, step=1.05)[0])
        return s_lo, f(s_lo)
    s_hi = None
    for _ in range(100):
        if f_lo >= -_SPENT_SHORT * rtol or (s_hi is not None and math.log(s_hi / s_lo) < rtol):
            break
        x = math.log(s_lo) - (f_lo + _AIM_SHORT * rtol) / slope
        if s_hi is not None:
            x = min(x, math.log(s_hi) - _AIM_SHORT * rtol)
        s = snap_to_scale_grid(math.exp(x))
        if s <= s_lo:
            break  # (a step finer than the grid's: s_lo is one grid step from the aim)
        fx = f(s)
        secant = (fx - f_lo) / math.log(s / s_lo)
        if math.isfinite(secant) and secant > 0:
            slope = secant
        if fx <= 0:
            s_lo, f_lo = s, fx
        else:
            s_hi = s
    return s_lo, f_lo


class _KeyLock:
    """A lock per calibration key (weakly held: dropped when no caller waits on it)."""

    __slots__ = ("lock", "__weakref__")

    def __init__(self):
        self.lock = threading.Lock()


_KEY_LOCKS = weakref.WeakValueDictionary()
_KEY_LOCKS_GUARD = threading.Lock()


def _budget_scale(params_json, n_features):
    """:func:`_cached_budget_scale`, computed once when two threads ask for the same key at
    once (a fit's client plans while its rows load, and in a LocalCluster its scheduler,
    in the same process, asks again as soon as they are loaded); other keys do not wait."""
    with _KEY_LOCKS_GUARD:
        key_lock = _KEY_LOCKS.get((params_json, n_features))
        if key_lock is None:
            key_lock = _KEY_LOCKS[params_json, n_features] = _KeyLock()
    with key_lock.lock:
        return _cached_budget_scale(params_json, n_features)


@functools.lru_cache(maxsize=64)
def _cached_budget_scale(params_json, n_features):
    fields = json.loads(params_json)
    fields.pop("seeded")
    for name in ("label_bounds", "eval_metric"):
        if isinstance(fields.get(name), list):
            fields[name] = tuple(fields[name])
    return calibrate_budget_scale(TrainParams(**fields), n_features)


def make_plan(params, n_features, scored_rounds=None):
    """The calibrated :class:`~dpxgb_dask.boosting.plan.ReleasePlan` of a fit (public
    parameters only).

    The budget scale depends only on public parameters, so identical calibrations in one
    process (repeated fits, cross-validation, a client and its LocalCluster's scheduler
    asking at once) are computed once.

    Parameters
    ----------
    params : TrainParams
    n_features : int
    scored_rounds : int, optional
        Of :class:`~dpxgb_dask.boosting.plan.ReleasePlan`.

    Returns
    -------
    ~dpxgb_dask.boosting.plan.ReleasePlan

    Raises
    ------
    BudgetError
        The target ε cannot be met by this plan.
    """
    public = params.to_dict()
    if public["feature_bounds"] is not None:
        public["feature_bounds"] = "public"  # only their presence shapes the plan
    key = json.dumps(public, sort_keys=True, default=str)
    return ReleasePlan(params, n_features, _budget_scale(key, int(n_features)),
                       scored_rounds)
