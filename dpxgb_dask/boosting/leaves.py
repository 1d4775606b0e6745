"""The leaf methods: a tree's leaf values from its leaves' exact sums, and what that
releases; and the initial score, the one leaf every row starts in.

A method is an object built once per fit (:func:`make_leaf_method`) from the release plan;
a call releases the leaves of one tree and takes per-tree arguments only. Leaves hold
disjoint rows, so all leaves of a tree are one release (parallel composition).

Every leaf value is ``V = -G̃ / (max(H̃, N) + λ)`` on released sums (:func:`leaf_values`),
or a released value itself (Laplace leaves): ``N = min_child_weight`` is a floor on the
denominator, never an eligibility test on exact counts, which would leak.

Each leaf also gets a *cover*, the mass TreeSHAP weighs its paths by (XGBoost's
``sum_hessian``): the leaf's released denominator (hessian sum or count) floored as in the
value, post-processing of the same release; Laplace leaves release no mass, and each of
their leaves gets cover 1 (public).
"""
import abc
import dataclasses

import numpy as np

from ..privacy.mechanisms import GaussianMechanism, LaplaceMechanism
from ..privacy.sensitivity import (geometric_leaf_clip_threshold, leaf_balanced_sigmas,
                                   leaf_value_sensitivity)
from .gains import safe_ratio


def leaf_denominator(noisy_h, min_child_weight, reg_lambda):
    """``max(H, min_child_weight) + λ``: the floor replaces an exact-count eligibility test.

    Parameters
    ----------
    noisy_h : ndarray of float64, shape (n_leaves,)
    min_child_weight, reg_lambda : float

    Returns
    -------
    ndarray of float64, shape (n_leaves,)
    """
    return np.maximum(noisy_h, min_child_weight) + reg_lambda


def leaf_values(noisy_g, noisy_h, min_child_weight, reg_lambda, leaf_bound):
    """Leaf values from released sums (post-processing): ``V = -G̃ / (max(H̃, N) + λ)``, 0
    where H̃ < 0 (S-BDT's cut-off), clipped to ±leaf_bound.

    Parameters
    ----------
    noisy_g, noisy_h : ndarray of float64, shape (n_leaves,)
        Released gradient sums and denominators (hessian sums or counts).
    min_child_weight, reg_lambda, leaf_bound : float

    Returns
    -------
    ndarray of float64, shape (n_leaves,)
    """
    values = np.where(noisy_h < 0, 0.0,
                      safe_ratio(-noisy_g, leaf_denominator(noisy_h, min_child_weight,
                                                            reg_lambda)))
    return np.clip(values, -leaf_bound, leaf_bound)


def james_stein_factor(noisy_g, sigma_g):
    """The positive-part James-Stein factor of one tree's released gradient sums
    (post-processing: a function of the release and the public σ_G alone).

    The L leaves' released sums are ``G̃ = G + N(0, σ_G² I)``, independent coordinates of
    known variance. Shrinking them towards 0 by

        c = max(0, 1 - (L - 2) σ_G² / ||G̃||²)

    (James & Stein 1961, positive part: Baranchik 1964) has a smaller expected squared
    error than ``G̃`` itself for every G when L >= 3; the tree's leaf values
    ``-G̃/(H̃ + λ)`` are scaled by the same c. A tree whose leaves carry no more than the
    noise (a feature without signal, a node on a noise feature) gets c near 0 and adds
    little; one whose leaves stand out of the noise keeps most of its step.

    Parameters
    ----------
    noisy_g : ndarray of float64, shape (n_leaves,)
        The released gradient sums of one tree's leaves (or of one class's tree).
    sigma_g : float
        The standard deviation of their noise (public).

    Returns
    -------
    float in [0, 1]
        1 for fewer than 3 leaves (no shrinkage dominates there).
    """
    n_leaves = noisy_g.shape[0]
    if n_leaves < 3:
        return 1.0
    energy = float(np.dot(noisy_g, noisy_g)) / (sigma_g * sigma_g)
    if energy <= n_leaves - 2:
        return 0.0
    return 1.0 - (n_leaves - 2) / energy


