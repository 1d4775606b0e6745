"""Laplace and Gaussian mechanisms on NumPy arrays, with exact discrete noise.

Fixed-point design (why not ``x + rng.laplace(b)``)
---------------------------------------------------
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
grid step). We add a "discreteness margin" (see :mod:`dpxgb_dask.privacy.accountants`):
one more grid step in L1 (Laplace), one more step on each of the k coordinates, i.e.
sqrt(k) in L2 (Gaussian), and size the integer noise so that the nominal (Δ, ε) or (Δ, σ)
the caller asked for is a valid, conservative description of the release; the extra
noise is about k·2**-20 of the total (Laplace) or 2·sqrt(k)·2**-22 (Gaussian). ``coords_per_row=None`` (the default) takes k = the number of entries of the
released array, which is public and always a valid bound; pass the true, smaller k (e.g.
``n_features`` for a histogram) to avoid the extra noise on large arrays.

Values are clipped to ±2**61 grid steps before the noise is added (clipping is
1-Lipschitz, so it never increases the sensitivity); whether a value was clipped is not
revealed by any error. Non-finite values are refused with an error that names no value:
callers clip their queries to public bounds first, which also makes them finite.

The exponential mechanism, sampled exactly on the same kind of grid, is in
:mod:`~dpxgb_dask.privacy.exponential`.
"""


from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np

from .randomness import as_stream
from .samplers import discrete_gaussian, discrete_laplace
from .sensitivity import gradient_histogram_l2_sensitivity
from .validation import check_epsilon, check_positive

__all__ = ["GaussianMechanism", "LaplaceMechanism", "combined_noise_multiplier",
           "distributed_gaussian_tau", "gaussian_mechanism", "histogram_mechanism", "laplace_mechanism"]

LAPLACE_GRID_BITS = 20
GAUSSIAN_GRID_BITS = 22
#: Values are clipped to ±_GRID_CLIP grid steps (public), so integer noise cannot overflow.
_GRID_CLIP = float(2**61)
# relative slack covering float rounding in the real-valued bounds below
_ROUNDING_SLACK = 1e-12


def _check_coords(coords_per_row):
    if coords_per_row is None:
        return None
    if isinstance(coords_per_row, bool) or not isinstance(coords_per_row, numbers.Integral) or coords_per_row < 1:
        raise ValueError(f"coords_per_row must be None or an int >= 1, got {coords_per_row!r}")
    return int(coords_per_row)


def grid_step(value, bits):
    """Largest power of two <= value, divided by 2**bits."""
    _, exponent = math.frexp(value)
    return math.ldexp(1.0, exponent - 1 - bits)


def to_grid(values, step, name="values", clip=_GRID_CLIP):
    """Integer grid coordinates ``rint(clip(x / step))``, clipped to ±``clip`` steps.

    ``step`` is a power of two, so ``x / step`` is exact (or overflows to ±inf, which the
    clip maps to the bound). Clipping is 1-Lipschitz: it never increases a sensitivity, and
    no error reveals whether it happened. Non-finite input is refused with a message that
    names no value; callers are expected to clip queries to public bounds first.
    """
    x = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError(
            f"{name} must be finite: clip the query to public bounds before releasing it "
            "(a NaN or infinity would leak through the noise)"
        )
    with np.errstate(over="ignore"):
        scaled = np.clip(x / step, -clip, clip)
    return np.rint(scaled).astype(np.int64)


def _release_coords(coords_per_row, values):
    """Explicit ``coords_per_row``, or the (public) number of entries of ``values``."""
    if coords_per_row is not None:
        return coords_per_row
    return max(1, int(np.size(values)))


