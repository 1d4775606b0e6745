"""A released model scored round by round on evaluation sets the user declares public
(XGBoost's ``eval_set``, ``evals_result_`` and early stopping).

Scoring reads the model (DP releases) and public rows in the user's process only: it is
post-processing and spends nothing. The rounds are scored after the fit, from one walk of
the trees (:func:`round_margins`): every round of ``n_estimators`` was trained and released,
so early stopping picks the round to predict with (``best_iteration``) but spends the budget
of every round all the same.
"""
import numbers

import numpy as np
from sklearn.utils.validation import check_is_fitted

#: Metrics by name: (function of (labels, predictions, booster), whether lower is better).
#: Labels are class indices (classifiers) or values; predictions are ``Booster.transform``'s.
METRICS = {
    "logloss": (lambda y, p, b: _log_loss(y, np.column_stack([1.0 - p, p])), True),
    "error": (lambda y, p, b: float(np.mean((p > 0.5) != (y == 1))), True),
    "auc": (lambda y, p, b: _auc(y, p), False),
    "mlogloss": (lambda y, p, b: _log_loss(y, p), True),
    "merror": (lambda y, p, b: float(np.mean(np.argmax(p, axis=1) != y)), True),
    "rmse": (lambda y, p, b: float(np.sqrt(np.mean((p - y) ** 2))), True),
    "mae": (lambda y, p, b: float(np.mean(np.abs(p - y))), True),
}

#: The metrics each objective can be scored with, its default first (XGBoost's).
OBJECTIVE_METRICS = {
    "binary:logistic": ("logloss", "error", "auc"),
    "multi:softprob": ("mlogloss", "merror"),
    "reg:squarederror": ("rmse", "mae"),
}


def _log_loss(y, probabilities):
    picked = probabilities[np.arange(len(y)), y.astype(int)]
    return float(-np.mean(np.log(np.clip(picked, 1e-15, 1.0))))


def _auc(y, p):
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, p)) if len(np.unique(y)) == 2 else float("nan")


def metric_names(objective, eval_metric=None):
    """The metrics to score: ``eval_metric`` (a name or a list of names), checked against
    the objective's, or the objective's default.

    Returns
    -------
    list of str
    """
    allowed = OBJECTIVE_METRICS[objective]
    if eval_metric is None:
        return [allowed[0]]
    names = [eval_metric] if isinstance(eval_metric, str) else list(eval_metric)
    bad = [n for n in names if n not in allowed]
    if bad or not names:
        raise ValueError(f"eval_metric must name metrics of {objective}: {list(allowed)}, "
                         f"got {eval_metric!r}")
    return names


def round_margins(booster, X, encoded=False):
    """The margins of every row after each boosting round, from one walk of the trees.

    Parameters
    ----------
    booster : Booster
    X : array-like of shape (n_rows, n_features)
    encoded : bool
        Categorical features hold their codes (``Booster.predict``'s).

    Returns
    -------
    ndarray of float64, shape (n_rounds, n_rows), or (n_rounds, n_rows, K) for
    multi:softprob
    """
    leaves = booster.predict_leaf(X, encoded=encoded) + booster.tree_roots[None, :]
    values = booster.nodes["value"][leaves]  # (n_rows, n_trees)
    per_class = []
    for k in range(booster.n_outputs):
        base = booster.base_score if booster.n_classes is None else booster.base_score[k]
        trees = values[:, booster.tree_class == k]  # (n_rows, n_rounds), rounds in order
        per_class.append(base + np.cumsum(trees, axis=1).T)
    return per_class[0] if booster.n_classes is None else np.stack(per_class, axis=-1)


def evaluate(booster, eval_sets, metrics, encoded=False):
    """Score every round on each evaluation set.

    Parameters
    ----------
    booster : Booster
    eval_sets : list of (X, y)
        Public rows and their labels (class indices for classifiers).
    metrics : list of str
        Names in :data:`METRICS`.
    encoded : bool
        As in :func:`round_margins`.

    Returns
    -------
    dict
        ``{"validation_i": {metric: [score after round 1, 2, ...]}}`` (XGBoost's
        ``evals_result()``).
    """
    results = {}
    for i, (X, y) in enumerate(eval_sets):
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        predictions = booster.transform(round_margins(booster, X, encoded))
        results[f"validation_{i}"] = {
            name: [METRICS[name][0](y, p, booster) for p in predictions] for name in metrics}
    return results


