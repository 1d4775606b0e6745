"""Split candidates and feature bounds: the DP releases that fix them, once per fit or per
tree, and their post-processing into cut points.

Candidates are equal-width cuts over the public bounds (no release), a DP sketch (a Laplace
histogram of equal-width fine bins, then the weighted quantile sketch of ``_core.sketch``:
DP-XGBoost §4.1), or refreshed from a Gaussian release of the root's hessian histogram
(Maddock et al.'s iterative Hessian, §4.5.2). Bounds are public, or estimated from Laplace
counts of rows by sign and binary magnitude.
"""
import math

import numpy as np

from .. import categories
from ..privacy.mechanisms import GaussianMechanism, LaplaceMechanism
from ..privacy.validation import DPBoundsWarning
from .plan import BOUNDS_MIN_EXPONENT, BOUNDS_N_EXPONENTS
from ..partition.summaries import histogram_summaries, summary_cuts


def uniform_cuts(feature_bounds, max_bin):
    """``max_bin - 1`` equal-width cuts per feature over the public bounds (public)."""
    return [np.linspace(lo, hi, max_bin + 1)[1:-1] for lo, hi in feature_bounds]


def sketch_cuts(noisy_weights, feature_bounds, max_bin):
    """Cut points from DP histograms of row weights (DP-XGBoost §4.1): the noisy bins,
    clipped at zero, are weighted points of the weighted quantile sketch (post-processing:
    :mod:`~dpxgb_dask.partition.summaries`).

    Parameters
    ----------
    noisy_weights : ndarray of float64, shape (n_features, n_fine_bins)
    feature_bounds : ndarray of float64, shape (n_features, 2)
    max_bin : int

    Returns
    -------
    list of ndarray of float64
    """
    return summary_cuts(histogram_summaries(noisy_weights, feature_bounds), feature_bounds,
                        max_bin)


def hessian_refined_cuts(noisy_hessians, cuts, feature_bounds, max_bin, uniform_share=0.1):
    """Iterative-Hessian candidates (Maddock et al. §4.5.2): new cuts at the quantiles of
    the Hessian mass released over the current bins (post-processing).

    The released mass of each current bin is spread uniformly over the bin (mixed with a
    ``uniform_share`` of the uniform density, so that empty regions keep some candidates),
    and the ``max_bin - 1`` quantiles of that density are the new cuts: bins where the
    Hessian mass is large are split finer.

    Parameters
    ----------
    noisy_hessians : ndarray of float64, shape (n_features, n_bins)
        Noisy Hessian sums per current bin (the last bin, missing values, is ignored).
    cuts : list of ndarray of float64
    feature_bounds : ndarray of float64, shape (n_features, 2)
    max_bin : int

    Returns
    -------
    list of ndarray of float64
    """
    new = []
    targets = np.arange(1, max_bin) / max_bin
    for f, ((lo, hi), c) in enumerate(zip(feature_bounds, cuts)):
        edges = np.concatenate([[lo], c, [hi]])
        mass = np.clip(noisy_hessians[f, :edges.size - 1], 0.0, None)
        total = mass.sum()
        widths = np.diff(edges)
        density = (1.0 - uniform_share) * (mass / total if total > 0 else widths / (hi - lo)) \
            + uniform_share * widths / (hi - lo)
        cdf = np.concatenate([[0.0], np.cumsum(density)])
        cdf /= cdf[-1]
        refined = np.interp(targets, cdf, edges)
        refined = np.unique(refined[(refined > lo) & (refined < hi)])
        new.append(refined)
    return new


#: Probability that the DP bounds estimate is wider than needed because of noise alone.
BOUNDS_FAILURE_PROBABILITY = 0.01
#: Bounds of a feature whose DP estimate found nothing above the noise.
DEFAULT_UNRESOLVED_BOUNDS = (-1.0, 1.0)


