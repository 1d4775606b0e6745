"""The client-side entry point: ``train(params, X, y, client=None) -> Booster``.

The user's process validates the inputs and resolves the parameters against them, computes
the release plan (public parameters only, in a thread while the rows load), and has the
cluster run the fit (:func:`~dpxgb_dask.cluster.client.run_fit`): the rows are loaded into
the fit's states on the workers, and the coordinator runs inside the scheduler. The loop
over trees and depths, and every exact aggregate, stay inside the cluster; the user's
process receives progress events (public values) and the final model (DP releases and
public values only), which it checks like a model file.

A fit leaves nothing behind: its states live in the workers' ``dpxgb`` plugin (registered
once per cluster), never under a key, dataset or event; the coordinator drops them when
the fit ends or fails, and stops within a second when its client leaves the scheduler.
"""
import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
import os
import warnings

import numpy as np

from . import categories
from .boosting.coordinator import Coordinator
from .partition.state import load_partition
from .boosting.calibration import make_plan
from .boosting.protocol import LocalBackend
from .boosting.selection import Selection, SelectionPlan, resolve_selection
from .cluster.client import client_or_embedded, run_fit
from .evaluation import check_early_stopping_rounds, stop_early
from .inputs import (base_margin_rows, count_features, describe_features, feature_names_of,
                     Targets, float_values, is_dask_collection, label_array,
                     weight_shares)
from .model.booster import Booster
from .model.certificate import check_privacy_claims
from .objective import Objective, metric_names
from .params import (TrainParams, check_feature_bounds, check_label_bounds, resolve_params,
                     with_overrides)
from .privacy.validation import (WARNING_CATEGORIES, NoBudgetWarning, PrivacyLeakWarning,
                                 warn_if_large_epsilon)
from .silo_table import SiloTable


def check_bounds_policy(params, n_features):
    """Validate bounds against the data's width and apply the bounds policy.

    Feature bounds must be public (``feature_bounds``), estimated with an explicit budget
    (``bounds_epsilon``), or forced from the data with ``feature_bounds="data"``, which
    warns with a :class:`~dpxgb_dask.privacy.validation.PrivacyLeakWarning`.

    Returns
    -------
    TrainParams
        With ``feature_bounds`` as a float array when given.
    """
    bounds = params.feature_bounds
    if isinstance(params.categories, list):  # (resolved: with_categories)
        # a categorical feature's bounds are its codes' (-0.5, C - 0.5), whatever is given
        categorical = categories.is_categorical(params.categories, n_features)
        if bounds is None and categorical.all():
            bounds = np.zeros((n_features, 2))
        if bounds is not None and not isinstance(bounds, str):
            try:
                given = np.array(bounds, dtype=np.float64)
            except (TypeError, ValueError):
                given = None  # check_feature_bounds names the problem
            if given is not None and given.shape == (n_features, 2):
                _, bounds = categories.cuts_and_bounds(params.categories,
                                                       [[]] * n_features, given)
                params = replace(params, feature_bounds=bounds)
    if isinstance(bounds, str):
        if bounds != "data":
            raise ValueError(f"feature_bounds must be an array of shape (n_features, 2) or "
                             f"'data', got {bounds!r}")
        warnings.warn("feature_bounds='data' reads the exact minimum and maximum of every "
                      "feature and stores them in the model: this is not differentially "
                      "private. Give public bounds or bounds_epsilon instead.",
                      PrivacyLeakWarning, stacklevel=3)
    elif bounds is not None:
        params = replace(params, feature_bounds=check_feature_bounds(bounds, n_features))
    elif params.bounds_epsilon is None:
        raise ValueError("feature_bounds is required: give public per-feature (lo, hi) bounds, "
                         "or bounds_epsilon to spend on a DP estimate of them")
    if params.objective == "reg:squarederror":
        if params.label_bounds is None:
            raise ValueError("label_bounds is required for regression: give the public "
                             "(lo, hi) range of the label")
        params = replace(params, label_bounds=check_label_bounds(params.label_bounds))
    return params