class _GridMechanism:
    """Shared handling of ``coords_per_row`` (explicit, or the released array's size)."""

    def _setup_coords(self, coords_per_row):
        self.coords_per_row = _check_coords(coords_per_row)
        self._params_cache = {}
        self._active = None
        if self.coords_per_row is not None:
            self._activate(self.coords_per_row)  # validate now

    def _activate(self, k):
        params = self._params_cache.get(k)
        if params is None:
            params = self._params(k)
            if len(self._params_cache) > 64:
                self._params_cache.clear()
            self._params_cache[k] = params
        self._active = params
        return params

    def _current(self, name):
        if self._active is None:
            raise ValueError(
                f"{name} depends on coords_per_row, which defaults to the size of the released array: "
                "call release() first or pass coords_per_row"
            )
        return self._active

    @property
    def coords_in_use(self):
        """int: the k bounding the rounding of the last release (or the explicit ``coords_per_row``)."""
        return self._current("coords_in_use")["k"]

    @property
    def _accounted_sensitivity(self):
        return self._current("_accounted_sensitivity")["accounted"]

    def release(self, values, rng=None, noise=None):
        """Add the mechanism's discrete noise to ``values`` on its grid.

        The values are rounded to the grid (an integer query), integer noise is drawn from
        the subclass's exact sampler, and the sum is scaled back: a post-processing of an
        integer DP release.

        Parameters
        ----------
        values : array_like of float, any shape
            Exact query answers (e.g. (n_nodes, n_features, n_bins) gradient sums), finite;
            entries beyond ±2**61 grid steps are clipped.
        rng : RandomStream or None
            Stream from :meth:`~dpxgb_dask.privacy.randomness.NoiseSource.stream`; None
            draws from a fresh secure stream.
        noise : ndarray of int64, optional
            The release's noise drawn beforehand by :meth:`draw_noise` (``rng`` is then
            unused): the noise depends only on the stream and the number of values, so
            it can be drawn while the values are being computed, with the same result.

        Returns
        -------
        ndarray of float64, same shape as ``values``
            Noisy values, multiples of ``resolution``.
        """
        params = self._activate(_release_coords(self.coords_per_row, values))
        k = to_grid(values, self.resolution)
        if noise is None:
            noise = self._integer_noise(params, k.size, as_stream(rng))
        elif np.shape(noise) != (k.size,):
            raise ValueError(f"noise must have shape ({k.size},) for {k.size} values, "
                             f"got {np.shape(noise)}")
        return (k + noise.reshape(k.shape)).astype(np.float64) * self.resolution

    def draw_noise(self, size, rng=None):
        """The integer noise of a release of ``size`` values, for :meth:`release`.

        Parameters
        ----------
        size : int
            Number of values the release will have (public).
        rng : RandomStream or None

        Returns
        -------
        ndarray of int64, shape (size,)
            In grid steps.
        """
        params = self._activate(self.coords_per_row if self.coords_per_row is not None
                                else max(1, int(size)))
        return self._integer_noise(params, int(size), as_stream(rng))

    __call__ = release


class LaplaceMechanism(_GridMechanism):
    """ε-DP Laplace mechanism on a fixed-point grid (discrete Laplace noise).

    Releases ``f(D) + Lap(Δ/ε)`` (Dwork & Roth 2014; DP-XGBoost §2
    ``f(D) + Lap(Δf/ε)``; DPBoost Theorem 1, eq. (7)) in the exact discrete form described
    in the module docstring: integer noise with pmf ``∝ exp(-|y|/t)``, ``t >= Δ_int/ε``.

    Parameters
    ----------
    sensitivity : float
        L1 sensitivity Δ of the whole released array under add/remove of one row.
    epsilon : float
        Privacy parameter ε of one release.
    coords_per_row : int or None, default None
        Maximum number of entries of the released array that one row can change (e.g.
        ``n_features`` for a (node, feature, bin) histogram). Used only to bound the extra
        sensitivity created by rounding to the grid. None: the number of entries of the
        array passed to :meth:`release` (public, always valid, but adds about
        size·2**-20 of relative noise; give the true value for large arrays).

    Attributes
    ----------
    resolution : float
        Grid step g (a power of two); releases are multiples of it.
    integer_scale : int
        Scale t of the discrete Laplace noise in grid steps (for the explicit
        ``coords_per_row``, or for the last release when it is None).
    noise_scale : float
        t·g, the equivalent continuous Laplace scale b (>= Δ/ε).
    epsilon_effective : float
        Exact pure-DP ε of the integer mechanism, (floor(Δ/g) + k)/t <= ``epsilon``.
    """

    def __init__(self, sensitivity, epsilon, *, coords_per_row=None):
        self.sensitivity = check_positive(sensitivity, "sensitivity")
        self.epsilon = check_epsilon(epsilon)
        self.resolution = grid_step(self.sensitivity, LAPLACE_GRID_BITS)
        self._setup_coords(coords_per_row)

    def _params(self, k):
        int_sensitivity = math.floor(self.sensitivity / self.resolution) + k
        # +1 grid step: discreteness margin for the continuous RDP/PLD proxies
        accounted = int_sensitivity + 1
        t = math.ceil(Fraction(accounted) / Fraction(self.epsilon))
        if t > 2**50:
            raise ValueError(
                f"epsilon={self.epsilon!r} is too small for sensitivity={self.sensitivity!r} and "
                f"coords_per_row={k}: the noise would exceed 2**50 grid steps"
            )
        return {"k": k, "accounted": accounted, "t": int(t), "eps": int_sensitivity / int(t)}

    @property
    def integer_scale(self):
        """int: t, the discrete Laplace scale in grid steps."""
        return self._current("integer_scale")["t"]

    @property
    def noise_scale(self):
        """float: t·g, the equivalent continuous Laplace scale."""
        return self.integer_scale * self.resolution

    @property
    def epsilon_effective(self):
        """float: (floor(Δ/g) + k)/t, the exact ε of the integer mechanism."""
        return self._current("epsilon_effective")["eps"]

    def __repr__(self):
        return (
            f"LaplaceMechanism(sensitivity={self.sensitivity!r}, epsilon={self.epsilon!r}, "
            f"coords_per_row={self.coords_per_row})"
        )

    def _integer_noise(self, params, size, stream):
        """Discrete Laplace noise of scale t grid steps, int64 (size,)."""
        return discrete_laplace(params["t"], size, stream)

    def ledger_fields(self, stream=None):
        """Fields for :meth:`~dpxgb_dask.privacy.ledger.Ledger.record`: mechanism, sensitivity, epsilon, resolution.

        Parameters
        ----------
        stream : RandomStream or str or sequence, optional
            The stream(s) of the release; adds the ``stream`` identifier (needed to record
            a replay).
        """
        out = {
            "mechanism": "laplace",
            "sensitivity": self.sensitivity,
            "epsilon": self.epsilon,
            "resolution": self.resolution,
        }
        if stream is not None:
            out["stream"] = stream
        return out


