"""The calls a fit makes on a worker: one frozen dataclass per action, the payload of every
``dpxgb_call`` (encoded by :mod:`~dpxgb_dask.cluster.codec`, whose type list holds them).

The worker runs a call by its type (:mod:`~dpxgb_dask.cluster.worker`); nothing travels as
a positional tuple or an action's name. Who sends each:

=====================  ==============================================================
:class:`LoadRows`      the client (rows and labels beside it, in Dask's own frames)
:class:`LoadSiloRows`  the client, to each silo of a :class:`~dpxgb_dask.silo_table.SiloTable`
:class:`Aggregate`     the coordinator (fit-level aggregates; a silo's as releases)
:class:`PrepareRows`   the coordinator, once the cuts and the initial score are public
:class:`RunRound`      the coordinator, to the roots of the reduction tree, which pass it on
:class:`RestoreRows`   the coordinator, to rebuild a lost worker's partition elsewhere
:class:`SiloKey`       the coordinator of a cross-silo fit with secure aggregation
:class:`SiloPeers`     the same, relaying every silo's key
:class:`Touch`         the client and the coordinator (keeps the fit's lease)
:class:`Drop`          the client and the coordinator (the fit ended)
=====================  ==============================================================
"""
from dataclasses import dataclass
from typing import Any, Optional


@dataclass(frozen=True)
class LoadRows:
    """Keep the rows sent with the call as partition ``index`` (or, with ``replica``, as
    the replica of a partition another worker holds).

    Attributes
    ----------
    index : int
        The partition's place in the fit's row order.
    objective : Objective
        How the labels are read (:class:`~dpxgb_dask.objective.Objective`).
    n_threads : int
        Threads of the partition's kernels.
    replica : bool
    """

    index: int
    objective: Any
    n_threads: int
    replica: bool = False


@dataclass(frozen=True)
class LoadSiloRows:
    """As a silo: read this worker's own file and keep its rows as partition ``index``.

    Attributes
    ----------
    index : int
    source : dict
        The file's path, columns and classes (:func:`~dpxgb_dask.inputs.read_silo_rows`).
    objective : Objective
    n_threads : int
    """

    index: int
    source: dict
    objective: Any
    n_threads: int


@dataclass(frozen=True)
class Aggregate:
    """An exact fit-level aggregate of the local rows
    (:mod:`~dpxgb_dask.partition.aggregates`), summed over the worker's partitions unless
    ``per_partition``; with ``release``, a silo's release of the sum
    (:class:`~dpxgb_dask.partition.messages.SiloRelease`).

    Attributes
    ----------
    name : str
        The aggregate (``aggregates.AGGREGATES``).
    per_partition : bool
    args : tuple
        Its public arguments.
    release : SiloRelease or None
    """

    name: str
    per_partition: bool = False
    args: tuple = ()
    release: Optional[Any] = None


@dataclass(frozen=True)
class PrepareRows:
    """Bin the rows and set their initial margins.

    Attributes
    ----------
    spec : Prepare
        :class:`~dpxgb_dask.partition.messages.Prepare`: the public cuts, bounds and
        initial score.
    """

    spec: Any


@dataclass(frozen=True)
class RunRound:
    """One :class:`~dpxgb_dask.partition.messages.Round` on every local partition.

    Attributes
    ----------
    step : Round
    reduction : tuple or None
        ``(tag, order)``: the attempt's tag and the reduction tree's workers in heap order
        (:mod:`~dpxgb_dask.cluster.reduction`): the worker passes the call on to its
        children and answers its subtree's sum. None: this worker's sum alone.
    """

    step: Any
    reduction: Optional[tuple] = None


@dataclass(frozen=True)
class RestoreRows:
    """Rebuild partition ``index`` here from its replica and the fit's messages so far.

    Attributes
    ----------
    index : int
    prepare : Prepare
    rounds : list of Round
        Every round applied since ``prepare``, in order.
    """

    index: int
    prepare: Any
    rounds: list


@dataclass(frozen=True)
class SiloKey:
    """A silo's fresh public key for the fit's secure aggregation, signed by its operator's
    identity if it has one."""


@dataclass(frozen=True)
class SiloPeers:
    """Every silo's address and key: derive this silo's pairwise masks.

    Attributes
    ----------
    roster : tuple
        ``(addresses, signed keys)``, in silo order.
    context : bytes
        The fit's key-agreement context.
    """

    roster: tuple
    context: bytes


@dataclass(frozen=True)
class Touch:
    """Keep the fit alive (:data:`~dpxgb_dask.cluster.wire.LEASE_SECONDS`)."""


@dataclass(frozen=True)
class Drop:
    """Forget the fit."""


#: Every action, by name: the codec's type list holds them (``codec.TYPES``).
ACTIONS = (LoadRows, LoadSiloRows, Aggregate, PrepareRows, RunRound, RestoreRows, SiloKey,
           SiloPeers, Touch, Drop)
