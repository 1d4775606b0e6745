"""Client-side input handling: validate X and y, and load their row partitions into the
fit's partition states on the workers.

NumPy and pandas inputs are cut into row chunks, and each chunk is sent to one worker's
``dpxgb_call`` handler through the scheduler's ``broadcast`` (the only connection a remote
client is sure to have): no Dask key, dataset or event ever holds the rows. Dask arrays and
dataframes keep their row partitions: one task per block loads the block into the fit's
state on the worker that runs it (where the block already is; only the labels may travel
to the block of X) and returns just that worker's address. Either way the result is the
fit's placement, worker address -> partition indices; partitions never move after that.

Only metadata (shapes where they are known, dtypes, column names) is read here. Value
checks (lengths of dask partitions, label sets, infinities) run on the workers inside
``ops.make_part`` and surface as a ``ValueError`` naming the argument.
"""
import asyncio
import numbers

import numpy as np

from .backends import load_task_delayed
from .categories import is_frame
from .worker import capability_digest, unpack_reply

#: How long a fit waits for the first worker of a cluster that is still starting.
WAIT_FOR_WORKERS_SECONDS = 60


def _is_dask_collection(obj):
    return hasattr(obj, "__dask_graph__") and obj.__dask_graph__() is not None


def _check_numeric_dtypes(dtypes, names):
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    bad = [str(name) for name, dtype in zip(names, dtypes)
           if not (is_numeric_dtype(dtype) or is_bool_dtype(dtype))]
    if bad:
        raise ValueError(f"X has non-numeric columns {bad}: give their public category lists "
                         "as categories={column: [...]} (or a pandas category dtype), or "
                         "encode them as numbers")
    complex_ = [str(name) for name, dtype in zip(names, dtypes)
                if getattr(dtype, "kind", None) == "c"]
    if complex_:
        raise ValueError(f"X has complex columns {complex_}; features must be real numbers")


def describe_features(X):
    """Feature names and count of ``X`` from its metadata (no values are read).

    Returns
    -------
    feature_names : list of str or None
    n_features : int

    Raises
    ------
    ValueError
        If X is not 2-dimensional or has non-numeric or complex columns.
    TypeError
        If X is sparse, or not array-like.
    """
    if is_frame(X):
        names = [str(c) for c in X.columns]
        _check_numeric_dtypes(list(X.dtypes), names)
        return names, len(names)
    if _is_dask_collection(X):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-dimensional, got {X.ndim} dimensions")
        _check_numeric_dtypes([X.dtype], ["X"])
        return None, int(X.shape[1])
    if hasattr(X, "toarray") and hasattr(X, "nnz"):
        raise TypeError("X is a sparse matrix, which dpxgb_dask does not take: pass "
                        "X.toarray() (NaN, not 0, marks a missing value)")
    if X is None or isinstance(X, (dict, str, bytes)) or np.isscalar(X):
        raise TypeError("X must be a 2-D array-like (NumPy array, pandas DataFrame, dask "
                        f"array or DataFrame), got {type(X).__name__}")
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got {X.ndim} dimensions")
    if X.dtype == object:
        try:
            X.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError("X has non-numeric values; encode them as numbers first") from None
    else:
        _check_numeric_dtypes([X.dtype], ["X"])
    return None, int(X.shape[1])


def _label_array(y):
    if is_frame(y):
        if len(y.columns) != 1:
            raise ValueError(f"y must be one column, got {len(y.columns)}")
        y = y[y.columns[0]]
    return y


def _known_length(obj):
    if _is_dask_collection(obj):
        if hasattr(obj, "chunks"):
            n = sum(obj.chunks[0])
            return None if np.isnan(n) else int(n)
        return None
    return len(obj)


def check_lengths(X, y):
    """Refuse X and y of different known lengths (dask lengths unknown here are checked on
    the workers)."""
    nx, ny = _known_length(X), _known_length(y)
    if nx is not None and ny is not None and nx != ny:
        raise ValueError(f"X and y must have the same number of rows, got {nx} and {ny}")
    if nx == 0:
        raise ValueError("X has no rows")


