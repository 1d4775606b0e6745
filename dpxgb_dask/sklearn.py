"""scikit-learn estimators: ``DPXGBClassifier`` and ``DPXGBRegressor``.

They follow the estimator contract (parameters stored as given in ``__init__``, fitted
attributes ending in ``_``, ``get_params`` / ``set_params`` / ``clone``, scikit-learn's
input validation and its estimator checks: ``tests/integration/test_estimator_checks.py``), and
Dask's: ``client=None`` uses the default client, else the scheduler at Dask's
``scheduler-address`` setting, else an embedded LocalCluster, dask inputs
predict lazily, and pickling drops the client.

In-memory inputs (NumPy, pandas with NumPy, nullable or pyarrow dtypes, scipy sparse CSR or
CSC matrices whose absent entries are 0, lists) are validated in the user's process, who
holds the rows anyway: shapes, dtypes, complex values, NaN or inf labels and the
number of features at predict time raise there, as scikit-learn's estimators do. NaN in X
is a missing value (routed by each split's default direction) and ±inf lies beyond the
feature's public bounds (binned to their ends, as every value outside them is). Regression
labels outside ``label_bounds`` are clipped to them. Dask inputs are not read in the user's
process: only their metadata is checked, and values outside the public domain are
clipped on the workers, never refused (:func:`~dpxgb_dask.partition.state.make_part`),
except a classification label outside its classes, refused to the user who sent it unless
``unknown_labels="missing"``.
"""
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .estimator_inputs import EstimatorInputs
from .evaluation import RoundScores, check_eval_set, check_public
from .inputs import (bounds_by_name, encode_labels, encode_labels_lazily, feature_names_of,
                     is_dask_collection as _is_dask)
from .model.dask_predict import as_dask_array, binary_proba, gathered
from .objective import softmax
from .params import TRAIN_PARAMETERS
from .params.names import (XGBOOST_ALIASES, KeywordParameters, merge_keywords,
                           take_estimator_keywords)
from .privacy.validation import PrivacyLeakWarning
from .progress import check_verbose, evaluation_log
from .silo_table import SiloTable
from .training import train