def released_gain_evidence(noisy_g, noisy_h, sigma_g, sigma_h):
    """How far one tree's released gain stands out of its noise, as a z-score
    (post-processing: a function of the release and the public σ's alone).

    A leaf's released sums are ``G̃ = G + N(0, σ_G²)`` and ``H̃ = H + N(0, σ_H²)``. Where
    the tree's splits carry no signal and the model is calibrated, G is a sum of centred
    gradients whose variance is about H (logistic loss: Var g = p(1 - p) = h), so
    ``E[G̃²] ≈ Ĥ + σ_G²`` and ``Var[G̃²/Ĥ] ≈ 2(1 + σ_G²/Ĥ)²``. Summed over the L leaves,

        S = Σ_l (G̃_l² - σ_G²) / Ĥ_l - L,      z = S / sqrt(Σ_l 2 (1 + σ_G²/Ĥ_l)²),

    with ``Ĥ_l = max(H̃_l, 2 σ_H)`` (a noisy denominator near 0 would blow a term up) is
    about standard normal without signal and grows with the gain the leaves release
    (the loss reduction ``Σ G²/H`` of a Newton step, Chen & Guestrin 2016 eq. 6). Clipped
    gradients (``gradient_bound`` below the largest ``|g|``) make the no-signal z smaller, not
    larger.

    Parameters
    ----------
    noisy_g, noisy_h : ndarray of float64, shape (n_leaves,)
        One tree's released gradient sums and denominators.
    sigma_g, sigma_h : float
        The standard deviations of their noise (public).

    Returns
    -------
    float
    """
    denominators = np.maximum(noisy_h, 2.0 * sigma_h)
    excess = float(np.sum((noisy_g * noisy_g - sigma_g * sigma_g) / denominators))
    excess -= noisy_g.shape[0]
    spread = float(np.sum(2.0 * (1.0 + sigma_g * sigma_g / denominators) ** 2))
    return excess / np.sqrt(spread)


@dataclasses.dataclass(frozen=True)
class ReleasedLeaves:
    """One tree's leaves as the fit reads them from its leaf release (post-processing).

    Attributes
    ----------
    values : ndarray of float64, shape (n_leaves,)
        The leaf values before the learning rate.
    covers : ndarray of float64, shape (n_leaves,)
        The leaves' covers (:func:`leaf_covers`).
    evidence : float or None
        :func:`released_gain_evidence` of the release; None where the method cannot tell
        (it releases no (G, H) pair of known noise) or the fit does not ask
        (``main_effect_test_level=0``).
    """

    values: np.ndarray
    covers: np.ndarray
    evidence: float = None


#: The smallest cover of a leaf: a noisy denominator can be 0 or negative, and TreeSHAP
#: divides by covers.
COVER_FLOOR = 1e-6


def leaf_covers(noisy_h, min_child_weight):
    """Leaf covers from released denominators (post-processing):
    ``max(H̃, min_child_weight, COVER_FLOOR)``.

    Parameters
    ----------
    noisy_h : ndarray of float64, shape (n_leaves,)
        Released hessian sums or counts.
    min_child_weight : float

    Returns
    -------
    ndarray of float64, shape (n_leaves,), positive
    """
    return np.maximum(noisy_h, max(min_child_weight, COVER_FLOOR))