def _row_chunks(n_rows, n_chunks):
    bounds = np.linspace(0, n_rows, n_chunks + 1).round().astype(int)
    return [(a, b) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def load_partitions(client, X, y, objective, fit_id, capability, n_partitions=None,
                    n_threads=1):
    """Load validated row partitions of (X, y) into the fit's states on the workers.

    Parameters
    ----------
    client : distributed.Client
    X : ndarray, pandas.DataFrame, dask.array.Array or dask.dataframe.DataFrame
        Shape (n_rows, n_features), numeric; NaN marks missing values.
    y : ndarray, pandas.Series, dask array or dask series, shape (n_rows,)
    objective : Objective
    fit_id : str
    capability : bytes
        The fit's secret (see ``worker.py``).
    n_partitions : int, optional
        For NumPy / pandas inputs: number of row chunks (default: one per worker).
    n_threads : int

    Returns
    -------
    placement : dict of str -> list of int
        Worker address -> indices of the partitions it holds.
    sources : dict of int -> tuple
        Where each partition is rebuilt from if its worker is lost: ``("replica",
        worker address)`` (NumPy, pandas: a copy loaded on another worker), or
        ``("blocks", x_block, y_block, objective, n_threads)`` (dask: the blocks' graph).

    Raises
    ------
    ValueError
        From the checks of ``ops.make_part`` on any partition.
    """
    y = _label_array(y)
    check_lengths(X, y)
    if _is_dask_collection(X) or _is_dask_collection(y):
        return _load_dask(client, X, y, objective, fit_id, capability, n_threads)
    return _load_local(client, X, y, objective, fit_id, capability, n_partitions, n_threads)


def _workers(client):
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    if not workers:
        try:
            client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS_SECONDS)
        except TimeoutError:
            raise RuntimeError(f"the Dask cluster has no workers (waited "
                               f"{WAIT_FOR_WORKERS_SECONDS} s)") from None
        workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    return workers


def _load_local(client, X, y, objective, fit_id, capability, n_partitions, n_threads):
    from distributed.protocol import to_serialize

    workers = _workers(client)
    X_values = X.to_numpy() if hasattr(X, "to_numpy") else np.asarray(X)
    y_values = y.to_numpy() if hasattr(y, "to_numpy") else np.asarray(y)
    n_chunks = int(n_partitions) if n_partitions else len(workers)
    if not isinstance(n_chunks, numbers.Integral) or n_chunks < 1:
        raise ValueError(f"n_partitions must be a positive integer, got {n_partitions!r}")
    placement = {}
    messages = []
    sources = {}
    for i, (a, b) in enumerate(_row_chunks(len(X_values), n_chunks)):
        worker = workers[i % len(workers)]
        placement.setdefault(worker, []).append(i)
        # A second copy of the rows on the next worker, from which the partition is rebuilt
        # if its worker is lost (the client may be gone, or far away, by then).
        holders = [(worker, False)]
        if len(workers) > 1:
            sources[i] = ("replica", workers[(i + 1) % len(workers)])
            holders.append((sources[i][1], True))
        for holder, replica in holders:
            args = (i, X_values[a:b], y_values[a:b], objective, n_threads, replica)
            messages.append((holder, {"op": "dpxgb_call", "fit": fit_id,
                                      "capability": capability, "action": "load",
                                      "payload": to_serialize(args)}))

    async def push():
        return await asyncio.gather(*(client.scheduler.broadcast(msg=msg, workers=[worker])
                                      for worker, msg in messages))

    for replies in client.sync(push):
        for reply in replies.values():
            unpack_reply(reply)
    return placement, sources


def _load_dask(client, X, y, objective, fit_id, capability, n_threads):
    if not (_is_dask_collection(X) and _is_dask_collection(y)):
        raise ValueError("X and y must both be dask collections, or neither")
    if hasattr(X, "chunks"):  # dask array
        X = X.rechunk({1: -1})
        x_blocks = list(X.to_delayed().ravel())
    else:
        x_blocks = list(X.to_delayed())
    if hasattr(y, "chunks"):
        if hasattr(X, "chunks") and not any(np.isnan(c) for c in X.chunks[0]) \
                and not any(np.isnan(c) for c in y.chunks[0]):
            y = y.rechunk((X.chunks[0],))
        y_blocks = list(y.to_delayed().ravel())
    else:
        y_blocks = list(y.to_delayed())
    if len(x_blocks) != len(y_blocks):
        raise ValueError(f"X and y must have the same row partitions, got {len(x_blocks)} "
                         f"and {len(y_blocks)} partitions")
    digest = capability_digest(capability)
    futures = client.compute([load_task_delayed(xb, yb, fit_id, digest, i, objective, n_threads)
                              for i, (xb, yb) in enumerate(zip(x_blocks, y_blocks))])
    try:
        addresses = client.gather(futures)  # raises the first worker error (its own type)
    finally:
        client.cancel(futures, force=True)
    placement = {}
    for i, address in enumerate(addresses):
        placement.setdefault(address, []).append(i)
    # A lost partition is loaded again from its blocks' graph (recomputed by Dask).
    sources = {i: ("blocks", xb, yb, objective, n_threads)
               for i, (xb, yb) in enumerate(zip(x_blocks, y_blocks))}
    return placement, sources
