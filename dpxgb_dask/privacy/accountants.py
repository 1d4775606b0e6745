"""Privacy accountants over a :class:`~dpxgb_dask.privacy.ledger.Ledger`: basic, RDP and PLD.

All accountants read the ledger the same way: as the sequentially composed terms of
:func:`~dpxgb_dask.privacy.composition.composition_terms` (subsamples amplified as a
whole, disjoint groups in parallel, identical terms counted).

``get_epsilon(ledger, delta)`` returns an ε such that training is (ε, δ)-DP under
add/remove of one row. Every accountant's answer is a valid upper bound, so the smallest
of them is too (:class:`BestOfAccountant`).

How each mechanism enters
-------------------------
=============  =========================  ==========================  ===========================
mechanism      basic (pure ε sum)         RDP (``dp_accounting``)     PLD (``dp_accounting``)
=============  =========================  ==========================  ===========================
laplace        ε                          ``LaplaceDpEvent(1/ε)``     Laplace PLD, parameter 1/ε
gaussian       (ε_i, δ_i), see below      ``GaussianDpEvent(z)``      Gaussian PLD, σ = z
exponential    ε                          ``ZCDpEvent(ε²/8)``         ε-DP worst case (RR) PLD
=============  =========================  ==========================  ===========================

* Exponential mechanism: it is ε-DP and, more strongly, ε-*bounded range* (its privacy loss
  lies in an interval of width ε), which implies ε²/8-zCDP (Cesar & Rogers,
  "Bounding, concentrating, and truncating", ALT 2021); zCDP is an RDP curve
  ρα, hence ``ZCDpEvent(rho=ε²/8)``. For PLD we use the dominating pair of *any* ε-DP
  mechanism (randomized response with parameter ε; Kairouz, Oh & Viswanath 2015),
  discretised pessimistically by "connect the dots" (Doroshenko et al. 2022) -- valid,
  exact for pure composition up to the discretisation, and continuous in ε.
* Discrete noise: the mechanisms add discrete Laplace / discrete Gaussian noise with a
  sensitivity that includes a margin of one extra grid step (Laplace: in L1; Gaussian: on
  each coordinate a row changes). With that margin the hockey-stick divergences of the
  continuous Laplace and Gaussian pairs dominate those of the 1-D discrete pairs at every
  ε >= 0 (checked numerically in the tests; the pairs are symmetric, so this covers ε < 0
  too). By Blackwell's theorem the discrete pair is then a post-processing of the
  continuous one, so its RDP, PLD and subsampled curves are dominated as well. The
  discrete Laplace release of a vector is covered exactly: its privacy loss is a sum of
  1-D losses bounded by the L1 change, so it is ε-DP with ε = (integer L1 change)/t, and
  the margin covers the continuous proxy. The *vector* discrete Gaussian (independent
  coordinates; a row shifts k of them by the integers v_i) is a product of 1-D pairs, each
  dominated by the continuous pair with shift ``abs(v_i) + 1`` (the 1-D result above; an
  unchanged coordinate is an identical pair, dominated by anything). Dominating pairs
  compose under products (Zhu, Dong & Wang 2022, "Optimal accounting of differential
  privacy via characteristic function", the composition theorem for dominating pairs),
  and the product of the continuous pairs is the isotropic Gaussian pair with shift
  vector ``(abs(v_i) + 1)_i``, i.e. (by rotation) the 1-D pair with shift
  ``||(abs(v_i) + 1)_i||₂ <= ||v||₂ + sqrt(k)``. The Gaussian mechanism's accounted sensitivity
  Δ/g + sqrt(k) (rounding) + sqrt(k) (margin) is that bound, so the PLD of the continuous
  Gaussian with the accounted noise multiplier dominates the vector release for every k.
  The RDP accountant has, in addition, Canonne, Kamath & Steinke (2020, Theorem 15 of
  arXiv:2004.00010): independent discrete Gaussian noise of parameter σ on each
  coordinate is ½ε̂²-zCDP with ε̂² exceeding the continuous ||v||²/σ² only by terms in
  τ = 10·Σ_{k>=1} exp(-2π²σ²·k/(k+1)), which are 0 in float64 for the σ >= 2**22 grid
  steps the mechanisms use.
* Subsampling (Poisson, rate γ, add/remove): basic composition uses
  ε' = log(1 + γ(e^ε - 1)), δ' = γδ (DP-XGBoost §4.4; Balle, Barthe & Gaboardi 2018)
  for the composite ε of the subsample. RDP uses ``PoissonSampledDpEvent`` of
  the composed Gaussians (the tight subsampled-Gaussian RDP); PLD uses the subsampled
  Gaussian or Laplace PLD of ``dp_accounting`` (the Gaussian's built over its grid at
  once, value for value the same: :mod:`~dpxgb_dask.privacy.gaussian_pld`). A subsample
  holding several pure-ε releases has two valid descriptions: the amplified composite, an
  ε'-DP mechanism (RDP: ε'²/2-zCDP, Bun & Steinke 2016 Prop. 3.3; PLD: the ε'-DP dominating
  pair of Kairouz, Oh & Viswanath 2015), and the plain composition that ignores the amplification
  (valid, since subsampling never increases the privacy loss). The choice is never made
  per term on a standalone ε (the switch point of one term is not where the composed totals
  cross, so the total jumped by a factor of 2 at that scale and calibration missed its
  target): RDP takes, order by order, the minimum of the two RDP curves of the term (both
  bound D_α, so their minimum does; RDP composes order by order, Mironov 2017, Prop. 1);
  PLD composes the whole ledger both ways (every such subsample amplified, or none) and
  reports the better total. Both are continuous and monotone in every noise parameter. A
  subsample mixing Gaussian and pure-ε releases is accounted without amplification.
* Gaussian releases in basic composition: the δ budget is split evenly over the Gaussian
  terms; each is converted to (ε_i, δ_i) with the exact Gaussian curve
  (Balle & Wang 2018, ``dp_accounting.get_epsilon_gaussian``) and the ε_i are summed.
  Gaussian terms are counted recursively: a disjoint group needs as many δ shares as its
  most Gaussian-heavy part (parallel composition of (ε, δ) parts costs the maximum of
  their δ, McSherry 2009; sequential composition inside a part their sum, Dwork & Roth
  2014, Thm. 3.16), so the δ spent in total never exceeds the δ asked for. This is only
  for comparison; use RDP or PLD for Gaussian plans.
* Parallel parts that are not identical are composed sequentially in RDP/PLD (valid,
  conservative); basic composition takes the maximum over parts exactly.
* Individual Rényi filters (``renyi_filter`` entries, :mod:`~dpxgb_dask.privacy.filter`):
  the entries are no releases and every accountant charges the releases they cover as if
  every row took part in full, which is valid since a filter only removes contributions.
  The RDP accountant also knows the filter's guarantee: every row's Rényi divergence of
  order α over the covered releases is at most the budget B (Feldman & Zrnic 2021,
  Theorem 3.1, S-BDT Theorem 5), and so at every order below α (the divergence does not
  decrease with the order), so at the order of each filter the ledger is (α, Σ of the
  budgets of the filters of order >= α + RDP of the other releases)-RDP, converted to ε
  with the same conversion as every order; it reports the smallest ε.
* Private selections (``repeat_and_select`` entries, :mod:`~dpxgb_dask.privacy.selection`):
  the RDP accountant composes each configuration's planned releases into a curve, takes
  the per-order maximum over the configurations (the candidate draws one at random) and
  applies Papernot & Steinke's Theorem 2 (:func:`~dpxgb_dask.privacy.selection.repeat_and_select_rdp`);
  the result composes with the other releases order by order. The basic and PLD
  accountants have no description of a selection, nor of distributed noise (``noise_shares``:
  a concentrated-DP guarantee only): for a ledger holding one they certify no finite ε
  (∞, and δ = 1), so ``"best"`` is the RDP accountant's answer there.
"""


