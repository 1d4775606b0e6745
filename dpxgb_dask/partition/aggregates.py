"""Exact fit-level aggregates of a partition's rows, which the coordinator asks for by name
before the trees (the row count, the inputs of the DP bounds, sketch and initial score, and
bounds forced from the data) and after them (an evaluation set's losses), and the per-tree
fine histogram of a DP sketch.

Each is computed on one partition's raw rows and summed across partitions before it
reaches the coordinator, which releases it with DP noise (or, for forced bounds, with the
user's :class:`~dpxgb_dask.privacy.validation.PrivacyLeakWarning`).
"""
from dataclasses import replace

import numpy as np

from .._core.common import HISTOGRAM_DTYPE
from .._core.histogram import add_histograms
from ..model.metrics import METRICS, round_margins
from .gradients import VALUE_GRID, quantize


def part_length(part):
    """Number of rows of a partition (stays in the cluster: it fixes the row offsets)."""
    return part.n_rows


def _labelled_rows(part):
    """The feature rows of ``part`` whose label is not NaN (the others are left out of
    every aggregate, as if absent)."""
    unlabelled = np.isnan(part.y)
    return part.X[~unlabelled] if unlabelled.any() else part.X


def log2_magnitude_histogram(part, n_exponents, min_exponent):
    """Per-feature counts of rows by sign and binary order of magnitude.

    Bin layout per feature (``2 * n_exponents + 1`` bins): bin ``n_exponents`` holds zeros
    and values with ``|x| < 2**min_exponent``; bin ``n_exponents + 1 + k`` holds positive
    values with ``floor(log2 x) - min_exponent == k`` (clipped to the last bin) and bin
    ``n_exponents - 1 - k`` the negative values of the same magnitude. Each row adds 1 to
    one bin of each feature (NaN adds nothing), which is what the DP bounds estimate needs.

    Returns
    -------
    ndarray of float64, shape (n_features, 2 * n_exponents + 1)
    """
    X = _labelled_rows(part).astype(np.float64, copy=False)  # log2 in float64 always
    n_bins = 2 * n_exponents + 1
    out = np.zeros((X.shape[1], n_bins))
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.floor(np.log2(np.abs(X))) - min_exponent
    k = np.clip(np.nan_to_num(k, nan=-1.0, neginf=-1.0), -1, n_exponents - 1).astype(np.int64)
    small = k < 0
    idx = np.where(small, n_exponents, np.where(X > 0, n_exponents + 1 + k, n_exponents - 1 - k))
    valid = ~np.isnan(X)
    for f in range(X.shape[1]):
        out[f] = np.bincount(idx[valid[:, f], f], minlength=n_bins)
    return out


def fine_histogram(part, feature_bounds, n_fine_bins, hessian):
    """Per-feature equal-width histograms of row weights over the public bounds.

    Values are clipped to ``feature_bounds`` first, so every non-missing row adds
    ``hessian`` to exactly one of the ``n_fine_bins`` bins of each feature. This is the
    input of the DP sketch (DP-XGBoost, section 4.1): the noisy bins become weighted points
    of the weighted quantile sketch.

    Parameters
    ----------
    part : RawPart
    feature_bounds : ndarray of float64, shape (n_features, 2)
    n_fine_bins : int
    hessian : float
        Weight of every row (the hessian at the initial score; constant per objective).

    Returns
    -------
    ndarray of float64, shape (n_features, n_fine_bins)
    """
    X = _labelled_rows(part)
    weights = np.full(len(X), hessian)
    if part.weights is not None:  # (times the rows' shares, back on the value grid)
        weights = _on_grid(weights * part.weights[~np.isnan(part.y)])
    return _weighted_fine_histogram(X, feature_bounds, n_fine_bins, weights)


def _on_grid(values):
    """Products of values on the value grid, rounded toward zero back onto it (a sum of
    grid values is exact; toward zero never exceeds a bound)."""
    return np.trunc(values / VALUE_GRID) * VALUE_GRID


def tree_fine_histogram(state, n_fine_bins, by_hessian):
    """:func:`fine_histogram` of the current tree's rows (its Poisson sample), each weighted
    by its clipped hessian (``by_hessian``) or by 1: the input of DP-XGBoost's sketch of
    one tree (§4.1), computed on the rows that tree trains on.

    Parameters
    ----------
    state : PartitionState
        After the tree's ``start_tree``.
    n_fine_bins : int
    by_hessian : bool

    Returns
    -------
    ndarray of float64, shape (n_features, n_fine_bins)
    """
    rows = np.flatnonzero(state.positions >= 0)
    weights = state.hessians[rows].astype(np.float64) if by_hessian else np.ones(rows.size)
    return _weighted_fine_histogram(state.raw.X[rows], state.feature_bounds, n_fine_bins,
                                    weights)


