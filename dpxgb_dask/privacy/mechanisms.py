"""Laplace, Gaussian and exponential mechanisms on NumPy arrays.

Fixed-point design (why not ``x + rng.laplace(b)``)
--------------------------------------------------
Textbook floating-point noise leaks: Mironov (2012) shows that the set of doubles
``x + Lap(b)`` can take depends on ``x``, so the low-order bits of a release can identify
the input. The Laplace and Gaussian mechanisms here therefore work on a fixed-point grid:

1. The grid step ``g`` is a power of two chosen from the public parameters only
   (sensitivity, ε or σ), never from the data: ``g = 2**(floor(log2 Δ) - 20)`` for Laplace
   and ``g = 2**(floor(log2 σ) - 22)`` for Gaussian, so the noise spans ~2**20 grid steps.
2. The exact value is rounded to the grid, ``k = rint(x / g)`` (exact in binary floating
   point because g is a power of two), giving an integer query.
3. Integer noise is drawn *exactly* (discrete Laplace or discrete Gaussian, Canonne, Kamath &
   Steinke 2020) from uniform integers of a cryptographic stream, and the release is
   ``(k + noise) * g``. The float conversion is a post-processing of an integer DP release,
   so no floating-point artefact can depend on the data.

This is the approach of OpenDP and of Google's libraries (discrete noise on a grid); the
snapping mechanism (Mironov 2012) was not chosen because its proof needs a correctly
rounded logarithm, which NumPy does not guarantee.

Rounding changes the sensitivity slightly. If one row changes at most ``k`` coordinates
(``coords_per_row``) by Δ in total, the integer query changes by at most
``floor(Δ/g) + k`` in L1 and ``Δ/g + sqrt(k)`` in L2 (each coordinate gains at most one
grid step). We add one more grid step (a "discreteness margin", see
:mod:`dpxgb_dask.privacy.accountants`) and size the integer noise so that the nominal
(Δ, ε) or (Δ, σ) the caller asked for is a valid, conservative description of the
release; the extra noise is about 2**-20 of the total.

Exponential mechanism
---------------------
Selection uses the Gumbel-max ("racing") form (DP-XGBoost §4.2 citing Medina & Gillenwater
2020): ``argmax_j (ε u_j / (2Δu) + G_j)`` with i.i.d. standard Gumbel ``G_j`` picks ``j`` with
probability ``∝ exp(ε u_j / (2Δu))`` (McSherry & Talwar 2007; DP-XGBoost eq. after (5);
DPBoost Theorem 2, eq. (8)). It needs only log-weights, so it never overflows or
underflows, and it is vectorised over many independent selections (one per tree node).
The output is an index, so the attack above (which reads low-order bits of a released
real number) does not apply. The Gumbel variates are computed in floating point from
52-bit uniforms that are never 0 or 1; quantisation and rounding perturb the selection
probabilities only at the level of float64 rounding, but this sampler is not exact in the
way the integer samplers are.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np

from .randomness import as_stream
from .samplers import discrete_gaussian, discrete_laplace, gumbel
from .validation import check_epsilon, check_positive

__all__ = [
    "ExponentialMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "combined_noise_multiplier",
    "exponential_mechanism",
    "gaussian_mechanism",
    "laplace_mechanism",
]

LAPLACE_GRID_BITS = 20
GAUSSIAN_GRID_BITS = 22
_INT_LIMIT = float(2**62)
# relative slack covering float rounding in the real-valued bounds below
_ROUNDING_SLACK = 1e-12


def _check_coords(coords_per_row):
    if isinstance(coords_per_row, bool) or not isinstance(coords_per_row, numbers.Integral) or coords_per_row < 1:
        raise ValueError(f"coords_per_row must be an int >= 1, got {coords_per_row!r}")
    return int(coords_per_row)


def _grid_step(value, bits):
    """Largest power of two <= value, divided by 2**bits."""
    _, exponent = math.frexp(value)
    return math.ldexp(1.0, exponent - 1 - bits)


def _to_grid(values, step, name="values"):
    x = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite (NaN or infinity would leak through the noise)")
    scaled = np.rint(x / step)
    if scaled.size and np.max(np.abs(scaled)) >= _INT_LIMIT:
        raise ValueError(
            f"{name} too large for the noise grid: |value| must stay below 2**62 grid steps "
            f"({_INT_LIMIT * step:.3g}); clip the query to public bounds first"
        )
    return scaled.astype(np.int64)


class LaplaceMechanism:
    """ε-DP Laplace mechanism on a fixed-point grid (discrete Laplace noise).

    Releases ``f(D) + Lap(Δ/ε)`` (Dwork & Roth 2014; DP-XGBoost §2
    ``f(D) + Lap(Δf/ε)``; DPBoost Theorem 1, eq. (7)) in the exact discrete form described
    in the module docstring: integer noise with pmf ∝ exp(-|y|/t), t >= Δ_int/ε.

    Parameters
    ----------
    sensitivity : float
        L1 sensitivity Δ of the whole released array under add/remove of one row.
    epsilon : float
        Privacy parameter ε of one release.
    coords_per_row : int, default 1
        Maximum number of entries of the released array that one row can change (e.g.
        ``n_features`` for a (node, feature, bin) histogram). Used only to bound the extra
        sensitivity created by rounding to the grid.

    Attributes
    ----------
    resolution : float
        Grid step g (a power of two); releases are multiples of it.
    integer_scale : int
        Scale t of the discrete Laplace noise in grid steps.
    noise_scale : float
        t·g, the equivalent continuous Laplace scale b (>= Δ/ε).
    epsilon_effective : float
        Exact pure-DP ε of the integer mechanism, (floor(Δ/g) + k)/t <= ``epsilon``.
    """

    def __init__(self, sensitivity, epsilon, *, coords_per_row=1):
        self.sensitivity = check_positive(sensitivity, "sensitivity")
        self.epsilon = check_epsilon(epsilon)
        self.coords_per_row = _check_coords(coords_per_row)
        self.resolution = _grid_step(self.sensitivity, LAPLACE_GRID_BITS)
        int_sensitivity = math.floor(self.sensitivity / self.resolution) + self.coords_per_row
        # +1 grid step: discreteness margin for the continuous RDP/PLD proxies
        self._accounted_sensitivity = int_sensitivity + 1
        t = math.ceil(Fraction(self._accounted_sensitivity) / Fraction(self.epsilon))
        if t > 2**50:
            raise ValueError(
                f"epsilon={self.epsilon!r} is too small for sensitivity={self.sensitivity!r}: "
                "the noise would exceed 2**50 grid steps"
            )
        self.integer_scale = int(t)
        self.noise_scale = self.integer_scale * self.resolution
        self.epsilon_effective = int_sensitivity / self.integer_scale

    def __repr__(self):
        return (
            f"LaplaceMechanism(sensitivity={self.sensitivity!r}, epsilon={self.epsilon!r}, "
            f"coords_per_row={self.coords_per_row})"
        )

    def release(self, values, rng=None):
        """Add discrete Laplace noise to ``values``.

        Parameters
        ----------
        values : array_like of float, any shape
            Exact query answers (e.g. (n_nodes, n_features, n_bins) gradient sums).
        rng : RandomStream or None
            Stream from :meth:`NoiseSource.stream`; None draws from a fresh secure stream.

        Returns
        -------
        ndarray of float64, same shape as ``values``
            Noisy values, multiples of :attr:`resolution`.
        """
        stream = as_stream(rng)
        k = _to_grid(values, self.resolution)
        noise = discrete_laplace(self.integer_scale, k.size, stream).reshape(k.shape)
        return (k + noise).astype(np.float64) * self.resolution

    __call__ = release

    def ledger_fields(self):
        """Fields for :meth:`Ledger.record`: mechanism, sensitivity, epsilon, resolution."""
        return {
            "mechanism": "laplace",
            "sensitivity": self.sensitivity,
            "epsilon": self.epsilon,
            "resolution": self.resolution,
        }


class GaussianMechanism:
    """Gaussian mechanism on a fixed-point grid (exact discrete Gaussian noise).

    Releases ``f(D) + N(0, σ² I)`` with σ = z·Δ₂ (Maddock et al., Fact 2.1:
    ``M(x) = q(x) + N(0, Δ₂(q)² σ² I)`` is (α, α/(2σ²))-RDP; S-BDT Theorem 8), in the exact
    discrete form of Canonne, Kamath & Steinke (2020), which satisfies the same
    (Δ²/2σ²)-zCDP bound.

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity Δ₂ of the whole released array under add/remove of one row.
    sigma : float, optional
        Noise standard deviation σ. Give exactly one of ``sigma`` and ``noise_multiplier``.
    noise_multiplier : float, optional
        z = σ/Δ₂.
    coords_per_row : int, default 1
        Maximum number of entries one row can change (e.g. ``2 * n_features`` for stacked
        (G, H) histograms); bounds the extra L2 sensitivity from rounding (sqrt(k) steps).

    Attributes
    ----------
    sigma, noise_multiplier : float
        Nominal σ and z = σ/Δ₂; the accounting uses z.
    resolution : float
        Grid step g (a power of two).
    integer_scale, integer_shift : int
        The discrete Gaussian has variance t·m grid steps² (``t``, ``m``).
    noise_multiplier_effective : float
        sqrt(t·m) / (Δ₂/g + sqrt(k) + 1) >= ``noise_multiplier``.
    """

    def __init__(self, sensitivity, *, sigma=None, noise_multiplier=None, coords_per_row=1):
        self.sensitivity = check_positive(sensitivity, "sensitivity")
        if (sigma is None) == (noise_multiplier is None):
            raise ValueError("give exactly one of sigma and noise_multiplier")
        if sigma is not None:
            self.sigma = check_positive(sigma, "sigma")
            self.noise_multiplier = self.sigma / self.sensitivity
        else:
            self.noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
            self.sigma = self.noise_multiplier * self.sensitivity
        self.coords_per_row = _check_coords(coords_per_row)
        self.resolution = _grid_step(self.sigma, GAUSSIAN_GRID_BITS)
        accounted = (
            self.sensitivity / self.resolution + math.sqrt(self.coords_per_row) + 1.0
        ) * (1.0 + _ROUNDING_SLACK)
        sigma_int = self.noise_multiplier * accounted * (1.0 + _ROUNDING_SLACK)
        if sigma_int >= 2.0**29:
            raise ValueError(
                "noise_multiplier * sqrt(coords_per_row) is too large for the noise grid "
                f"(noise_multiplier={self.noise_multiplier!r}, coords_per_row={self.coords_per_row})"
            )
        t = math.floor(sigma_int) + 1
        m = math.ceil(Fraction(sigma_int) ** 2 / t)
        self.integer_scale = int(t)
        self.integer_shift = int(m)
        self._accounted_sensitivity = accounted
        self.noise_multiplier_effective = math.sqrt(t * m) / accounted

    def __repr__(self):
        return (
            f"GaussianMechanism(sensitivity={self.sensitivity!r}, sigma={self.sigma!r}, "
            f"coords_per_row={self.coords_per_row})"
        )

    def release(self, values, rng=None):
        """Add discrete Gaussian noise to ``values``.

        Parameters
        ----------
        values : array_like of float, any shape
            Exact query answers.
        rng : RandomStream or None
            Stream from :meth:`NoiseSource.stream`; None draws from a fresh secure stream.

        Returns
        -------
        ndarray of float64, same shape as ``values``
            Noisy values, multiples of :attr:`resolution`.
        """
        stream = as_stream(rng)
        k = _to_grid(values, self.resolution)
        noise = discrete_gaussian(self.integer_scale, self.integer_shift, k.size, stream)
        return (k + noise.reshape(k.shape)).astype(np.float64) * self.resolution

    __call__ = release

    def ledger_fields(self):
        """Fields for :meth:`Ledger.record`: mechanism, sensitivity, noise_multiplier, resolution."""
        return {
            "mechanism": "gaussian",
            "sensitivity": self.sensitivity,
            "noise_multiplier": self.noise_multiplier,
            "resolution": self.resolution,
        }


class ExponentialMechanism:
    """ε-DP exponential mechanism, vectorised over independent selections (Gumbel-max form).

    Candidate j of a node is chosen with probability ∝ exp(ε·u_j / (2Δu))
    (McSherry & Talwar 2007; DP-XGBoost §4.2; DPBoost Theorem 2, eq. (8)), or
    ∝ exp(ε·u_j / Δu) for utilities that are monotonic in the data (all candidates move in
    the same direction when a row is added).

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
    """

    def __init__(self, sensitivity, epsilon, *, monotonic=False):
        self.sensitivity = check_positive(sensitivity, "sensitivity")
        self.epsilon = check_epsilon(epsilon)
        self.monotonic = bool(monotonic)
        self.log_weight_scale = self.epsilon / (self.sensitivity if self.monotonic else 2.0 * self.sensitivity)

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
            Utility of each candidate (e.g. split gain). Must be finite where ``mask`` is True.
        mask : array_like of bool, same shape, optional
            True for valid candidates; invalid ones are never chosen. Default: all valid.
        rng : RandomStream or None
            Stream from :meth:`NoiseSource.stream`; None draws from a fresh secure stream.

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
        any_valid = valid.any(axis=1)
        # subtracting the row maximum leaves the distribution unchanged and keeps the
        # log-weights <= 0, so nothing overflows
        row_max = np.where(any_valid, np.max(np.where(valid, u, -np.inf), axis=1), 0.0)
        log_w = np.where(valid, (u - row_max[:, None]) * self.log_weight_scale, -np.inf)
        # noise is drawn for every cell so the randomness consumed does not depend on the mask
        scores = log_w + gumbel(u.shape, stream)
        choice = np.argmax(scores, axis=1).astype(np.int64)
        choice[~any_valid] = -1
        return int(choice[0]) if one_d else choice

    __call__ = select

    def ledger_fields(self):
        """Fields for :meth:`Ledger.record`: mechanism, sensitivity, epsilon."""
        return {"mechanism": "exponential", "sensitivity": self.sensitivity, "epsilon": self.epsilon}


def laplace_mechanism(values, sensitivity, epsilon, *, rng=None, coords_per_row=1):
    """Release ``values + Lap(sensitivity/epsilon)`` with exact discrete noise on a grid.

    Shorthand for ``LaplaceMechanism(sensitivity, epsilon, coords_per_row=...).release(values, rng)``;
    see :class:`LaplaceMechanism` (Dwork & Roth 2014; DP-XGBoost §2).

    Parameters
    ----------
    values : array_like of float, any shape
    sensitivity : float
        L1 sensitivity of the whole array.
    epsilon : float
    rng : RandomStream or None
    coords_per_row : int, default 1

    Returns
    -------
    ndarray of float64, same shape as ``values``
    """
    return LaplaceMechanism(sensitivity, epsilon, coords_per_row=coords_per_row).release(values, rng)


def gaussian_mechanism(values, sensitivity, *, sigma=None, noise_multiplier=None, rng=None, coords_per_row=1):
    """Release ``values + N(0, σ²)`` with exact discrete Gaussian noise on a grid.

    Shorthand for :class:`GaussianMechanism` (Maddock et al. Fact 2.1; CKS 2020).

    Parameters
    ----------
    values : array_like of float, any shape
    sensitivity : float
        L2 sensitivity of the whole array.
    sigma, noise_multiplier : float
        Exactly one of them.
    rng : RandomStream or None
    coords_per_row : int, default 1

    Returns
    -------
    ndarray of float64, same shape as ``values``
    """
    mech = GaussianMechanism(sensitivity, sigma=sigma, noise_multiplier=noise_multiplier, coords_per_row=coords_per_row)
    return mech.release(values, rng)


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


def combined_noise_multiplier(*noise_multipliers):
    """Noise multiplier of several Gaussian releases of the same rows taken together.

    Releasing parts with noise multipliers z_1..z_n (each σ_i/Δ_i) is, by composition of
    Gaussian mechanisms (Maddock et al., Fact 2.3 with τ_i = α/(2 z_i²)), one Gaussian
    mechanism with ``1/z² = Σ 1/z_i²``. This is how S-BDT's leaf-balanced (non-spherical)
    noise on the gradient and Hessian sums is accounted.

    Parameters
    ----------
    *noise_multipliers : float
        At least one positive value.

    Returns
    -------
    float
        z = (Σ z_i⁻²)^(-1/2).
    """
    if not noise_multipliers:
        raise ValueError("give at least one noise multiplier")
    zs = [check_positive(z, "noise_multiplier") for z in noise_multipliers]
    return 1.0 / math.sqrt(sum(1.0 / (z * z) for z in zs))