class LeafMethod(abc.ABC):
    """The leaf values of one tree from its leaves' sums.

    Parameters
    ----------
    plan : ReleasePlan
        The fit's calibrated plan; its ``params`` give λ, the floor and the bound.
    streams : FitStreams
    """

    def __init__(self, plan, streams):
        p = plan.params
        self.plan, self.streams = plan, streams
        self.reg_lambda = p.reg_lambda
        self.min_child_weight = p.min_child_weight
        self.leaf_bound = p.leaf_bound

    @abc.abstractmethod
    def release(self, tree, sums, noise=None):
        """Release the leaves of tree ``tree``.

        Parameters
        ----------
        tree : int
        sums : ndarray of float64, shape (n_leaves, 3) or (n_leaves, 2)
            The leaves' exact (G, H, count), or their released (G, H) when the leaves are
            read off the splits' release.
        noise : object, optional
            What :meth:`draw_noise` drew for this tree and its number of leaves.

        Returns
        -------
        ReleasedLeaves
            The leaf values before the learning rate, their covers, and the release's
            evidence of signal where the method tells it.
        events : list of dict
            The ledger fields of the releases made, in recording order.
        """

    def draw_noise(self, tree, n_leaves):
        """The noise of tree ``tree``'s leaf release drawn before its sums arrive, for
        ``release(..., noise=)``: the same draws from the same keyed streams, so the
        release is unchanged; None where the method has none to draw ahead.

        Parameters
        ----------
        tree : int
        n_leaves : int
            The number of leaves (public: a random tree's structure).

        Returns
        -------
        object or None
        """
        return None

    def _values(self, noisy_g, noisy_h):
        """The leaves from released sums, without evidence."""
        return ReleasedLeaves(leaf_values(noisy_g, noisy_h, self.min_child_weight,
                                          self.reg_lambda, self.leaf_bound),
                              leaf_covers(noisy_h, self.min_child_weight))


class GaussianLeaves(LeafMethod):
    """Leaf values from Gaussian releases of (G, H) with leaf-balanced noise (S-BDT;
    Maddock et al. §4.2 when ``r = h*²/(g*² + h*²)``).

    Numerator and denominator get independent noise with standard deviations
    ``σ_G = z g* / sqrt(1 - r)`` and ``σ_H = z h* / sqrt(r)``; a row's whitened sensitivity
    is ``sqrt(g²/σ_G² + h²/σ_H²) <= 1/z``, so the pair is one Gaussian mechanism with noise
    multiplier ``z`` (RDP α/(2z²)), for all leaves at once (disjoint rows). The row bounds
    g* and h* are the plan's (the joint bounds of a multiclass round, whose K trees' leaves
    are then one release: a row changes one leaf of each, which sizes the margin of the
    integer rounding).
    """

    def __init__(self, plan, streams):
        super().__init__(plan, streams)
        p, bounds = plan.params, plan.row_bounds
        self.newton = p.newton
        self.james_stein = p.leaf_shrinkage == "james_stein"
        # (only the test of a main-effect pass reads a release's evidence)
        self.tells_evidence = p.main_effect_test_level > 0
        self.hessian_denominators = p.hessian_denominators  # (weighted counts with weights)
        self.sigmas = leaf_balanced_sigmas(plan.releases["leaf"].noise_multiplier,
                                           bounds.gradient, bounds.denominator,
                                           p.leaf_noise_ratio)
        n_joint = plan.joint_classes or 1
        self.gradient_mechanism = GaussianMechanism(bounds.gradient, sigma=self.sigmas[0],
                                                    coords_per_row=n_joint)
        self.denominator_mechanism = GaussianMechanism(bounds.denominator, sigma=self.sigmas[1],
                                                       coords_per_row=n_joint)
        # (the same words on every tree's ledger event: written once per fit)
        self.pair_note = (f"whitened pair: sigma_G={self.sigmas[0]:.6g} on the gradient sums, "
                          f"sigma_H={self.sigmas[1]:.6g} on the {self._denominator_name()}")

    def _denominator_name(self):
        if self.newton:
            return "hessian sums"
        return "weighted counts" if self.hessian_denominators else "counts"

    def draw_noise(self, tree, n_leaves):
        """:meth:`LeafMethod.draw_noise`: the integer noise of the gradient sums and of the
        denominators, from the streams :meth:`noisy_sums` would draw them from."""
        return (self.gradient_mechanism.draw_noise(
                    n_leaves, self.streams.noise_stream("leaf/grad", tree)),
                self.denominator_mechanism.draw_noise(
                    n_leaves, self.streams.noise_stream("leaf/hess", tree)))

    def noisy_sums(self, tree, sums, noise=None):
        """The released (G, H) of tree ``tree``'s leaves (H: hessian sums or counts);
        ``noise``: :meth:`draw_noise`'s for this tree, or None to draw it now.

        Returns
        -------
        noisy_g, noisy_h : ndarray of float64, shape (n_leaves,)
        """
        if noise is None:
            noise = self.draw_noise(tree, sums.shape[0])
        denominator = sums[:, 1] if self.hessian_denominators else sums[:, 2]
        return (self.gradient_mechanism.release(sums[:, 0], noise=noise[0]),
                self.denominator_mechanism.release(denominator, noise=noise[1]))

    def release(self, tree, sums, noise=None):
        """:meth:`LeafMethod.release`: one Gaussian release of the leaves' (G, H), the
        values shrunk by :func:`james_stein_factor` with ``leaf_shrinkage="james_stein"``
        (post-processing)."""
        event = self.plan.tree_event("leaf", tree, n_parallel=sums.shape[0])
        event["note"] = "; ".join(filter(None, [event.get("note"), self.pair_note]))
        noisy_g, noisy_h = self.noisy_sums(tree, sums, noise)
        leaves = self._values(noisy_g, noisy_h)
        values = leaves.values * james_stein_factor(noisy_g, self.sigmas[0]) \
            if self.james_stein else leaves.values
        evidence = released_gain_evidence(noisy_g, noisy_h, *self.sigmas) \
            if self.tells_evidence else None
        return ReleasedLeaves(values, leaves.covers, evidence), [event]


