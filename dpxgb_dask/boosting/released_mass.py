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

The draw itself is the random-tree kernel's
(``_core.random_tree.draw_random_tree``, with ``mass``): threshold
``start + j`` among a node's ``width`` candidates weighs

    w_j = floor(2**WEIGHT_BITS · ((1 - u) m_j / Σ m + u / width)) + 1,   u = UNIFORM_SHARE,

its bin's released mass mixed with a uniform share, and the pick is exact integer
arithmetic on the structure stream.
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


class ReleasedMass:
    """The released mass of every feature's bins, over the current cuts (``mass``: float64
    of shape (n_features, max(n_cuts) + 1), the random-tree kernel's ``mass``).

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
        lo, hi = leaf_ranges[:, 0], leaf_ranges[:, 1]
        width = hi - lo + 1
        share = np.maximum(np.asarray(noisy_denominators, dtype=np.float64), 0.0) / width
        # every bin of every leaf, leaf by leaf: one addition per (leaf, bin), in leaf order
        first = np.repeat(np.cumsum(width) - width, width)
        bins = np.repeat(lo, width) + np.arange(int(width.sum())) - first
        np.add.at(self.mass[feature], bins, np.repeat(share, width))
