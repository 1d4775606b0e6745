"""Weighted quantile summaries of noisy histograms and their cut points (DP-XGBoost §4.1):
the post-processing of a DP sketch, in one place for a central fit (one summary per
feature of the released histogram) and a cross-silo fit (each silo summarises its own
release, the coordinator merges and prunes the silos' summaries). No release happens here.
"""
import numpy as np

from .._core.sketch import make_summary, merge_and_prune, prune_summary, query_cuts


def histogram_summaries(noisy_weights, feature_bounds, size=None):
    """One weighted quantile summary per feature of a noisy histogram: the fine bins'
    centres weighted by their noisy mass, clipped at zero (post-processing).

    Parameters
    ----------
    noisy_weights : ndarray of float64, shape (n_features, n_fine_bins)
    feature_bounds : ndarray of float64, shape (n_features, 2)
    size : int, optional
        Prune each summary to at most this many entries (error ``+1/(size - 1)``).

    Returns
    -------
    list of ndarray of SUMMARY_DTYPE
    """
    n_fine = noisy_weights.shape[1]
    summaries = []
    for (lo, hi), weights in zip(np.asarray(feature_bounds, dtype=np.float64), noisy_weights):
        centres = lo + (np.arange(n_fine) + 0.5) * (hi - lo) / n_fine
        summary = make_summary(centres, np.clip(weights, 0.0, None))
        summaries.append(summary if size is None else prune_summary(summary, size))
    return summaries


def merged_summaries(per_silo, size):
    """The coordinator's merge of the silos' summaries, feature by feature
    (``_core.sketch.merge_and_prune``: error ``<= Σ_i ε_i W_i / W +
    ceil(log2 n_silos) / (size - 1)``).

    Parameters
    ----------
    per_silo : list of list of ndarray
        Each silo's summaries (:func:`histogram_summaries`), one per feature.
    size : int

    Returns
    -------
    list of ndarray of SUMMARY_DTYPE
    """
    return [merge_and_prune([silo[f] for silo in per_silo], size)
            for f in range(len(per_silo[0]))]


def summary_cuts(summaries, feature_bounds, max_bin):
    """``max_bin - 1`` cut points per feature from its summary: the summary's quantiles
    below the upper bound (equal-width cuts for a feature with no mass).

    Parameters
    ----------
    summaries : list of ndarray of SUMMARY_DTYPE
    feature_bounds : ndarray of float64, shape (n_features, 2)
    max_bin : int

    Returns
    -------
    list of ndarray of float64
    """
    cuts = []
    for (lo, hi), summary in zip(feature_bounds, summaries):
        c = query_cuts(summary, max_bin - 1)
        cuts.append(c[c < hi] if c.size else np.linspace(lo, hi, max_bin + 1)[1:-1])
    return cuts
