"""Which rows enter each tree, and how their gradients are bounded: the
:class:`~dpxgb_dask.partition.messages.TreeStart` of every tree.

A tree trains on all the rows, on a Poisson subsample (each row joins with probability γ,
by its uniform number under the tree's secret key,
:func:`~dpxgb_dask.partition.rows.row_uniforms`, drawn on the worker: privacy amplification
needs the sample secret), or on its disjoint share of a
DPBoost ensemble. The K trees of a joint multiclass
release share their round's sample.
"""
import math


from ..partition.messages import TreeStart


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
        """The :class:`~dpxgb_dask.partition.messages.TreeStart` of tree ``tree``.

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