def _weighted_fine_histogram(X, feature_bounds, n_fine_bins, weights):
    """Per-feature equal-width histograms over the clipped bounds of the rows of ``X``
    (shape (n_rows, n_features)), row ``i`` adding ``weights[i]`` to one bin of each
    feature where it is not missing."""
    lo, hi = feature_bounds[:, 0], feature_bounds[:, 1]
    out = np.zeros((X.shape[1], n_fine_bins))
    scaled = (np.clip(X, lo, hi) - lo) / (hi - lo) * n_fine_bins
    bins = np.minimum(np.floor(scaled), n_fine_bins - 1)
    for f in range(X.shape[1]):
        col = bins[:, f]
        present = ~np.isnan(col)
        out[f] = np.bincount(col[present].astype(np.int64), weights=weights[present],
                             minlength=n_fine_bins)
    return out


def clipped_label_sum(part, objective):
    """Sum and count of the labels on the training scale, clipped to
    ``[objective.label_lower, 1]`` on the value grid (for a DP initial score); with weights,
    each row's label and count times its share in [0, 1].

    Returns
    -------
    ndarray of float64, shape (2,): (exact sum of the clipped labels, number of rows)
    """
    labelled = ~np.isnan(part.y)  # a row with a NaN label is left out (as if absent)
    scaled = quantize(objective.scale_labels(part.y[labelled]), 1.0,
                      lower=objective.label_lower)
    if part.weights is None:
        return np.array([scaled.sum(), float(labelled.sum())])
    shares = part.weights[labelled]  # (each row's share in [0, 1]: the same sensitivity)
    return np.array([_on_grid(scaled * shares).sum(), shares.sum()])


def class_counts(part, n_classes):
    """Number of labelled rows of each class (for a DP initial score of ``multi:softprob``),
    each row counted by its weight share with weights.

    Returns
    -------
    ndarray of float64, shape (n_classes,)
    """
    labelled = ~np.isnan(part.y)
    labels = part.y[labelled].astype(np.int64)  # clipped to 0..K-1 on loading
    shares = None if part.weights is None else part.weights[labelled]
    return np.bincount(labels, weights=shares, minlength=n_classes).astype(np.float64)


def feature_min_max(part):
    """Exact per-feature (nanmin, nanmax); only for bounds the user forces from the data.

    Returns
    -------
    ndarray of float64, shape (n_features, 2); NaN for all-missing features
    """
    out = np.full((part.X.shape[1], 2), np.nan)
    if part.n_rows:
        X = _labelled_rows(part)
        X = np.where(np.isinf(X), np.nan, X)  # the finite extremes
        with np.errstate(all="ignore"):
            valid = ~np.all(np.isnan(X), axis=0)
            out[valid, 0] = np.nanmin(X[:, valid], axis=0)
            out[valid, 1] = np.nanmax(X[:, valid], axis=0)
    return out


def round_loss_sums(part, booster, metrics, n_rounds, label_bounds=None):
    """Per metric and round, the sum of the rows' bounded losses after that round
    (``row_loss`` of :class:`~dpxgb_dask.model.metrics.Metric`: in [0, 1], on the value
    grid), and the number of rows: the exact query of a private evaluation set's DP metric
    (:class:`~dpxgb_dask.boosting.scores.EvaluationScores`). Rows with a NaN label are left
    out.

    Parameters
    ----------
    part : RawPart
        Rows of an evaluation set (categorical features as codes).
    booster : Booster
        The released model, in label units (public).
    metrics : sequence of str
        Names in :data:`~dpxgb_dask.model.metrics.METRICS` with a ``row_loss``.
    n_rounds : int
        The last ``n_rounds`` rounds of ``booster`` are scored (a continued fit's own).
    label_bounds : (lo, hi), optional
        Regression's public label range.

    Returns
    -------
    ndarray of float64, shape (len(metrics) * n_rounds + 1,)
        Metric-major sums, then the row count.
    """
    labelled = ~np.isnan(part.y)
    X, y = part.X[labelled], part.y[labelled]
    start = None if part.margins is None else part.margins[labelled]  # (label units)
    out = np.zeros(len(metrics) * n_rounds + 1)
    out[-1] = len(y)
    if not len(y):
        return out
    predictions = booster.transform(
        round_margins(booster, X, encoded=True, base_margin=start)[-n_rounds:])
    for m, name in enumerate(metrics):
        row_loss = METRICS[name].row_loss
        for r in range(n_rounds):
            loss = quantize(row_loss(y, predictions[r], label_bounds), 1.0, lower=0.0)
            out[m * n_rounds + r] = loss.sum()
    return out


