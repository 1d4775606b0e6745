"""Sensitivities of the queries a DP gradient-boosted tree releases.

Neighbouring relation: add or remove one row. ``g_star`` (g*) bounds every row's gradient,
``|g_i| <= g*``, by gradient-based data filtering (GDF, DPBoost §3.1) or clipping; ``h_star``
bounds its Hessian, 0 <= h_i <= h*.

The split-gain and leaf-value bounds of DP-XGBoost and DPBoost are derived for unit
Hessians (squared loss, where the node weight H is the row count n, "n + λ" in their
formulas); DP-XGBoost turns every task into regression for this reason (§5). With
Hessians below one a node's H + λ can be close to λ and these bounds do not hold: use the
Gaussian mechanism on clipped (G, H) sums (:func:`gradient_histogram_l2_sensitivity`)
for such losses.

The bounds on split gains hold for the utility used by the exponential mechanism,
``G_L²/(n_L + λ) + G_R²/(n_R + λ)`` (DPBoost eq. (9)); the parent term and the γ penalty
of XGBoost's gain are the same for every candidate of a node and do not change the
mechanism's output distribution.
"""

from __future__ import annotations

from typing import NamedTuple
import math
import numbers
import warnings

from .validation import PrivacyLeakWarning, check_positive

__all__ = [
    "dpboost_gain_sensitivity",
    "dpxgboost_gain_sensitivity",
    "geometric_leaf_clip_threshold",
    "gradient_histogram_l1_sensitivity",
    "gradient_histogram_l2_sensitivity",
    "leaf_balanced_sigmas",
    "leaf_value_sensitivity",
    "RowBounds",
    "row_contribution_bounds",
]