class _DPXGBModel(KeywordParameters, RoundScores, EstimatorInputs, BaseEstimator):
    """Shared parameters and plumbing of the DP estimators.

    Parameters
    ----------
    n_estimators, max_depth, learning_rate, reg_lambda, subsample, min_child_weight, max_bin
        Boosting parameters (see :class:`dpxgb_dask.params.fields.TrainParams`); None takes the
        preset's (or the default's) value.
    epsilon : float, optional
        Total privacy budget of the fit (default 1.0 unless ``dp_epsilon_per_tree``).
    delta : float, optional
        δ of (ε, δ)-DP.
    dp_epsilon_per_tree : float, optional
        DP-XGBoost's budget per tree, instead of ``epsilon``.
    feature_bounds : array of shape (n_features, 2), dict or "data", optional
        Public per-feature (lo, hi), or ``{column: (lo, hi)}`` for a DataFrame (a
        categorical column needs none). "data" reads them from the data (not private:
        warns).
    label_bounds : tuple (lo, hi), optional
        Public label range (regression: required).
    bounds_epsilon : float, optional
        Budget for a DP estimate of the feature bounds when they are not given.
    preset : {"dp-xgboost", "dpboost", "maddock", "s-bdt"}, optional
    random_state : int, optional
        Seed of the public random choices (random trees' features and thresholds). The DP
        noise and the row subsamples are keyed by a fresh secret at every fit.
    reproducible_noise : bool, default False
        Key the noise by ``random_state`` too, to reproduce a fit exactly. Warns with a
        ``PrivacyLeakWarning``: refits on neighbouring data (``clone``, ``GridSearchCV``)
        then share their noise, which cancels in their difference.
    budget : str, optional
        Name of a privacy budget across fits on the scheduler (``create_budget``): the
        fit is refused, before it reads a row, if it would exceed it, and charged with its
        releases when it ends. ``privacy_report()["budget"]`` says what it spent.
    client : distributed.Client or str, optional
        A client, or a scheduler's address (``train``'s ``client``).
    categories : dict or list, optional
        Public category lists of the categorical features, ``{column: [categories]}`` or
        one entry (a list, or None) per feature; pandas ``category`` columns take their
        dtype's categories (build it from the public list). A value outside the list is
        missing. Their splits send a set of categories left and the rest right.
    dp_params : dict, optional
        Any other field of ``TrainParams`` (e.g. ``split_method``, ``accountant``).
    verbose : bool or int, default False
        Show the fit's progress (trees built, ε spent:
        :class:`~dpxgb_dask.progress.ProgressDisplay`) and, with ``fit(eval_set=...)``,
        print XGBoost's evaluation log of ``evals_result_`` after the fit: every round
        (True), every ``verbose``-th round and the last (an int). ``fit(verbose=)``
        overrides it for one fit.
    early_stopping_rounds : int, optional
        With ``fit(eval_set=...)``: ``best_iteration`` is the round after which this many
        rounds did not improve the last metric on the last evaluation set, and predictions
        use the rounds up to it (XGBoost's rule on a public set; on a private set, whose
        scores are noisy, a round counts as worse only beyond what the noise explains:
        :func:`~dpxgb_dask.evaluation.noisy_early_stopping`). Every round was trained and
        released: it picks the model, it saves no budget.
    eval_metric : str or list of str, optional
        Metrics of ``evals_result_``: "logloss", "error", "auc" (binary; not of private
        sets), "mlogloss", "merror" (multiclass), "rmse", "mae" (regression); default the
        first.
    callbacks : list of callable, optional
        Called in your process with every public progress event of the fit
        (``train(callbacks=)``).
    weight_bound : float, optional
        The public upper bound W of ``fit``'s ``sample_weight`` (needed with weights): a
        row counts ``min(w, W) / W`` of a row in every released sum
        (:class:`~dpxgb_dask.params.fields.TrainParams`).
    select : str or dict, optional
        Choose privately among configurations, all within ``epsilon`` (``train(select=)``):
        ``"shapes"`` or ``{"configurations": [dict, ...], "mean_runs": 3, ...}``.
    **kwargs
        Any other field of :class:`~dpxgb_dask.params.fields.TrainParams` as a keyword
        (``split_method="noisy_histogram"``, ``accountant="rdp"``, ...), or XGBoost's name
        of one (``n_jobs``, ``eta``, ``seed``): ``get_params``, ``set_params`` and ``clone``
        keep them. A parameter given twice (a keyword and ``dp_params``, or under both
        names) with different values is refused at fit, as is an unknown name.
    """

    _objective = None

    def __init__(self, *, n_estimators=None, max_depth=None, learning_rate=None,
                 reg_lambda=None,
                 subsample=None, min_child_weight=None, max_bin=None, epsilon=None, delta=None,
                 dp_epsilon_per_tree=None, feature_bounds=None, label_bounds=None,
                 bounds_epsilon=None, preset=None, random_state=None,
                 reproducible_noise=False, budget=None, client=None, dp_params=None,
                 verbose=False, categories=None, early_stopping_rounds=None,
                 eval_metric=None, callbacks=None, weight_bound=None, select=None, **kwargs):
        for name, value in kwargs.items():  # (checked at fit, as scikit-learn asks)
            setattr(self, name, value)
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.reg_lambda = reg_lambda
        self.subsample = subsample
        self.min_child_weight = min_child_weight
        self.max_bin = max_bin
        self.epsilon = epsilon
        self.delta = delta
        self.dp_epsilon_per_tree = dp_epsilon_per_tree
        self.feature_bounds = feature_bounds
        self.label_bounds = label_bounds
        self.bounds_epsilon = bounds_epsilon
        self.preset = preset
        self.random_state = random_state
        self.reproducible_noise = reproducible_noise
        self.budget = budget
        self.client = client
        self.dp_params = dp_params
        self.verbose = verbose
        self.categories = categories
        self.early_stopping_rounds = early_stopping_rounds
        self.eval_metric = eval_metric
        self.callbacks = callbacks
        self.weight_bound = weight_bound
        self.select = select

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN is a missing value
        tags.input_tags.sparse = True     # CSR/CSC: absent entries are 0 (inputs.float_values)
        # Every fit draws fresh secret noise: two fits agree only with the opt-in.
        tags.non_deterministic = not self.reproducible_noise
        return tags

    def _train_params(self, feature_names, n_classes=None, categorical_names=()):
        keywords = self._keywords()
        take_estimator_keywords(keywords, self._objectives, type(self).__name__)
        allowed = (TRAIN_PARAMETERS | set(XGBOOST_ALIASES)) - {"objective", "num_class"}
        unknown = sorted(set(keywords) - allowed)
        if unknown:
            raise ValueError(f"{type(self).__name__} got unknown parameters {unknown}; the "
                             f"training parameters are {sorted(allowed)}")
        for name in ("n_estimators", "max_depth", "learning_rate", "reg_lambda", "subsample",
                     "min_child_weight", "max_bin", "epsilon", "delta", "dp_epsilon_per_tree",
                     "label_bounds", "bounds_epsilon", "random_state", "budget", "preset",
                     "feature_bounds", "categories", "weight_bound", "eval_metric"):
            keywords[name] = getattr(self, name)
        keywords["reproducible_noise"] = self.reproducible_noise or None  # (False: not given)
        params = merge_keywords(keywords, self.dp_params or {})
        if params.get("feature_bounds") is not None:
            params["feature_bounds"] = bounds_by_name(params["feature_bounds"], feature_names,
                                                       categorical_names)
        params["objective"] = self._objective
        if n_classes is not None and n_classes > 2:
            params["objective"], params["num_class"] = "multi:softprob", int(n_classes)
        return params

    #: The objectives XGBoost's estimator of the same kind takes, which name this one's
    #: (the classifier's follows its number of classes, as XGBoost's does).
    _objectives = ()

    def _fit(self, X, y, *, classes=None, xgb_model=None, sample_weight=None, evals=(),
             base_margin=None, verbose=False):
        """Train ``booster_``, with the progress display if ``verbose``; return the DP
        scores of ``evals`` (private sets) or None."""
        names = feature_names_of(X)
        if isinstance(xgb_model, BaseEstimator):
            check_is_fitted(xgb_model, "booster_")  # names xgb_model's estimator class
            xgb_model = xgb_model.booster_
        n_classes = None if classes is None else len(classes)
        resolved = self._categories_of(X, xgb_model) or []
        categorical_names = [n for n, c in zip(names or [], resolved) if c is not None]
        params, scores = self._train_params(names, n_classes, categorical_names), {}
        booster = train(params, X, y, client=self.client, verbose=verbose,
                        xgb_model=xgb_model, callbacks=self.callbacks,
                        sample_weight=sample_weight, evals=list(evals), evals_result=scores,
                        base_margin=base_margin, select=self.select,
                        early_stopping_rounds=self.early_stopping_rounds if evals else None)
        self.booster_ = booster
        if classes is not None:
            self.classes_ = classes
        if _is_dask(X) or isinstance(X, SiloTable):  # (validate_data set these in memory)
            self.n_features_in_ = booster.n_features
            if isinstance(X, SiloTable) or (hasattr(X, "columns")
                                            and all(isinstance(c, str) for c in X.columns)):
                self.feature_names_in_ = np.asarray(booster.feature_names, dtype=object)
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
        self.epsilon_spent_ = float(booster.ledger["epsilon"])
        return scores if evals else None

    def _log_rounds(self, period):
        """Print XGBoost's evaluation log of ``evals_result_`` every ``period``-th round
        (:func:`~dpxgb_dask.progress.evaluation_log`; 0 or no eval_set: nothing)."""
        for line in evaluation_log(self.__dict__.get("evals_result_", {}), period,
                                   self.booster_.n_rounds):
            print(line, flush=True)

    def _predict_booster(self, X, output_margin=False, iteration_range=None, base_margin=None,
                         **kinds):
        """The booster's prediction of validated X (codes for categorical features), by
        the rounds of ``iteration_range``."""
        encoded = not _is_dask(X)
        if iteration_range is None and getattr(self, "best_iteration_", None) is not None:
            iteration_range = (0, self.best_iteration_ + 1)  # (XGBoost's default after it)
        return self.booster_.rounds(iteration_range).predict(
            X, output_margin=output_margin, encoded=encoded, base_margin=base_margin, **kinds)

    def get_booster(self):
        """The fitted :class:`~dpxgb_dask.model.booster.Booster` (``booster_``), as
        XGBoost's estimators give theirs."""
        check_is_fitted(self, "booster_")
        return self.booster_

    def apply(self, X, iteration_range=None):
        """The leaf each row reaches in each tree, shape (n_rows, n_trees) (node ids as in
        :meth:`Booster.predict_leaf <dpxgb_dask.model.booster.Booster.predict_leaf>`;
        in-memory X)."""
        return self._predict_booster(self._validate_predict_input(X),
                                     iteration_range=iteration_range, pred_leaf=True)

    def score(self, X, y, sample_weight=None):
        """Accuracy (classifier) or R² (regressor) of ``predict(X)`` against ``y``; dask
        inputs are predicted on the cluster and only the predictions and labels are
        gathered to score them."""
        if not (_is_dask(X) or _is_dask(y) or _is_dask(sample_weight)):
            return float(self._metric(y, self.predict(X), sample_weight=sample_weight))
        prediction, y_true, weight = gathered(self.predict(X), y, sample_weight)
        return float(self._metric(y_true, prediction, sample_weight=weight))

    @property
    def feature_importances_(self):
        """ndarray of float64, shape (n_features,): ``Booster.feature_importance``
        ("leaf_spread"), from the model's public values only (nothing new is released)."""
        check_is_fitted(self, "booster_")
        return self.booster_.feature_importance("leaf_spread")

    def privacy_report(self):
        """ε of the fit under every accountant, and the ledger's events as rows.

        Returns
        -------
        dict
            ``{"delta", "basic", "rdp", "pld", "best", "n_events", "accountant",
            "epsilon", "neighbouring_relation", "not_dp", "is_dp", "budget",
            "events": [dict, ...]}`` (:func:`~dpxgb_dask.model.certificate.model_privacy_report`)
        """
        check_is_fitted(self, "booster_")
        return self.booster_.privacy_report()

    def _margin(self, X, iteration_range=None, base_margin=None):
        return self._predict_booster(self._validate_predict_input(X), output_margin=True,
                                     iteration_range=iteration_range, base_margin=base_margin)

    def __sklearn_clone__(self):
        """Clone the parameters; the client is shared, not copied (it holds a connection)."""
        from sklearn.base import clone

        params = self.get_params(deep=False)
        client = params.pop("client")
        return type(self)(client=client, **{k: clone(v, safe=False) for k, v in params.items()})

    def __getstate__(self):
        state = self.__dict__.copy()
        if not isinstance(state["client"], str):  # a scheduler's address travels
            state["client"] = None  # a Client is bound to a process and an event loop
        return state


