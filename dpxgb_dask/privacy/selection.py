"""Private selection: run a randomised candidate a random number of times, release the best.

Papernot & Steinke ("Hyperparameter tuning with Renyi differential privacy", ICLR 2022,
arXiv:2110.03620) analyse this algorithm A: draw K from a distribution D, run a mechanism
Q K times independently (each run may draw its own configuration from a fixed, public
distribution: a random member of a small family), and release only the run with the best
score, its score included. With K from the truncated negative binomial distribution
D_{η,γ} (η > 0; η = 1 is the geometric distribution of Liu & Talwar, STOC 2019),

    P(K = k) = C(k + η - 1, k) · γ^η (1 - γ)^k / (1 - γ^η),   k = 1, 2, ...,
    E[K] = η (1 - γ) / (γ (1 - γ^η)),

their Theorem 2 says: if Q is (λ, ε(λ))-RDP at every order λ > 1, then A is (λ, ε'(λ))-RDP
with, for every λ̂ >= 1,

    ε'(λ) = ε(λ) + (1 + η) (1 - 1/λ̂) ε(λ̂) + (1 + η) log(1/γ) / λ̂ + log E[K] / (λ - 1).

:func:`repeat_and_select_rdp` takes the best λ̂ among the accountant's orders and, since
Rényi divergence does not decrease with the order, at each order the smallest bound of any
order at or above it. The number of runs K must stay secret (it is drawn from the fit's
secret stream and never published): the theorem is about the released best run alone.

The candidate Q is a random configuration among ``n`` (uniform, data-independent): its
divergence at every order is at most the largest of the configurations' (Rényi divergence
is jointly quasi-convex, van Erven & Harremoës 2014, Theorem 13), so its RDP curve is the
per-order maximum of the configurations' curves
(:class:`~dpxgb_dask.privacy.accountants.RDPAccountant`).

Nothing here reads data or knows about Dask.
"""
import math

import numpy as np

from .validation import check_positive

__all__ = ["SelectionCount", "repeat_and_select_rdp"]


class SelectionCount:
    """The distribution of the number of candidate runs: truncated negative binomial.

    Parameters
    ----------
    mean : float
        E[K] >= 1, the expected number of runs.
    shape : float, default 1.0
        η > 0 (1: geometric). A smaller η has a lighter cost term (1 + η) but a longer tail.

    Attributes
    ----------
    gamma : float
        γ in (0, 1], solved from ``mean`` by bisection to within a relative 1e-12; the
        value kept is the smaller end, whose mean is at least ``mean`` (the cost term
        log(1/γ) is then the conservative one).
    """

    def __init__(self, mean, shape=1.0):
        self.mean = float(mean)
        self.shape = check_positive(shape, "shape")
        if not math.isfinite(self.mean) or self.mean < 1.0:
            raise ValueError(f"mean must be a finite number >= 1 (the expected number of "
                             f"candidate runs), got {mean!r}")
        if not math.isfinite(self.shape):
            raise ValueError(f"shape must be a finite number > 0, got {shape!r}")
        self.gamma = self._solve_gamma()

    @staticmethod
    def expected(gamma, shape):
        """E[K] of D_{η,γ}: η (1 - γ) / (γ (1 - γ^η)); 1 at γ = 1."""
        if gamma >= 1.0:
            return 1.0
        return shape * (1.0 - gamma) / (gamma * -math.expm1(shape * math.log(gamma)))

    def _solve_gamma(self):
        if self.mean == 1.0:
            return 1.0
        lo, hi = 0.0, 1.0  # E[K] decreases in γ: ∞ at 0, 1 at 1
        while hi - lo > 1e-12 * hi:
            mid = 0.5 * (lo + hi)
            if self.expected(mid, self.shape) < self.mean:
                hi = mid
            else:
                lo = mid
        return lo if lo > 0.0 else hi

    def pmf(self, k):
        """P(K = k) for an int array ``k`` >= 1 (0 below 1).

        Returns
        -------
        ndarray of float64
        """
        k = np.asarray(k, dtype=np.float64)
        if self.gamma >= 1.0:
            return np.where(k == 1, 1.0, 0.0)
        from scipy.special import gammaln

        eta, g = self.shape, self.gamma
        log_p = (gammaln(k + eta) - gammaln(eta) - gammaln(k + 1) + eta * math.log(g)
                 + k * math.log1p(-g) - math.log(-math.expm1(eta * math.log(g))))
        return np.where(k >= 1, np.exp(log_p), 0.0)

    def draw(self, stream):
        """One secret draw of K, by inversion: the smallest k whose cumulative probability
        exceeds a uniform number from ``stream`` (53 bits). The pmf's ratio
        P(k + 1)/P(k) = (k + η)(1 - γ)/(k + 1) gives each term from the last, so a draw
        costs K steps, whatever γ and η (a rejection of the draws k = 0 of the negative
        binomial would take 1/(1 - γ^η) tries, unbounded as E[K] nears 1).

        Parameters
        ----------
        stream : RandomStream
            A secret stream.

        Returns
        -------
        int
        """
        if self.gamma >= 1.0:
            return 1
        u = float(stream.uint64(1)[0] >> np.uint64(11)) * 2.0**-53
        eta, g = self.shape, self.gamma
        k = 1
        p = math.exp(eta * math.log(g) + math.log1p(-g) + math.log(eta)
                     - math.log(-math.expm1(eta * math.log(g))))
        total = p
        while total <= u and p > 0.0:  # (p underflows to 0 in the far tail: the loop ends)
            p *= (k + eta) * (1.0 - g) / (k + 1)
            k += 1
            total += p
        return k


def repeat_and_select_rdp(orders, curve, mean, shape):
    """RDP of releasing the best of K runs of a mechanism, K ~ D_{η,γ} (Theorem 2 above).

    Parameters
    ----------
    orders : sequence of float, shape (n,)
        Rényi orders λ >= 1.
    curve : sequence of float, shape (n,)
        ε(λ) of one run at each order.
    mean, shape : float
        E[K] and η of :class:`SelectionCount`.

    Returns
    -------
    ndarray of float64, shape (n,)
        ε'(λ) at each order; at an order of 1, where the theorem says nothing, the bound
        of the next order up (Rényi divergence does not decrease with the order).
    """
    orders = np.asarray(orders, dtype=np.float64)
    curve = np.asarray(curve, dtype=np.float64)
    if orders.shape != curve.shape:
        raise ValueError(f"orders and curve must have the same shape, got {orders.shape} "
                         f"and {curve.shape}")
    count = SelectionCount(mean, shape)
    eta, gamma = count.shape, count.gamma
    above_one = orders > 1.0
    if not above_one.any():
        raise ValueError("repeat_and_select_rdp needs an order above 1")
    # the λ̂ term, best over the orders above 1: (1 + η) min (1 - 1/λ̂) ε(λ̂) + log(1/γ)/λ̂
    terms = (1.0 - 1.0 / orders[above_one]) * curve[above_one] - math.log(gamma) / orders[above_one]
    constant = (1.0 + eta) * float(np.min(np.where(np.isnan(terms), np.inf, terms)))
    out = np.full(orders.shape, np.inf)
    log_mean = math.log(count.expected(gamma, eta))  # of the distribution drawn from
    out[above_one] = (curve[above_one] + log_mean / (orders[above_one] - 1.0)
                      + constant)
    # monotone in the order: a bound at a higher order holds at every lower one
    by_order = np.argsort(orders)
    out[by_order] = np.minimum.accumulate(out[by_order][::-1])[::-1]
    return out