def _check_nonneg(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _check_count(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def dpxgboost_gain_sensitivity(g_star):
    """Sensitivity of the split gain used by DP-XGBoost: ΔG = 3 g*².

    DP-XGBoost (Grislain & Gonzalvez 2021), eq. (5), taken from Li et al. (2020). The
    exponential mechanism then samples candidate j with p_j ∝ exp(ε G_j / (6 g*²)).
    It is the supremum of ``|G_L²/(n_L+λ) - G_L'²/(n_L+1+λ)|`` over n_L when one row with
    gradient of the opposite sign to the node's sum is added: the change is
    (3n² + 2λn - n - λ)/((n+1+λ)(n+λ)) · g*² < 3g*² for every n and λ >= 0.

    Parameters
    ----------
    g_star : float
        Gradient bound g* > 0.

    Returns
    -------
    float
        3 g*².
    """
    g = check_positive(g_star, "g_star")
    return 3.0 * g * g


def dpboost_gain_sensitivity(g_star, reg_lambda):
    """DPBoost's split-gain bound (3λ + 2) / ((λ + 1)(λ + 2)) · g*² -- NOT a valid sensitivity.

    DPBoost (Li et al. 2020), Lemma 1 and eq. (10). Returned for the ``"dpboost"`` preset,
    which must reproduce the paper, but every call issues a :class:`~dpxgb_dask.privacy.validation.PrivacyLeakWarning`:
    the proof of Lemma 1 makes two errors.

    1. It takes g_s = +g* with Σ g_i = n_l g* as the worst case of
       h = (n_l+λ) g_s² + 2(n_l+λ) g_s Σg_i - (Σg_i)²; the opposite sign g_s = -g* is
       worse: ``|ΔG| = (3n_l² + 2λn_l - n_l - λ) / ((n_l+1+λ)(n_l+λ)) · g*²``, which tends to
       3g*² as n_l grows.
    2. Even for its own configuration, 1 - λ²/((n_l+λ+1)(n_l+λ)) *increases* with n_l,
       so replacing n_l by 1 gives a lower bound, not an upper bound.

    Example: λ = 0.1, n_l = 100 rows with g_i = g* = 1, one added row with g_s = -1
    changes the left term by 2.956, against the claimed 0.996. The valid bound is
    :func:`dpxgboost_gain_sensitivity` (3g*², the supremum over n_l); use it for any
    model that must be differentially private.

    Parameters
    ----------
    g_star : float
        Gradient bound g* > 0.
    reg_lambda : float
        L2 regularisation λ >= 0 of the leaf weights.

    Returns
    -------
    float
    """
    g = check_positive(g_star, "g_star")
    lam = _check_nonneg(reg_lambda, "reg_lambda")
    warnings.warn(
        "DPBoost's gain sensitivity (3*lambda+2)/((lambda+1)(lambda+2))*g*^2 underestimates the "
        "true sensitivity (up to 3*g*^2, see dpboost_gain_sensitivity's docstring); splits "
        "chosen with it are not differentially private at the stated epsilon",
        PrivacyLeakWarning,
        stacklevel=2,
    )
    return (3.0 * lam + 2.0) / ((lam + 1.0) * (lam + 2.0)) * g * g


def leaf_value_sensitivity(g_star, reg_lambda, min_child_weight, leaf_bound):
    """Sensitivity of one leaf value ``V = -G / (max(n, N) + λ)`` (counts, ``|g| <= g*``).

    Adding a row of gradient g to a leaf of n rows (``|G| <= g* n``) moves V by:

    * floor in force (n + 1 <= N): ``|g| / (N + λ) <= g* / (N + λ)``;
    * no floor (n >= N): ``|G - g (n + λ)| / ((n + λ)(n + 1 + λ)) <=
      g* (2n + λ) / ((n + λ)(n + 1 + λ))``, which decreases in n from n = 1, so its
      maximum is at n = max(ceil(N), 0) or 1. At N = 0 this is DPBoost Lemma 2 (and
      DP-XGBoost's bound after eq. (6)): g*/(1 + λ);
    * crossing (n < N < n + 1): ``|G (N - n - 1) + g (N + λ)| / ((N + λ)(n + 1 + λ)) <=
      g* (n (n + 1 - N) + N + λ) / ((N + λ)(n + 1 + λ))``.

    The maximum over these holds for every n, so no count is ever read. Clipping V to
    ±leaf_bound before the noise caps it at 2·leaf_bound: with DPBoost's geometric leaf
    clipping (:func:`geometric_leaf_clip_threshold`) this is DPBoost Corollary 2,
    min(g*/(1 + λ), 2 g*(1 - η)^t). With N = 50, λ = 0.1 it is DP-XGBoost's
    2g*/(N + 1 + λ) (eq. (7)) up to the λ term.

    Parameters
    ----------
    g_star : float
        Gradient bound g* > 0.
    reg_lambda : float
        λ >= 0.
    min_child_weight : float
        N >= 0, the floor of the denominator.
    leaf_bound : float
        The clipping bound of V (> 0).

    Returns
    -------
    float
    """
    g = check_positive(g_star, "g_star")
    lam = _check_nonneg(reg_lambda, "reg_lambda")
    n_min = _check_nonneg(min_child_weight, "min_child_weight")
    clip = check_positive(leaf_bound, "leaf_bound")

    def unfloored(n):
        return g * (2 * n + lam) / ((n + lam) * (n + 1 + lam)) if n + lam > 0 else g / (1 + lam)

    candidates = []
    if n_min >= 1.0:
        candidates.append(g / (n_min + lam))
    n0 = max(int(math.ceil(n_min)), 0)
    candidates.extend([unfloored(n0), unfloored(max(n0, 1))])
    n_cross = int(math.floor(n_min))
    if n_cross < n_min:
        candidates.append(g * (n_cross * (n_cross + 1 - n_min) + n_min + lam)
                          / ((n_min + lam) * (n_cross + 1 + lam)))
    return float(min(max(candidates), 2.0 * clip))


def geometric_leaf_clip_threshold(g_star, learning_rate, tree_index):
    """DPBoost's geometric leaf clipping (GLC) threshold for tree ``tree_index``: g*(1 - η)^t.

    DPBoost Theorem 6 and §3.1 (GLC): leaf values of the t-th tree (paper's t is 1-based,
    ours 0-based) are clipped to [-g*(1-η)^t, g*(1-η)^t] before the Laplace noise.

    Parameters
    ----------
    g_star : float
        Gradient bound g* > 0.
    learning_rate : float
        Shrinkage η in (0, 1].
    tree_index : int
        0-based index t of the tree.

    Returns
    -------
    float
    """
    g = check_positive(g_star, "g_star")
    eta = check_positive(learning_rate, "learning_rate")
    if eta > 1.0:
        raise ValueError(f"learning_rate must be in (0, 1], got {learning_rate!r}")
    t = _check_count(tree_index, "tree_index", 0)
    return g * (1.0 - eta) ** t


def gradient_histogram_l1_sensitivity(bound, n_features=1):
    """L1 sensitivity of a histogram of clipped per-row values (G or H sums, or counts).

    A row falls in exactly one bin of each feature and one node of a depth, so it changes
    ``n_features`` entries of a (n_nodes, n_features, n_bins) array by at most ``bound``
    each: Δ₁ = n_features · bound. The nodes and bins are disjoint (parallel composition);
    the features are not (DP-XGBoost §4.4 splits the sketch budget across features).
    Pass ``coords_per_row=n_features`` to the Laplace mechanism.

    Parameters
    ----------
    bound : float
        g* for gradient sums, h* for Hessian sums, 1 for counts.
    n_features : int, default 1

    Returns
    -------
    float
    """
    b = check_positive(bound, "bound")
    return _check_count(n_features, "n_features", 1) * b


def gradient_histogram_l2_sensitivity(g_star, h_star, n_features=1):
    """L2 sensitivity of stacked (G, H) sums: Δ₂ = sqrt(n_features · (g*² + h*²)).

    Maddock et al. §4.2: the query q(I) = (Σ g_i, Σ h_i) has Δ₂(q) = sqrt(g*² + h*²)
    (for binary cross-entropy g* = 1, h* = 1/4, Δ₂² = 17/16). A row changes one (G, H)
    pair per feature, hence the factor n_features; pass ``coords_per_row=2 * n_features``
    to the Gaussian mechanism. ``h_star=0`` gives gradient sums alone, ``g_star=0``
    Hessian sums alone (the iterative-Hessian sketch, Maddock et al. §4.3).

    Parameters
    ----------
    g_star : float
        Gradient bound >= 0.
    h_star : float
        Hessian bound >= 0 (not both zero).
    n_features : int, default 1

    Returns
    -------
    float
    """
    g = _check_nonneg(g_star, "g_star")
    h = _check_nonneg(h_star, "h_star")
    if g == 0.0 and h == 0.0:
        raise ValueError("g_star and h_star cannot both be 0: nothing would be released")
    n = _check_count(n_features, "n_features", 1)
    if g == 0.0 or h == 0.0:  # one kind of sum alone: sqrt(n) times its bound
        return math.sqrt(n) * (g + h)
    return math.sqrt(n * (g * g + h * h))


def leaf_balanced_sigmas(noise_multiplier, g_star, h_star, ratio):
    """Noise standard deviations of S-BDT's leaf-balanced Gaussian noise on a leaf's (G, H).

    S-BDT (Peinemann et al.) adds non-spherical Gaussian noise to a leaf's gradient sum and
    its denominator (Hessian sum, or row count with h* = 1), giving the denominator the
    share r of the budget in whitened units: σ_G = z g*/sqrt(1 - r), σ_H = z h*/sqrt(r), so

        (g*/σ_G)² + (h*/σ_H)² = (1 - r)/z² + r/z² = 1/z²,

    and the pair is exactly as private as one Gaussian mechanism with noise multiplier z
    (Mahalanobis sensitivity 1/z). Maddock et al. §4.2's spherical noise on (G, H) is
    r = h*²/(g*² + h*²). Record it in the ledger as ``mechanism="gaussian",
    noise_multiplier=z``.

    Parameters
    ----------
    noise_multiplier : float
        z > 0 of the combined release.
    g_star : float
        Gradient bound g* > 0.
    h_star : float
        Bound of a row's contribution to the denominator, > 0.
    ratio : float
        r in (0, 1), the denominator's share of the budget.

    Returns
    -------
    (float, float)
        (σ_G, σ_H).
    """
    z = check_positive(noise_multiplier, "noise_multiplier")
    g = check_positive(g_star, "g_star")
    h = check_positive(h_star, "h_star")
    r = check_positive(ratio, "ratio")
    if r >= 1.0:
        raise ValueError(f"ratio must be in (0, 1), got {ratio!r}")
    return z * g / math.sqrt(1.0 - r), z * h / math.sqrt(r)


class RowBounds(NamedTuple):
    """L2 bounds of one row's contribution to one Gaussian (G, H) release.

    Attributes
    ----------
    gradient : float
        Bound of the row's gradient(s) in the released gradient sums.
    denominator : float
        Bound of its contribution(s) to the released denominators (Hessian sums or counts).
    denominator_sum : float
        Bound of the sum of its denominators over the jointly released trees (what a
        multiclass round's iterative-Hessian sketch adds up).
    """

    gradient: float
    denominator: float
    denominator_sum: float


def row_contribution_bounds(g_star, h_star, newton, n_classes=None):
    """How much one row moves the (G, H) sums of one Gaussian release, in L2.

    One output (binary, regression): ``(g*, h*, h*)`` with Hessian denominators, ``(g*, 1,
    1)`` with row counts (Maddock et al. §4.2).

    ``n_classes = K``: the release is the joint one of a softmax round's K class trees
    (their histograms of one depth, or their leaves), which a row enters with the vectors
    ``g = p - e_y`` and ``h = p (1 - p)`` of its class probabilities p. Each coordinate is
    clipped to g* (h*), so ``||g||₂ <= sqrt(K) g*``; and for any p on the simplex

        ||g||₂² = (1 - p_y)² + Σ_{k≠y} p_k² <= (1 - p_y)² + (Σ_{k≠y} p_k)² = 2 (1 - p_y)² <= 2,
        ||h||₂² = Σ_k h_k² <= (max_k h_k) Σ_k h_k <= (1/4) (1 - Σ_k p_k²) <= 1/4,
        Σ_k h_k <= 1,

    so the gradient bound is ``min(sqrt(K) g*, sqrt 2)``, the Hessian one ``min(sqrt(K) h*,
    1/2)`` and their sum ``min(K h*, 1)``. With row counts a row adds 1 to each of the K
    trees: ``sqrt(K)``, and 1 to the class-summed root. The worker scales each row's vectors
    down to these bounds (``partition.gradients.clip_row_vectors``), so they hold after clipping and
    rounding too. One joint release of σ = z·Δ thus costs what one binary tree's release
    costs with (g*, h*) replaced by these bounds, instead of K such releases: with g* = 1,
    h* = 1/4 and K >= 4, Δ² per feature is 2 + 1/4 against K (1 + 1/16) for K separate
    trees.

    Parameters
    ----------
    g_star, h_star : float
        Per-coordinate clipping bounds (> 0).
    newton : bool
        Denominators are Hessian sums (True) or row counts (False).
    n_classes : int, optional
        K >= 2 of a joint softmax release.

    Returns
    -------
    RowBounds
    """
    g = check_positive(g_star, "g_star")
    h = check_positive(h_star, "h_star") if newton else 1.0
    if n_classes is None:
        return RowBounds(g, h, h)
    k = _check_count(n_classes, "n_classes", 2)
    if not newton:
        return RowBounds(min(math.sqrt(k) * g, math.sqrt(2.0)), math.sqrt(k), 1.0)
    return RowBounds(min(math.sqrt(k) * g, math.sqrt(2.0)), min(math.sqrt(k) * h, 0.5),
                     min(k * h, 1.0))
