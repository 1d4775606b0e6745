"""The DP metric of private evaluation sets (XGBoost's ``evals`` on rows that are not
public): one release per set, after the last tree, from which every round's score follows.

The query of a set (:func:`~dpxgb_dask.partition.aggregates.round_loss_sums`, summed over
its partitions on the workers) is the vector

    q = ( Σ_i ℓ_m(x_i, y_i; model after round r) for each metric m and round r,  n )

of ``M·T + 1`` values, where each row's loss ``ℓ_m`` is divided by its public bound so that
it lies in [0, 1] (``row_loss`` of :class:`~dpxgb_dask.model.metrics.Metric`) and ``n``
is the number of rows. Adding or removing one row moves every value by at most 1, so
``Δ₂ = sqrt(MT + 1)`` and ``Δ₁ = MT + 1`` (:class:`~dpxgb_dask.boosting.plan.ReleasePlan`,
release "eval"): the Gaussian mechanism (the Laplace one when δ = 0) releases
``q̃ = q + noise`` once, and each score is post-processing,
``metric_m(r) = from_mean(clip(q̃_{m,r} / max(ñ, 1), 0, 1))``. Early stopping on the
scores is post-processing too: it spends nothing more. It reads the unclipped means
``q̃_{m,r} / max(ñ, 1)`` and their noise's standard deviation ``s / max(ñ, 1)`` (``s`` the
mechanism's, per value), so that it never prefers a round for noise that its clipping hid
(:func:`~dpxgb_dask.evaluation.noisy_early_stopping`).

The model scored is the released one (public), so the release composes with the fit's
others (the evaluation rows may be training rows as well): its event is in the fit's
ledger, its budget share is "eval" (``budget_shares``), and the fit's total stays ε.
"""
import numpy as np

from ..model.metrics import METRICS
from ..privacy.mechanisms import GaussianMechanism, LaplaceMechanism


class EvaluationScores:
    """The release of the private evaluation sets' metrics, built once per fit.

    Parameters
    ----------
    plan : ReleasePlan
        With the release "eval" (``params.private_eval_sets`` > 0).
    streams : FitStreams
    """

    def __init__(self, plan, streams):
        p = plan.params
        self.plan, self.streams = plan, streams
        self.metrics = tuple(p.eval_metric)
        self.n_rounds = plan.scored_rounds
        self.n_sets = p.private_eval_sets
        self.label_bounds = p.label_bounds
        release = plan.releases["eval"]
        n_values = len(self.metrics) * self.n_rounds + 1  # a row moves each by at most 1
        if release.mechanism == "gaussian":
            self.mechanism = GaussianMechanism(release.sensitivity,
                                               noise_multiplier=release.noise_multiplier,
                                               coords_per_row=n_values)
            self.noise_sd = self.mechanism.sigma
        else:
            self.mechanism = LaplaceMechanism(release.sensitivity, release.epsilon,
                                              coords_per_row=n_values)
            self.noise_sd = np.sqrt(2.0) * release.sensitivity / release.epsilon

    def release(self, sums):
        """Release every set's loss sums and count, and the scores that follow.

        Parameters
        ----------
        sums : list of ndarray of float64, shape (M·T + 1,)
            Exact, one per private evaluation set, metric-major then the row count
            (:func:`~dpxgb_dask.partition.aggregates.round_loss_sums`).

        Returns
        -------
        (scores, estimates) : (list of dict, list of dict)
            Per set, ``{metric: [score after round 1, ..., round T]}``, and
            ``{"means": {metric: [unclipped mean row loss after each round]}, "sd": s}``
            (:meth:`estimates_of`); both post-processing.
        event : dict
            The ledger fields of the sets' releases (``count`` = the number of sets).
        """
        if len(sums) != self.n_sets:
            raise ValueError(f"expected the sums of {self.n_sets} private eval sets, got "
                             f"{len(sums)}")
        scores, estimates = [], []
        for i, exact in enumerate(sums):
            noisy = self.mechanism.release(np.asarray(exact, dtype=np.float64),
                                           self.streams.noise_stream(f"eval/{i}"))
            scores.append(self.scores_of(noisy))
            estimates.append(self.estimates_of(noisy))
        return (scores, estimates), self.plan.event("eval")

    def estimates_of(self, noisy):
        """Every round's mean row loss as released, unclipped, and its noise's standard
        deviation (post-processing): what early stopping compares.

        Parameters
        ----------
        noisy : ndarray of float64, shape (M·T + 1,)

        Returns
        -------
        dict
            ``{"means": {metric: [mean after round 1, ...]}, "sd": float}``, the means in
            row-loss units ([0, 1] without noise) and ``sd`` = ``s / max(ñ, 1)``.
        """
        count = max(float(noisy[-1]), 1.0)
        means = noisy[:-1].reshape(len(self.metrics), self.n_rounds) / count
        return {"means": {name: means[m].tolist() for m, name in enumerate(self.metrics)},
                "sd": float(self.noise_sd / count)}

    def scores_of(self, noisy):
        """The metrics of every round from a set's released sums and count
        (post-processing).

        Parameters
        ----------
        noisy : ndarray of float64, shape (M·T + 1,)

        Returns
        -------
        dict
            ``{metric: [score after round 1, ..., round T]}``.
        """
        means = self.estimates_of(noisy)["means"]
        return {name: [float(METRICS[name].from_mean(v, self.label_bounds))
                       for v in np.clip(values, 0.0, 1.0)] for name, values in means.items()}
