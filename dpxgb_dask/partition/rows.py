"""A partition's rows in a tree: each row's uniform number under a tree's secret key (a
Poisson subsample's draw, made on the worker: privacy amplification needs the sample
secret), and a private selection's held-out rows.
"""
import numpy as np

from ..privacy.randomness import keyed_uniforms


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
