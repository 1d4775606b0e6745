"""S-BDT's individual Rényi filter: every row carries its own Rényi privacy loss.

Feldman & Zrnic ("Individual privacy accounting via a Rényi filter", NeurIPS 2021,
Theorem 3.1; S-BDT Theorem 5) bound the Rényi divergence of order α of an adaptive
sequence of mechanisms by the sum of each row's *individual* divergences ρ_t(x_i), as
long as that sum stays within a budget B for every row: a row whose next release would
take it over B is left out of that release (and of every later one it cannot afford).
The individual divergence of a release may depend on the row and on the earlier outputs,
never on other rows, so a row decides alone, from its own data and public values.

For a Gaussian release ``f(D) + N(0, σ²I)`` a row that changes ``f`` by a vector of L2
norm ``n_i`` (where the worst case is Δ) has individual RDP ``α n_i²/(2σ²)``: the worst
case scaled by ``(n_i/Δ)²``. A tree's Gaussian releases on one Poisson subsample (rate
γ) compose to one Gaussian release of noise multiplier ``z_i = 1/sqrt(2 ρ_i)`` with
``ρ_i = Σ_m (n_im/Δ_m)²/(2 z_m²)`` (the row's zCDP coefficient in the tree); sampled, the
row's divergence is that of the subsampled Gaussian with ``z_i`` and γ at α
(``dp_accounting``'s tight bound, the one the ledger charges the worst case with).

The budget is what the regular trees cost a worst-case row: the noise is calibrated on
them, so a row whose gradients stay at the clipping bound stops where an unfiltered fit
would end, and rows with smaller gradients (well fitted ones) keep training in the extra
rounds at no cost to the guarantee. The guarantee holds at the one order α; the RDP
accountant converts it to (ε, δ) (``accountants.RDPAccountant``).

Nothing here reads data or knows about Dask: the workers call :meth:`RowFilter.charges`
on their rows' clipped gradients, :func:`choose_filter` runs on public parameters.
"""
from dataclasses import dataclass
import math

import dp_accounting
import numpy as np

from .accountants import RDPAccountant

__all__ = ["FilterTerm", "RowFilter", "choose_filter", "filter_term",
           "subsampled_gaussian_rdp", "tree_divergences"]

#: Relative headroom of a filter's budget over the sum of the regular trees' worst-case
#: charges: the workers add the charges in another order than the accountant, and a
#: worst-case row must not be filtered out of a regular tree by a rounding error. The
#: headroom is part of the recorded budget (the guarantee includes it).
BUDGET_HEADROOM = 1e-9

#: Points of the charge table over [0, ρ_max] (subsampled trees): a row is charged the
#: value at the next point up (a valid upper bound; the divergence increases with ρ).
TABLE_POINTS = 4097


def subsampled_gaussian_rdp(order, rho, sampling_rate):
    """Rényi divergence at ``order`` of a Gaussian release of zCDP coefficient ``rho`` on a
    Poisson subsample.

    The Gaussian of noise multiplier z has ρ = 1/(2z²) and RDP α ρ (Mironov 2017); on a
    Poisson subsample of rate γ the tight bound of ``dp_accounting``
    (``PoissonSampledDpEvent`` of ``GaussianDpEvent(z)``, add/remove one row).

    Parameters
    ----------
    order : float
        α > 1.
    rho : float or ndarray of float64
        ρ >= 0.
    sampling_rate : float
        γ in (0, 1].

    Returns
    -------
    float or ndarray of float64
        Same shape as ``rho``.
    """
    rho = np.asarray(rho, dtype=np.float64)
    if sampling_rate >= 1.0:
        return order * rho
    out = np.zeros(rho.shape)
    accountant = RDPAccountant(orders=(order,))
    for index, value in np.ndenumerate(rho):
        if value > 0:
            event = dp_accounting.PoissonSampledDpEvent(
                sampling_rate, dp_accounting.GaussianDpEvent(1.0 / math.sqrt(2.0 * value)))
            out[index] = accountant._curve(event)[0]
    return out if out.ndim else float(out)


@dataclass(frozen=True)
class FilterTerm:
    """How one Gaussian mechanism of a tree weighs on a row (public).

    The row adds its clipped gradient g to ``gradient_coords`` entries and its denominator
    u (hessian, or 1 for counts) to ``denominator_coords`` entries: an L2 norm
    ``n = sqrt(gradient_coords g² + denominator_coords u²)``. On the mechanism's integer
    grid (step ``resolution``) its rounded sums move by at most ``n/resolution + margin``
    steps (``margin = 2 sqrt(k)``, ``GaussianMechanism.margin_steps``), against
    ``Δ/resolution + margin`` for the worst row, so the row's share of the worst case is

        r = (n/resolution + margin) / (Δ/resolution + margin) <= 1,

    and its zCDP coefficient in the mechanism is ``weight r²/2`` with ``weight = count/z²``
    (z = σ/Δ, ``count`` releases per tree, e.g. one per depth).
    """

    gradient_coords: int
    denominator_coords: int
    sensitivity: float
    resolution: float
    margin: float
    weight: float

    def share(self, g, u):
        """r of rows with gradients ``g`` and denominators ``u`` (ndarrays, same shape)."""
        norm = np.sqrt(self.gradient_coords * np.square(g, dtype=np.float64)
                       + self.denominator_coords * np.square(u, dtype=np.float64))
        return np.minimum((norm / self.resolution + self.margin)
                          / (self.sensitivity / self.resolution + self.margin), 1.0)