from __future__ import annotations

import abc
import collections
import functools
import json
import math

import dp_accounting
import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.rdp import rdp_privacy_accountant as _rdp_lib

from .composition import (Sampled, Single, amplified_epsilon, as_ledger, check_filters,
                          composition_terms, distinct_terms, effective_multiplier,
                          gaussian_shares, has_pure_choice, is_pure_choice, part_profile,
                          pure_sum, rdp_only, selections)
from .gaussian_pld import gaussian_pld
from .ledger import Ledger
from .selection import repeat_and_select_rdp
from .validation import check_delta, check_epsilon

__all__ = ["Accountant", "BasicAccountant", "BestOfAccountant", "PLDAccountant", "RDPAccountant",
           "get_accountant", "privacy_report"]

_ADD_REMOVE = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE


class Accountant(abc.ABC):
    """Common interface: ``get_epsilon(ledger, delta)`` and ``get_delta(ledger, epsilon)``."""

    name = "accountant"

    @abc.abstractmethod
    def get_epsilon(self, ledger, delta):
        """Smallest ε this accountant certifies for the ledger at δ.

        Parameters
        ----------
        ledger : Ledger or iterable of PrivacyEvent
        delta : float
            δ in [0, 1).

        Returns
        -------
        float
            ε (``math.inf`` if no finite ε is certified).
        """

    def get_delta(self, ledger, epsilon):
        """Smallest δ such that the ledger is (ε, δ)-DP by this accountant.

        The default implementation bisects on :meth:`get_epsilon`, which is non-increasing
        in δ.

        Parameters
        ----------
        ledger : Ledger or iterable of PrivacyEvent
        epsilon : float

        Returns
        -------
        float
        """
        epsilon = check_epsilon(epsilon)
        ledger = as_ledger(ledger)
        if self.get_epsilon(ledger, 0.0) <= epsilon:
            return 0.0
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if self.get_epsilon(ledger, mid) <= epsilon:
                hi = mid
            else:
                lo = mid
            if hi - lo <= 1e-3 * hi:
                break
        return hi

    def __repr__(self):
        return f"{type(self).__name__}()"


