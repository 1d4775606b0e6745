"""Cross-silo training, the coordinator's side: each data holder (a silo: one worker, on
its own premises) releases its own aggregates, so that no exact aggregate leaves it.

In the central mode every exact aggregate reaches the coordinator, which adds the noise
once. With ``cross_silo="local"`` the coordinator tells each silo, with every request,
which mechanism each part of the answer gets
(:class:`~dpxgb_dask.partition.messages.SiloRelease`, public: the mechanism's sensitivity
and noise scale, from the fit's plan); the silo sums its own partitions, applies those
mechanisms with noise from a secret of its own
(:func:`~dpxgb_dask.partition.silo_release.release_at_silo`, on the silo's worker), and
sends only the release. The coordinator adds the silos' releases
(:func:`combine_silo_answers`) and reads the sum through the same release objects as a
central fit, whose mechanisms then only pass released values on (:class:`SiloReleased`;
:mod:`~dpxgb_dask.boosting.silo_plan` builds them once per fit).

Privacy: the silos hold disjoint rows, so one row changes one silo's release, which is the
central release's mechanism on that silo's rows: by parallel composition over the silos
the fit costs what the central fit costs, and its ledger says so (the ``"silos"``
parallel axis of every event). The sum carries ``n_silos`` times the central noise
variance: the price of trusting nobody with an exact aggregate.
"""

import numpy as np

from ..partition.aggregates import add_results
from ..partition.messages import FieldNoise
from ..partition.silo_release import assemble_answer
from ..partition.summaries import merged_summaries
from ..privacy.mechanisms import GaussianMechanism
from ..privacy.secure_sum import unmask_sum

def field_noise(mechanism, field=None):
    """The :class:`~dpxgb_dask.partition.messages.FieldNoise` of a release object's mechanism.

    Parameters
    ----------
    mechanism : GaussianMechanism or LaplaceMechanism
        Built with an explicit ``coords_per_row``.
    field : int, str or None

    Returns
    -------
    FieldNoise
    """
    if mechanism.coords_per_row is None:
        raise ValueError("a silo's mechanism needs an explicit coords_per_row")
    if isinstance(mechanism, GaussianMechanism):
        return FieldNoise(field, "gaussian", mechanism.sensitivity, mechanism.sigma,
                          mechanism.coords_per_row)
    return FieldNoise(field, "laplace", mechanism.sensitivity, mechanism.epsilon,
                      mechanism.coords_per_row)


def combine_silo_answers(answers, release):
    """The coordinator's sum of the silos' answers to one request.

    Parameters
    ----------
    answers : list
        Each silo's :func:`~dpxgb_dask.partition.silo_release.release_at_silo` output.
    release : SiloRelease

    Returns
    -------
    ndarray or list
        Local noise: the sum of the releases (the merged summaries of a sketch). Secure aggregation: the unmasked sum of the
        silos' integer parts (the masks cancel), on each mechanism's grid: the sum of the
        rounded silo sums plus the summed noise shares, a distributed discrete Gaussian
        release; each field float64.
    """
    if release.summary is not None:
        return merged_summaries(answers, release.summary[1])
    if not release.n_shares:
        return add_results(answers)
    if len(answers) != release.n_shares:
        raise ValueError(f"{len(answers)} silos answered a release of {release.n_shares} "
                         "noise shares")
    shape, names = answers[0][0], answers[0][1]
    parts = [unmask_sum([a[2][index] for a in answers]).astype(np.float64)
             * part.build().resolution for index, part in enumerate(release.fields)]
    return assemble_answer(tuple(shape), tuple(names) if names else None, release.fields, parts)


class SiloReleased:
    """A release object's mechanism in a cross-silo fit: the silos applied it already, so
    :meth:`~dpxgb_dask.boosting.silos.SiloReleased.release` passes the summed releases on (post-processing) and there is no noise
    to draw here. Other attributes are the wrapped mechanism's.

    Parameters
    ----------
    mechanism : GaussianMechanism or LaplaceMechanism
    """

    def __init__(self, mechanism):
        self.mechanism = mechanism

    def __getattr__(self, name):
        return getattr(self.mechanism, name)

    def release(self, values, rng=None, noise=None):
        """The silos' summed release of this mechanism's query, as is.

        Parameters
        ----------
        values : array_like of float64
            The sum of the silos' releases (:func:`~dpxgb_dask.partition.silo_release.release_at_silo`).
        rng, noise
            Unused: the silos drew the noise.

        Returns
        -------
        ndarray of float64
        """
        return np.array(values, dtype=np.float64)

    def draw_noise(self, size, rng=None):
        """No noise is drawn at the coordinator: ``size`` zeros (int64)."""
        return np.zeros(int(size), dtype=np.int64)
