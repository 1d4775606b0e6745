"""Evaluation metrics of a model, round by round: the margins after each boosting round,
XGBoost's metrics by name, and their bounded per-row losses, which a DP metric of private
rows sums (:mod:`~dpxgb_dask.boosting.scores`).

A metric of public rows is computed exactly, in the user's process
(:mod:`~dpxgb_dask.evaluation`). A metric of private rows is a mean of per-row losses that
each lie in ``[0, 1]`` once divided by a public bound: the workers sum them for every round
(:func:`~dpxgb_dask.partition.aggregates.round_loss_sums`), and only a noisy release of the
sums leaves the cluster.
"""
from dataclasses import dataclass
import math

import numpy as np

from ..inputs import base_margin_rows
#: The probability a private log-loss floors the true class's at: a row's log-loss is at
#: most ``-log(LOGLOSS_FLOOR)`` (about 4.6), the bound the DP sums are scaled by.
LOGLOSS_FLOOR = 0.01
#: Of public log-losses, as XGBoost computes them.
_PUBLIC_FLOOR = 1e-15


def _picked(y, probabilities):
    """The probability of each row's own class; probabilities of shape (n, K)."""
    return probabilities[np.arange(len(y)), y.astype(np.int64)]


def _binary_columns(p):
    return np.column_stack([1.0 - p, p])


def _auc(y, p):
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, p)) if len(np.unique(y)) == 2 else float("nan")


@dataclass(frozen=True)
class Metric:
    """One evaluation metric.

    Attributes
    ----------
    name : str
        XGBoost's name.
    lower_is_better : bool
    public : callable
        ``public(y, predictions) -> float``: the exact metric of public rows.
    row_loss : callable or None
        ``row_loss(y, predictions, label_bounds) -> ndarray in [0, 1]``: each row's loss
        divided by its public bound (None: not a mean of row losses, e.g. AUC, which has no
        DP form here: :data:`~dpxgb_dask.objective.PRIVATE_METRICS`).
    from_mean : callable or None
        ``from_mean(mean, label_bounds) -> float``: the metric of a mean of ``row_loss``.

    Labels are class indices (classifiers) or values; predictions are
    :meth:`Booster.transform <dpxgb_dask.model.booster.Booster.transform>`'s.
    """

    name: str
    lower_is_better: bool
    public: object
    row_loss: object = None
    from_mean: object = None


def _span(label_bounds):
    lo, hi = label_bounds
    return hi - lo


def _clipped_error(y, p, label_bounds):
    """``|p - y| / (hi - lo)`` with both clipped to the public label bounds: in [0, 1]."""
    lo, hi = label_bounds
    return np.abs(np.clip(p, lo, hi) - np.clip(y, lo, hi)) / (hi - lo)


_LOG_FLOOR = -math.log(LOGLOSS_FLOOR)

#: XGBoost's evaluation metrics by name (:class:`Metric`).
METRICS = {m.name: m for m in (
    Metric("logloss", True,
           lambda y, p: float(-np.mean(np.log(np.clip(_picked(y, _binary_columns(p)),
                                                      _PUBLIC_FLOOR, 1.0)))),
           lambda y, p, b: -np.log(np.clip(_picked(y, _binary_columns(p)), LOGLOSS_FLOOR,
                                           1.0)) / _LOG_FLOOR,
           lambda mean, b: mean * _LOG_FLOOR),
    Metric("error", True, lambda y, p: float(np.mean((p > 0.5) != (y == 1))),
           lambda y, p, b: ((p > 0.5) != (y == 1)).astype(np.float64),
           lambda mean, b: mean),
    Metric("auc", False, _auc),
    Metric("mlogloss", True,
           lambda y, p: float(-np.mean(np.log(np.clip(_picked(y, p), _PUBLIC_FLOOR, 1.0)))),
           lambda y, p, b: -np.log(np.clip(_picked(y, p), LOGLOSS_FLOOR, 1.0)) / _LOG_FLOOR,
           lambda mean, b: mean * _LOG_FLOOR),
    Metric("merror", True, lambda y, p: float(np.mean(np.argmax(p, axis=1) != y)),
           lambda y, p, b: (np.argmax(p, axis=1) != y).astype(np.float64),
           lambda mean, b: mean),
    Metric("rmse", True, lambda y, p: float(np.sqrt(np.mean((p - y) ** 2))),
           lambda y, p, b: _clipped_error(y, p, b) ** 2,
           lambda mean, b: math.sqrt(max(mean, 0.0)) * _span(b)),
    Metric("mae", True, lambda y, p: float(np.mean(np.abs(p - y))),
           _clipped_error,
           lambda mean, b: mean * _span(b)),
)}


def round_margins(booster, X, encoded=False, n_threads=1, base_margin=None):
    """The margins of every row after each boosting round, from one walk of the trees.

    Parameters
    ----------
    booster : Booster
    X : array-like of shape (n_rows, n_features)
    encoded : bool
        Categorical features hold their codes (``Booster.predict``'s).
    n_threads : int
    base_margin : array-like of shape (n_rows,) or (n_rows, K), optional
        Where each row starts instead of the base score (XGBoost's ``base_margin``).

    Returns
    -------
    ndarray of float64, shape (n_rounds, n_rows), or (n_rounds, n_rows, K) for
    multi:softprob
    """
    leaves = booster.predict_leaf(X, n_threads, encoded=encoded) + booster.tree_roots[None, :]
    values = booster.nodes["value"][leaves]  # (n_rows, n_trees)
    start = (np.atleast_1d(booster.base_score)[None, :] if base_margin is None else
             base_margin_rows(base_margin, len(values), booster.n_outputs).reshape(
                 len(values), -1))
    per_class = []
    for k in range(booster.n_outputs):
        trees = values[:, booster.tree_class == k]  # (n_rows, n_rounds), rounds in order
        per_class.append(start[:, k] + np.cumsum(trees, axis=1).T)
    return per_class[0] if booster.n_classes is None else np.stack(per_class, axis=-1)