class LaplaceLeaves(LeafMethod):
    """Leaf values with Laplace noise on the value (DP-XGBoost §4.3; DPBoost Alg. 1 l.14).

    ``V = clip(-G / (max(n, N) + λ), ±c) + Lap(ΔV / ε)`` per leaf, with the sensitivity
    ΔV of :func:`~dpxgb_dask.privacy.sensitivity.leaf_value_sensitivity` at the clip ``c``:
    the leaf bound, or DPBoost's geometric leaf clipping ``g*(1-η)^t`` (t the tree's place
    in its ensemble, or its boosting round).
    """

    def __init__(self, plan, streams):
        super().__init__(plan, streams)
        p = plan.params
        self.gradient_bound, self.learning_rate = p.gradient_bound, p.learning_rate
        self.geometric = p.leaf_clipping == "geometric"
        self.ensemble_size = p.ensemble_size
        self.trees_per_round = plan.trees_per_round

    def clip(self, tree):
        """The bound of tree ``tree``'s leaf values before the noise (public)."""
        if not self.geometric:
            return self.leaf_bound
        # (the boosting round's index: a multiclass round's trees share it)
        place = tree % self.ensemble_size if self.ensemble_size else \
            tree // self.trees_per_round
        return min(self.leaf_bound, geometric_leaf_clip_threshold(
            self.gradient_bound, self.learning_rate, place))

    def release(self, tree, sums, noise=None):
        """:meth:`LeafMethod.release`: one Laplace release of the clipped leaf values."""
        clip = self.clip(tree)
        sensitivity = leaf_value_sensitivity(self.gradient_bound, self.reg_lambda,
                                             self.min_child_weight, clip)
        event = self.plan.event("leaf", tree=tree, n_parallel=sums.shape[0],
                                sensitivity=sensitivity)
        exact = safe_ratio(-sums[:, 0], leaf_denominator(sums[:, 2], self.min_child_weight,
                                                         self.reg_lambda))
        mechanism = LaplaceMechanism(sensitivity, event["epsilon"], coords_per_row=1)
        values = mechanism.release(np.clip(exact, -clip, clip),
                                   self.streams.noise_stream("leaf", tree))
        return ReleasedLeaves(values, np.ones_like(values)), [event]  # covers: public


