"""Calibration: from a total (ε, δ) and a release plan to the noise of every release.

A :class:`ReleasePlan` lists the releases of one fit (purpose, mechanism, how often, budget
share). One scalar ``scale`` s sets all of them:

* a pure-ε release (Laplace, exponential) with share w that occurs m times per tree
  (m = max_depth for per-depth releases) and repeats ``count`` times gets
  ε = s·w / (m·count) -- DP-XGBoost's split of a tree's ε into ε/3 sketch, ε/3 leaves and
  ε/(3h) per depth is w = 1/3 each with s = ε_tree (DP-XGBoost §4.4);
* a Gaussian release gets the zCDP budget ρ = s²·w / (2·m·count), i.e. noise multiplier
  z = sqrt(m·count / w) / s, so the shares split the Gaussian budget in ρ (S-BDT /
  Maddock et al. compose Gaussian releases additively in RDP, Fact 2.3).

Every parameter is monotone in s, and so is every accountant's ε (the accountants never
switch between alternative descriptions term by term, see
:mod:`dpxgb_dask.privacy.accountants`), so :func:`calibrate` finds by bisection the s whose
plan the chosen accountant certifies at the target ε (from below, within ``rtol``). If the
accountant's ε is not continuous enough for that, :func:`calibrate` raises instead of
silently returning a plan that spends far less than the target.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Optional

from .accountants import get_accountant
from .ledger import MECHANISMS, Ledger
from .validation import (
    BudgetError,
    check_delta,
    check_epsilon,
    check_positive,
    check_sampling_rate,
    warn_if_large_epsilon,
)

__all__ = ["CalibratedRelease", "Calibration", "PlannedRelease", "ReleasePlan", "calibrate", "release_parameters"]

_PER = ("fit", "tree", "depth")


@dataclasses.dataclass(frozen=True)
class PlannedRelease:
    """One kind of release in a plan.

    Parameters
    ----------
    purpose : str
        Ledger purpose (unique within the plan).
    mechanism : {"laplace", "gaussian", "exponential"}
    share : float
        Budget share (> 0); shares are normalised over the plan.
    per : {"fit", "tree", "depth"}, default "tree"
        Once per fit (on the full data), once per tree, or once per depth of each tree.
    sensitivity : float, default 1.0
        Used only to report the noise scale (Δ/ε or z·Δ).
    count : int, default 1
        Sequential repetitions within one occurrence (e.g. one histogram per feature).
    """

    purpose: str
    mechanism: str
    share: float
    per: str = "tree"
    sensitivity: float = 1.0
    count: int = 1

    def __post_init__(self):
        if not isinstance(self.purpose, str) or not self.purpose:
            raise ValueError(f"purpose must be a non-empty str, got {self.purpose!r}")
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"mechanism must be one of {MECHANISMS}, got {self.mechanism!r}")
        object.__setattr__(self, "share", check_positive(self.share, "share"))
        if self.per not in _PER:
            raise ValueError(f"per must be one of {_PER}, got {self.per!r}")
        object.__setattr__(self, "sensitivity", check_positive(self.sensitivity, "sensitivity"))
        if isinstance(self.count, bool) or not isinstance(self.count, numbers.Integral) or self.count < 1:
            raise ValueError(f"count must be an int >= 1, got {self.count!r}")


@dataclasses.dataclass(frozen=True)
class ReleasePlan:
    """The releases of one fit.

    Parameters
    ----------
    n_trees : int
        Number of trees (>= 1).
    max_depth : int
        Number of split levels per tree (>= 1); per-depth releases occur at depths
        0 .. max_depth - 1.
    releases : sequence of PlannedRelease
    sampling_rate : float, default 1.0
        Poisson sampling rate γ of each tree's rows (per-tree and per-depth releases of a
        tree share one subsample; per-fit releases use all rows).
    """

    n_trees: int
    max_depth: int
    releases: tuple
    sampling_rate: float = 1.0

    def __post_init__(self):
        for name in ("n_trees", "max_depth"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        releases = tuple(self.releases)
        if not releases or not all(isinstance(r, PlannedRelease) for r in releases):
            raise ValueError("releases must be a non-empty sequence of PlannedRelease")
        purposes = [r.purpose for r in releases]
        if len(set(purposes)) != len(purposes):
            raise ValueError(f"purposes must be unique in a plan, got {purposes}")
        object.__setattr__(self, "releases", releases)
        object.__setattr__(self, "sampling_rate", check_sampling_rate(self.sampling_rate))

    def occurrences_per_tree(self, release):
        """int: how many times ``release`` occurs in one tree (1 for per-fit releases)."""
        return self.max_depth if release.per == "depth" else 1

    def to_ledger(self, parameters):
        """The ledger a fit following this plan would produce.

        Parameters
        ----------
        parameters : dict of str to CalibratedRelease
            Output of :func:`release_parameters`.

        Returns
        -------
        Ledger
        """
        ledger = Ledger()
        gamma = self.sampling_rate
        for r in self.releases:
            p = parameters[r.purpose]
            noise = {"epsilon": p.epsilon} if p.epsilon is not None else {"noise_multiplier": p.noise_multiplier}
            common = dict(noise, count=r.count)
            if r.per == "fit":
                ledger.record(r.purpose, r.mechanism, r.sensitivity, **common)
                continue
            for t in range(self.n_trees):
                depths = range(self.max_depth) if r.per == "depth" else (None,)
                for d in depths:
                    ledger.record(r.purpose, r.mechanism, r.sensitivity, tree=t, depth=d, sampling_rate=gamma, **common)
        return ledger


@dataclasses.dataclass(frozen=True)
class CalibratedRelease:
    """Noise parameters of one planned release.

    Attributes
    ----------
    purpose, mechanism : str
    epsilon : float or None
        ε of one application (Laplace, exponential).
    noise_multiplier : float or None
        z = σ/Δ (Gaussian).
    sensitivity : float
    noise_scale : float or None
        Δ/ε (Laplace), z·Δ (Gaussian), None (exponential).
    """

    purpose: str
    mechanism: str
    epsilon: Optional[float]
    noise_multiplier: Optional[float]
    sensitivity: float
    noise_scale: Optional[float]


@dataclasses.dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate`.

    Attributes
    ----------
    releases : dict of str to CalibratedRelease
    epsilon : float
        ε the accountant certifies for the calibrated plan (<= target, within rtol).
    delta : float
    target_epsilon : float
    scale : float
        The budget scale s found.
    accountant : str
    ledger : Ledger
        The planned ledger used for the final check.
    """

    releases: dict
    epsilon: float
    delta: float
    target_epsilon: float
    scale: float
    accountant: str
    ledger: Ledger


