"""Cross-silo training: each data holder (a silo: one worker, on its own premises) releases
its own aggregates, so that no exact aggregate leaves it.

In the central mode every exact aggregate reaches the coordinator, which adds the noise
once. With ``cross_silo="local"`` the coordinator tells each silo, with every request,
which mechanism each part of the answer gets (:class:`~dpxgb_dask.boosting.silos.SiloRelease`, public: the
mechanism's sensitivity and noise scale, from the fit's plan); the silo sums its own
partitions, applies those mechanisms with noise from a secret of its own
(:func:`~dpxgb_dask.boosting.silos.release_at_silo`), and sends only the release. The coordinator adds the silos'
releases and reads the sum through the same release objects as a central fit, whose
mechanisms then only pass released values on (:class:`~dpxgb_dask.boosting.silos.SiloReleased`;
:mod:`~dpxgb_dask.boosting.silo_plan` builds them once per fit). A silo's worker imports
this module, not the plan or the accountants.

Privacy: the silos hold disjoint rows, so one row changes one silo's release, which is the
central release's mechanism on that silo's rows: by parallel composition over the silos
the fit costs what the central fit costs, and its ledger says so (the ``"silos"``
parallel axis of every event). The sum carries ``n_silos`` times the central noise
variance: the price of trusting nobody with an exact aggregate.
"""
from dataclasses import dataclass

import numpy as np

from ..privacy.mechanisms import GaussianMechanism, LaplaceMechanism, to_grid
from ..privacy.secure_sum import mask_values, unmask_sum
from .aggregates import add_results
from .gradients import grid_limits
from .summaries import histogram_summaries, merged_summaries

#: Parts of one release at most (each takes a mask label of its own).
MAX_FIELDS = 16


@dataclass(frozen=True)
class FieldNoise:
    """The mechanism a silo applies to one part of an aggregate (public).

    Attributes
    ----------
    field : int, str or None
        The part: a column of a 2-D answer (int), a field of a histogram (str), or the
        whole answer (None).
    mechanism : {"gaussian", "laplace"}
    sensitivity : float
        Δ₂ (Gaussian) or Δ₁ (Laplace) of the part under add/remove of one row.
    scale : float
        σ (Gaussian) or ε (Laplace).
    coords_per_row : int
        Entries of the part one row can change (the grid-rounding margin).
    """

    field: object
    mechanism: str
    sensitivity: float
    scale: float
    coords_per_row: int

    def build(self):
        """The :mod:`~dpxgb_dask.privacy.mechanisms` object this describes."""
        if self.mechanism == "gaussian":
            return GaussianMechanism(self.sensitivity, sigma=self.scale,
                                     coords_per_row=self.coords_per_row)
        if self.mechanism == "laplace":
            return LaplaceMechanism(self.sensitivity, self.scale,
                                    coords_per_row=self.coords_per_row)
        raise ValueError(f"mechanism must be 'gaussian' or 'laplace', got {self.mechanism!r}")


@dataclass(frozen=True)
class SiloRelease:
    """What a silo releases of its answer to one request (public).

    Attributes
    ----------
    purpose : str
        The release's name, which keys the silo's noise stream with ``tree`` and ``depth``.
    tree, depth : int
        -1 for fit-level releases.
    fields : tuple of FieldNoise
        Every part of the answer that leaves the silo; the rest is zeroed.
    n_shares : int
        0: local noise (each silo adds the mechanism's noise). With secure aggregation,
        the number of silos, each adding a share of a Gaussian mechanism's noise to its
        integer grid sum and masking the result.
    label : int
        Secure aggregation: the release's number, which keys its masks (never reused).
    summary : tuple (ndarray, int), optional
        Local noise, a fine histogram (DP-XGBoost §4.1 distributed): ``(feature_bounds,
        size)``; the silo answers with the weighted quantile summaries of its release,
        one per feature, pruned to ``size`` entries
        (:func:`~dpxgb_dask.boosting.summaries.histogram_summaries`).
    """

    purpose: str
    tree: int = -1
    depth: int = -1
    fields: tuple = ()
    n_shares: int = 0
    label: int = -1
    summary: tuple = None