def with_categories(params, X):
    """The fit's public category lists resolved (``categories.resolve``: from
    ``params.categories`` and pandas ``category`` dtypes) and X with those features encoded
    as codes (lazily for dask collections); only metadata is read here.

    Returns
    -------
    (TrainParams, X)
    """
    names = feature_names_of(X)
    if names is not None:
        n_features = len(names)
    else:
        shape = X.shape if hasattr(X, "shape") else np.asarray(X).shape
        n_features = int(shape[1]) if len(shape) == 2 else 0
    resolved = categories.resolve(params.categories, X, names, n_features)
    params = replace(params, categories=resolved)  # None: no categorical feature
    if resolved is None or isinstance(X, SiloTable):  # (a silo table's: on its silos)
        return params, X
    return params, categories.encode(X, resolved)


def continuation_params(params, model, feature_names, n_features):
    """The parameters of a fit that continues ``model`` (``train(xgb_model=)``): the
    model's public bounds, cuts and margins are its start (so ``max_bin`` is the model's,
    whatever ``params`` say), it makes no bounds, initial-score or candidate release and
    spends its whole ``epsilon`` on the new trees. Refuses a model that does not fit the
    data or the objective, and DPBoost's ensembles.

    Returns
    -------
    TrainParams
    """
    if model.objective != params.objective:
        raise ValueError(f"xgb_model was trained for {model.objective!r}, not "
                         f"{params.objective!r}")
    if model.categories != params.categories:
        raise ValueError("the fit's categories must equal xgb_model's: "
                         f"{model.categories}")
    if model.n_classes != params.num_class:
        raise ValueError(f"xgb_model has num_class={model.n_classes}, the fit "
                         f"num_class={params.num_class}")
    if model.n_features != n_features:
        raise ValueError(f"xgb_model has {model.n_features} features, X has {n_features}")
    if model.feature_names is not None and feature_names is not None \
            and list(model.feature_names) != list(feature_names):
        raise ValueError("X's columns differ from xgb_model's features "
                         f"{model.feature_names}")
    bounds = params.feature_bounds
    numerical = ~categories.is_categorical(model.categories, model.n_features)
    if bounds is not None and not _same_bounds(bounds, model.feature_bounds, numerical):
        raise ValueError("feature_bounds must be left out (or equal xgb_model's): a "
                         "continued fit uses the model's bounds and cuts")
    if params.bounds_epsilon is not None:
        raise ValueError("bounds_epsilon does not apply to a continued fit: it uses "
                         "xgb_model's bounds")
    if params.ensemble_size is not None:
        raise ValueError("ensemble_size (DPBoost's ensembles) cannot continue a model: the "
                         "disjoint row shares of an ensemble are defined over one fit's trees")
    if params.objective == "reg:squarederror" and params.label_bounds is not None \
            and tuple(map(float, params.label_bounds)) != tuple(model.label_bounds):
        raise ValueError(f"label_bounds must equal xgb_model's {model.label_bounds}")
    return replace(params, feature_bounds=np.array(model.feature_bounds),
                   label_bounds=model.label_bounds, bounds_epsilon=None, init_score="zero",
                   # a per-tree sketch is a release of each new tree's rows: it stays
                   split_candidates=("dp_sketch_per_tree"
                                     if params.split_candidates == "dp_sketch_per_tree"
                                     else "uniform"), iterative_hessian_rounds=0,
                   max_bin=int(model.params.get("max_bin", params.max_bin)))