_PARAMETERS = "\n    Parameters\n    ----------\n"


def _with_shared_parameters(cls):
    """Give a public estimator's docstring the parameters every estimator takes (those of
    ``_DPXGBModel``, written once), before its own."""
    shared = _DPXGBModel.__doc__.split(_PARAMETERS, 1)[1].rstrip()
    head, _, own = cls.__doc__.partition(_PARAMETERS)
    cls.__doc__ = f"{head.rstrip()}\n{_PARAMETERS}{shared}\n{own.rstrip()}\n    "
    return cls


@_with_shared_parameters
class DPXGBClassifier(ClassifierMixin, _DPXGBModel):
    """Differentially private gradient-boosted classifier: binary (``binary:logistic``)
    for two classes, softmax (``multi:softprob``, one tree per class and round) for three
    or more.

    Fitted attributes: ``booster_`` (:class:`~dpxgb_dask.model.booster.Booster`), ``classes_``,
    ``n_classes_``, ``epsilon_spent_`` (under the chosen accountant), ``n_features_in_``.

    Parameters
    ----------
    classes : array-like of labels, optional
        The public label set (2 or more distinct labels, sorted as ``np.unique`` would:
        with two, ``classes_[1]`` is the positive class). Without it the classes are read
        from in-memory labels, which is not differentially private (the set of labels
        present is revealed, e.g. that no row has a rare label) and warns with a
        :class:`~dpxgb_dask.privacy.validation.PrivacyLeakWarning`, as diffprivlib does;
        with it a ``y`` that lacks some classes trains. Dask labels are never read in the
        user's process: with ``classes`` they are encoded lazily, without it they must be
        the class indices 0 and 1 (or 0 .. K - 1); a label outside the classes is refused
        by the workers, or its row left out with ``unknown_labels="missing"``
        (:meth:`~dpxgb_dask.objective.Objective.labels_in_domain`), never counted as
        another class.
    """

    _objective = "binary:logistic"
    _objectives = ("binary:logistic", "multi:softprob", "multi:softmax")
    _metric = staticmethod(accuracy_score)
    score = _DPXGBModel.score  # (ClassifierMixin's cannot score dask collections)

    def __init__(self, *, n_estimators=None, max_depth=None, learning_rate=None,
                 reg_lambda=None,
                 subsample=None, min_child_weight=None, max_bin=None, epsilon=None, delta=None,
                 dp_epsilon_per_tree=None, feature_bounds=None, label_bounds=None,
                 bounds_epsilon=None, preset=None, random_state=None,
                 reproducible_noise=False, budget=None, client=None, dp_params=None,
                 verbose=False, classes=None, categories=None, early_stopping_rounds=None,
                 eval_metric=None, callbacks=None, weight_bound=None, select=None, **kwargs):
        super().__init__(
            n_estimators=n_estimators, max_depth=max_depth, learning_rate=learning_rate,
            reg_lambda=reg_lambda, subsample=subsample, min_child_weight=min_child_weight,
            max_bin=max_bin, epsilon=epsilon, delta=delta,
            dp_epsilon_per_tree=dp_epsilon_per_tree, feature_bounds=feature_bounds,
            label_bounds=label_bounds, bounds_epsilon=bounds_epsilon, preset=preset,
            random_state=random_state, reproducible_noise=reproducible_noise, budget=budget,
            client=client, dp_params=dp_params, verbose=verbose, categories=categories,
            early_stopping_rounds=early_stopping_rounds, eval_metric=eval_metric,
            callbacks=callbacks, weight_bound=weight_bound, select=select, **kwargs)
        self.classes = classes

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # scikit-learn's check_classifiers_train asks accuracy > 0.83 of a fit on 200 rows;
        # at the default budget (ε = 1) the DP noise on so few rows keeps some fits below.
        tags.classifier_tags.poor_score = True
        return tags

    def _public_classes(self):
        classes = np.unique(np.asarray(self.classes).reshape(-1))
        if classes.size < 2 or classes.size != np.asarray(self.classes).size:
            raise ValueError(f"classes must hold 2 or more distinct labels, got "
                             f"{self.classes!r}")
        return classes

    def fit(self, X, y=None, *, xgb_model=None, eval_set=None, eval_set_public=False,
            sample_weight=None, base_margin=None, base_margin_eval_set=None, verbose=None):
        """Fit on X (n_rows, n_features) and labels y (n_rows,), or on a
        :class:`~dpxgb_dask.silo_table.SiloTable` X with ``y=None`` (``train``'s).

        Parameters
        ----------
        X : array-like, sparse matrix, dask collection or SiloTable
        y : array-like or dask collection, optional
            Encoded as their index in ``classes_`` (binary: 0 and 1); see ``classes`` for
            where ``classes_`` comes from (a silo table's: ``classes``, else its own, else
            0 and 1; its silos encode their labels).
        xgb_model : Booster, str or fitted estimator, optional
            A model (or its file) to continue: ``n_estimators`` more rounds for
            ``epsilon`` more (``train(xgb_model=)``).
        eval_set : list of (X, y), optional
            Scored after every round (``evals_result_``, ``early_stopping_rounds``).
        eval_set_public : bool, default False
            ``eval_set`` is public: scored in your process, spending nothing; else on the
            cluster with a DP metric charged to ``epsilon`` (``train(evals=)``).
        sample_weight : array-like of shape (n_rows,), optional
            Needs the public bound ``weight_bound`` (``train(sample_weight=)``: each row
            counts ``min(w, W) / W``).
        base_margin : array-like of shape (n_rows,) or (n_rows, K), optional
            Where each row's margins start (``train(base_margin=)``; predictions take it).
        base_margin_eval_set : list of array-like, optional
            The base margins of each ``eval_set`` pair.
        verbose : bool or int, optional
            XGBoost's: with an ``eval_set``, print ``evals_result_`` to standard output,
            ``[0]\tvalidation_0-logloss:0.61234`` (every set's metrics on one line, tab
            separated), every round (True or 1), every ``verbose``-th round and the last
            (an int), or never (False or 0). The lines are printed once the fit ended (the
            rounds are scored after the last tree), from the scores ``evals_result_``
            holds: nothing more is released. Truthy: the progress display too (the
            estimator's ``verbose``). None: the estimator's ``verbose``.

        Returns
        -------
        self : DPXGBClassifier
        """
        period = check_verbose(self.verbose if verbose is None else verbose)
        eval_sets = check_eval_set(eval_set, base_margin_eval_set)
        if eval_set_public:
            check_public(eval_sets)
        X, y = self._validate_fit_input(X, y, y_numeric=False, xgb_model=xgb_model)
        sample_weight = self._checked_weights(sample_weight, X)
        # (classes_ is set only with the new booster_: a failed refit keeps the old pair)
        if isinstance(X, SiloTable):  # (its silos encode their labels as they read them)
            X = X.with_classes(self.classes)
            classes = np.array([0, 1]) if X.classes is None else np.asarray(X.classes)
        elif _is_dask(y):
            classes = np.array([0, 1]) if self.classes is None else self._public_classes()
        else:
            classes = self._classes_of(np.asarray(y).reshape(-1))
        eval_sets = [(Xe, self._encoded(ye, classes), me) for Xe, ye, me in eval_sets]
        scores = self._fit(X, self._encoded(y, classes), classes=classes, xgb_model=xgb_model,
                           sample_weight=sample_weight,
                           evals=() if eval_set_public else eval_sets,
                           base_margin=base_margin, verbose=bool(period))
        if self.classes is None and not _is_dask(y) and y is not None:
            read_classes = {"purpose": "classes", "parameter": "classes=None",
                            "reveals": "the set of labels present in y (read in the user's "
                                       "process)"}
            not_dp = self.booster_.ledger.setdefault("not_dp", [])
            if read_classes not in not_dp:  # (a continued model may list it already)
                not_dp.append(read_classes)
        self._score_rounds(eval_sets, scores)
        self._log_rounds(period)
        return self

    def _encoded(self, y, classes):
        """Labels as class indices (lazily for dask; see the class's ``classes``)."""
        if y is None:  # (a silo table's: its silos encode them)
            return None
        if not _is_dask(y):
            return encode_labels(np.asarray(y).reshape(-1), classes)
        if self.classes is None:
            return y  # (class indices: any other label is refused on the workers)
        return encode_labels_lazily(y, classes)

    def _classes_of(self, y_values):
        """The classes of in-memory labels: ``classes`` (checked), else read from them
        with a :class:`~dpxgb_dask.privacy.validation.PrivacyLeakWarning`."""
        check_classification_targets(y_values)
        if self.classes is not None:
            classes = self._public_classes()
            if not np.isin(y_values, classes).all():
                # (the user's process holds these labels: this reveals nothing to anyone else)
                raise ValueError(f"y holds labels outside classes={classes.tolist()!r}")
            return classes
        classes = np.unique(y_values)
        if classes.size < 2:
            raise ValueError(f"y contains 1 class ({classes[0]!r}); a classifier needs "
                             "two: give the public label set as classes=")
        warnings.warn("DPXGBClassifier read its classes from the labels: the set of "
                      "labels present is not differentially private. Give the public "
                      "label set as classes=[...] instead.", PrivacyLeakWarning,
                      stacklevel=3)
        return classes

    @property
    def n_classes_(self):
        check_is_fitted(self, "classes_")
        return len(self.classes_)

    def decision_function(self, X):
        """Raw margins: log-odds of ``classes_[1]``, shape (n_rows,), or one margin per
        class, shape (n_rows, K) (lazy for dask)."""
        margin = self._margin(X)
        return as_dask_array(margin) if _is_dask(margin) else margin

    def predict_proba(self, X, iteration_range=None, base_margin=None):
        """Probabilities, shape ``(n_rows, n_classes_)`` (a lazy dask array for dask inputs),
        of the rounds of ``iteration_range`` (XGBoost's (begin, end); None: all), from
        ``base_margin`` (XGBoost's: each row's starting margins) when given."""
        margin = self._margin(X, iteration_range, base_margin)
        to_proba = binary_proba if margin.ndim == 1 else softmax
        if _is_dask(margin):
            margin = as_dask_array(margin)
            if margin.ndim == 1:
                return margin.map_blocks(binary_proba, new_axis=1,
                                         chunks=(margin.chunks[0], (2,)), dtype=np.float64)
            return margin.map_blocks(softmax, dtype=np.float64)
        return to_proba(margin)

    def predict(self, X, output_margin=False, iteration_range=None, base_margin=None):
        """Class labels from ``classes_``, shape (n_rows,) (lazy for dask inputs), or with
        ``output_margin`` the raw margins (:meth:`decision_function`); of the rounds of
        ``iteration_range`` (XGBoost's (begin, end); None: all), from ``base_margin``."""
        margin = self._margin(X, iteration_range, base_margin)
        if output_margin:
            return as_dask_array(margin) if _is_dask(margin) else margin
        if _is_dask(margin):
            import dask.array as da

            margin = as_dask_array(margin)
            if margin.ndim == 2:
                classes = self.classes_  # (the tasks carry the labels, not the estimator)
                return margin.argmax(axis=1).map_blocks(lambda i: classes[i],
                                                        dtype=classes.dtype)
            return da.where(margin > 0, self.classes_[1], self.classes_[0])
        if margin.ndim == 2:
            return self.classes_[np.argmax(margin, axis=1)]
        return self.classes_[(margin > 0).astype(int)]


