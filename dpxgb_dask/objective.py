"""Objectives: gradients, links and label scaling (public formulas, no data, no Dask).

Three objectives, as XGBoost names them:

``binary:logistic``   labels in {0, 1}; margin m, probability sigmoid(m);
                      loss -y log p - (1 - y) log(1 - p): ``g = p - y``, ``h = p (1 - p)``.
``reg:squarederror``  labels scaled from the public ``label_bounds`` (lo, hi) to [-1, 1]
                      by ``(y - offset) / scale`` with ``offset = (lo + hi) / 2`` and
                      ``scale = (hi - lo) / 2``; loss (y - m)² / 2: ``g = m - y``, ``h = 1``.
                      Margins live in [-1, 1] (clipped after every tree), and the model is
                      folded back to label units once trained (:func:`to_label_units`).
``multi:softprob``    labels are class indices 0..K-1 (K = ``n_classes`` >= 3, public);
                      K margins m_k per row, probabilities p = softmax(m); loss
                      -log p_y: ``g_k = p_k - [y = k]``, ``h_k = p_k (1 - p_k)`` (XGBoost's
                      diagonal Hessian). One tree per class and round, all K grown at the
                      round's starting margins.
"""
from dataclasses import dataclass

import math

import numpy as np

OBJECTIVES = ("reg:squarederror", "binary:logistic", "multi:softprob")

#: Classification base margins (logits) are clipped to ±this (a probability within 1e-13
#: of 0 or 1): infinite ones would make NaN softmax margins.
BASE_MARGIN_BOUND = 30.0

#: The evaluation metrics of each objective, its default first (XGBoost's names;
#: :mod:`~dpxgb_dask.model.metrics` computes them).
OBJECTIVE_METRICS = {
    "binary:logistic": ("logloss", "error", "auc"),
    "multi:softprob": ("mlogloss", "merror"),
    "reg:squarederror": ("rmse", "mae"),
}
#: The metrics that are means of bounded per-row losses, which a private evaluation set
#: can release with DP noise (AUC is not).
PRIVATE_METRICS = ("logloss", "error", "mlogloss", "merror", "rmse", "mae")


def metric_names(objective, eval_metric=None, private=False):
    """The metrics to score: ``eval_metric`` (a name or a list of names), checked against
    the objective's (those in :data:`PRIVATE_METRICS` when ``private``), or the objective's
    default.

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        Naming ``eval_metric`` and the allowed names.
    """
    allowed = [m for m in OBJECTIVE_METRICS[objective] if not private or m in PRIVATE_METRICS]
    if eval_metric is None:
        return [allowed[0]]
    names = [eval_metric] if isinstance(eval_metric, str) else list(eval_metric)
    if not names or len(set(names)) != len(names) or any(n not in allowed for n in names):
        kind = "of a private eval set for" if private else "for"
        raise ValueError(f"eval_metric must name distinct metrics {kind} {objective}: "
                         f"{allowed}, got {eval_metric!r}")
    return names


#: The code of a label outside the public classes once mapped to class indices
#: (:func:`~dpxgb_dask.inputs.encode_labels`): in no class, refused or left out by
#: :meth:`Objective.labels_in_domain`.
UNKNOWN_LABEL = -1.0
#: What a classification label outside its classes meets (``unknown_labels``).
UNKNOWN_LABEL_RULES = ("raise", "missing")


