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


#: How many standard deviations of the difference of two smoothed means a round must lie
#: above the lowest smoothed mean so far to count as worse (:func:`noisy_early_stopping`).
NOISY_STOPPING_SDS = 1.0


def noisy_early_stopping(means, sd, rounds):
    """XGBoost's early stopping on losses released with noise: rounds are compared on a
    moving average, and a later round is kept unless it is worse by more than the noise
    explains.

    Released means ``m̃_r = m_r + e_r`` (``e_r`` independent, of standard deviation
    ``sd``), lower is better. Each round's mean is smoothed over the ``2⌊rounds/2⌋ + 1``
    rounds centred on it (fewer at the ends), ``s_r``, of noise ``sd/√c_r`` for its ``c_r``
    rounds. Round ``r`` is worse when ``s_r > min_{q<=r} s_q + z·√2·sd/√c_r``
    (z = :data:`NOISY_STOPPING_SDS`); any other round becomes the best, later rounds
    preferred, since training went on because they are expected to be better. The rounds
    stop after ``rounds`` worse rounds in a row. Taking the smallest noisy value instead
    picks the round whose noise dipped lowest (on the clipped scores, any round clipped
    to 0), and lost to predicting with every tree (issue 43: test RMSE 1.56-2.14 against
    1.00-1.16).

    The window and z were chosen by their worst case on simulated loss curves (decreasing,
    U-shaped, steeply overfitting, flat; ``sd`` 0.005 to 0.2 of losses near 0.3; patience
    4, 10, 25; 200 draws each): the largest mean regret against the best round was 0.077
    with z = 1, 0.082 with z = 1.5, 0.114 with z = 2, 0.122 with z = 0.5, and 0.170 for
    XGBoost's rule on the noisy values.

    Parameters
    ----------
    means : sequence of float
        One per round, unclipped
        (:meth:`~dpxgb_dask.boosting.scores.EvaluationScores.estimates_of`).
    sd : float
        The noise's standard deviation of each mean, >= 0.
    rounds : int
        >= 1.

    Returns
    -------
    best_iteration : int
        The best round (0-based) up to the stop.
    best_mean : float
        Its smoothed mean, the estimate of its loss (post-processing).
    """
    means = np.asarray(means, dtype=np.float64)
    n, half = len(means), rounds // 2
    cumulative = np.concatenate([[0.0], np.cumsum(means)])
    index = np.arange(n)
    lo, hi = np.maximum(index - half, 0), np.minimum(index + half + 1, n)
    counts = hi - lo
    smoothed = (cumulative[hi] - cumulative[lo]) / counts
    margins = NOISY_STOPPING_SDS * np.sqrt(2.0) * float(sd) / np.sqrt(counts)
    best, lowest, worse = 0, smoothed[0], 0
    for r in range(1, n):
        if smoothed[r] > lowest + margins[r]:
            worse += 1
            if worse >= rounds:
                break
        else:
            best, worse = r, 0
        lowest = min(lowest, smoothed[r])
    return best, float(smoothed[best])


def stop_early(booster, estimates, rounds, label_bounds=None):
    """Set ``booster.best_iteration`` and ``booster.best_score`` (XGBoost's attributes)
    from the last private set's last metric, by :func:`noisy_early_stopping`; nothing
    when ``rounds`` is None.

    Parameters
    ----------
    booster : Booster
    estimates : list of dict
        Per private set, its unclipped means and their noise
        (:meth:`~dpxgb_dask.boosting.scores.EvaluationScores.estimates_of`).
    rounds : int or None
    label_bounds : tuple, optional
        The metric's (regression).
    """
    if rounds is None:
        return
    estimate = estimates[-1]
    metric = list(estimate["means"])[-1]
    booster.best_iteration, mean = noisy_early_stopping(estimate["means"][metric],
                                                        estimate["sd"], rounds)
    booster.best_score = float(METRICS[metric].from_mean(np.clip(mean, 0.0, 1.0),
                                                         label_bounds))


def check_early_stopping_rounds(rounds, eval_sets):
    """Refuse an ``early_stopping_rounds`` that is not a positive integer, or that has no
    evaluation set to score the rounds on (None: no early stopping, nothing to check)."""
    if rounds is None:
        return
    if isinstance(rounds, bool) or not isinstance(rounds, numbers.Integral) or rounds < 1:
        raise ValueError(f"early_stopping_rounds must be a positive integer, got {rounds!r}")
    if not eval_sets:
        raise ValueError("early_stopping_rounds needs an eval_set to score the rounds on")


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
        check_early_stopping_rounds(self.early_stopping_rounds, eval_sets)
        if not eval_sets:
            return
        if private_scores is not None:
            self.evals_result_ = private_scores
            if self.early_stopping_rounds is not None:  # (noise-aware: train chose it)
                self.best_iteration_ = self.booster_.best_iteration
                self.best_score_ = self.booster_.best_score
            return
        metrics = metric_names(self.booster_.objective, self.eval_metric)
        self.evals_result_ = evaluate(
            self.booster_, [(self._validate_predict_input(X), y, m)
                            for X, y, m in eval_sets], metrics, encoded=True)
        if self.early_stopping_rounds is not None:
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
