"""A silo's side of a cross-silo fit (:mod:`~dpxgb_dask.boosting.silos`): the release of its
own sums with the mechanisms a request names
(:class:`~dpxgb_dask.partition.messages.SiloRelease`), noise from a secret of its own, and
the sensitivities it derives itself for a round's parts. Runs on the silo's worker.
"""
import numpy as np

from ..privacy.mechanisms import to_grid
from ..privacy.secure_sum import mask_values
from .gradients import grid_limits
from .messages import MAX_FIELDS
from .summaries import histogram_summaries


def round_sensitivity_floors(step, spec, n_features):
    """What one row can change of a part of a silo's answer to a round, from the bounds the
    silo clipped the tree's gradients to itself (``spec``: the tree's
    :class:`~dpxgb_dask.partition.messages.TreeStart`) and from what the round computes (not
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
    out = assemble_answer(answer.shape, names, release.fields, released)
    if release.summary is not None:  # (post-processing of the silo's release)
        return histogram_summaries(out, *release.summary)
    return out


def assemble_answer(shape, names, fields, parts):
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