def release_parameters(plan, scale):
    """Noise parameters of every release of ``plan`` for budget scale s.

    Parameters
    ----------
    plan : ReleasePlan
    scale : float
        s > 0 (see module docstring).

    Returns
    -------
    dict of str to CalibratedRelease
    """
    s = check_positive(scale, "scale")
    total = sum(r.share for r in plan.releases)
    out = {}
    for r in plan.releases:
        w = r.share / total
        m = plan.occurrences_per_tree(r) * r.count
        if r.mechanism == "gaussian":
            z = math.sqrt(m / w) / s
            out[r.purpose] = CalibratedRelease(r.purpose, r.mechanism, None, z, r.sensitivity, z * r.sensitivity)
        else:
            eps = s * w / m
            scale_ = r.sensitivity / eps if r.mechanism == "laplace" else None
            out[r.purpose] = CalibratedRelease(r.purpose, r.mechanism, eps, None, r.sensitivity, scale_)
    return out


def calibrate(epsilon, delta, plan, accountant="pld", *, rtol=1e-3):
    """Noise parameters such that ``plan`` costs the target (ε, δ) under ``accountant``.

    Parameters
    ----------
    epsilon : float
        Target total ε of the fit (> 0; a :class:`LargeEpsilonWarning` above 10).
    delta : float
        Target δ in [0, 1) (must be > 0 for RDP/PLD and for Gaussian releases).
    plan : ReleasePlan
    accountant : {"basic", "rdp", "pld", "best"} or Accountant, default "pld"
    rtol : float, default 1e-3
        The certified ε lies in [ε(1 - rtol), ε].

    Returns
    -------
    Calibration

    Raises
    ------
    ValueError
        If an argument is invalid or the target cannot be reached at any scale (e.g. δ = 0
        with Gaussian releases).
    BudgetError
        If bisection ends without a scale whose certified ε lies in [ε(1 - rtol), ε]: the
        accountant's ε jumps over that interval (it is not continuous in the scale). The
        message gives the closest ε found from below; a larger ``rtol`` accepts it.
    """
    target = check_epsilon(epsilon)
    delta = check_delta(delta)
    rtol = check_positive(rtol, "rtol")
    if not isinstance(plan, ReleasePlan):
        raise ValueError(f"plan must be a ReleasePlan, got {type(plan).__name__}")
    warn_if_large_epsilon(target, stacklevel=3)
    acct = get_accountant(accountant)

    def spent(s):
        return acct.get_epsilon(plan.to_ledger(release_parameters(plan, s)), delta)

    lo, hi = target, target
    f_lo = spent(lo)
    for _ in range(200):
        if f_lo <= target:
            break
        hi, lo = lo, lo / 2.0
        f_lo = spent(lo)
    else:
        raise ValueError(f"cannot reach epsilon={target!r} at delta={delta!r} with accountant {acct.name!r}")
    if f_lo < target * (1.0 - rtol):
        f_hi = spent(hi)
        for _ in range(200):
            if f_hi > target:
                break
            lo, f_lo = hi, f_hi
            hi *= 2.0
            f_hi = spent(hi)
        else:
            raise ValueError("the accountant's epsilon does not grow with the budget scale")
        for _ in range(200):
            if f_lo >= target * (1.0 - rtol) or hi / lo - 1.0 < 1e-12:
                break
            mid = math.sqrt(lo * hi)
            f_mid = spent(mid)
            if f_mid <= target:
                lo, f_lo = mid, f_mid
            else:
                hi = mid
    if not target * (1.0 - rtol) <= f_lo <= target:
        raise BudgetError(
            f"calibration did not reach epsilon={target!r} within rtol={rtol!r} with accountant "
            f"{acct.name!r}: the best scale found certifies epsilon={f_lo!r} (the accountant's epsilon "
            "jumps over the target); pass a larger rtol to accept it"
        )
    params = release_parameters(plan, lo)
    return Calibration(
        releases=params,
        epsilon=f_lo,
        delta=delta,
        target_epsilon=target,
        scale=lo,
        accountant=acct.name,
        ledger=plan.to_ledger(params),
    )