class BasicAccountant(Accountant):
    """Basic (sequential) composition of pure ε with subsampling amplification.

    For a ledger of pure-ε events with one Poisson subsample per tree this is exactly
    DP-XGBoost's total n·log(1 + γ(e^ε - 1)) (DP-XGBoost README and §4.4). Gaussian events
    are converted to (ε, δ) as described in the module docstring.
    """

    name = "basic"

    def _term(self, term, delta_unit):
        if isinstance(term, Single):
            e = term.event
            if e.is_pure:
                return e.count * e.epsilon
            z = e.noise_multiplier / math.sqrt(e.count)
            return dp_accounting.get_epsilon_gaussian(z, delta_unit) if delta_unit > 0 else math.inf
        if isinstance(term, Sampled):
            pure = [e for e in term.events if e.is_pure]
            gauss = [e for e in term.events if not e.is_pure]
            eps = pure_sum(pure)
            if gauss:
                # (ε, δ) on the sample becomes (log(1+γ(e^ε-1)), γδ): spend δ_unit/γ before amplification
                inner_delta = min(delta_unit / term.rate, 0.5)
                if inner_delta <= 0:
                    return math.inf
                eps += dp_accounting.get_epsilon_gaussian(effective_multiplier(gauss), inner_delta)
            return amplified_epsilon(eps, term.rate)
        return max(sum(self._term(t, delta_unit) for t in part) for part in term.parts)

    def get_epsilon(self, ledger, delta):
        """Sum of the terms' ε (amplified per subsample); δ only serves Gaussian terms.

        δ is split into equal shares, one per Gaussian term counted by
        ``composition.gaussian_shares`` (recursively, the maximum over the parts of a disjoint
        group), so the δ spent in total is at most ``delta``.
        """
        delta = check_delta(delta)
        ledger = as_ledger(ledger)
        if rdp_only(ledger):
            return math.inf  # (see the module docstring)
        terms = distinct_terms(composition_terms(ledger))
        n_gauss = sum(m * gaussian_shares(t) for t, m in terms)
        delta_unit = delta / n_gauss if n_gauss else 0.0
        return float(sum(m * self._term(t, delta_unit) for t, m in terms))


