"""Where each feature's rows lie, as the one-feature trees' leaf releases tell it (public),
and the random thresholds drawn at its quantiles.

A one-feature tree on feature ``f`` cuts ``f``'s bins into intervals, one per leaf, and its
leaf release gives each leaf a noisy denominator H̃ (its hessian sum, or its row count). Each
leaf's ``max(H̃, 0)`` spread evenly over its bins, summed over the fit's one-feature trees on
``f``, is a histogram of ``f``'s mass: post-processing of releases the fit makes anyway, so
it costs no budget. A node that draws its own feature (an interaction tree's node) can then
put its random threshold at a random quantile of that mass within its reachable bins,
instead of uniformly among its candidates, most of which lie where few rows are when the
public bounds are wide: its children then both hold rows, and the tree's paths combine
features where the data is.
"""
import numpy as np

#: The share of each draw's probability spread evenly over the node's candidates, so that
#: every candidate stays possible and a feature no one-feature tree has released yet (no
#: mass) draws uniformly.
UNIFORM_SHARE = 0.1

#: Each candidate's probability is a whole number of 2**-WEIGHT_BITS of the node's total, so
#: that the draw is exact integer arithmetic on the structure stream (the same on every
#: machine).
WEIGHT_BITS = 24


def quantile_weights(mass, width):
    """Integer weights of a node's candidate thresholds.

    Threshold ``start + j`` (left child: bins up to it) weighs the released mass of its bin,
    mixed with :data:`UNIFORM_SHARE` of uniform weight:

        w_j = floor(2**WEIGHT_BITS · ((1 - u) m_j / Σ m + u / width)) + 1.

    Parameters
    ----------
    mass : ndarray of float64, shape (width,)
        The released mass of the candidates' bins (non-negative; all 0: uniform).
    width : int
        The number of candidates (>= 1).

    Returns
    -------
    ndarray of int64, shape (width,), positive
    """
    total = float(np.cumsum(mass)[-1])  # (in order: the same sum as the rows' kernel)
    share = mass / total if total > 0 else np.zeros(width)
    probability = (1.0 - UNIFORM_SHARE) * share + (UNIFORM_SHARE if total > 0 else 1.0) / width
    return np.floor(probability * 2.0**WEIGHT_BITS).astype(np.int64) + 1


def quantile_weight_rows(mass, width):
    """:func:`quantile_weights` of several nodes at once (the draw's kernel; the function
    above is its one-node twin, and the tests compare them).

    Parameters
    ----------
    mass : ndarray of float64, shape (n_nodes, max_width)
        Each node's candidates' mass, 0 past its ``width``.
    width : ndarray of int64, shape (n_nodes,)

    Returns
    -------
    ndarray of int64, shape (n_nodes, max_width)
        0 past each node's width.
    """
    total = np.cumsum(mass, axis=1)[:, -1:]  # (trailing zeros leave an ordered sum as is)
    has_mass = total > 0
    share = np.divide(mass, total, out=np.zeros_like(mass), where=has_mass)
    uniform = np.where(has_mass, UNIFORM_SHARE, 1.0) / width[:, None]
    weights = np.floor(((1.0 - UNIFORM_SHARE) * share + uniform)
                       * 2.0**WEIGHT_BITS).astype(np.int64) + 1
    return np.where(np.arange(mass.shape[1])[None, :] < width[:, None], weights, 0)


class ReleasedMass:
    """The released mass of every feature's bins, over the current cuts.

    Parameters
    ----------
    n_cuts : ndarray of int, shape (n_features,)
        Feature ``f`` has bins ``0 .. n_cuts[f]`` (the missing bin is not counted).
    """

    def __init__(self, n_cuts):
        n_cuts = np.asarray(n_cuts, dtype=np.int64)
        self.mass = np.zeros((n_cuts.size, int(n_cuts.max(initial=0)) + 1))

    def add_tree(self, feature, leaf_ranges, noisy_denominators):
        """Add one one-feature tree's leaves (post-processing of its leaf release).

        Parameters
        ----------
        feature : int
            The tree's one feature.
        leaf_ranges : ndarray of int64, shape (n_leaves, 2)
            Each leaf's bins ``[lo, hi]`` (both included) of ``feature``.
        noisy_denominators : ndarray of float64, shape (n_leaves,)
            The leaves' released denominators (covers), in the order of ``leaf_ranges``.
        """
        row = self.mass[feature]
        for (lo, hi), h in zip(leaf_ranges, noisy_denominators):
            row[lo:hi + 1] += max(float(h), 0.0) / (hi - lo + 1)

    def draw_thresholds(self, features, start, width, rng):
        """One threshold per node at a random quantile of its feature's reachable mass.

        Parameters
        ----------
        features, start, width : ndarray of int64, shape (n_nodes,)
            Each node's feature and candidates ``start .. start + width - 1`` (width >= 1).
        rng : RandomStream
            The tree's structure stream: one exact draw per node
            (:meth:`~dpxgb_dask.privacy.randomness.RandomStream.uniform_below` of the node's
            total weight), in the nodes' order.

        Returns
        -------
        ndarray of int64, shape (n_nodes,)
        """
        features = np.asarray(features, dtype=np.int64)
        start = np.asarray(start, dtype=np.int64)
        width = np.asarray(width, dtype=np.int64)
        span = np.arange(int(width.max(initial=1)))
        inside = span[None, :] < width[:, None]
        bins = np.where(inside, start[:, None] + span[None, :], 0)
        mass = np.where(inside, self.mass[features[:, None], bins], 0.0)
        weights = quantile_weight_rows(mass, width)
        cumulative = np.cumsum(weights, axis=1)
        picks = rng.uniform_below(cumulative[:, -1])
        # the first candidate whose cumulative weight exceeds the pick
        return start + np.argmax(cumulative > picks[:, None], axis=1)
