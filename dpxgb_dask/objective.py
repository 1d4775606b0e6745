"""Objectives: gradients, links and label scaling (public formulas, no data, no Dask).

Two objectives, as XGBoost names them:

``binary:logistic``   labels in {0, 1}; margin m, probability sigmoid(m);
                      loss -y log p - (1 - y) log(1 - p): ``g = p - y``, ``h = p (1 - p)``.
``reg:squarederror``  labels scaled from the public ``label_bounds`` (lo, hi) to [-1, 1]
                      by ``(y - offset) / scale`` with ``offset = (lo + hi) / 2`` and
                      ``scale = (hi - lo) / 2``; loss (y - m)² / 2: ``g = m - y``, ``h = 1``.
                      Margins live in [-1, 1] (clipped after every tree), and the model is
                      folded back to label units once trained (:func:`to_label_units`).
"""
from dataclasses import dataclass

import numpy as np

OBJECTIVES = ("reg:squarederror", "binary:logistic")


@dataclass(frozen=True)
class Objective:
    """The public description of an objective for one fit.

    Parameters
    ----------
    name : {"reg:squarederror", "binary:logistic"}
    label_bounds : tuple of float, optional
        Public (lo, hi) of regression labels.
    """

    name: str
    label_bounds: tuple = None

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

    def gradients(self, y, margin):
        """First and second derivatives of the loss at ``margin``.

        Parameters
        ----------
        y, margin : ndarray of float64, shape (n_rows,)
            Labels on the training scale and current margins.

        Returns
        -------
        g, h : ndarray of float64, shape (n_rows,)
        """
        if self.is_regression:
            return margin - y, np.ones_like(y)
        p = 1.0 / (1.0 + np.exp(-margin))
        return p - y, p * (1.0 - p)

    def initial_margin(self, mean):
        """Margin of a constant model predicting the (DP) label mean: post-processing.

        Parameters
        ----------
        mean : float
            Mean of the scaled labels (a DP release).
        """
        if self.is_regression:
            return float(np.clip(mean, -1.0, 1.0))
        prob = float(np.clip(mean, 0.01, 0.99))
        return float(np.log(prob / (1.0 - prob)))

    @property
    def root_hessian(self):
        """Hessian of every row at the zero margin (weights of the DP sketch, DP-XGBoost
        §4.1): 1/4 for the logistic loss at p = 1/2, 1 for squared error."""
        return 1.0 if self.is_regression else 0.25


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
    :func:`to_label_units`): the start of a fit that continues it (``ops.Prepare.init_model``,
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
