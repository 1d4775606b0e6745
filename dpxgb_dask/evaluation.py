"""A released model scored round by round on evaluation sets (XGBoost's ``eval_set``,
``evals_result_`` and early stopping).

A set the user declares public is scored here: reading the model (DP releases) and public
rows in the user's process only is post-processing and spends nothing. A private set is
scored on the cluster with a DP metric, a release of the fit
(:mod:`~dpxgb_dask.boosting.scores`), and early stopping on its scores is post-processing.
The rounds are scored after the fit, from one walk of the trees
(:func:`~dpxgb_dask.model.metrics.round_margins`): every round of ``n_estimators`` was
trained and released, so early stopping picks the round to predict with
(``best_iteration``) but spends the budget of every round all the same.
"""
import numbers

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .model.metrics import METRICS, round_margins
from .objective import metric_names


def evaluate(booster, eval_sets, metrics, encoded=False):
    """Score every round on each evaluation set.

    Parameters
    ----------
    booster : Booster
    eval_sets : list of (X, y) or (X, y, base_margin)
        Public rows and their labels (class indices for classifiers), and optionally
        their base margins (XGBoost's ``base_margin_eval_set``).
    metrics : list of str
        Names in :data:`~dpxgb_dask.model.metrics.METRICS`.
    encoded : bool
        As in :func:`~dpxgb_dask.model.metrics.round_margins`.

    Returns
    -------
    dict
        ``{"validation_i": {metric: [score after round 1, 2, ...]}}`` (XGBoost's
        ``evals_result()``).
    """
    results = {}
    for i, (X, y, *margins) in enumerate(eval_sets):
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        predictions = booster.transform(round_margins(booster, X, encoded,
                                                      base_margin=(margins or [None])[0]))
        results[f"validation_{i}"] = {
            name: [METRICS[name].public(y, p) for p in predictions] for name in metrics}
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


def check_eval_set(eval_set, base_margin_eval_set=None):
    """The sets (X, y, base margins or None) of an ``eval_set`` (a list of pairs (X, y);
    None: none) and of XGBoost's ``base_margin_eval_set`` (one entry per set).

    Returns
    -------
    list of tuple
    """
    if eval_set is None:
        if base_margin_eval_set is not None:
            raise ValueError("base_margin_eval_set needs an eval_set")
        return []
    sets = list(eval_set)
    for i, pair in enumerate(sets):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise ValueError(f"eval_set[{i}] must be a pair (X, y)")
    margins = [None] * len(sets) if base_margin_eval_set is None else list(base_margin_eval_set)
    if len(margins) != len(sets):
        raise ValueError(f"base_margin_eval_set must have one entry per eval_set pair "
                         f"({len(sets)}), got {len(margins)}")
    return [(X, y, m) for (X, y), m in zip(sets, margins)]


def check_public(eval_sets):
    """Refuse a public evaluation set that is a dask collection: it is scored in the
    user's process (compute it first)."""
    for i, pair in enumerate(eval_sets):
        if any(hasattr(v, "__dask_graph__") for v in pair if v is not None):
            raise ValueError(f"eval_set[{i}] is a dask collection declared public: compute it "
                             "first (X.compute(), y.compute()), or leave eval_set_public=False "
                             "to score it on the cluster with a DP metric")


class RoundScores:
    """The estimators' ``evals_result_``, ``best_iteration`` and ``best_score``: their
    ``eval_set`` scored round by round (a mixin of
    :class:`~dpxgb_dask.sklearn.DPXGBClassifier` and
    :class:`~dpxgb_dask.sklearn.DPXGBRegressor`)."""

    def _score_rounds(self, eval_sets, private_scores=None):
        """``evals_result_``: of public evaluation sets (labels as the booster's: class
        indices or values), computed here, or the DP scores of private ones
        (``private_scores``, ``train(evals_result=)``); with ``early_stopping_rounds``
        ``best_iteration`` and ``best_score`` (post-processing: spends nothing)."""
        for name in ("evals_result_", "best_iteration_", "best_score_"):
            self.__dict__.pop(name, None)
        if self.early_stopping_rounds is not None and not eval_sets:
            raise ValueError("early_stopping_rounds needs an eval_set to score the rounds on")
        if not eval_sets:
            return
        if private_scores is not None:
            metrics = list(self.booster_.params["eval_metric"])
            self.evals_result_ = private_scores
        else:
            metrics = metric_names(self.booster_.objective, self.eval_metric)
            self.evals_result_ = evaluate(
                self.booster_, [(self._validate_predict_input(X), y, m)
                                for X, y, m in eval_sets], metrics, encoded=True)
        if self.early_stopping_rounds is not None:
            if not (isinstance(self.early_stopping_rounds, numbers.Integral)
                    and self.early_stopping_rounds >= 1):
                raise ValueError(f"early_stopping_rounds must be a positive integer, got "
                                 f"{self.early_stopping_rounds!r}")
            last = self.evals_result_[f"validation_{len(eval_sets) - 1}"][metrics[-1]]
            self.best_iteration_, self.best_score_ = early_stopping(
                last, int(self.early_stopping_rounds), METRICS[metrics[-1]].lower_is_better)

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