@_with_shared_parameters
class DPXGBRegressor(RegressorMixin, _DPXGBModel):
    """Differentially private gradient-boosted regressor (squared error).

    ``label_bounds`` (the public label range) is required. Fitted attributes as for
    :class:`DPXGBClassifier`, without ``classes_``.
    """

    _objective = "reg:squarederror"
    _objectives = ("reg:squarederror",)
    _metric = staticmethod(r2_score)
    score = _DPXGBModel.score  # (RegressorMixin's cannot score dask collections)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # scikit-learn's check_regressors_train asks R² > 0.5 of a fit on 200 rows; the DP
        # noise on so few rows (e.g. ε = 8, label_bounds (-5, 5)) keeps it below.
        tags.regressor_tags.poor_score = True
        return tags

    def fit(self, X, y=None, *, xgb_model=None, eval_set=None, eval_set_public=False,
            sample_weight=None, base_margin=None, base_margin_eval_set=None, verbose=None):
        """Fit on X (n_rows, n_features) and real labels y (n_rows,) within label_bounds,
        or on a :class:`~dpxgb_dask.silo_table.SiloTable` X with ``y=None``; the other
        arguments as in :meth:`DPXGBClassifier.fit` (``verbose`` too: XGBoost's
        evaluation log of ``evals_result_``, printed once the fit ended).

        Returns
        -------
        self : DPXGBRegressor
        """
        period = check_verbose(self.verbose if verbose is None else verbose)
        eval_sets = check_eval_set(eval_set, base_margin_eval_set)
        if eval_set_public:
            check_public(eval_sets)
        X, y = self._validate_fit_input(X, y, y_numeric=True, xgb_model=xgb_model)
        scores = self._fit(X, y, xgb_model=xgb_model,
                           sample_weight=self._checked_weights(sample_weight, X),
                           evals=() if eval_set_public else eval_sets,
                           base_margin=base_margin, verbose=bool(period))
        self._score_rounds(eval_sets, scores)
        self._log_rounds(period)
        return self

    def predict(self, X, output_margin=False, iteration_range=None, base_margin=None):
        """Predictions clipped to ``label_bounds``, shape (n_rows,) (lazy for dask
        inputs): the label is known to lie there, so clipping is free post-processing.
        ``output_margin``: the unclipped margin; ``iteration_range``: XGBoost's (begin,
        end) of the rounds to use (None: all); ``base_margin``: each row's start."""
        prediction = self._predict_booster(self._validate_predict_input(X), output_margin,
                                           iteration_range, base_margin)
        return as_dask_array(prediction) if _is_dask(prediction) else prediction