def _repeat(event, count):
    return event if count == 1 else dp_accounting.SelfComposedDpEvent(event, count)


class RDPAccountant(Accountant):
    """Rényi-DP accounting with ``dp_accounting.rdp.RdpAccountant`` (add/remove one row).

    Parameters
    ----------
    orders : sequence of float, optional
        RDP orders; default ``dp_accounting``'s defaults plus orders up to 4096.
    """

    name = "rdp"

    def __init__(self, orders=None):
        if orders is None:
            orders = list(dp_accounting.rdp.rdp_privacy_accountant.DEFAULT_RDP_ORDERS) + [2048, 4096]
        self.orders = tuple(float(o) for o in orders)
        self._curves = {}

    def _fresh(self):
        return dp_accounting.rdp.RdpAccountant(list(self.orders), _ADD_REMOVE)

    def _curve(self, event):
        """RDP at ``self.orders`` of one event, memoised (a fit repeats the same trees)."""
        key = repr(event)  # events hold lists (unhashable); their repr lists every field exactly
        curve = self._curves.get(key)
        if curve is None:
            if len(self._curves) > 4096:
                self._curves.clear()
            curve = np.array(self._fresh().compose(event).rdp, dtype=np.float64)
            self._curves[key] = curve
        return curve

    @staticmethod
    def _event(e):
        if e.mechanism == "laplace":
            base = dp_accounting.LaplaceDpEvent(noise_multiplier=1.0 / e.epsilon)
        elif e.mechanism == "gaussian":
            base = dp_accounting.GaussianDpEvent(noise_multiplier=e.noise_multiplier)
        else:
            base = dp_accounting.ZCDpEvent(rho=e.epsilon**2 / 8.0)
        return _repeat(base, e.count)

    @staticmethod
    def _amplified_event(term):
        """ε'-DP description of a pure-ε subsample: ε'²/2-zCDP (Bun & Steinke 2016, Prop. 3.3)."""
        eps = amplified_epsilon(pure_sum(term.events), term.rate)
        return dp_accounting.ZCDpEvent(rho=eps * eps / 2.0)

    def _term_event(self, term, amplify):
        """``dp_accounting`` event of a term; ``amplify`` picks the description of pure subsamples."""
        if isinstance(term, Single):
            return self._event(term.event)
        if isinstance(term, Sampled):
            members = [self._event(e) for e in term.events]
            if all(e.mechanism == "gaussian" for e in term.events):
                return dp_accounting.PoissonSampledDpEvent(term.rate, dp_accounting.ComposedDpEvent(members))
            if amplify and is_pure_choice(term):
                return self._amplified_event(term)
            return dp_accounting.ComposedDpEvent(members)
        parts = [dp_accounting.ComposedDpEvent([self._term_event(t, amplify) for t in part]) for part in term.parts]
        if len({part_profile(p) for p in term.parts}) == 1:
            return parts[0]
        return dp_accounting.ComposedDpEvent(parts)

    def _term_curve(self, term):
        """RDP curve of a term; per-order minimum of the two valid curves of a pure subsample."""
        if isinstance(term, Single):
            return self._curve(self._event(term.event))
        if isinstance(term, Sampled):
            plain = self._curve(self._term_event(term, amplify=False))
            if not is_pure_choice(term):
                return plain
            # both curves bound D_alpha of the same mechanism at every order, so does their
            # minimum; composition adds curves order by order (Mironov 2017, Prop. 1)
            return np.minimum(plain, self._curve(self._amplified_event(term)))
        parts = [sum((self._term_curve(t) for t in part), np.zeros(len(self.orders))) for part in term.parts]
        if len({part_profile(p) for p in term.parts}) == 1:
            return parts[0]
        return sum(parts, np.zeros(len(self.orders)))

    def curve(self, ledger):
        """The ledger's composed RDP curve ε(λ) at ``orders``, an array of float64."""
        return self._total_curve(ledger)

    def _total_curve(self, ledger):
        ledger = as_ledger(ledger)
        total = np.zeros(len(self.orders))
        for term, mult in distinct_terms(composition_terms(ledger)):
            total += mult * self._term_curve(term)
        for entry, parts in selections(ledger):
            # a run draws one configuration: its curve is at most the largest of theirs
            candidate = np.max([self._total_curve(part) for part in parts], axis=0)
            total += repeat_and_select_rdp(self.orders, candidate, entry.selection_mean,
                                           entry.selection_shape)
        return total

    def _filter_points(self, ledger):
        """[(α, RDP at α)] that the ledger's individual Rényi filters certify, at the order
        of each filter: a filter of order α_f >= α bounds its releases' divergence at α by
        its budget (Rényi divergence does not decrease with the order, van Erven &
        Harremoës 2014, Theorem 3), or by their worst-case curve if smaller; every other
        release is charged its worst-case curve."""
        events = list(as_ledger(ledger))
        filters = [e for e in events if e.is_filter]
        if not filters:
            return []
        check_filters(events, filters)
        points = []
        for order in sorted({f.rdp_order for f in filters}):
            at_order = RDPAccountant(orders=(order,))
            budgets = {}
            for f in filters:
                if f.rdp_order >= order:
                    budgets[f.individual_filter] = budgets.get(f.individual_filter, 0.0) + f.rdp_budget
            total = 0.0
            for name in (None,) + tuple(sorted(budgets)):
                members = [e for e in events if not e.is_filter and
                           (e.individual_filter if e.individual_filter in budgets else None) == name]
                worst = at_order._total_curve(members)[0] if members else 0.0
                total += worst if name is None else min(worst, budgets[name])
            points.append((order, total))
        return points

    def get_epsilon(self, ledger, delta):
        """ε at δ from the composed RDP curve (``dp_accounting.rdp.compute_epsilon``), or at
        an individual filter's order from its budget when smaller; ∞ for δ = 0."""
        delta = check_delta(delta)
        if delta == 0.0:
            return math.inf
        ledger = as_ledger(ledger)
        eps = float(_rdp_lib.compute_epsilon(np.array(self.orders), self._total_curve(ledger), delta)[0])
        for order, rdp in self._filter_points(ledger):
            eps = min(eps, float(_rdp_lib.compute_epsilon(np.array([order]), np.array([rdp]), delta)[0]))
        return eps

    def get_delta(self, ledger, epsilon):
        """δ at ε from the composed RDP curve (``dp_accounting``'s ``compute_delta``), or
        from an individual filter's order and budget when smaller."""
        epsilon = check_epsilon(epsilon)
        ledger = as_ledger(ledger)
        curve = self._total_curve(ledger)
        delta = float(_rdp_lib.compute_delta(np.array(self.orders), curve, epsilon)[0])
        for order, rdp in self._filter_points(ledger):
            delta = min(delta, float(_rdp_lib.compute_delta(np.array([order]), np.array([rdp]),
                                                            epsilon)[0]))
        return delta


