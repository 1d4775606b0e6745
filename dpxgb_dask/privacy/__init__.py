"""Differential-privacy layer: mechanisms, sensitivities, secure noise, accounting, ledger.

Pure Python + NumPy (and Google's ``dp_accounting`` for RDP/PLD); nothing here imports Dask.
A release draws its noise from a keyed stream and records its event in a ledger::

    source = NoiseSource()                                   # secure; NoiseSource(seed) to replay
    mech = GaussianMechanism(gradient_histogram_l2_sensitivity(g_star, h_star, n_features),
                             noise_multiplier=z, coords_per_row=2 * n_features)
    rng = source.stream(tree=t, depth=d, purpose="split")   # each key is issued once
    noisy = mech.release(hist, rng)
    ledger.record("split", tree=t, depth=d, sampling_rate=gamma,
                  parallel_over="nodes", n_parallel=n_nodes, **mech.ledger_fields(stream=rng))

Every ``record`` counts as a release; recomputing a release with the same noise uses
``source.stream(..., replay=True)`` and ``ledger.record(..., replay=True)``.

Neighbouring relation everywhere: add or remove one row.
"""

from .._lazy import lazy_exports

#: Public name -> submodule. Imported on first use (PEP 562): importing the package (or
#: only its validation module, as every ``import dpxgb_dask`` does) stays cheap; the
#: accountants pull in dp-accounting and SciPy.
_EXPORTS = {
    "Accountant": ".accountants",
    "BasicAccountant": ".accountants",
    "BestOfAccountant": ".accountants",
    "PLDAccountant": ".accountants",
    "RDPAccountant": ".accountants",
    "amplified_epsilon": ".composition",
    "composition_terms": ".composition",
    "get_accountant": ".accountants",
    "privacy_report": ".accountants",
    "MECHANISMS": ".ledger",
    "PARALLEL_AXES": ".ledger",
    "Ledger": ".ledger",
    "PrivacyEvent": ".ledger",
    "ExponentialMechanism": ".exponential",
    "GaussianMechanism": ".mechanisms",
    "LaplaceMechanism": ".mechanisms",
    "combined_noise_multiplier": ".mechanisms",
    "exponential_mechanism": ".exponential",
    "gaussian_mechanism": ".mechanisms",
    "laplace_mechanism": ".mechanisms",
    "BudgetStore": ".budget",
    "PrivacyBudget": ".budget",
    "NoiseSource": ".randomness",
    "RandomStream": ".randomness",
    "SiloIdentity": ".silo_identity",
    "as_stream": ".randomness",
    "dpboost_gain_sensitivity": ".sensitivity",
    "dpxgboost_gain_sensitivity": ".sensitivity",
    "geometric_leaf_clip_threshold": ".sensitivity",
    "gradient_histogram_l1_sensitivity": ".sensitivity",
    "gradient_histogram_l2_sensitivity": ".sensitivity",
    "leaf_balanced_sigmas": ".sensitivity",
    "leaf_value_sensitivity": ".sensitivity",
    "RowBounds": ".sensitivity",
    "row_contribution_bounds": ".sensitivity",
}

# Eager: cheap, and importing it registers the typed warnings' filters.
from .validation import (
    EPSILON_WARNING_THRESHOLD,
    BudgetError,
    DPBoundsWarning,
    LargeEpsilonWarning,
    NoBudgetWarning,
    PrivacyLeakWarning,
    check_delta,
    check_epsilon,
    check_positive,
    check_sampling_rate,
    warn_if_large_epsilon,
)

__all__ = [
    "Accountant",
    "BasicAccountant",
    "BestOfAccountant",
    "BudgetError",
    "BudgetStore",
    "DPBoundsWarning",
    "EPSILON_WARNING_THRESHOLD",
    "ExponentialMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "LargeEpsilonWarning",
    "NoBudgetWarning",
    "Ledger",
    "MECHANISMS",
    "NoiseSource",
    "PARALLEL_AXES",
    "PLDAccountant",
    "PrivacyBudget",
    "PrivacyEvent",
    "PrivacyLeakWarning",
    "RDPAccountant",
    "RandomStream",
    "amplified_epsilon",
    "as_stream",
    "check_delta",
    "check_epsilon",
    "check_positive",
    "check_sampling_rate",
    "combined_noise_multiplier",
    "composition_terms",
    "dpboost_gain_sensitivity",
    "dpxgboost_gain_sensitivity",
    "exponential_mechanism",
    "gaussian_mechanism",
    "geometric_leaf_clip_threshold",
    "get_accountant",
    "gradient_histogram_l1_sensitivity",
    "gradient_histogram_l2_sensitivity",
    "laplace_mechanism",
    "leaf_balanced_sigmas",
    "leaf_value_sensitivity",
    "privacy_report",
    "row_contribution_bounds",
    "RowBounds",
    "warn_if_large_epsilon",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
