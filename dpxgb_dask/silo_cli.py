"""The command line's silos: ``dpxgb train --silo`` and ``dpxgb silo-identity``.

``dpxgb train --silo NAME=PATH ...`` trains on each silo's own file, read by the silo
(:func:`silo_table`, :func:`add_silo_arguments`).

A silo that aggregates securely with others (``cross_silo="secure"``) signs its key of each
fit with a long-term identity, and takes part only with the peers its operator lists
(:mod:`~dpxgb_dask.cluster.silo_config`). ``dpxgb silo-identity PATH`` makes that identity
and prints its public key, which the other silos' operators list in ``dpxgb.silo.peers``.
"""
import dpxgb_dask
from dpxgb_dask.params.silos import CROSS_SILO_MODES
from dpxgb_dask.silo_table import SILO_FORMATS


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


def silo_table(args):
    """The :class:`~dpxgb_dask.silo_table.SiloTable` of ``--silo NAME=PATH`` (repeated),
    ``--features``, ``--label`` and ``--format`` (default: csv when every path ends with
    .csv, else parquet)."""
    sources = {}
    for spec in args.silo:
        name, _, path = spec.partition("=")
        if not name or not path:
            raise ValueError(f"--silo must be NAME=PATH (a worker's name and a file on its "
                             f"own storage), got {spec!r}")
        if name in sources:
            raise ValueError(f"--silo names silo {name!r} twice")
        sources[name] = path
    if not args.features:
        raise ValueError("--silo needs --features COLUMN,COLUMN,... (the public feature "
                         "columns of every silo's file)")
    features = [f.strip() for f in args.features.split(",") if f.strip()]
    csv = all(path.lower().endswith(".csv") for path in sources.values())
    try:
        return dpxgb_dask.SiloTable(sources, features, args.label,
                                    args.format or ("csv" if csv else "parquet"))
    except ValueError as exc:
        raise ValueError(f"--silo: {exc}") from None  # (main says it in one line)


def add_silo_arguments(tr):
    """``dpxgb train``'s arguments of a fit on silos' own files (a silo table)."""
    tr.add_argument("--silo", action="append", metavar="NAME=PATH",
                    help="instead of DATA, repeated: a silo (a Dask worker's name or "
                         "address) and the path of its rows on its own storage, read there")
    tr.add_argument("--features", metavar="COLUMN,...",
                    help="with --silo: the public feature columns, comma-separated")
    tr.add_argument("--format", choices=list(SILO_FORMATS),
                    help="with --silo: of the silos' files (default: csv when every path "
                         "ends with .csv, else parquet)")
    tr.add_argument("--cross-silo", choices=[m for m in CROSS_SILO_MODES if m],
                    help="each silo adds the noise to its own sums (local), or a share of it "
                         "to masked sums (secure); default: the coordinator adds it "
                         "(refused with --silo)")


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