@dataclass(frozen=True)
class Objective:
    """The public description of an objective for one fit.

    Parameters
    ----------
    name : {"reg:squarederror", "binary:logistic", "multi:softprob"}
    label_bounds : tuple of float, optional
        Public (lo, hi) of regression labels.
    n_classes : int, optional
        Public number of classes K >= 3 of ``multi:softprob``.
    unknown_labels : {"raise", "missing"}, default "raise"
        What a classification label outside its classes meets
        (:meth:`labels_in_domain`): a ``ValueError``, or its row left out as unlabelled.
    """

    name: str
    label_bounds: tuple = None
    n_classes: int = None
    unknown_labels: str = "raise"

    @classmethod
    def of(cls, params):
        """The objective of a fit's parameters (``TrainParams`` or a model's dict)."""
        get = params.get if isinstance(params, dict) else lambda k: getattr(params, k)
        return cls(get("objective"), get("label_bounds"), get("num_class"),
                   get("unknown_labels") or "raise")  # (a model from before it: None)

    @property
    def is_multiclass(self):
        return self.name == "multi:softprob"

    @property
    def n_outputs(self):
        """Margins per row: K for ``multi:softprob``, 1 otherwise."""
        return self.n_classes if self.is_multiclass else 1

    @property
    def is_regression(self):
        return self.name == "reg:squarederror"

    @property
    def label_offset_scale(self):
        """(offset, scale) with ``scaled = (y - offset) / scale`` (identity for binary)."""
        if not self.is_regression:
            return 0.0, 1.0
        lo, hi = self.label_bounds
        return (lo + hi) / 2.0, (hi - lo) / 2.0

    @property
    def label_lower(self):
        """Lower end of the scaled labels: 0 (binary) or -1 (regression); the upper is 1."""
        return -1.0 if self.is_regression else 0.0

    @property
    def margin_clip(self):
        """Range the training margins are clipped to after each tree, or None."""
        return (-1.0, 1.0) if self.is_regression else None

    def scale_labels(self, y):
        """Labels on the training scale, float64 of the same shape."""
        offset, scale = self.label_offset_scale
        y = np.asarray(y, dtype=np.float64)
        return y if not self.is_regression else (y - offset) / scale

    def clip_margins(self, margins):
        """Base margins (XGBoost's ``base_margin``, in label units) moved into their public
        domain, never refused: regression ones clipped to ``label_bounds`` (NaN: their
        centre, the base score's), logits to ``±BASE_MARGIN_BOUND`` (NaN: 0).

        Parameters
        ----------
        margins : ndarray of float64, shape (n_rows,) or (n_rows, K)

        Returns
        -------
        ndarray of float64, same shape
        """
        margins = np.asarray(margins, dtype=np.float64)
        if self.is_regression:
            offset, _ = self.label_offset_scale
            return np.clip(np.nan_to_num(margins, nan=offset), *self.label_bounds)
        return np.clip(np.nan_to_num(margins, nan=0.0), -BASE_MARGIN_BOUND, BASE_MARGIN_BOUND)

    def training_margins(self, margins):
        """Base margins on the training scale: ``(m - offset) / scale`` (as the labels;
        the identity for classification)."""
        return self.scale_labels(margins)

    def labels_in_domain(self, y, label_bounds=None):
        """Labels of one partition in the public label domain; NaN stays NaN (its row is
        left out of every sum).

        Regression labels are clipped to ``label_bounds`` when given (never refused: a
        refusal would tell whether some private row lies beyond them). A classification
        label is a class index, 0 and 1 (binary) or 0 .. K - 1: labels mapped by their
        public classes arrive so (:func:`~dpxgb_dask.inputs.encode_labels`, which gives a
        label outside them :data:`UNKNOWN_LABEL`). Any other label is never moved into a
        class (1 and 2 would both train as class 1): with ``unknown_labels="raise"`` it
        is refused, with ``"missing"`` its row is left out. The refusal reaches only the
        process that sent the rows, trusted with them (a Dask client's user); a silo and
        the service, whose callers are not, leave such rows out instead.

        Parameters
        ----------
        y : ndarray of float64, shape (n_rows,)

        Returns
        -------
        ndarray of float64, shape (n_rows,)

        Raises
        ------
        ValueError
            A classification label outside the class indices, with
            ``unknown_labels="raise"`` (naming the allowed values, never the label).
        """
        if self.is_regression:
            bounds = self.label_bounds if label_bounds is None else label_bounds
            return y if bounds is None else np.clip(y, *bounds)
        n_classes = self.n_classes if self.is_multiclass else 2
        with np.errstate(invalid="ignore"):
            known = np.isnan(y) | ((y == np.floor(y)) & (y >= 0) & (y < n_classes))
        if known.all():
            return y
        if self.unknown_labels == "missing":
            return np.where(known, y, np.nan)
        indices = "0 and 1" if n_classes == 2 else f"0 .. {n_classes - 1}"
        raise ValueError(
            f"y holds labels outside the classes of {self.name}: its labels are the class "
            f"indices {indices}, or labels of the public classes given (classes=, "
            "--classes) mapped to them. Give the public label set as classes= to map "
            "other labels, or unknown_labels='missing' to leave rows with a label outside "
            "it out of the fit")

    def gradients(self, y, margin):
        """First and second derivatives of the loss at ``margin``.

        Parameters
        ----------
        y : ndarray of float64, shape (n_rows,)
            Labels on the training scale (class indices for ``multi:softprob``; NaN rows
            get finite values and are left out by the caller).
        margin : ndarray of float64, shape (n_rows,) or (n_rows, K)

        Returns
        -------
        g, h : ndarray of float64, of the shape of ``margin``
        """
        if self.is_regression:
            return margin - y, np.ones_like(y)
        if self.is_multiclass:
            p = softmax(margin)
            g = p.copy()
            labelled = ~np.isnan(y)
            g[np.flatnonzero(labelled), y[labelled].astype(np.int64)] -= 1.0
            return g, p * (1.0 - p)
        p = 1.0 / (1.0 + np.exp(-margin))
        return p - y, p * (1.0 - p)

    def initial_margin(self, mean):
        """Margin of a constant model predicting the (DP) label mean: post-processing.

        Parameters
        ----------
        mean : float, or ndarray of float64 of shape (K,)
            Mean of the scaled labels (a DP release); for ``multi:softprob`` the class
            frequencies (noisy class counts over their sum).

        Returns
        -------
        float, or ndarray of float64 of shape (K,) (log-frequencies, centred)
        """
        if self.is_multiclass:
            # math.log, not np.log: NumPy's SIMD log differs between CPUs in the last bit,
            # and the initial margin is written in the model file
            prob = np.clip(np.asarray(mean, dtype=np.float64), 0.01, 0.99)
            log_prob = np.array([math.log(q) for q in prob / prob.sum()])
            return log_prob - log_prob.mean()
        if self.is_regression:
            return float(np.clip(mean, -1.0, 1.0))
        prob = float(np.clip(mean, 0.01, 0.99))
        return math.log(prob / (1.0 - prob))

    @property
    def root_hessian(self):
        """Hessian of every row at the zero margin (weights of the DP sketch, DP-XGBoost
        §4.1): 1/4 for the logistic loss at p = 1/2, 1 for squared error, and
        (1/K)(1 - 1/K) for each class of the softmax at p_k = 1/K."""
        if self.is_multiclass:
            return (1.0 / self.n_classes) * (1.0 - 1.0 / self.n_classes)
        return 1.0 if self.is_regression else 0.25