def early_stopping(scores, rounds, lower_is_better=True):
    """XGBoost's early stopping rule on a series of scores: the round after which
    ``rounds`` rounds in a row did not improve on the best.

    Parameters
    ----------
    scores : sequence of float
        One per round.
    rounds : int
    lower_is_better : bool

    Returns
    -------
    best_iteration : int
        The best round (0-based) up to the stop.
    best_score : float
    """
    best = 0
    for r in range(1, len(scores)):
        better = scores[r] < scores[best] if lower_is_better else scores[r] > scores[best]
        if better:
            best = r
        elif r - best >= rounds:
            break
    return best, float(scores[best])


def check_eval_set(eval_set, eval_set_public):
    """Refuse an evaluation set not declared public (scoring private rows is a release of
    its own, which the library does not make yet) and one that is not in memory."""
    if eval_set is None:
        return []
    if not eval_set_public:
        raise ValueError("eval_set is scored in your process with no noise: declare it "
                         "public with eval_set_public=True if its rows are public (e.g. a "
                         "published benchmark split); a DP metric on private rows is not "
                         "available yet")
    sets = list(eval_set)
    for i, pair in enumerate(sets):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise ValueError(f"eval_set[{i}] must be a pair (X, y)")
        if any(hasattr(v, "__dask_graph__") for v in pair):
            raise ValueError(f"eval_set[{i}] is a dask collection: it is public, compute it "
                             "first (X.compute(), y.compute())")
    return sets


class RoundScores:
    """The estimators' ``evals_result_``, ``best_iteration`` and ``best_score``: their
    ``eval_set`` scored round by round (a mixin of
    :class:`~dpxgb_dask.sklearn.DPXGBClassifier` and
    :class:`~dpxgb_dask.sklearn.DPXGBRegressor`)."""

    def _score_rounds(self, eval_sets):
        """``evals_result_`` of public evaluation sets (labels as the booster's: class
        indices or values), and with ``early_stopping_rounds`` ``best_iteration`` and
        ``best_score`` (:mod:`~dpxgb_dask.evaluation`: post-processing, spends nothing)."""
        for name in ("evals_result_", "best_iteration_", "best_score_"):
            self.__dict__.pop(name, None)
        if self.early_stopping_rounds is not None and not eval_sets:
            raise ValueError("early_stopping_rounds needs an eval_set to score the rounds on")
        if not eval_sets:
            return
        metrics = metric_names(self.booster_.objective, self.eval_metric)
        self.evals_result_ = evaluate(
            self.booster_, [(self._validate_predict_input(X), y) for X, y in eval_sets],
            metrics, encoded=True)
        if self.early_stopping_rounds is not None:
            if not (isinstance(self.early_stopping_rounds, numbers.Integral)
                    and self.early_stopping_rounds >= 1):
                raise ValueError(f"early_stopping_rounds must be a positive integer, got "
                                 f"{self.early_stopping_rounds!r}")
            last = self.evals_result_[f"validation_{len(eval_sets) - 1}"][metrics[-1]]
            self.best_iteration_, self.best_score_ = early_stopping(
                last, int(self.early_stopping_rounds), METRICS[metrics[-1]][1])

    def evals_result(self):
        """The scores of every round on the evaluation sets (XGBoost's ``evals_result()``):
        ``{"validation_i": {metric: [...]}}``."""
        check_is_fitted(self, "evals_result_")
        return self.evals_result_

    @property
    def best_iteration(self):
        """The best round with early stopping (0-based), which predictions use by default
        (XGBoost's ``best_iteration``)."""
        check_is_fitted(self, "best_iteration_")
        return self.best_iteration_

    @property
    def best_score(self):
        """The score of ``best_iteration`` on the last evaluation set's last metric."""
        check_is_fitted(self, "best_score_")
        return self.best_score_
