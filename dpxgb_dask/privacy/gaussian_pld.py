"""The privacy loss distribution (PLD) of the (Poisson-subsampled) Gaussian mechanism under
add/remove of one row, as ``dp_accounting`` builds it, computed over its whole grid at once.

``dp_accounting.pld.privacy_loss_distribution.from_gaussian_mechanism`` discretises the
privacy loss by "connect the dots" (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022,
"Connect the dots: tighter discrete approximations of privacy loss distributions", §2.2):
on the grid ε_i = i·h between the loss's truncation bounds it evaluates the hockey-stick
divergence

    δ(ε) = Φ_upper(x(ε)) − e^ε · Φ_lower(x(ε)),

where x(ε) is the inverse of the privacy loss. With Poisson subsampling at rate q the loss
without subsampling is L₀ = log(1 + (e^ε − 1)/q) (remove) or −log(1 + (e^−ε − 1)/q) (add),
and for the Gaussian of standard deviation σ and sensitivity Δ

    x(ε) = −Δ/2 − L₀·σ²/Δ (remove),    x(ε) = Δ/2 − L₀·σ²/Δ (add).

``dp_accounting`` evaluates x(ε) with one Python call per grid point: some 50,000 calls per
PLD at q = 0.1, which made planning a subsampled fit take seconds (issue 40: calibration was
about 15% of the test run's CPU). :func:`gaussian_pld` evaluates the same expressions, in the
same order of floating-point operations, as NumPy array operations, and hands the divergences
to ``dp_accounting``'s own public pieces: the loss's ``connect_dots_bounds`` and
``pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap``. The result is the same PLD, value
for value (``tests/unit/privacy/test_gaussian_pld.py`` compares it with
``from_gaussian_mechanism``, its slow twin, at rates and deviations the fits use); where an
expression would leave the domain ``dp_accounting`` allows, the scalar code runs instead.
"""
import functools
import math

import numpy as np
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.pld import privacy_loss_mechanism as plm

#: ``dp_accounting``'s defaults for ``from_gaussian_mechanism``, which the accountants use.
LOG_MASS_TRUNCATION_BOUND = -50.0


def _is_close(values, target):
    """``math.isclose(v, target)`` (relative tolerance 1e-9) for each value of an array."""
    return np.abs(values - target) <= 1e-9 * np.maximum(np.abs(values), abs(target))