class PLDAccountant(Accountant):
    """Privacy-loss-distribution accounting with ``dp_accounting.pld`` (add/remove one row).

    Parameters
    ----------
    value_discretization_interval : float, default 1e-4
        Discretisation of the privacy loss (``dp_accounting``'s default); smaller is
        tighter and slower. The discretisation is pessimistic (an upper bound).
    """

    name = "pld"

    def __init__(self, value_discretization_interval=1e-4):
        self.value_discretization_interval = check_epsilon(value_discretization_interval, "value_discretization_interval")

    def _pure_pld(self, epsilon):
        """Pessimistic PLD of the ε-DP dominating pair, discretised by "connect the dots".

        The pair (randomized response with parameter ε; Kairouz, Oh & Viswanath 2015) has
        privacy loss +ε with mass e^ε/(1+e^ε) and -ε with mass 1/(1+e^ε). Each atom at L is
        split between the grid points a <= L <= b = a + h with masses chosen so that the
        mass and E[e^-L] are preserved; since both hockey-stick integrands, (1 - e^x·y)_+
        and (y - e^x)_+ with y = e^-L, are convex in y, the split dominates the atom in both
        directions (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022, "Connect the dots",
        the discretisation ``dp_accounting`` uses for its Laplace and Gaussian PLDs).
        Unlike rounding L up to the grid (``from_privacy_parameters``), the result is
        continuous in ε, so calibration can reach its target within ``rtol``.
        """
        h = self.value_discretization_interval
        pmf = collections.defaultdict(float)
        for loss, mass in ((epsilon, 1.0 / (1.0 + math.exp(-epsilon))), (-epsilon, 1.0 / (1.0 + math.exp(epsilon)))):
            lo = math.floor(loss / h)
            while (lo + 1) * h < loss:  # guard against float rounding of loss / h
                lo += 1
            while lo * h > loss:
                lo -= 1
            a, b = lo * h, (lo + 1) * h
            if a == loss:  # on the grid
                pmf[lo] += mass
                continue
            # w_a + w_b = mass and w_a e^-a + w_b e^-b = mass e^-loss
            w_a = mass * -math.expm1(b - loss) / -math.expm1(b - a)
            w_a = min(max(w_a, 0.0), mass)
            pmf[lo] += w_a
            pmf[lo + 1] += mass - w_a
        return pld_lib.PrivacyLossDistribution.create_from_rounded_probability(dict(pmf), 0.0, h)

    def _event_pld(self, e):
        vdi = self.value_discretization_interval
        if e.mechanism == "gaussian":
            return gaussian_pld(e.noise_multiplier / math.sqrt(e.count), vdi)
        if e.mechanism == "laplace":
            base = pld_lib.from_laplace_mechanism(1.0 / e.epsilon, value_discretization_interval=vdi)
        else:
            base = self._pure_pld(e.epsilon)
        return base if e.count == 1 else base.self_compose(e.count)

    def _compose(self, plds):
        out = plds[0]
        for p in plds[1:]:
            out = out.compose(p)
        return out

    def _term_pld(self, term, amplify):
        """PLD of a term; ``amplify`` picks the description of subsamples of pure-ε releases."""
        vdi = self.value_discretization_interval
        if isinstance(term, Single):
            return self._event_pld(term.event)
        if isinstance(term, Sampled):
            events = term.events
            if all(e.mechanism == "gaussian" for e in events):
                return gaussian_pld(effective_multiplier(events), vdi, term.rate)
            if len(events) == 1 and events[0].mechanism == "laplace" and events[0].count == 1:
                return pld_lib.from_laplace_mechanism(
                    1.0 / events[0].epsilon, value_discretization_interval=vdi, sampling_prob=term.rate
                )
            if amplify and is_pure_choice(term):
                return self._pure_pld(amplified_epsilon(pure_sum(events), term.rate))
            return self._compose([self._event_pld(e) for e in events])
        parts = [self._compose([self._term_pld(t, amplify) for t in part]) for part in term.parts]
        if len({part_profile(p) for p in term.parts}) == 1:
            return parts[0]
        return self._compose(parts)

    def _options(self, ledger):
        """Composed PLDs of the ledger: [none amplified] or [none amplified, all amplified].

        Each is a valid PLD of the whole training; the second exists when the ledger has a
        subsample of pure-ε releases (see the module docstring). Deciding on the composed
        totals, not term by term, keeps ε monotone in every noise parameter.
        """
        terms = distinct_terms(composition_terms(as_ledger(ledger)))
        if not terms:
            return [pld_lib.identity(value_discretization_interval=self.value_discretization_interval)]
        choices = (False, True) if any(has_pure_choice(t) for t, _ in terms) else (False,)
        out = []
        for amplify in choices:
            plds = []
            for term, mult in terms:
                p = self._term_pld(term, amplify)
                plds.append(p if mult == 1 else p.self_compose(mult))
            out.append(self._compose(plds))
        return out

    def get_epsilon(self, ledger, delta):
        """ε at δ of the composed privacy loss distribution (the better valid description);
        ∞ for a ledger with a private selection or distributed noise (see the module
        docstring)."""
        delta = check_delta(delta)
        if rdp_only(ledger):
            return math.inf
        return float(min(p.get_epsilon_for_delta(delta) for p in self._options(ledger)))

    def get_delta(self, ledger, epsilon):
        """δ at ε of the composed privacy loss distribution (the better valid description);
        1 for a ledger with a private selection or distributed noise."""
        epsilon = check_epsilon(epsilon)
        if rdp_only(ledger):
            return 1.0
        return float(min(p.get_delta_for_epsilon(epsilon) for p in self._options(ledger)))


