"""Which rows enter each tree, and how their gradients are bounded: the
:class:`~dpxgb_dask.boosting.protocol.TreeStart` of every tree.

A tree trains on all the rows, on a Poisson subsample (each row joins with probability γ,
by its uniform number under the tree's secret key, :func:`row_uniforms`, drawn on the
worker: privacy amplification needs the sample secret), or on its disjoint share of a
DPBoost ensemble. The K trees of a joint multiclass
release share their round's sample.
"""
import math

import numpy as np

from ..privacy.randomness import keyed_uniforms
from .protocol import TreeStart


def row_uniforms(key, row_offset, n_rows):
    """Uniform [0, 1) numbers for the global rows from ``row_offset`` on, ``n_rows`` of them.

    The number of global row ``i`` is position ``i`` of the ChaCha20 stream keyed by ``key``
    (:func:`~dpxgb_dask.privacy.randomness.keyed_uniforms`), so it does not depend on how
    rows are split into partitions; with a secret key (drawn by the coordinator from the OS
    CSPRNG when no seed is given) the selection is unpredictable.

    Parameters
    ----------
    key : int
        256-bit key (:meth:`~dpxgb_dask.boosting.streams.FitStreams.sampling_key`).
    row_offset, n_rows : int

    Returns
    -------
    ndarray of float64, shape (n_rows,)
    """
    return keyed_uniforms(int(key).to_bytes(32, "little"), row_offset, n_rows)


def held_out(holdout, row_offset, n_rows):
    """Which of the global rows ``row_offset`` .. ``row_offset + n_rows - 1`` a private
    selection holds out of its trees (its score rows).

    Each row is held out independently with probability p, by its uniform number under
    the selection's secret key (:func:`row_uniforms`): a row's side never depends on the
    other rows, so a training run and the score release see disjoint rows.

    Parameters
    ----------
    holdout : (int, float) or None
        (256-bit key, p); None holds out nothing.
    row_offset, n_rows : int

    Returns
    -------
    ndarray of bool, shape (n_rows,)
    """
    if holdout is None:
        return np.zeros(n_rows, dtype=bool)
    key, fraction = holdout
    return row_uniforms(key, row_offset, n_rows) < fraction


class TreeRows:
    """The rows and gradient bounds of every tree of a fit, built once per fit.

    Parameters
    ----------
    plan : ReleasePlan
    streams : FitStreams
        Keys the subsamples (secret).
    """

    def __init__(self, plan, streams):
        self.plan, self.params, self.streams = plan, plan.params, streams
        self._ensemble_keys = {}
        self._round_keys = {}

    def start(self, tree, output_class, local):
        """The :class:`~dpxgb_dask.boosting.protocol.TreeStart` of tree ``tree``.

        Parameters
        ----------
        tree : int
            The tree's number in the model (a continued fit numbers its trees after the
            model's).
        output_class : int
            Its class in its round (0 unless multiclass).
        local : int
            The tree's number in this fit (the individual filter's rounds count from 0).

        Returns
        -------
        TreeStart
        """
        p, plan = self.params, self.plan
        output_class_field = vector_bounds = None
        if p.num_class is not None:
            output_class_field, b = output_class, plan.row_bounds
            joint = plan.joint_classes is not None
            vector_bounds = (b.gradient if joint else math.inf,
                             b.denominator if joint and p.newton else math.inf,
                             b.denominator_sum if p.newton else math.inf)
        key, interval = self._rows(tree)
        filter_terms = filter_worst = rounds_left = None
        if p.filter_rounds:
            filter_terms = plan.filter_terms(local)
            filter_worst = plan.tree_divergence(local)
            if p.filter_spending == "pace" and local >= p.n_estimators:
                rounds_left = plan.n_rounds - local
        return TreeStart(key, interval, p.gradient_bound, p.gradient_rule,
                         p.hessian_bound if p.newton else 1.0, output_class_field,
                         vector_bounds, filter_terms, filter_worst, rounds_left,
                         shares_as_hessians=p.hessian_denominators and not p.newton)

    def _rows(self, tree):
        """(key, [lo, hi)) of the rows of ``tree`` (Poisson, DPBoost ensemble, or all)."""
        p = self.params
        if p.ensemble_size:
            return self._ensemble_share(tree)
        if p.subsample < 1.0:
            if self.plan.joint_classes:
                # one key per round (a stream key is issued once): its trees share the sample
                first = self.plan.round_of(tree)
                if first not in self._round_keys:
                    self._round_keys = {first: self.streams.sampling_key("subsample", tree=first)}
                return self._round_keys[first], (0.0, p.subsample)
            return self.streams.sampling_key("subsample", tree=tree), (0.0, p.subsample)
        return 0, (0.0, 2.0)

    def _ensemble_share(self, tree):
        """DPBoost's ensembles: the k-th tree of an ensemble of ``size`` takes the rows whose
        numbers lie in [(1 - (1-η)^k) / s, (1 - (1-η)^(k+1)) / s), s = 1 - (1-η)^size,
        disjoint from its ensemble's other trees (Li et al. Algorithm 2)."""
        p = self.params
        e, k = divmod(tree, p.ensemble_size)
        size = min(p.ensemble_size, p.n_estimators - e * p.ensemble_size)
        eta = p.learning_rate
        total = 1.0 - (1.0 - eta) ** size
        lo = (1.0 - (1.0 - eta) ** k) / total
        hi = (1.0 - (1.0 - eta) ** (k + 1)) / total if k + 1 < size else 1.0
        if not (0.0 <= lo <= hi <= 1.0):
            raise AssertionError(f"ensemble row interval ({lo}, {hi}) of tree {tree} is not "
                                 "inside [0, 1]: the trees would not be disjoint")
        if e not in self._ensemble_keys:
            # One key per ensemble: its trees take disjoint intervals of the same numbers.
            self._ensemble_keys[e] = self.streams.sampling_key("ensemble_rows", tree=e)
        return self._ensemble_keys[e], (lo, hi if k + 1 < size else 1.0 + 1e-9)
