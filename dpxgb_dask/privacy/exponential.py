"""The exponential mechanism, sampled exactly (no floating point in the choice).

Candidate ``j`` is chosen with probability ``∝ exp(ε u_j / (2Δu))`` (McSherry & Talwar
2007; DP-XGBoost eq. after (5); DPBoost Theorem 2, eq. (8)), sampled *exactly*:

1. Utilities are clipped to ±2**60 steps of a public power-of-two grid
   ``g_u = 2**(floor(log2 Δu) - 20)`` and rounded, ``K_j = rint(u_j / g_u)``; one row changes
   every ``K_j`` by at most ``Δ_K = floor(Δu / g_u) + 1`` (rounding adds at most one step,
   clipping none). Δu must bound the change of each utility *as passed*: a term common to
   every candidate cancels from the exact probabilities, but not from the rounded
   utilities (rint(x - c) - rint(x) - c takes different values for different x), so a
   data-dependent common term left in the utilities can move a ``K_j`` by ``Δ_K + 1``
   and exceed ε. Callers drop such terms first (the split gains leave out the parent's
   term, ``dpxgb_dask.boosting.gains.split_gains``).
2. The weights are ``2^(λ K_j)`` with a dyadic rational ``λ = n / 2**q`` rounded *down*
   from ``ε / (2 Δ_K ln 2)`` (``ε / (Δ_K ln 2)`` for monotonic utilities), using a rational
   upper bound of ln 2. One row then changes every log-weight by at most
   ``λ ln2 Δ_K <= ε/2`` (``<= ε``, all in the same direction, for monotonic utilities), so
   the selection is ε-DP and ε-bounded-range (Durfee & Rogers 2019), the property the RDP
   accountant's ε²/8-zCDP bound rests on (Cesar & Rogers 2021).
3. The index is drawn with probability exactly ``∝ 2^(-λ (K_max - K_j))`` by
   :func:`~dpxgb_dask.privacy.samplers.exponential_choice_base2` (uniform integers and exact
   Bernoulli trials only, no floating point; every candidate keeps a positive probability).

No δ is therefore needed for the exponential mechanism. The weights differ from the nominal
``exp(ε u / (2Δu))`` only by the relative 2**-20 of the grid. The earlier Gumbel-max sampler
truncated its Gumbel variates and gave probability 0 to candidates about 40 nats behind.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .mechanisms import grid_step, to_grid
from .randomness import as_stream
from .samplers import exponential_choice_base2
from .validation import check_epsilon, check_positive

__all__ = ["ExponentialMechanism", "exponential_mechanism"]

UTILITY_GRID_BITS = 20
_UTILITY_CLIP = float(2**60)
# a rational upper bound of ln 2 = 0.693147180559945309417...
_LN2_UPPER = Fraction(6931471805599454, 10**16)


class ExponentialMechanism:
    """ε-DP exponential mechanism, vectorised over independent selections, sampled exactly.

    Candidate j of a node is chosen with probability ∝ exp(ε·u_j / (2Δu))
    (McSherry & Talwar 2007; DP-XGBoost §4.2; DPBoost Theorem 2, eq. (8)), or
    ∝ exp(ε·u_j / Δu) for utilities that are monotonic in the data (all candidates move in
    the same direction when a row is added), up to the rounding of the utilities to a grid
    of relative step 2**-20 and of the weight exponent downwards (module docstring).

    Parameters
    ----------
    sensitivity : float
        Δu, the largest change of one utility under add/remove of one row (e.g.
        :func:`~dpxgb_dask.privacy.sensitivity.dpboost_gain_sensitivity`).
    epsilon : float
        ε of one selection; selections on disjoint rows (nodes of one depth) compose in
        parallel.
    monotonic : bool, default False
        Use the monotonic-utility form ε·u/Δu (do not set for split gains).

    Attributes
    ----------
    log_weight_scale : float
        Nominal ε/(2Δu) (ε/Δu if monotonic).
    resolution : float
        Grid step g_u of the rounded utilities (a power of two).
    sensitivity_steps : int
        Δ_K = floor(Δu/g_u) + 1, the largest change of a rounded utility.
    weight_numerator, weight_log2_denominator : int
        λ = n / 2**q: candidate j has weight 2^(λ·rint(u_j/g_u)).
    """

    def __init__(self, sensitivity, epsilon, *, monotonic=False):
        self.sensitivity = check_positive(sensitivity, "sensitivity")
        self.epsilon = check_epsilon(epsilon)
        self.monotonic = bool(monotonic)
        self.log_weight_scale = self.epsilon / (self.sensitivity if self.monotonic else 2.0 * self.sensitivity)
        self.resolution = grid_step(self.sensitivity, UTILITY_GRID_BITS)
        delta_k = self.sensitivity_steps = math.floor(self.sensitivity / self.resolution) + 1
        # λ <= ε / (c Δ_K ln 2), rounded down to n / 2**q with n < 2**62 and q <= 56
        lam = Fraction(self.epsilon) / ((1 if self.monotonic else 2) * delta_k * _LN2_UPPER)
        q = max(0, min(56, 61 - math.ceil(lam).bit_length()))
        self.weight_numerator = min(int(math.floor(lam * 2**q)), 2**62 - 1)
        self.weight_log2_denominator = q

    def __repr__(self):
        return (
            f"ExponentialMechanism(sensitivity={self.sensitivity!r}, epsilon={self.epsilon!r}, "
            f"monotonic={self.monotonic})"
        )

    def select(self, utilities, mask=None, rng=None):
        """Choose one candidate per node.

        Parameters
        ----------
        utilities : array_like of float64, shape (n_nodes, n_candidates) or (n_candidates,)
            Utility of each candidate (e.g. split gain). Must be finite where ``mask`` is
            True; values beyond ±2**60 grid steps are clipped (no error reveals it).
        mask : array_like of bool, same shape, optional
            True for valid candidates; invalid ones are never chosen. Default: all valid.
        rng : RandomStream or None
            Stream from :meth:`~dpxgb_dask.privacy.randomness.NoiseSource.stream`; None draws from a fresh secure stream.

        Returns
        -------
        ndarray of int64, shape (n_nodes,), or int for 1-D input
            Chosen candidate index per node, -1 for a node without any valid candidate.
        """
        stream = as_stream(rng)
        u = np.asarray(utilities, dtype=np.float64)
        one_d = u.ndim == 1
        if one_d:
            u = u[None, :]
        if u.ndim != 2:
            raise ValueError(f"utilities must have shape (n_nodes, n_candidates), got shape {np.shape(utilities)}")
        if mask is None:
            valid = np.ones(u.shape, dtype=bool)
        else:
            valid = np.asarray(mask)
            if valid.dtype != np.bool_:
                raise ValueError(f"mask must be a boolean array, got dtype {valid.dtype}")
            if one_d:
                valid = valid[None, :]
            if valid.shape != u.shape:
                raise ValueError(f"mask shape {np.shape(mask)} does not match utilities shape {np.shape(utilities)}")
        if not np.all(np.isfinite(u[valid])):
            raise ValueError("utilities must be finite for every valid candidate")
        k = self.grid_utilities(np.where(valid, u, 0.0))
        any_valid = valid.any(axis=1)
        k = np.where(valid, k, 0)
        k_max = np.where(any_valid, np.max(np.where(valid, k, -(2**62)), axis=1, initial=-(2**62)), 0)
        distance = np.where(valid, k_max[:, None] - k, 0)
        choice = exponential_choice_base2(
            distance, self.weight_numerator, self.weight_log2_denominator, stream, valid=valid
        )
        return int(choice[0]) if one_d else choice

    __call__ = select

    def grid_utilities(self, utilities):
        """The rounded utilities K = rint(clip(u / g_u)), whose changes Δ_K bounds.

        Parameters
        ----------
        utilities : array_like of float64, any shape, finite

        Returns
        -------
        ndarray of int64, same shape
        """
        return to_grid(utilities, self.resolution, "utilities", clip=_UTILITY_CLIP)

    def ledger_fields(self, stream=None):
        """Fields for :meth:`~dpxgb_dask.privacy.ledger.Ledger.record`: mechanism, sensitivity, epsilon.

        Parameters
        ----------
        stream : RandomStream or str or sequence, optional
            The stream(s) of the selection; adds the ``stream`` identifier.
        """
        out = {"mechanism": "exponential", "sensitivity": self.sensitivity, "epsilon": self.epsilon}
        if stream is not None:
            out["stream"] = stream
        return out


def exponential_mechanism(utilities, sensitivity, epsilon, *, mask=None, rng=None, monotonic=False):
    """Choose one candidate per node with probability ∝ exp(ε u / (2Δu)).

    Shorthand for :meth:`ExponentialMechanism.select` (McSherry & Talwar 2007;
    DP-XGBoost §4.2; DPBoost eq. (8)).

    Parameters
    ----------
    utilities : array_like of float64, shape (n_nodes, n_candidates)
    sensitivity : float
    epsilon : float
    mask : array_like of bool, optional
    rng : RandomStream or None
    monotonic : bool, default False

    Returns
    -------
    ndarray of int64, shape (n_nodes,)
        Chosen index per node, -1 where no candidate is valid.
    """
    return ExponentialMechanism(sensitivity, epsilon, monotonic=monotonic).select(utilities, mask=mask, rng=rng)