class BestOfAccountant(Accountant):
    """The smallest ε among several accountants (each is a valid bound, so the minimum is).

    Parameters
    ----------
    *accountants : Accountant
    """

    name = "best"

    def __init__(self, *accountants):
        if not accountants:
            raise ValueError("give at least one accountant")
        self.accountants = accountants

    def get_epsilon(self, ledger, delta):
        """Minimum of the accountants' ε."""
        ledger = as_ledger(ledger)
        return min(a.get_epsilon(ledger, delta) for a in self.accountants)

    def get_delta(self, ledger, epsilon):
        """Minimum of the accountants' δ."""
        ledger = as_ledger(ledger)
        return min(a.get_delta(ledger, epsilon) for a in self.accountants)

    def __repr__(self):
        return f"BestOfAccountant({', '.join(map(repr, self.accountants))})"


_REGISTRY = {"basic": BasicAccountant, "rdp": RDPAccountant, "pld": PLDAccountant}


def get_accountant(name):
    """Accountant by name.

    Parameters
    ----------
    name : {"basic", "rdp", "pld", "best"} or Accountant
        ``"best"`` is the minimum of all three.

    Returns
    -------
    Accountant
    """
    if isinstance(name, Accountant):
        return name
    if name == "best":
        return BestOfAccountant(BasicAccountant(), RDPAccountant(), PLDAccountant())
    if name not in _REGISTRY:
        raise ValueError(f"accountant must be one of {sorted(_REGISTRY) + ['best']}, got {name!r}")
    return _REGISTRY[name]()