def _same_bounds(given, bounds, rows):
    """``given`` equals ``bounds`` on ``rows`` (a categorical feature's are its codes')."""
    if isinstance(given, str):
        return False
    try:
        given = np.asarray(given, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return given.shape == bounds.shape and np.array_equal(given[rows], bounds[rows])


def fit_targets(params, y, sample_weight=None, base_margin=None):
    """The fit's targets: the labels with each row's weight share
    (:func:`~dpxgb_dask.inputs.weight_shares` of ``params.weight_bound``) and base margin
    (XGBoost's ``base_margin``, where the row's margins start), checked
    (:meth:`~dpxgb_dask.inputs.Targets.checked`); and the parameters, which make no
    initial-score release when every row has a base margin (XGBoost then ignores the base
    score).

    Returns
    -------
    (TrainParams, Targets or None)
        None for ``y=None`` (a silo table's labels are its own).

    Raises
    ------
    ValueError
        Weights without their public bound, or a method whose sensitivities hold for
        whole rows only (not Gaussian leaves). A bound without weights weighs every row 1.
    """
    shape = getattr(y, "shape", None)
    if shape is not None and len(shape) == 2 and shape[1] != 1:
        # (a two-column y is never read as labels and weights: those come from here only)
        raise ValueError(f"y must be one column of labels, shape (n_rows,), got shape {shape}")
    if base_margin is not None:
        if not (is_dask_collection(base_margin) or is_dask_collection(y)):
            base_margin = base_margin_rows(base_margin, len(label_array(y)),
                                           Objective.of(params).n_outputs)
        params = with_overrides(params, init_score="zero")
    if y is None:  # (a silo table: its silos read the labels from their own files)
        return params, None
    return params, Targets.checked(label_array(y), _weight_shares(params, y, sample_weight),
                                   base_margin)


def _weight_shares(params, y, sample_weight):
    """Each row's weight share, or None for an unweighted fit (see :func:`fit_targets`)."""
    if sample_weight is None and params.weight_bound is None:
        return None
    if params.weight_bound is None:
        raise ValueError("sample_weight needs weight_bound, the public upper bound of the "
                         "weights (never read from them): e.g. weight_bound=10.0")
    if params.leaf_method != "gaussian":
        raise ValueError(f"sample_weight needs leaf_method='gaussian' (the Gaussian releases' "
                         f"sensitivities hold for a row's weight share; those of "
                         f"leaf_method={params.leaf_method!r} for whole rows only)")
    y = label_array(y)
    if sample_weight is None:  # (every row weighs 1, as in scikit-learn's unweighted fit)
        sample_weight = y * 0.0 + 1.0 if is_dask_collection(y) else np.ones(len(y))
    return weight_shares(sample_weight, params.weight_bound)


def with_evaluations(params, evals, feature_names, n_features):
    """The private evaluation sets of ``train(evals=)``: pairs (X, y), or (X, y,
    base_margin), with X's categorical features encoded as the fit's (lazily for dask
    collections), checked against the fit's features, and the labels with their base
    margins as their :class:`~dpxgb_dask.inputs.Targets`; and ``params`` with
    their count and metrics (``eval_metric``, default the objective's first with a DP
    form).

    Returns
    -------
    (TrainParams, list of (X, Targets))
    """
    sets = []
    for i, pair in enumerate(evals or ()):
        if not (isinstance(pair, (tuple, list)) and len(pair) in (2, 3)):
            raise ValueError(f"evals[{i}] must be a pair (X, y) or (X, y, base_margin)")
        X, y, margins = (*pair, None)[:3]
        if params.categories is not None:
            X = categories.encode(X, params.categories)
        names, n = describe_features(X)
        if n != n_features:
            raise ValueError(f"evals[{i}] has {n} features, X has {n_features}")
        if names is not None and feature_names is not None and names != feature_names:
            raise ValueError(f"evals[{i}]'s columns {names} differ from X's {feature_names}")
        if margins is not None and not (is_dask_collection(margins) or is_dask_collection(y)):
            margins = base_margin_rows(margins, len(label_array(y)),
                                       Objective.of(params).n_outputs)
        sets.append((X, Targets.checked(label_array(y), None, margins)))
    if len(sets) != params.private_eval_sets:
        metrics = tuple(metric_names(params.objective, params.eval_metric, private=True))
        params = with_overrides(params, private_eval_sets=len(sets),
                                eval_metric=metrics if sets else None)
    return params, sets


def train_in_process(params, X, y, n_partitions=1, *, publish=None, xgb_model=None,
                     sample_weight=None, evals=None, base_margin=None):
    """Train without a cluster: the same coordinator over partition states in this process
    (:class:`~dpxgb_dask.boosting.protocol.LocalBackend`), for tests and benchmarks on small
    data.

    Parameters
    ----------
    params : TrainParams
        Validated, with the bounds policy applied (:func:`check_bounds_policy`, after
        :func:`with_categories` when some features are categorical).
    X : array-like, shape (n_rows, n_features)
        Categorical features as their values (encoded here).
    y : array-like, shape (n_rows,)
    n_partitions : int
        Row chunks, as a cluster would hold them.
    publish : callable, optional
        Receives the coordinator's progress events (:mod:`~dpxgb_dask.progress`).
    xgb_model : Booster, optional
        A model to continue (``params`` from :func:`continuation_params`).
    sample_weight, base_margin : array-like, optional
        As in :func:`train`.
    evals : list of (X, y), optional
        Private evaluation sets (:func:`train`); their scores are ``coordinator.scores``.

    Returns
    -------
    Booster
    coordinator : Coordinator
        With its ledger, timings and scores.
    """
    params, X = with_categories(params, X)  # raw category values -> codes
    names, n_features = describe_features(X)
    params, eval_sets = with_evaluations(params, evals, names, n_features)
    params, y = fit_targets(params, y, sample_weight, base_margin)
    objective = Objective.of(params)
    coordinator = Coordinator(params, make_plan(params, n_features),
                              _local_backend(X, y, objective, n_partitions,
                                             params.cross_silo is not None), n_features,
                              publish=publish, init_model=xgb_model,
                              evaluations=[_local_backend(Xe, ye, objective, n_partitions)
                                           for Xe, ye in eval_sets])
    booster = asyncio.run(coordinator.fit())
    emit_warnings(coordinator.warnings, stacklevel=3)
    return booster, coordinator


def select_in_process(params, X, y, select, n_partitions=1):
    """:func:`train` with ``select``, without a cluster: the scheduler's
    :class:`~dpxgb_dask.boosting.selection.Selection` over partition states in this
    process, for tests and benchmarks on small data.

    Parameters
    ----------
    params : dict or TrainParams
        As :func:`train`'s.
    X, y : array-like
    select : str or dict
        As :func:`train`'s.
    n_partitions : int

    Returns
    -------
    Booster
    selection : Selection
    """
    p, X, _, _ = _fit_params(params, X, None)
    names, n_features = describe_features(X)
    p, y = fit_targets(check_bounds_policy(p, n_features), y)
    p, (configurations, spec), _ = _selection(select, params, p, n_features, None)
    run = Selection(SelectionPlan(configurations, n_features, spec),
                    _local_backend(X, y, Objective.of(p), n_partitions), names)
    booster = asyncio.run(run.fit())
    emit_warnings(run.warnings, stacklevel=3)
    return booster, run


def _local_backend(X, y, objective, n_partitions, silos=False):
    """The rows as ``n_partitions`` partition states in this process (``silos``: each a
    silo of a cross-silo fit)."""
    X = np.asarray(float_values(X, "X"), dtype=np.float64)
    y = Targets(np.asarray(float_values(y.label, "y"), dtype=np.float64), y.weight, y.margin)
    chunks = np.array_split(np.arange(len(y.label)), n_partitions)
    return LocalBackend([load_partition(X[c], y.rows(c), objective, i)
                         for i, c in enumerate(chunks)],
                        [[i] for i in range(len(chunks))] if silos else None)


_said_no_budget = False


def _warn_before_fit(params):
    """Warn of a large ε, and (once per process) of a fit without a budget."""
    if params.epsilon is not None:
        warn_if_large_epsilon(params.epsilon, stacklevel=4)
    if params.budget is None:
        _say_no_budget_once()


def _say_no_budget_once():
    """Warn (once per process) that fits without a budget are not checked across fits."""
    global _said_no_budget
    if not _said_no_budget:
        _said_no_budget = True
        warnings.warn("this fit names no privacy budget: each fit's epsilon holds for that "
                      "fit alone, and nothing checks what several fits on the same data "
                      "spend together. Create one with dpxgb_dask.create_budget(name, "
                      "epsilon, delta) (or `dpxgb budget create`) and pass budget=name.",
                      NoBudgetWarning, stacklevel=4)


def emit_warnings(records, stacklevel=3):
    """Raise in this process the warnings a fit's coordinator recorded (on the scheduler),
    as the same warning classes: ``records`` holds (class or its name in
    :data:`~dpxgb_dask.privacy.validation.WARNING_CATEGORIES`, message) pairs."""
    for category, message in records:
        if isinstance(category, str):
            category = WARNING_CATEGORIES.get(category, UserWarning)
        warnings.warn(str(message), category, stacklevel=stacklevel)


def train(params, X, y, client=None, *, verbose=False, n_partitions=None,
          return_timings=False, xgb_model=None, callbacks=None, sample_weight=None, evals=None,
          evals_result=None, base_margin=None, select=None, early_stopping_rounds=None):
    """Train a DP gradient-boosted model on a Dask cluster.

    Parameters
    ----------
    params : dict or TrainParams
        ``objective`` (default "binary:logistic"; "multi:softprob" with ``num_class``),
        optional ``preset`` and any field of :class:`~dpxgb_dask.params.fields.TrainParams`.
    X : ndarray, pandas.DataFrame, dask.array.Array, dask.dataframe.DataFrame or SiloTable
        Shape (n_rows, n_features), numeric; NaN marks missing values. A
        :class:`~dpxgb_dask.silo_table.SiloTable` (``y=None``, cross_silo): silos read theirs.
    y : array-like or dask collection, shape (n_rows,); None with a SiloTable
        Labels: 0/1, real values within ``label_bounds``, or class indices 0..K-1 (any
        other class label: ``unknown_labels``).
    client : distributed.Client or str, optional
        A client, or a scheduler's address. Default: the default client, else Dask's
        ``scheduler-address`` (``DASK_SCHEDULER_ADDRESS``), else an embedded LocalCluster.
    verbose : bool
        Show a progress bar of the coordinator's events.
    n_partitions : int, optional
        For NumPy / pandas inputs: row chunks to scatter (default one per worker).
    return_timings : bool
        Also return the coordinator's timings (benchmarks; not DP).
    xgb_model : Booster or path, optional
        Continue this model (warm start): the fit starts from its margins, bounds and
        cuts, adds ``n_estimators`` trees and spends ``epsilon`` more
        (:func:`continuation_params`), in one model and ledger; a budget is charged with
        the new part only.
    callbacks : list of callable, optional
        Each is called, in this process, with every public progress event of the fit (a
        dict, :mod:`~dpxgb_dask.progress`: never a released value or a timing). They
        cannot stop the fit; an exception of one is raised once the fit ended.
    sample_weight : array-like or dask collection, shape (n_rows,), optional
        Row weights, with their public upper bound ``weight_bound`` in ``params``: each
        row enters every sum with its share ``min(w, W) / W`` (negative or NaN: 0), so the
        sensitivities are the unweighted ones. Dask weights need the partitions of ``y``.
    evals : list of (X, y) or (X, y, base_margin), optional
        Private evaluation sets (in memory or dask), scored after every round with a DP
        metric, ``eval_metric`` in ``params``, charged to ε under the budget share "eval"
        (:mod:`~dpxgb_dask.boosting.scores`).
    evals_result : dict, optional
        Filled with their DP scores, ``{"validation_i": {metric: [after round 1, ...]}}``.
    base_margin : array-like or dask collection, shape (n_rows,) or (n_rows, K), optional
        XGBoost's: each row's margins start there instead of at the base score (no
        initial-score release); predictions then take it too (``Booster.predict``).
    select : str or dict, optional
        Choose privately among configurations, all for ``epsilon``: ``"shapes"``, or
        ``{"configurations": [dict, ...], ...}`` (:func:`~dpxgb_dask.boosting.selection.resolve_selection`).
    early_stopping_rounds : int, optional
        XGBoost's: with ``evals``, the noise-aware ``best_iteration`` and ``best_score`` on
        the last set's last metric (:func:`~dpxgb_dask.evaluation.stop_early`); all rounds train.

    Returns
    -------
    Booster
        (and a dict of timings when ``return_timings``)
    """
    check_early_stopping_rounds(early_stopping_rounds, evals)
    p, X, init_model, not_dp = _fit_params(params, X, xgb_model)
    p, feature_names, n_features = _described(X, y, p, init_model, sample_weight=sample_weight,
                                              base_margin=base_margin, evals=evals)
    p, eval_sets = with_evaluations(check_bounds_policy(p, n_features), evals, feature_names,
                                    n_features)
    p, y = fit_targets(p, y, sample_weight, base_margin)
    p, selection, planned = _selection(select, params, p, n_features, init_model, base_margin)
    _warn_before_fit(p)
    with ThreadPoolExecutor(1) as pool, client_or_embedded(client) as c:
        planning = pool.submit(*planned)  # public: overlaps the loading
        result = run_fit(c, p, planning, X, y, objective=Objective.of(p), n_features=n_features,
                         feature_names=feature_names, verbose=verbose, n_partitions=n_partitions,
                         with_timings=return_timings, init_model=init_model,
                         callbacks=list(callbacks or ()), evals=eval_sets, selection=selection)
    booster = _received_model(result, evals_result, not_dp)  # (checked like a model file)
    stop_early(booster, result.get("score_estimates"), early_stopping_rounds, p.label_bounds)
    emit_warnings(result.get("warnings", ()), stacklevel=3)
    if p.epsilon is None:  # dp_epsilon_per_tree: the total is known only now
        warn_if_large_epsilon(booster.ledger["epsilon"], stacklevel=3)
    return (booster, result["timings"]) if return_timings else booster


def _described(X, y, p, init_model, **fit_args):
    """X's feature names and count (:func:`~dpxgb_dask.inputs.describe_features`: a silo
    table's are its own, nothing is read), and the parameters, of a fit that continues
    ``init_model`` too (:func:`continuation_params`); a silo table's fit refuses ``y`` and
    the arguments ``fit_args`` (:meth:`~dpxgb_dask.silo_table.SiloTable.check_fit`).

    Returns
    -------
    (TrainParams, list of str or None, int)
    """
    feature_names, n_features = describe_features(X)
    if init_model is not None:
        p = continuation_params(p, init_model, feature_names, n_features)
    if isinstance(X, SiloTable):
        X.check_fit(y, p.objective, p.num_class, p.cross_silo, weight_bound=p.weight_bound,
                    **fit_args)
    return p, feature_names, n_features


def _selection(select, params, p, n_features, init_model, base_margin=None):
    """The fit's parameters, its selection (configurations, spec) of ``train(select=)`` or
    None, and how its plan is made: (callable, *args). With base margins every
    configuration makes no initial-score release (:func:`fit_targets`)."""
    if select is None:
        return p, None, (make_plan, p, n_features)
    if init_model is not None:
        raise ValueError("select cannot continue a model: give xgb_model=None")
    configurations, spec = resolve_selection(select, p, n_features, _resolver(params, n_features),
                                             None if base_margin is None
                                             else {"init_score": "zero"})
    return (configurations[0], (configurations, spec),
            (SelectionPlan, configurations, n_features, spec))


def _resolver(params, n_features):
    """``resolve(overrides, epsilon)`` of :func:`~dpxgb_dask.boosting.selection.resolve_selection`
    for the user's parameters: a dict is resolved again, for a table of ``n_features``
    features, with each configuration's overrides (None for resolved ``TrainParams``)."""
    if isinstance(params, TrainParams):
        return None
    given = dict(params)
    objective = given.pop("objective", "binary:logistic")
    preset = given.pop("preset", None)

    def resolve(overrides, epsilon):
        return resolve_params(objective, preset=preset, n_features=n_features,
                              **{**given, **overrides, "epsilon": epsilon})

    return resolve


def _received_model(result, evals_result=None, not_dp=()):
    """The model the scheduler returned, checked like a model file (a scheduler running
    another accounting, or tampered with, would be caught here), with the user's process's
    own non-DP choices (``not_dp``) stated in its ledger, and ``evals_result`` filled with
    the private evaluation sets' DP scores."""
    check_privacy_claims(result["model"]["ledger"], result["model"]["params"])
    if evals_result is not None:
        evals_result.update({f"validation_{i}": scores
                             for i, scores in enumerate(result.get("scores", []))})
    booster = Booster.from_dict(result["model"])
    stated = booster.ledger.setdefault("not_dp", [])
    stated.extend(c for c in not_dp if c not in stated)
    return booster


def _fit_params(params, X, xgb_model):
    """The fit's resolved parameters with its public category lists, X with its categorical
    features encoded, the model it continues (checked; None for a fresh fit), and the
    non-DP choices made here (category lists read from pandas dtypes).

    Returns
    -------
    (TrainParams, X, Booster or None, list of dict)
    """
    if isinstance(params, TrainParams):
        p = params
    else:
        given = dict(params)
        objective = given.pop("objective", "binary:logistic")
        preset = given.pop("preset", None)
        p = resolve_params(objective, preset=preset, n_features=count_features(X), **given)
    init_model = None
    if xgb_model is not None:
        if isinstance(xgb_model, Booster):
            # (a file is checked when it loads; a model in memory is checked here)
            check_privacy_claims(xgb_model.ledger, xgb_model.params)
            init_model = xgb_model
        elif isinstance(xgb_model, (str, bytes, os.PathLike)):
            init_model = Booster.load_model(xgb_model)
        else:
            raise TypeError("xgb_model must be a Booster, a fitted estimator or a model "
                            f"file's path, got {type(xgb_model).__name__}")
        if p.categories is None and init_model.categories is not None:
            p = replace(p, categories=init_model.categories)  # the model's public lists
    from_dtype = categories.dtype_columns(p.categories, X)
    not_dp = [{"purpose": "categories", "parameter": f"categories of {from_dtype} from their "
               "pandas dtype", "reveals": "the category lists of those columns' dtype, which "
               "astype('category') reads off the values present"}] if from_dtype else []
    p, X = with_categories(p, X)
    return p, X, init_model, not_dp