class _GaussianLoss(plm.GaussianPrivacyLoss):
    """``dp_accounting``'s Gaussian privacy loss whose divergence over an array of ε
    computes the inverse loss as array operations (see the module docstring)."""

    def _loss_without_subsampling(self, epsilons, at_limit):
        """L₀ of each ε (float64 array), with ``common.log_a_times_exp_b_plus_c``'s
        operations: ``a = 1/q``, ``b = ±ε``, ``c = 1 − 1/q < 0``, so
        log(a·e^b + c) = d + log1p(−exp(log(−c) − d)) with d = b + log(a); b = 0 gives
        log(a + c). None where that expression would raise (log(−c) >= d) away from the
        limit ``at_limit`` marks, whose values the caller replaces."""
        q = self.sampling_prob
        a, c = 1 / q, 1 - 1 / q
        b = epsilons if self.adjacency_type == plm.AdjacencyType.REMOVE else -epsilons
        d = b + np.log(a)
        log_minus_c = np.log(-c)
        if np.any((b != 0) & (log_minus_c >= d) & ~at_limit):
            return None
        with np.errstate(invalid="ignore", divide="ignore"):
            out = d + np.log1p(-np.exp(log_minus_c - d))
        out = np.where(b == 0, np.log(a + c), out)
        return out if self.adjacency_type == plm.AdjacencyType.REMOVE else -out

    def _inverse(self, epsilons):
        """x(ε) of each ε, or None (then the scalar code decides)."""
        q, sd, delta = self.sampling_prob, self._standard_deviation, self.sensitivity
        remove = self.adjacency_type == plm.AdjacencyType.REMOVE
        if q == 1.0:
            losses = epsilons
            at_limit = np.zeros(epsilons.shape, dtype=bool)
        else:
            limit = math.log(1 - q) if remove else -math.log(1 - q)
            at_limit = _is_close(epsilons, limit)
            if np.any(epsilons[~at_limit] <= limit) if remove else \
                    np.any(epsilons[~at_limit] > limit):
                return None
            losses = self._loss_without_subsampling(epsilons, at_limit)
            if losses is None:
                return None
            # at the limit the loss without subsampling is -inf (remove) or +inf (add)
            losses = np.where(at_limit, -math.inf if remove else math.inf, losses)
        x = -0.5 * delta - losses * (sd ** 2) / delta
        return x if remove else delta + x

    def get_delta_for_epsilon(self, epsilon):
        """``GaussianPrivacyLoss.get_delta_for_epsilon`` (same values), the inverse loss
        of an array of ε computed at once."""
        if self.adjacency_type == plm.AdjacencyType.REPLACE or np.ndim(epsilon) == 0:
            return super().get_delta_for_epsilon(epsilon)
        epsilons = np.asarray(epsilon)
        deltas = np.zeros_like(epsilons, dtype=float)
        if self.sampling_prob == 1.0:
            inverse_indices = np.full_like(epsilons, True, dtype=bool)
        elif self.adjacency_type == plm.AdjacencyType.ADD:
            inverse_indices = epsilons < -math.log1p(-self.sampling_prob)
        else:
            inverse_indices = epsilons > math.log1p(-self.sampling_prob)
            other_indices = np.logical_not(inverse_indices)
            deltas[other_indices] = -np.expm1(epsilons[other_indices])
        x_cutoffs = self._inverse(epsilons[inverse_indices].astype(float))
        if x_cutoffs is None:
            return super().get_delta_for_epsilon(epsilon)
        deltas[inverse_indices] = (
            self.mu_upper_cdf(x_cutoffs)
            - np.exp(epsilons[inverse_indices] + self.mu_lower_log_cdf(x_cutoffs)))
        return np.clip(deltas, 0, 1)


def _connect_the_dots(loss, value_discretization_interval):
    """The pessimistic connect-the-dots PMF of a continuous monotone ``loss`` (the
    fixed-gap branch of ``dp_accounting``'s PLD construction)."""
    h = value_discretization_interval
    bounds = loss.connect_dots_bounds()
    upper = math.ceil(bounds.epsilon_upper / h)
    lower = math.floor(bounds.epsilon_lower / h)
    deltas = loss.get_delta_for_epsilon(np.arange(lower, upper + 1) * h)
    return pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(h, lower, upper, deltas)


@functools.lru_cache(maxsize=32)
def gaussian_pld(standard_deviation, value_discretization_interval=1e-4, sampling_prob=1.0):
    """The PLD of the Gaussian mechanism of sensitivity 1, Poisson-subsampled at
    ``sampling_prob``, under add/remove of one row: ``from_gaussian_mechanism(
    standard_deviation, value_discretization_interval=..., sampling_prob=...,
    neighboring_relation=ADD_OR_REMOVE_ONE)``, pessimistic and connect-the-dots, computed
    over its grid as array operations.

    Parameters
    ----------
    standard_deviation : float
        σ, in units of the sensitivity (the noise multiplier).
    value_discretization_interval : float
        h, the grid step of the privacy loss.
    sampling_prob : float
        q in (0, 1].

    Returns
    -------
    dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution
        Symmetric when q = 1, else with its remove and add PMFs. Cached by the arguments
        (a budget accounts the same release of every job it holds; ``dp_accounting``'s
        composition returns new objects and changes none).
    """
    def pmf(adjacency):
        return _connect_the_dots(
            _GaussianLoss(standard_deviation, sensitivity=1, pessimistic_estimate=True,
                          log_mass_truncation_bound=LOG_MASS_TRUNCATION_BOUND,
                          sampling_prob=sampling_prob, adjacency_type=adjacency),
            value_discretization_interval)

    remove = pmf(plm.AdjacencyType.REMOVE)
    if sampling_prob == 1.0:
        return pld_lib.PrivacyLossDistribution(remove)
    return pld_lib.PrivacyLossDistribution(remove, pmf(plm.AdjacencyType.ADD))