def filter_term(mechanism, gradient_coords, denominator_coords, count=1):
    """The :class:`FilterTerm` of a ``GaussianMechanism`` (its σ, grid and rounding
    margin) that ``count`` releases per tree make; the mechanism must state its
    ``coords_per_row`` (the margin depends on it)."""
    k = mechanism.coords_per_row
    if k is None:
        raise ValueError("filter_term needs a GaussianMechanism built with coords_per_row")
    return FilterTerm(int(gradient_coords), int(denominator_coords),
                      float(mechanism.sensitivity), float(mechanism.resolution),
                      mechanism.margin_steps(k), count / mechanism.noise_multiplier**2)


@dataclass(frozen=True)
class RowFilter:
    """An individual Rényi filter as the workers apply it (public).

    Attributes
    ----------
    name : str
        The filter's name in the ledger.
    order : float
        α.
    budget : float
        B, every row's limit of Rényi divergence at α over the filter's trees.
    sampling_rate : float
        γ of every tree.
    rho_max : float
        Largest worst-case ρ of a tree (the end of the charge table).
    counts : bool
        The releases' denominators are row counts (a row adds 1), not hessians.
    table : ndarray of float64, shape (TABLE_POINTS,)
        Divergence at α of a tree of ρ = ``rho_max * j / (TABLE_POINTS - 1)``; None when
        γ = 1 (the divergence α ρ is exact).
    """

    name: str
    order: float
    budget: float
    sampling_rate: float
    rho_max: float
    counts: bool
    table: np.ndarray = None

    @classmethod
    def build(cls, name, order, budget, sampling_rate, rho_max, counts):
        """The filter, with its charge table computed (``dp_accounting``)."""
        table = None
        if sampling_rate < 1.0:
            grid = rho_max * np.arange(TABLE_POINTS) / (TABLE_POINTS - 1)
            table = subsampled_gaussian_rdp(order, grid, sampling_rate)
        return cls(name, float(order), float(budget), float(sampling_rate), float(rho_max),
                   bool(counts), table)

    def charges(self, g, u, terms, worst):
        """Each row's divergence at α in one tree.

        Parameters
        ----------
        g, u : ndarray, shape (n_rows,)
            Clipped gradients and denominators (hessians, or 1 for counts) of the rows.
        terms : tuple of FilterTerm
            The tree's Gaussian mechanisms.
        worst : float
            The tree's worst-case divergence (what the ledger charges): no row pays more.

        Returns
        -------
        ndarray of float64, shape (n_rows,)
        """
        rho = np.zeros(np.shape(g))
        for term in terms:
            rho += 0.5 * term.weight * np.square(term.share(g, u))
        rho *= 1.0 + 1e-12  # rounded up: a row never pays less than its divergence
        if self.table is None:
            charge = self.order * rho
        else:
            index = np.ceil(rho / self.rho_max * (TABLE_POINTS - 1))
            charge = self.table[np.clip(index, 0, TABLE_POINTS - 1).astype(np.int64)]
            charge = np.where(rho > self.rho_max, worst, charge)
        return np.minimum(charge, worst)

    def pace(self, g, u, terms, worst, allowance, iterations=24):
        """Each row's largest scale c in [0, 1] whose charge (gradient c g, denominator
        c u, or u for counts) is at most ``allowance`` (bisection: the charge increases
        with c); 0 where even c = 0 costs more.

        Returns
        -------
        ndarray of float64, shape (n_rows,)
        """
        full = self.charges(g, u, terms, worst) <= allowance
        lo, hi = np.zeros(np.shape(g)), np.ones(np.shape(g))
        for _ in range(iterations):
            mid = 0.5 * (lo + hi)
            fits = self.charges(mid * g, u if self.counts else mid * u, terms, worst) <= allowance
            lo, hi = np.where(fits, mid, lo), np.where(fits, hi, mid)
        return np.where(full, 1.0, lo)

    def admit(self, spent, charge):
        """Rows whose divergence so far plus ``charge`` stays within the budget (bool)."""
        return spent + charge <= self.budget


def choose_filter(ledger, delta, orders=None):
    """The order α and budget B of an individual filter over the trees of a regular ledger.

    α is the order at which the regular ledger (every release charged in full) converts
    to the smallest ε at ``delta``; B is what its trees' releases cost a worst-case row at
    α (:func:`tree_divergences`, summed tree by tree in tree order as the workers sum a
    row's charges, plus :data:`BUDGET_HEADROOM`). The ledger's ε at α with B in place of
    those releases is then the regular ledger's RDP ε (up to the headroom).

    Parameters
    ----------
    ledger : Ledger
        The regular releases; those with a ``tree`` are the filter's.
    delta : float
    orders : sequence of float, optional
        Candidate orders (``RDPAccountant``'s by default).

    Returns
    -------
    order : float
    budget : float
    """
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib

    accountant = RDPAccountant(orders)
    curve = accountant._total_curve(ledger)
    epsilons = [float(rdp_lib.compute_epsilon(np.array([a]), np.array([c]), delta)[0])
                for a, c in zip(accountant.orders, curve)]
    order = accountant.orders[int(np.argmin(epsilons))]
    total = 0.0
    for _, worst in sorted(tree_divergences(ledger, order).items()):
        total += worst
    return order, total * (1.0 + BUDGET_HEADROOM)


def tree_divergences(ledger, order):
    """Each tree's worst-case Rényi divergence at ``order``: its releases (on its Poisson
    subsample) charged in full, as the RDP accountant charges them.

    Returns
    -------
    dict of int -> float
    """
    by_tree = {}
    for event in ledger:
        if event.tree is not None and not event.is_filter:
            by_tree.setdefault(event.tree, []).append(event)
    at_order = RDPAccountant(orders=(order,))
    return {tree: float(at_order._total_curve(events)[0]) for tree, events in by_tree.items()}
