"""Sensitivities of the queries a DP gradient-boosted tree releases.

Neighbouring relation: add or remove one row. ``g_star`` (g*) bounds every row's gradient,
|g_i| <= g*, by gradient-based data filtering (GDF, DPBoost §3.1) or clipping; ``h_star``
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

import math
import numbers
import warnings

from .validation import PrivacyLeakWarning, check_epsilon, check_positive

__all__ = [
    "dpboost_gain_sensitivity",
    "dpboost_leaf_sensitivity",
    "dpxgboost_gain_sensitivity",
    "geometric_leaf_clip_threshold",
    "gradient_histogram_l1_sensitivity",
    "gradient_histogram_l2_sensitivity",
    "leaf_balanced_sigmas",
    "leaf_value_sensitivity",
    "min_child_leaf_sensitivity",
    "noisy_average_epsilon",
    "noisy_average_sensitivity",
    "summation_rounding_slack",
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
    It is the supremum of |G_L²/(n_L+λ) - G_L'²/(n_L+1+λ)| over n_L when one row with
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
    which must reproduce the paper, but every call issues a :class:`PrivacyLeakWarning`:
    the proof of Lemma 1 makes two errors.

    1. It takes g_s = +g* with Σ g_i = n_l g* as the worst case of
       h = (n_l+λ) g_s² + 2(n_l+λ) g_s Σg_i - (Σg_i)²; the opposite sign g_s = -g* is
       worse: |ΔG| = (3n_l² + 2λn_l - n_l - λ) / ((n_l+1+λ)(n_l+λ)) · g*², which tends to
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


def leaf_value_sensitivity(g_star, reg_lambda):
    """Sensitivity of a leaf value V = -G/(n + λ): ΔV = g*/(1 + λ).

    DPBoost Lemma 2 and Appendix A, eqs. (13)-(14); DP-XGBoost eq. (6) and the bound after
    it: |V(I₁) - V(I₂)| <= (2n + λ) g* / ((n + λ)(n + 1 + λ)) <= g*/(1 + λ).

    Parameters
    ----------
    g_star : float
        Gradient bound g* > 0.
    reg_lambda : float
        λ >= 0. With λ = 0 the bound is g* (reached by a leaf of one row).

    Returns
    -------
    float
    """
    g = check_positive(g_star, "g_star")
    lam = _check_nonneg(reg_lambda, "reg_lambda")
    return g / (1.0 + lam)


def min_child_leaf_sensitivity(g_star, reg_lambda, min_child_count):
    """Leaf-value sensitivity when every leaf holds at least N_min rows: 2g*/(N_min + 1 + λ).

    DP-XGBoost eq. (7). Valid only if the tree structure guarantees N_min rows in every
    leaf of *both* neighbouring datasets, i.e. the eligibility check "child has >= N_min
    rows" must itself be made on DP counts (DESIGN.md: an exact-count check leaks).
    The result is capped by :func:`leaf_value_sensitivity`, which always holds.

    Parameters
    ----------
    g_star : float
        Gradient bound g* > 0.
    reg_lambda : float
        λ >= 0.
    min_child_count : int
        N_min >= 1.

    Returns
    -------
    float
        min(2g*/(N_min + 1 + λ), g*/(1 + λ)).
    """
    g = check_positive(g_star, "g_star")
    lam = _check_nonneg(reg_lambda, "reg_lambda")
    n_min = _check_count(min_child_count, "min_child_count", 1)
    return min(2.0 * g / (n_min + 1.0 + lam), g / (1.0 + lam))


def noisy_average_sensitivity(g_star):
    """Scale numerator of DP-XGBoost's NoisyAverage leaf: the sum gets Lap(2g*/ε).

    DP-XGBoost Algorithm 1 (after Li, Lyu, Su & Yang 2016, Algorithm 2.3):
    V = clip((Σ g_i + Lap(2g*/ε)) / (n + λ), [-g*, g*]), with the exact count n. Use the
    value returned here as the ``sensitivity`` of a Laplace mechanism on the gradient sum.
    The factor 2 bounds |V·(n + 1 + λ) - V·(n + λ) - g_s| = |V - g_s| <= 2g* over the
    clipped range, which is what the privacy proof needs (see :func:`noisy_average_epsilon`).

    Parameters
    ----------
    g_star : float
        Gradient bound g* > 0.

    Returns
    -------
    float
        2 g*.
    """
    return 2.0 * check_positive(g_star, "g_star")


def noisy_average_epsilon(epsilon, min_count, reg_lambda):
    """True privacy loss of DP-XGBoost's NoisyAverage leaf with noise Lap(2g*/ε).

    Because the exact count n divides the noisy sum, the output density carries the
    Jacobian (n + 1 + λ)/(n + λ) between neighbours, on top of the ε from the noise
    (DP-XGBoost Algorithm 1 counts only the latter). Writing the density of
    W = (S + Z)/(n + λ), the log-ratio of neighbours is at most
    ε + log(1 + 1/(n + λ)) inside the clipping range, and the clipped end masses differ by
    at most e^ε. Hence the mechanism is ε'-DP with

        ε' = ε + log(1 + 1/(n_min + λ)),

    where n_min is the smallest count the leaf can have in the smaller dataset (0 if a
    leaf can be emptied by removing a row, which needs λ > 0). This is an upper bound;
    the exact supremum is slightly smaller but exceeds ε when ε is small (e.g. ε = 0.1,
    n = 3, λ = 0.5 gives about 0.32).

    Parameters
    ----------
    epsilon : float
        ε used to scale the noise, Lap(2g*/ε).
    min_count : int
        n_min >= 0.
    reg_lambda : float
        λ >= 0 (must be > 0 when ``min_count`` is 0).

    Returns
    -------
    float
        ε' to record in the ledger.
    """
    eps = check_epsilon(epsilon)
    n_min = _check_count(min_count, "min_count", 0)
    lam = _check_nonneg(reg_lambda, "reg_lambda")
    if n_min + lam <= 0.0:
        raise ValueError("min_count + reg_lambda must be > 0: an empty leaf with lambda=0 has no DP bound")
    return eps + math.log1p(1.0 / (n_min + lam))


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


def dpboost_leaf_sensitivity(g_star, reg_lambda, learning_rate, tree_index):
    """Leaf sensitivity with GDF and GLC: ΔV_t = min(g*/(1 + λ), 2 g*(1 - η)^t).

    DPBoost Corollary 2 (t 0-based here). Valid only if the leaf values are clipped with
    :func:`geometric_leaf_clip_threshold` before the noise is added.

    Parameters
    ----------
    g_star : float
    reg_lambda : float
    learning_rate : float
    tree_index : int

    Returns
    -------
    float
    """
    return min(
        leaf_value_sensitivity(g_star, reg_lambda),
        2.0 * geometric_leaf_clip_threshold(g_star, learning_rate, tree_index),
    )


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
    to the Gaussian mechanism. Use ``h_star=0`` for gradient sums alone.

    Parameters
    ----------
    g_star : float
        Gradient bound > 0.
    h_star : float
        Hessian bound >= 0.
    n_features : int, default 1

    Returns
    -------
    float
    """
    g = check_positive(g_star, "g_star")
    h = _check_nonneg(h_star, "h_star")
    n = _check_count(n_features, "n_features", 1)
    return math.sqrt(n * (g * g + h * h))