class GaussianMechanism(_GridMechanism):
    """Gaussian mechanism on a fixed-point grid (exact discrete Gaussian noise).

    Releases ``f(D) + N(0, σ² I)`` with σ = z·Δ₂ (Maddock et al., Fact 2.1:
    ``M(x) = q(x) + N(0, Δ₂(q)² σ² I)`` is (α, α/(2σ²))-RDP; S-BDT Theorem 8), in the exact
    discrete form of Canonne, Kamath & Steinke (2020), which satisfies the same
    (Δ²/2σ²)-zCDP bound (their Theorem 15 for vectors, up to terms in exp(-2π²σ²) that
    vanish for σ >= 2**22 grid steps; see :mod:`dpxgb_dask.privacy.accountants` for what the
    PLD accountant assumes).

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity Δ₂ of the whole released array under add/remove of one row.
    sigma : float, optional
        Noise standard deviation σ. Give exactly one of ``sigma`` and ``noise_multiplier``.
    noise_multiplier : float, optional
        z = σ/Δ₂.
    coords_per_row : int or None, default None
        Maximum number of entries one row can change (e.g. ``2 * n_features`` for stacked
        (G, H) histograms); bounds the extra L2 sensitivity from rounding (sqrt(k) steps).
        None: the number of entries of the array passed to :meth:`release`.

    Attributes
    ----------
    sigma, noise_multiplier : float
        Nominal σ and z = σ/Δ₂; the accounting uses z.
    resolution : float
        Grid step g (a power of two).
    integer_scale, integer_shift : int
        The discrete Gaussian has variance t·m grid steps² (``t``, ``m``).
    noise_multiplier_effective : float
        sqrt(t·m) / (Δ₂/g + 2·sqrt(k)) >= ``noise_multiplier``.
    """

    def __init__(self, sensitivity, *, sigma=None, noise_multiplier=None, coords_per_row=None):
        self.sensitivity = check_positive(sensitivity, "sensitivity")
        if (sigma is None) == (noise_multiplier is None):
            raise ValueError("give exactly one of sigma and noise_multiplier")
        if sigma is not None:
            self.sigma = check_positive(sigma, "sigma")
            self.noise_multiplier = self.sigma / self.sensitivity
        else:
            self.noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
            self.sigma = self.noise_multiplier * self.sensitivity
        self.resolution = grid_step(self.sigma, GAUSSIAN_GRID_BITS)
        self._setup_coords(coords_per_row)

    def _params(self, k):
        accounted = (self.sensitivity / self.resolution + self.margin_steps(k)) * (1.0 + _ROUNDING_SLACK)
        sigma_int = self.noise_multiplier * accounted * (1.0 + _ROUNDING_SLACK)
        if sigma_int >= 2.0**29:
            raise ValueError(
                "noise_multiplier * sqrt(coords_per_row) is too large for the noise grid "
                f"(noise_multiplier={self.noise_multiplier!r}, coords_per_row={k})"
            )
        t = math.floor(sigma_int) + 1
        m = math.ceil(Fraction(sigma_int) ** 2 / t)
        return {"k": k, "accounted": accounted, "t": int(t), "m": int(m), "z": math.sqrt(t * m) / accounted}

    @staticmethod
    def margin_steps(k):
        """Grid steps added to Δ/g when a row changes ``k`` coordinates: sqrt(k) for their
        rounding and sqrt(k) for the discreteness margin of one step per coordinate, which
        lets the continuous RDP/PLD curves describe the vector discrete Gaussian
        (:mod:`~dpxgb_dask.privacy.accountants`).

        Parameters
        ----------
        k : int

        Returns
        -------
        float
            2·sqrt(k).
        """
        return 2.0 * math.sqrt(k)

    @property
    def integer_scale(self):
        """int: t, the proposal scale of the discrete Gaussian (σ² = t·m grid steps²)."""
        return self._current("integer_scale")["t"]

    @property
    def integer_shift(self):
        """int: m, with σ² = t·m grid steps²."""
        return self._current("integer_shift")["m"]

    @property
    def noise_multiplier_effective(self):
        """float: sqrt(t·m) / (Δ₂/g + 2·sqrt(k)) >= ``noise_multiplier``."""
        return self._current("noise_multiplier_effective")["z"]

    def __repr__(self):
        return (
            f"GaussianMechanism(sensitivity={self.sensitivity!r}, sigma={self.sigma!r}, "
            f"coords_per_row={self.coords_per_row})"
        )

    def _integer_noise(self, params, size, stream):
        """Discrete Gaussian noise with σ² = t·m grid steps², int64 (size,)."""
        return discrete_gaussian(params["t"], params["m"], size, stream)

    def share_parameters(self, n_shares):
        """One silo's share of this mechanism's noise in the distributed discrete Gaussian
        (Kairouz, Liu & Steinke, ICML 2021): each of ``n_shares`` silos adds
        N_Z(0, t_s·m_s) with ``n_shares·t_s·m_s >= t·m``, so the sum of the shares has at
        least the central mechanism's variance parameter.

        The sum of n independent N_Z(0, σ_s²) added to an integer query of L2 sensitivity Δ
        in d dimensions is ε²/2-zCDP with
        ``ε = min(sqrt(Δ²/(nσ_s²) + τd/2), Δ/sqrt(nσ_s²) + τ sqrt(d))`` and
        ``τ = 10 Σ_{k=1}^{n-1} exp(-2π²σ_s² k/(k+1))`` (their Theorem for the sum of
        discrete Gaussians). Here σ_s >= 2**22/sqrt(n) grid steps, so τ is below 1e-300
        (0 in float64, not exactly 0: :func:`distributed_gaussian_tau` is checked to
        underflow), the ε it adds is below 1e-290, and the sum is accounted as
        (Δ²/(2 t·m))-zCDP, the central Gaussian's RDP curve α/(2z²).

        Parameters
        ----------
        n_shares : int
            Silos adding a share (>= 2).

        Returns
        -------
        (t_s, m_s) : tuple of int
            The share's discrete Gaussian has variance parameter t_s·m_s grid steps².
        """
        if isinstance(n_shares, bool) or not isinstance(n_shares, numbers.Integral) \
                or n_shares < 2:
            raise ValueError(f"n_shares must be an int >= 2, got {n_shares!r}")
        params = self._current("share_parameters")
        share = Fraction(params["t"] * params["m"], int(n_shares))
        t = math.isqrt(share.numerator // share.denominator) + 1
        m = math.ceil(share / t)
        if distributed_gaussian_tau(t * m, n_shares) != 0.0:
            raise ValueError("the noise shares are too small for the distributed discrete "
                             "Gaussian's bound to equal the central one (tau > 0)")
        return int(t), int(m)

    def draw_share(self, size, n_shares, rng=None):
        """One silo's integer noise share of a release of ``size`` values
        (:meth:`share_parameters`).

        Parameters
        ----------
        size : int
        n_shares : int
        rng : RandomStream or None
            The silo's own stream.

        Returns
        -------
        ndarray of int64, shape (size,)
        """
        self._activate(self.coords_per_row if self.coords_per_row is not None
                       else max(1, int(size)))
        t, m = self.share_parameters(n_shares)
        return discrete_gaussian(t, m, int(size), as_stream(rng))

    def ledger_fields(self, stream=None):
        """Fields for :meth:`~dpxgb_dask.privacy.ledger.Ledger.record`: mechanism, sensitivity, noise_multiplier, resolution.

        Parameters
        ----------
        stream : RandomStream or str or sequence, optional
            The stream(s) of the release; adds the ``stream`` identifier.
        """
        out = {
            "mechanism": "gaussian",
            "sensitivity": self.sensitivity,
            "noise_multiplier": self.noise_multiplier,
            "resolution": self.resolution,
        }
        if stream is not None:
            out["stream"] = stream
        return out


def distributed_gaussian_tau(share_variance, n_shares):
    """τ of the distributed discrete Gaussian (Kairouz, Liu & Steinke, ICML 2021):
    ``10 Σ_{k=1}^{n-1} exp(-2π²σ_s² k/(k+1))``, the term by which the sum of ``n_shares``
    discrete Gaussians of variance parameter σ_s² can be less private than one of n σ_s².

    Parameters
    ----------
    share_variance : float
        σ_s², in grid steps².
    n_shares : int

    Returns
    -------
    float
    """
    return 10.0 * sum(math.exp(-2.0 * math.pi ** 2 * share_variance * k / (k + 1))
                      for k in range(1, int(n_shares)))


def laplace_mechanism(values, sensitivity, epsilon, *, rng=None, coords_per_row=None):
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
    coords_per_row : int or None, default None
        None: the number of entries of ``values`` (see :class:`LaplaceMechanism`).

    Returns
    -------
    ndarray of float64, same shape as ``values``
    """
    return LaplaceMechanism(sensitivity, epsilon, coords_per_row=coords_per_row).release(values, rng)


def gaussian_mechanism(values, sensitivity, *, sigma=None, noise_multiplier=None, rng=None, coords_per_row=None):
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
    coords_per_row : int or None, default None
        None: the number of entries of ``values`` (see :class:`GaussianMechanism`).

    Returns
    -------
    ndarray of float64, same shape as ``values``
    """
    mech = GaussianMechanism(sensitivity, sigma=sigma, noise_multiplier=noise_multiplier, coords_per_row=coords_per_row)
    return mech.release(values, rng)


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


def histogram_mechanism(n_features, gradient_bound, denominator_bound, noise_multiplier,
                        n_joint=1):
    """The Gaussian mechanism of one level's (G, H) histograms
    (:class:`~dpxgb_dask.boosting.splits.NoisyHistogramSplits`, and the three cells per
    feature of :class:`~dpxgb_dask.boosting.splits.PartiallyRandomSplits`).

    One row adds (g, h) to one bin of each of the ``F`` features, so the L2 sensitivity of
    the release is ``sqrt(F (g*² + h*²))`` over the 2F coordinates one row touches, one σ
    for G and H alike (Maddock et al. §4.3.1).

    Parameters
    ----------
    n_features : int
    gradient_bound, denominator_bound : float
        A row's L2 bounds in the release (``boosting.plan.ReleasePlan.row_bounds``: g* and
        h*, or 1 for counts; the joint bounds of a multiclass round).
    noise_multiplier : float
    n_joint : int
        Trees whose histograms are released jointly (K of a multiclass round): a row
        changes ``2 F n_joint`` entries of the joint release, which sizes the margin of the
        integer rounding (:mod:`~dpxgb_dask.privacy.mechanisms`).

    Returns
    -------
    GaussianMechanism
    """
    sensitivity = gradient_histogram_l2_sensitivity(gradient_bound, denominator_bound,
                                                    n_features)
    return GaussianMechanism(sensitivity, noise_multiplier=noise_multiplier,
                             coords_per_row=2 * n_features * n_joint)