def bounds_from_magnitude_counts(noisy, noise_scale, n_exponents, min_exponent):
    """Feature bounds from DP counts of rows by sign and binary magnitude (post-processing).

    The outermost bins whose noisy count clears ``noise_scale · log(size / 2β)`` (β =
    ``BOUNDS_FAILURE_PROBABILITY``: the chance that Laplace noise alone clears it) give
    each feature's (lo, hi); a feature with no such bin takes
    ``DEFAULT_UNRESOLVED_BOUNDS``.

    Parameters
    ----------
    noisy : ndarray of float64, shape (n_features, 2 * n_exponents + 1)
        Laplace release of
        :func:`~dpxgb_dask.partition.aggregates.log2_magnitude_histogram` (its bin layout).
    noise_scale : float
        The Laplace scale Δ/ε of that release.
    n_exponents, min_exponent : int

    Returns
    -------
    bounds : ndarray of float64, shape (n_features, 2)
    unresolved : list of int
        Features that took the default.
    """
    n_features, n_bins = noisy.shape
    threshold = noise_scale * math.log(noisy.size / (2 * BOUNDS_FAILURE_PROBABILITY))
    k = n_exponents
    # Bin edges: negative bins n-1-k hold [-2^(k+1+m), -2^(k+m)); the middle bin holds
    # (-2^m, 2^m); positive bins n+1+k hold [2^(k+m), 2^(k+1+m)).
    upper = np.empty(n_bins)
    lower = np.empty(n_bins)
    e = min_exponent + np.arange(k)
    lower[k + 1:], upper[k + 1:] = 2.0**e, 2.0 ** (e + 1)
    lower[:k], upper[:k] = -(2.0 ** (e[::-1] + 1)), -(2.0 ** e[::-1])
    lower[k], upper[k] = -(2.0**min_exponent), 2.0**min_exponent
    bounds = np.empty((n_features, 2))
    unresolved = []
    for f in range(n_features):
        above = np.flatnonzero(noisy[f] > threshold)
        if above.size == 0:
            unresolved.append(f)
            bounds[f] = DEFAULT_UNRESOLVED_BOUNDS
        else:
            bounds[f] = lower[above[0]], upper[above[-1]]
    return bounds, unresolved


def data_bounds(stacked_min_max):
    """Bounds forced from the data (``feature_bounds="data"``, not DP: the user was warned).

    Parameters
    ----------
    stacked_min_max : ndarray of float64, shape (n_partitions, n_features, 2)
        Exact per-partition (nanmin, nanmax), NaN for all-missing.

    Returns
    -------
    ndarray of float64, shape (n_features, 2) with lo < hi
    """
    with np.errstate(all="ignore"):
        lo = np.nanmin(stacked_min_max[:, :, 0], axis=0)
        hi = np.nanmax(stacked_min_max[:, :, 1], axis=0)
    lo = np.where(np.isnan(lo), 0.0, lo)
    hi = np.where(np.isnan(hi) | (hi <= lo), lo + 1.0, hi)
    return np.stack([lo, hi], axis=1)