def leaf_balanced_sigmas(noise_multiplier, g_star, h_star, ratio=0.5):
    """Noise standard deviations of S-BDT's leaf-balanced Gaussian noise on (G, H).

    S-BDT (Peinemann et al.) adds non-spherical Gaussian noise to a leaf's gradient sum and
    Hessian sum, splitting the privacy budget by a ratio r (r = 0.5: equal split; smaller
    r gives the Hessian sum more budget, i.e. less noise). We parametrise the split in
    whitened units: with σ_G = z g*/sqrt(r) and σ_H = z h*/sqrt(1 - r),

        (g*/σ_G)² + (h*/σ_H)² = r/z² + (1 - r)/z² = 1/z²,

    so the pair is exactly as private as one Gaussian mechanism with noise multiplier z
    (Mahalanobis sensitivity 1/z; see :func:`~dpxgb_dask.privacy.mechanisms.combined_noise_multiplier`).
    Record it in the ledger as ``mechanism="gaussian", noise_multiplier=z``.

    Parameters
    ----------
    noise_multiplier : float
        z > 0 of the combined release.
    g_star : float
        Gradient bound > 0.
    h_star : float
        Hessian bound > 0.
    ratio : float, default 0.5
        r in (0, 1), the share of the budget (in 1/z² units) given to the gradient sum.

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
    return z * g / math.sqrt(r), z * h / math.sqrt(1.0 - r)


def summation_rounding_slack(n_rows, row_bound):
    """Worst-case floating-point error of a float64 sum of ``n_rows`` values |x_i| <= row_bound.

    Recursive summation in IEEE double has error at most γ_{n-1} Σ|x_i| with
    γ_k = k u / (1 - k u), u = 2**-53 (Higham, *Accuracy and Stability of Numerical
    Algorithms*, §4.2). A sum computed in floating point can therefore differ between
    neighbours by more than the ideal sensitivity (Casacuberta et al. 2022). Add this
    slack to a sensitivity when the exact sums are not computed in integer fixed point.

    Parameters
    ----------
    n_rows : int
        Largest number of rows in one sum (>= 1).
    row_bound : float
        Bound on each |x_i|.

    Returns
    -------
    float
        2 γ_n · n · row_bound (both neighbouring sums may err, in opposite directions).
    """
    n = _check_count(n_rows, "n_rows", 1)
    b = _check_nonneg(row_bound, "row_bound")
    u = 2.0**-53
    if n * u >= 0.5:
        raise ValueError(f"n_rows={n} is too large for a float64 error bound")
    gamma = n * u / (1.0 - n * u)
    return 2.0 * gamma * n * b
