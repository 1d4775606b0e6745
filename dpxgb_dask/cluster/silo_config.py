"""What a silo's operator configures on its worker, in Dask's config: never the caller.

A silo's worker (:mod:`~dpxgb_dask.cluster.worker`) takes from these keys, set by its
operator (in a YAML file or as ``DASK_DPXGB__SILO__*`` environment variables), what it must
not take from the fits it serves:

==========================  ==============================================================
``dpxgb.silo.paths``        the directories it reads rows from (:func:`check_silo_path`)
``dpxgb.silo.max-epsilon``  a cap on what it releases, at ``dpxgb.silo.delta``
                            (:func:`silo_budget`), over one fit or, with
                            ``dpxgb.silo.ledger``, over every fit on a file
``dpxgb.silo.identity``     its long-term identity for secure aggregation
                            (:func:`silo_identity`)
``dpxgb.silo.peers``        the silos it aggregates securely with (:func:`configured_peers`)
==========================  ==============================================================
"""
import os

import dask

from ..privacy.silo_budget import SiloBudget
from ..privacy.silo_identity import SiloIdentity

#: Dask's config keys of a silo's cap on one fit's releases (:func:`silo_budget`).
SILO_MAX_EPSILON, SILO_DELTA = "dpxgb.silo.max-epsilon", "dpxgb.silo.delta"
#: ... and of the file that makes that cap a budget over every fit (:func:`silo_budget`).
SILO_LEDGER = "dpxgb.silo.ledger"
#: Dask's config keys of a silo's long-term identity (a PEM file) and of its peers'
#: identities and addresses (:func:`configured_peers`), for secure aggregation.
SILO_IDENTITY, SILO_PEERS = "dpxgb.silo.identity", "dpxgb.silo.peers"
#: Dask's config key of the directories a silo's worker reads rows from
#: (:func:`check_silo_path`).
SILO_PATHS = "dpxgb.silo.paths"


def check_silo_path(path):
    """Refuse a silo's path outside the directories its operator allows.

    The operator lists them in Dask's config on the worker: ``dpxgb.silo.paths``, a list of
    directories (environment ``DASK_DPXGB__SILO__PATHS``, a YAML list such as
    ``'["/data/silo"]'``). The path is resolved first (symbolic links, ``..``), so that it
    cannot leave them. Unset, the worker reads whatever path a fit names that its process
    can read: a silo that shares a worker with other files should set it.

    Raises
    ------
    PermissionError
        Naming the allowed directories (the operator's public configuration).
    """
    allowed = dask.config.get(SILO_PATHS, None)
    if allowed is None:
        return
    if isinstance(allowed, str):
        allowed = [allowed]
    real = os.path.realpath(path)
    roots = [os.path.realpath(a) for a in allowed]
    if not any(os.path.commonpath([real, root]) == root for root in roots):
        raise PermissionError(f"this silo reads rows only under {roots} "
                              f"(dpxgb.silo.paths); the fit names {path!r}")


def silo_identity():
    """This silo's long-term identity, from the PEM file its operator names in Dask's
    config on the worker (``dpxgb.silo.identity``, environment
    ``DASK_DPXGB__SILO__IDENTITY``; made by ``dpxgb silo-identity PATH``), or None.

    Raises
    ------
    PermissionError
        Peers are configured (``dpxgb.silo.peers``) but no identity: the peers could not
        authenticate this silo.
    """
    path = dask.config.get(SILO_IDENTITY, None)
    if path is None:
        if dask.config.get(SILO_PEERS, None) is not None:
            raise PermissionError("this silo's operator configured peers (dpxgb.silo.peers) "
                                  "but no identity (dpxgb.silo.identity): make one with "
                                  "`dpxgb silo-identity PATH`")
        return None
    return SiloIdentity.load(path)


def configured_peers():
    """The other silos this silo aggregates securely with, as its operator configures them
    in Dask's config on the worker, or None (unset: the keys the coordinator relays are
    used as given).

    ``dpxgb.silo.peers`` (environment ``DASK_DPXGB__SILO__PEERS``, YAML) lists every other
    silo, each either the hex of its identity's public key (``dpxgb silo-identity``
    prints it) or a mapping ``{"public-key": hex, "address": "tcp://host:port"}`` that also
    fixes the Dask address of its worker. The secure fits of this silo are then exactly
    this silo and these peers.

    Returns
    -------
    dict of bytes to (str or None), or None
        Each peer's raw 32-byte Ed25519 public key -> its address (None: any address).

    Raises
    ------
    ValueError
        An entry is not of those forms, or a peer is listed twice (naming the entry).
    """
    entries = dask.config.get(SILO_PEERS, None)
    if entries is None:
        return None
    if isinstance(entries, (str, dict)) or not hasattr(entries, "__iter__"):
        raise ValueError(f"{SILO_PEERS} must be a list of peers, got {type(entries).__name__}")
    peers = {}
    for i, entry in enumerate(entries):
        address = None
        if isinstance(entry, dict):
            unknown = set(entry) - {"public-key", "address"}
            if unknown or "public-key" not in entry:
                raise ValueError(f"{SILO_PEERS}[{i}] must have the key 'public-key' and may "
                                 f"have 'address', got keys {sorted(entry)}")
            entry, address = entry["public-key"], entry.get("address")
        try:
            key = bytes.fromhex(entry)
        except (TypeError, ValueError):
            key = b""
        if len(key) != 32:
            raise ValueError(f"{SILO_PEERS}[{i}] must be a peer's public key, 64 hex digits "
                             "(`dpxgb silo-identity` prints it)")
        if key in peers:
            raise ValueError(f"{SILO_PEERS}[{i}] lists a peer already listed")
        peers[key] = None if address is None else str(address)
    return peers


def silo_budget(path):
    """The cap this worker's operator sets on what a silo releases of the rows at ``path``,
    from Dask's config on the worker: ``dpxgb.silo.max-epsilon`` (environment
    ``DASK_DPXGB__SILO__MAX_EPSILON``; unset: no cap) at ``dpxgb.silo.delta`` (default
    1e-6); with ``dpxgb.silo.ledger`` (a file on the silo's storage) the cap holds over
    every fit on the same file, else over one fit.

    Returns
    -------
    SiloBudget or None
    """
    epsilon = dask.config.get(SILO_MAX_EPSILON, None)
    if epsilon is None:
        return None
    ledger = dask.config.get(SILO_LEDGER, None)
    return SiloBudget(epsilon, dask.config.get(SILO_DELTA, 1e-6), ledger,
                      None if ledger is None else os.path.realpath(path))