class CandidateReleases:
    """The fit's releases of feature bounds and split candidates, built once per fit.

    Each method takes the exact aggregate the coordinator reduced, releases it with the
    plan's noise and returns the post-processed result with the release's ledger fields.

    Parameters
    ----------
    plan : ReleasePlan
    streams : FitStreams
    """

    def __init__(self, plan, streams):
        p = self.params = plan.params
        self.plan, self.streams = plan, streams
        self.n_features = plan.n_features
        sketch = plan.releases.get("sketch")
        if p.split_candidates == "dp_sketch_per_tree":
            self.tree_sketch_mechanism = LaplaceMechanism(
                sketch.sensitivity, sketch.epsilon, coords_per_row=self.n_features)
        if p.split_candidates == "iterative_hessian" and sketch is not None:
            self.refresh_mechanism = GaussianMechanism(
                sketch.sensitivity, noise_multiplier=sketch.noise_multiplier,
                coords_per_row=self.n_features)

    def bounds(self, counts):
        """DP feature bounds: Laplace counts of rows by sign and binary magnitude; the
        outermost bins whose noisy count clears a threshold give the bounds.

        Parameters
        ----------
        counts : ndarray of float64, shape (n_features, 2 * BOUNDS_N_EXPONENTS + 1)
            Exact (:func:`~dpxgb_dask.partition.aggregates.log2_magnitude_histogram`).

        Returns
        -------
        bounds : ndarray of float64, shape (n_features, 2)
        event : dict
        warning : tuple (category, message) or None
            Post-processing of the release: the features nothing cleared the noise for.
        """
        event = self.plan.bounds_event()
        # One row adds 1 to one bin of each feature: L1 sensitivity F over F coordinates.
        mechanism = LaplaceMechanism(event["sensitivity"], event["epsilon"],
                                     coords_per_row=self.n_features)
        noisy = mechanism.release(counts, self.streams.noise_stream("bounds"))
        bounds, unresolved = bounds_from_magnitude_counts(
            noisy, event["sensitivity"] / event["epsilon"], BOUNDS_N_EXPONENTS,
            BOUNDS_MIN_EXPONENT)
        warning = None
        if unresolved:
            # nothing clears the noise (a feature that is mostly missing, or too small a
            # budget): a public default
            warning = (DPBoundsWarning, (
                f"the DP bounds estimate found no magnitude above the noise for features "
                f"{unresolved}; they use the public default range "
                f"{DEFAULT_UNRESOLVED_BOUNDS}. Give feature_bounds or a larger "
                "bounds_epsilon."))
        return bounds, event, warning

    def fit_sketch(self, histogram, bounds, weight):
        """The DP sketch of every row, once per fit (DP-XGBoost §4.1): each row weighs its
        hessian at the initial margin (1 for counts).

        Parameters
        ----------
        histogram : ndarray of float64, shape (n_features, n_sketch_bins)
            Exact (:func:`~dpxgb_dask.partition.aggregates.fine_histogram`).
        bounds : ndarray of float64, shape (n_features, 2)
        weight : float

        Returns
        -------
        cuts : list of ndarray of float64
        event : dict
        """
        mechanism, event = self.fit_sketch_release(weight)
        noisy = mechanism.release(histogram, self.streams.noise_stream("sketch"))
        return sketch_cuts(noisy, bounds, self.params.max_bin), event

    def fit_sketch_release(self, weight):
        """The mechanism and ledger fields of the fit's DP sketch (:meth:`fit_sketch`): one
        row adds ``weight`` to one fine bin of each feature (L1 sensitivity F·weight).

        Parameters
        ----------
        weight : float

        Returns
        -------
        mechanism : LaplaceMechanism
        event : dict
        """
        event = self.plan.event("sketch", n_parallel=self.params.n_sketch_bins,
                                sensitivity=self.n_features * weight)
        return LaplaceMechanism(event["sensitivity"], event["epsilon"],
                                coords_per_row=self.n_features), event

    def tree_sketch(self, tree, histogram, bounds):
        """DP-XGBoost's sketch of tree ``tree``'s rows: Laplace noise on their fine
        histogram (:func:`~dpxgb_dask.partition.aggregates.tree_fine_histogram`), then the
        weighted quantile cuts.

        Returns
        -------
        cuts : list of ndarray of float64
        event : dict
        """
        p = self.params
        event = self.plan.tree_event("sketch", tree, n_parallel=p.n_sketch_bins)
        noisy = self.tree_sketch_mechanism.release(
            histogram, self.streams.noise_stream("sketch", tree))
        cuts = sketch_cuts(noisy, bounds, p.max_bin)
        return categories.cuts_and_bounds(p.categories, cuts, bounds)[0], event

    def hessian_refresh(self, tree, root, cuts, bounds):
        """Iterative Hessian: release the root's hessian histogram of tree ``tree`` (counts
        without Newton steps) and refine the cuts where its mass is.

        Parameters
        ----------
        root : ndarray of HISTOGRAM_DTYPE, shape (1, n_features, n_bins)
            Exact.
        cuts : list of ndarray of float64
        bounds : ndarray of float64, shape (n_features, 2)

        Returns
        -------
        cuts : list of ndarray of float64
        event : dict
        """
        p = self.params
        event = self.plan.tree_event("sketch", tree, n_parallel=root.shape[2])
        h_values = (root[0]["sum_hessians"] if p.hessian_denominators
                    else root[0]["count"].astype(np.float64))
        noisy = self.refresh_mechanism.release(h_values,
                                               self.streams.noise_stream("sketch", tree))
        refined = hessian_refined_cuts(noisy, cuts, bounds, p.max_bin)
        return categories.cuts_and_bounds(p.categories, refined, bounds)[0], event