def privacy_report(ledger, delta):
    """ε of a ledger under every accountant, for a CLI ``report``.

    Parameters
    ----------
    ledger : Ledger
    delta : float

    Returns
    -------
    dict
        ``{"delta": δ, "basic": ε, "rdp": ε, "pld": ε, "best": min, "n_events": n}``.
    """
    delta = check_delta(delta)
    ledger = as_ledger(ledger)
    return dict(_ledger_report(_accounted_json(ledger), delta))


def _accounted_json(ledger):
    """The JSON of ``ledger`` with what no accountant reads left out: each event's
    ``n_parallel`` (by parallel composition a release costs one application of its
    mechanism whatever the number of its disjoint pieces, ``ledger.py``) is written 1.
    Two fits of the same parameters then have one key although their random trees have
    different numbers of leaves."""
    data = ledger.to_dict()
    for event in data["events"]:
        event["n_parallel"] = 1
    return json.dumps(data, allow_nan=False)


@functools.lru_cache(maxsize=64)
def _ledger_report(ledger_json, delta):
    """:func:`privacy_report` of a ledger by its public events as the accountants read
    them (:func:`_accounted_json`): a fit's scheduler and its client, and fits of the same
    parameters, account the same ledger once."""
    ledger = Ledger.from_json(ledger_json)
    out = {"delta": delta, "n_events": len(ledger)}
    for name in ("basic", "rdp", "pld"):
        out[name] = get_accountant(name).get_epsilon(ledger, delta)
    out["best"] = min(out["basic"], out["rdp"], out["pld"])
    return out
