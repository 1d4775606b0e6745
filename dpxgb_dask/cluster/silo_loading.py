"""In the user's process: a :class:`~dpxgb_dask.silo_table.SiloTable`'s rows loaded by its
silos, and a lost silo named.

Each silo's worker receives one ``LoadSiloRows`` call (through the scheduler's ``broadcast``
to that worker alone, as :func:`~dpxgb_dask.cluster.client.load_partitions` sends in-memory
rows): its file's path, the format, the feature and label columns and the fit's public
category lists, plain values encoded by :mod:`~dpxgb_dask.cluster.codec`. The worker reads
its own file (:func:`~dpxgb_dask.inputs.read_silo_rows`) and answers nothing about the
rows: no row, count or value passes through this process or the scheduler. A silo's
partition has no copy on another worker and is never loaded again: a silo lost during the
fit ends it.
"""
import asyncio
from contextlib import contextmanager

from ..silo_table import SiloTable
from .backend import WorkerLost
from .actions import LoadSiloRows
from .codec import encode
from .wire import unpack_reply


def silo_workers(workers, table):
    """The worker of each silo of ``table``: the worker whose name (compared as strings)
    or address the silo is.

    Parameters
    ----------
    workers : dict of str -> dict
        The cluster's workers by address, with their ``name``
        (``client.scheduler_info(n_workers=-1)["workers"]``).
    table : SiloTable

    Returns
    -------
    dict of str -> str
        Silo -> worker address, in the table's order.

    Raises
    ------
    ValueError
        Naming a silo that is no worker of the cluster (and listing the workers' names),
        or two silos that are the same worker.
    """
    by_name = {str(info.get("name")): address for address, info in workers.items()}
    found = {}
    for silo in table.silos:
        address = silo if silo in workers else by_name.get(silo)
        if address is None:
            raise ValueError(f"silo {silo!r} of the silo table is no worker of the cluster: "
                             f"give a worker's name or address (the workers' names: "
                             f"{sorted(by_name)})")
        same = [other for other, a in found.items() if a == address]
        if same:
            raise ValueError(f"silos {same[0]!r} and {silo!r} of the silo table are the same "
                             f"worker, {address}: give each silo once")
        found[silo] = address
    return found


def load_silos(client, table, y, objective, fit_id, capability, *, n_threads=1,
               categories=None):
    """Have each silo of ``table`` load its own rows into the fit's state on its worker.

    Parameters
    ----------
    client : distributed.Client
    table : SiloTable
    y : None
        (the labels are the table's label column)
    objective : Objective
    fit_id : str
    capability : bytes
        The fit's secret (:mod:`~dpxgb_dask.cluster.worker`).
    n_threads : int
    categories : list of (list or None), optional
        The fit's public category lists.

    Returns
    -------
    placement : dict of str -> list of int
        Silo ``i``'s worker -> ``[i]``.
    sources, reloads : dict
        Empty: a silo's rows have no copy elsewhere, and are never loaded again.

    Raises
    ------
    ValueError, OSError
        Naming the silo: :func:`silo_workers`, or its file, its path or a column it lacks
        (:func:`~dpxgb_dask.inputs.read_silo_rows`).
    """
    if y is not None:
        raise ValueError("y must be None when X is a SiloTable (its label column)")
    workers = silo_workers(client.scheduler_info(n_workers=-1)["workers"], table)
    messages = [(silo, address, {
        "op": "dpxgb_call", "fit": fit_id, "capability": capability,
        "payload": encode(LoadSiloRows(i, table.source(silo, categories), objective,
                                       n_threads))})
        for i, (silo, address) in enumerate(workers.items())]

    async def send():
        return await asyncio.gather(*(client.scheduler.broadcast(msg=msg, workers=[address])
                                      for _, address, msg in messages))

    for (silo, address, _), replies in zip(messages, client.sync(send)):
        try:
            unpack_reply(replies.get(address))
        except (ValueError, OSError) as exc:  # (errors name paths and columns, never values)
            raise type(exc)(f"silo {silo!r} (worker {address}): {exc}") from None
    return {address: [i] for i, address in enumerate(workers.values())}, {}, {}


@contextmanager
def lost_silos_named(client, X, placement):
    """End a silo table's fit that lost a silo with an error naming the silo as its table
    does (the scheduler knows its worker's address only); other errors pass as they are.

    Parameters
    ----------
    client : distributed.Client
    X : SiloTable or any input
    placement : dict of str -> list of int
        Of :func:`load_silos`.

    Raises
    ------
    WorkerLost
    """
    try:
        yield
    except WorkerLost as exc:
        if not isinstance(X, SiloTable):
            raise
        silos = {address: X.silos[indices[0]] for address, indices in placement.items()}
        present = client.scheduler_info(n_workers=-1)["workers"]
        address = getattr(exc, "address", None)  # (None: a partition with no copy was lost)
        lost = [a for a in silos if a == address] or [a for a in silos if a not in present]
        if not lost:
            raise
        raise WorkerLost(f"silo {silos[lost[0]]!r} (worker {lost[0]}) was lost during the "
                         "fit, which ended: a silo's rows are never moved to another "
                         "worker; train again once it is back", lost[0]) from exc