def softmax(margin):
    """Softmax of margins over their last axis, the class: shape (..., K) (max-shifted:
    no overflow)."""
    shifted = np.exp(margin - margin.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def to_label_units(booster, objective):
    """Fold the label scaling back into a trained regression booster (in place).

    Predictions become ``offset + scale · margin``: the base score and every leaf value
    are mapped (post-processing of DP releases).

    Returns
    -------
    Booster
    """
    if not objective.is_regression:
        return booster
    offset, scale = objective.label_offset_scale
    booster.base_score = offset + scale * booster.base_score
    nodes = booster._nodes
    leaf = nodes["left"] < 0
    nodes["value"] = np.where(leaf, nodes["value"] * scale, nodes["value"])
    return booster


def to_training_units(booster, objective):
    """A copy of a trained booster on the training scale (the inverse of
    :func:`to_label_units`): the start of a fit that continues it (``Prepare.init_model``,
    whose ``predict_margin`` gives every row's starting margin).

    Returns
    -------
    Booster
    """
    offset, scale = objective.label_offset_scale
    start = type(booster).from_dict(booster.to_dict())
    start.base_score = (booster.base_score - offset) / scale
    nodes = start._nodes
    nodes["value"] = np.where(nodes["left"] < 0, nodes["value"] / scale, nodes["value"])
    return start
