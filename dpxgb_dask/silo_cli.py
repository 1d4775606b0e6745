"""Command line of a silo's operator: ``dpxgb silo-identity``.

A silo that aggregates securely with others (``cross_silo="secure"``) signs its key of each
fit with a long-term identity, and takes part only with the peers its operator lists
(:mod:`~dpxgb_dask.cluster.silo_config`). ``dpxgb silo-identity PATH`` makes that identity
and prints its public key, which the other silos' operators list in ``dpxgb.silo.peers``.
"""
import dpxgb_dask


def cmd_silo_identity(args):
    """Make a silo's identity at ``args.path`` (or, with ``--show``, read it) and print its
    public key's hex.

    Raises
    ------
    FileExistsError
        Without ``--show``, a file is at the path: an identity is never overwritten.
    """
    if args.show:
        identity = dpxgb_dask.privacy.SiloIdentity.load(args.path)
    else:
        identity = dpxgb_dask.privacy.SiloIdentity.generate()
        try:
            identity.write(args.path)
        except FileExistsError:
            raise FileExistsError(f"{args.path} exists; an identity is never overwritten "
                                  "(its peers know it): --show prints its public key") from None
    print(identity.public_bytes.hex())
    return 0


def add_commands(sub):
    """Add ``silo-identity`` to the ``dpxgb`` parser's sub-commands ``sub``."""
    command = sub.add_parser("silo-identity",
                             help="make a silo's identity for secure aggregation; print its "
                                  "public key")
    command.add_argument("path", help="the new identity's file (PEM, readable by its owner "
                                      "only); the worker's dpxgb.silo.identity")
    command.add_argument("--show", action="store_true",
                         help="print the public key of the identity already at PATH")
    command.set_defaults(func=cmd_silo_identity)
