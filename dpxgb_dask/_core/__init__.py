"""Compiled kernels (Cython sources beside this file: ``<name>.pyx``, with ``common.pxd``).

The kernels know nothing of Dask or of differential privacy: they compute exact
quantities on NumPy arrays. Each has a naive twin in :mod:`dpxgb_dask._core.naive`
that the tests compare it with. This module holds the small layout helpers the
callers of the kernels share.
"""
import numpy as np

try:
    from .common import HISTOGRAM_DTYPE  # (compiled: fails in an unbuilt source tree)
except ImportError as exc:  # pragma: no cover - only outside an installed build
    raise ImportError(
        "dpxgb_dask's compiled kernels are missing: this is the uncompiled source tree "
        f"({__path__[0]}). Run from outside the checkout to use the installed package, or "
        "build in place with `pip install -e .`."
    ) from exc


def pack_cuts(cuts_per_feature):
    """Concatenate per-feature cut points into the flat layout of ``binning.bin_features``.

    Parameters
    ----------
    cuts_per_feature : sequence of array-like of float64
        Sorted, strictly increasing cut points of each feature (possibly empty).

    Returns
    -------
    cut_values : ndarray of float64, shape (total_cuts,)
    cut_offsets : ndarray of intp, shape (n_features + 1,)
        The cuts of feature ``f`` are ``cut_values[cut_offsets[f]:cut_offsets[f + 1]]``.
    """
    arrays = [np.asarray(c, dtype=np.float64).ravel() for c in cuts_per_feature]
    for f, cuts in enumerate(arrays):
        if cuts.size and not (np.all(np.isfinite(cuts)) and np.all(np.diff(cuts) > 0)):
            raise ValueError(f"cuts of feature {f} must be finite and strictly increasing")
    offsets = np.zeros(len(arrays) + 1, dtype=np.intp)
    offsets[1:] = np.cumsum([c.size for c in arrays])
    values = np.concatenate(arrays) if arrays else np.empty(0, dtype=np.float64)
    return np.ascontiguousarray(values, dtype=np.float64), offsets


#: 64-bit words of a category set: a categorical split's left categories, one bit per bin
#: code (bins are uint8, so codes 0..255), bit ``c & 63`` of word ``c >> 6``.
CATEGORY_SET_WORDS = 4


def category_sets(left_codes):
    """Bit sets of category codes, the layout of the kernels' ``category_set``.

    Parameters
    ----------
    left_codes : sequence of iterable of int
        The left categories of each node (codes in 0..255; empty for other nodes).

    Returns
    -------
    ndarray of uint64, shape (n_nodes, CATEGORY_SET_WORDS)
    """
    out = np.zeros((len(left_codes), CATEGORY_SET_WORDS), dtype=np.uint64)
    for node, codes in enumerate(left_codes):
        for code in codes:
            code = int(code)
            if not 0 <= code < 64 * CATEGORY_SET_WORDS:
                raise ValueError(f"category code {code} is outside [0, 256)")
            out[node, code >> 6] |= np.uint64(1) << np.uint64(code & 63)
    return out


def category_set_codes(words):
    """The codes of one bit set (inverse of :func:`category_sets` for one node).

    Parameters
    ----------
    words : ndarray of uint64, shape (CATEGORY_SET_WORDS,)

    Returns
    -------
    ndarray of int64, increasing
    """
    bits = np.unpackbits(np.asarray(words, dtype="<u8").view(np.uint8), bitorder="little")
    return np.flatnonzero(bits).astype(np.int64)


def empty_histograms(n_slots, n_features, n_bins):
    """Zeroed histograms, shape (n_slots, n_features, n_bins), dtype ``HISTOGRAM_DTYPE``."""
    return np.zeros((n_slots, n_features, n_bins), dtype=HISTOGRAM_DTYPE)