def field_noise(mechanism, field=None):
    """The :class:`~dpxgb_dask.boosting.silos.FieldNoise` of a release object's mechanism.

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


def round_sensitivity_floors(step, spec, n_features):
    """What one row can change of a part of a silo's answer to a round, from the bounds the
    silo clipped the tree's gradients to itself (``spec``: the tree's
    :class:`~dpxgb_dask.boosting.protocol.TreeStart`) and from what the round computes (not
    from the caller's word). A row adds at most g* (on the value grid) to a gradient sum,
    h* to a hessian sum (a multiclass round's class-summed hessians: S, the bound on
    their sum) and 1 to a count:

    - a round of leaf sums (``leaf_nodes``): the row is in one leaf; parts 0, 1, 2 are the
      G, H and count columns, Δ₂ = Δ₁ = the column's bound; the whole answer (None):
      Δ₂ = √(g*² + h*² + 1), Δ₁ = g* + h* + 1;
    - a round of histograms (``histogram_nodes``): the row is in one bin of each of the F
      features of its node; the fields ``sum_gradients``, ``sum_hessians``, ``count``:
      Δ₂ = bound·√F, Δ₁ = bound·F (the whole answer: the three together).

    A multiclass round whose leaf release joins the K class trees counts one class's bound
    here, below the joint vector bound a plan uses: a smaller named Δ is refused only down
    to that.

    Returns
    -------
    callable
        field -> (Δ₂, Δ₁).

    Raises
    ------
    PermissionError
        The round computes no tree's sums (no tree was started, or it answers something
        else).
    """
    if spec is None:
        raise PermissionError("a silo releases a round's sums only within a tree it started "
                              "itself (the gradients' bounds are its own)")
    g = float(grid_limits(spec.gradient_bound)[1])
    h = float(grid_limits(spec.hessian_bound, lower=0.0)[1])
    if spec.output_class == -1:  # the class sums of the hessians, no gradients
        g, h = 0.0, float(spec.vector_bounds[2]) if spec.vector_bounds else h
    if step.leaf_nodes is not None:
        bounds, per_row = {0: g, 1: h, 2: 1.0}, 1
    elif step.histogram_nodes is not None:
        bounds = {"sum_gradients": g, "sum_hessians": h, "count": 1.0}
        per_row = n_features
    else:
        raise PermissionError("a silo releases the sums of a round of leaves or histograms "
                              "only")

    def floors(field):
        if field is None:
            parts = list(bounds.values())
            return (float(np.sqrt(per_row * sum(b * b for b in parts))),
                    per_row * sum(parts))
        if field not in bounds:
            raise PermissionError(f"this round's answer has the parts {list(bounds)}, "
                                  f"not {field!r}")
        return bounds[field] * float(np.sqrt(per_row)), bounds[field] * per_row

    return floors


def _part(answer, field):
    if field is None:
        return answer
    if isinstance(field, str):
        return answer[field]
    return answer[..., field]


def release_at_silo(answer, release, source, masks=None):
    """A silo's release of its exact ``answer``: each part of ``release.fields`` with its
    mechanism, noise from the silo's own ``source``; every other part stays in the silo.

    Parameters
    ----------
    answer : ndarray
        The silo's exact sum over its partitions: a histogram (structured, fields
        ``sum_gradients``, ``sum_hessians``, ``count``) or an array of float64.
    release : SiloRelease
    source : NoiseSource
        The silo's secret noise source for this fit (never shared).
    masks : PairwiseMasks, optional
        Secure aggregation (``release.n_shares``): the silo's pairwise masks.

    Raises
    ------
    ValueError
        ``answer`` is no array, ``release.n_shares`` is not the number of silos of
        ``masks``, or ``release.fields`` names a part twice (which would
        release it twice with independent noise: the whole answer, None, overlaps every
        part) or holds more than ``MAX_FIELDS``.

    Returns
    -------
    ndarray, tuple or list
        Local noise: ``answer``'s shape (with ``release.summary``: its summaries), a histogram's fields all float64 (a released count
        is no integer), released parts only. Secure aggregation: ``(shape, field names or
        None, [masked part, ...])``, each part uint64: its integer grid values plus the
        silo's noise share, masked (:func:`~dpxgb_dask.privacy.secure_sum.mask_values`).
    """
    if not isinstance(answer, np.ndarray):
        raise ValueError(f"a silo releases an array of its sums, got {type(answer).__name__}")
    fields = [part.field for part in release.fields]
    if len(set(fields)) < len(fields) or (None in fields and len(fields) > 1) \
            or len(fields) > MAX_FIELDS:
        raise ValueError(f"release.fields must name distinct parts (the whole answer, None, "
                         f"alone), at most {MAX_FIELDS}: each part is released once")
    if release.n_shares and (masks is None or masks.n_silos != release.n_shares):
        raise ValueError(f"release.n_shares must be the number of silos this silo agreed "
                         f"masks with ({'none' if masks is None else masks.n_silos}), got "
                         f"{release.n_shares}: each silo adds its share of the noise")
    names = answer.dtype.names
    released = []
    for index, part in enumerate(release.fields):
        stream = source.stream(purpose=f"silo/{release.purpose}", tree=release.tree,
                               depth=release.depth, index=index)
        values = np.asarray(_part(answer, part.field), dtype=np.float64)
        mechanism = part.build()
        if not release.n_shares:
            released.append(mechanism.release(values, stream))
            continue
        # clipped so that the silos' sum stays within int64 (clipping is 1-Lipschitz)
        grid = to_grid(values, mechanism.resolution, clip=float(2**62 // release.n_shares))
        share = mechanism.draw_share(grid.size, release.n_shares, stream)
        released.append(mask_values(grid + share.reshape(grid.shape), masks,
                                    release.label * MAX_FIELDS + index))
    if release.n_shares:
        return answer.shape, (list(names) if names else None), released
    out = _assemble(answer.shape, names, release.fields, released)
    if release.summary is not None:  # (post-processing of the silo's release)
        return histogram_summaries(out, *release.summary)
    return out


def _assemble(shape, names, fields, parts):
    """An answer of ``shape`` (fields ``names``) holding ``parts`` at ``fields``, zero
    elsewhere; every field float64."""
    out = np.zeros(shape, dtype=[(name, np.float64) for name in names] if names
                   else np.float64)
    for part, values in zip(fields, parts):
        if part.field is None:
            out[...] = values
        elif names:
            out[part.field] = values
        else:
            out[..., part.field] = values
    return out


def combine_silo_answers(answers, release):
    """The coordinator's sum of the silos' answers to one request.

    Parameters
    ----------
    answers : list
        Each silo's :func:`release_at_silo` output.
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
    return _assemble(tuple(shape), tuple(names) if names else None, release.fields, parts)


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
            The sum of the silos' releases (:func:`~dpxgb_dask.boosting.silos.release_at_silo`).
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