def held_out_loss_sums(state, *args):
    """:func:`round_loss_sums` of the rows a private selection held out of its trees
    (``state.held_out``, :func:`~dpxgb_dask.partition.rows.held_out`): the exact query
    of its score.

    Parameters
    ----------
    state : PartitionState
        Prepared with the selection's ``holdout``.
    *args
        ``booster, metrics, n_rounds, label_bounds`` of :func:`round_loss_sums`.

    Returns
    -------
    ndarray of float64, shape (len(metrics) * n_rounds + 1,)
    """
    raw, rows = state.raw, state.held_out
    kept = replace(raw, X=raw.X[rows], y=raw.y[rows],
                   weights=None if raw.weights is None else raw.weights[rows],
                   margins=None if raw.margins is None else raw.margins[rows])
    return round_loss_sums(kept, *args)


#: Exact per-partition aggregates of the raw rows the coordinator asks for by name: before
#: the trees, the row count, the inputs of the DP bounds, sketch and initial score, and
#: the forced data bounds; after them, an evaluation set's losses.
AGGREGATES = {
    "length": part_length,
    "log2_magnitude_histogram": log2_magnitude_histogram,
    "fine_histogram": fine_histogram,
    "clipped_label_sum": clipped_label_sum,
    "class_counts": class_counts,
    "feature_min_max": feature_min_max,
    "round_loss_sums": round_loss_sums,
}


def silo_sensitivity_floors(name, args, n_features, field=None):
    """What one row can change of a part of a silo's released aggregate ``name``, from the
    silo's own computation with ``args`` (not from the caller's word): (Δ₂, Δ₁) under
    add/remove of one row. A silo's worker refuses a release that names less, and every
    aggregate without a bounded Δ (:data:`SILO_AGGREGATES` lists those with one).

    - ``clipped_label_sum``: part 0 the label sum, the label on the training scale in
      ``[label_lower, 1]``: Δ = b = ``max(1, abs(label_lower))``; part 1 the count (a
      weight share is at most 1): Δ = 1; both (None): Δ₂ = √(b² + 1), Δ₁ = b + 1;
    - ``class_counts``: one row adds at most 1 to one class: Δ₂ = Δ₁ = 1;
    - ``fine_histogram``: at most ``weight`` to one bin of each of the F features:
      Δ₂ = weight √F, Δ₁ = weight F.

    Parameters
    ----------
    name : str
        A key of :data:`SILO_AGGREGATES`.
    args : tuple
        The aggregate's arguments, as the silo computes it.
    n_features : int
    field : int or None
        The part (``FieldNoise.field``).

    Returns
    -------
    (float, float)
    """
    if name == "clipped_label_sum":
        b = max(1.0, abs(float(args[0].label_lower)))
        return {0: (b, b), 1: (1.0, 1.0)}.get(field, (float(np.sqrt(b * b + 1.0)), b + 1.0))
    if name == "class_counts":
        return 1.0, 1.0
    if name == "fine_histogram":
        weight = abs(float(args[2]))
        return weight * float(np.sqrt(n_features)), weight * n_features
    raise PermissionError(f"a silo releases only the aggregates {sorted(SILO_AGGREGATES)}, "
                          f"whose sensitivity it derives itself; not {name!r}")


#: The aggregates a silo answers (as releases only): those a cross-silo plan asks for, each
#: with a sensitivity the silo derives itself (:func:`silo_sensitivity_floors`). An exact
#: minimum and maximum (``feature_min_max``), a row count or a loss sum are never answered.
SILO_AGGREGATES = ("clipped_label_sum", "class_counts", "fine_histogram")


#: Exact per-partition aggregates that need the prepared state, not only its raw rows.
STATE_AGGREGATES = {"held_out_loss_sums": held_out_loss_sums}


def add(*arrays):
    """Sum of partial results of several partitions (the reduction step), in the order
    given: exact histograms (``HISTOGRAM_DTYPE``) field by field by the compiled
    ``_core.histogram.add_histograms``, other structured arrays (the silos'
    released histograms, whose counts are float64) field by field, other arrays
    elementwise. A new array: the addends are left as they were."""
    if not arrays or not arrays[0].dtype.names:
        return np.sum(arrays, axis=0)
    first = np.ascontiguousarray(arrays[0])
    total = np.empty_like(first)
    total.view(np.uint8)[...] = first.view(np.uint8)  # (NumPy copies records one by one)
    for a in arrays[1:]:
        if total.dtype == HISTOGRAM_DTYPE:
            add_histograms(total, np.ascontiguousarray(a), total, 1)
        else:
            for name in total.dtype.names:
                total[name] += a[name]
    return total


def add_results(results):
    """:func:`add` of the results that are not None (a round may return nothing); None when
    none is left."""
    results = [r for r in results if r is not None]
    return add(*results) if results else None


def aggregate(state, name, *args):
    """The exact aggregate ``name`` (see :data:`AGGREGATES` and :data:`STATE_AGGREGATES`)
    of one partition."""
    if name in STATE_AGGREGATES:
        return STATE_AGGREGATES[name](state, *args)
    return AGGREGATES[name](state.raw, *args)