class NoisyAverageLeaves(LeafMethod):
    """Leaf values as a noisy gradient sum over a noisy row count (NoisyAverage,
    DP-XGBoost Alg. 1), both with Laplace noise: ``Lap(g*/ε_sum)`` and ``Lap(1/ε_count)``.

    Unlike the paper, the count is noised too: dividing by an exact count is not private
    under add/remove (it changes the ratio by (n+1+λ)/(n+λ)). Then :func:`leaf_values`
    with the count as denominator.
    """

    def __init__(self, plan, streams):
        super().__init__(plan, streams)
        self.sum_mechanism = LaplaceMechanism(plan.params.gradient_bound,
                                              plan.releases["leaf"].epsilon, coords_per_row=1)
        self.count_mechanism = LaplaceMechanism(1.0, plan.releases["leaf_count"].epsilon,
                                                coords_per_row=1)

    def release(self, tree, sums, noise=None):
        """:meth:`LeafMethod.release`: Laplace releases of the gradient sums and the counts."""
        n_leaves = sums.shape[0]
        noisy_g = self.sum_mechanism.release(sums[:, 0],
                                             self.streams.noise_stream("leaf/grad", tree))
        noisy_n = self.count_mechanism.release(sums[:, 2],
                                               self.streams.noise_stream("leaf/count", tree))
        events = [self.plan.event("leaf_count", tree=tree, n_parallel=n_leaves),
                  self.plan.event("leaf", tree=tree, n_parallel=n_leaves)]
        return self._values(noisy_g, noisy_n), events


class ReleasedSumLeaves(LeafMethod):
    """Leaf values read off sums the splits already released (partially random splits):
    post-processing, no release of their own."""

    def release(self, tree, sums, noise=None):
        """:meth:`LeafMethod.release` of released sums: post-processing, no event."""
        return self._values(sums[:, 0], sums[:, 1]), []


def make_leaf_method(plan, streams):
    """The fit's leaf method, built once per fit: ``plan.params.leaf_method``, or the
    released sums of partially random splits.

    Parameters
    ----------
    plan : ReleasePlan
    streams : FitStreams

    Returns
    -------
    LeafMethod
    """
    p = plan.params
    if p.split_method == "partially_random":
        return ReleasedSumLeaves(plan, streams)
    return {"gaussian": GaussianLeaves, "laplace": LaplaceLeaves,
            "noisy_average": NoisyAverageLeaves}[p.leaf_method](plan, streams)


class InitialScore:
    """The initial margin of every row: zero, or a DP mean of the labels.

    Parameters
    ----------
    plan : ReleasePlan
    streams : FitStreams
    objective : Objective
    """

    def __init__(self, plan, streams, objective):
        self.plan, self.streams, self.objective = plan, streams, objective
        if "init" in plan.releases:
            # one row moves a class count, or the label sum and the count, by at most 1
            self.mechanism = LaplaceMechanism(1.0, plan.releases["init"].epsilon,
                                              coords_per_row=1)

    def from_class_counts(self, counts):
        """``multi:softprob``: the margins of the K class frequencies, from one Laplace
        release of the K class counts (a row moves one of them by 1: Δ₁ = 1).

        Parameters
        ----------
        counts : ndarray of float64, shape (K,)
            Exact.

        Returns
        -------
        score : ndarray of float64, shape (K,)
        event : dict
        """
        noisy = self.mechanism.release(counts, self.streams.noise_stream("init_score/classes"))
        positive = np.maximum(noisy, 0.0)
        score = self.objective.initial_margin(positive / max(positive.sum(), 1.0))
        return score, self.plan.event("init")

    def from_label_sum(self, total):
        """The margin of the labels' mean (labels in {0, 1}, or regression labels scaled to
        [-1, 1]), from two Laplace releases: the sum and the count, Δ = 1 each.

        Parameters
        ----------
        total : ndarray of float64, shape (2,)
            Exact (sum of the clipped labels, number of rows).

        Returns
        -------
        score : float
        event : dict
        """
        noisy_sum = self.mechanism.release(total[:1],
                                           self.streams.noise_stream("init_score/sum"))[0]
        noisy_count = self.mechanism.release(total[1:],
                                             self.streams.noise_stream("init_score/count"))[0]
        return (self.objective.initial_margin(noisy_sum / max(noisy_count, 1.0)),
                self.plan.event("init"))
