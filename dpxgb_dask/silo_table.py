"""A silo table: a fit's rows as each silo holds them in its own storage.

A :class:`SiloTable` names, for each silo (a Dask worker, by its name or its address), a
file on that worker's own storage, and the public columns to train on. A fit on it
(``train(params, table, None)``, an estimator's ``fit(table)``, ``dpxgb train --silo``)
sends each silo's worker one call naming its path and the columns; the worker reads its own
file and keeps the rows (:func:`~dpxgb_dask.inputs.read_silo_rows`). The rows never pass
through the user's process or the scheduler, and never move to another worker: a silo lost
during the fit ends it. The fit is a cross-silo fit (``cross_silo="local"`` or
``"secure"``): a silo's worker answers only its own releases.

This module holds the description only (plain, public values): the client API checks it,
the cluster loads it, the workers read what it names.
"""
from dataclasses import dataclass
import os

import numpy as np

#: The file formats a silo's source may have.
SILO_FORMATS = ("parquet", "csv")


@dataclass(frozen=True)
class SiloTable:
    """The rows of a fit, held by its silos: each silo reads its own file, on its worker.

    Parameters
    ----------
    sources : dict of str -> str or os.PathLike
        Silo -> the path of its rows on that silo's own storage (a Parquet file or a
        directory of Parquet files, or a CSV file with a header line; absolute, or relative
        to the worker's working directory). A silo is a Dask worker of the fit's cluster,
        named by its ``name`` (``dask worker --name hospital-a``; compared as strings, so
        ``0`` names a ``LocalCluster``'s worker 0) or by its address (``"tcp://..."``).
        Each silo holds one partition of the fit.
    features : sequence of str
        The feature columns, in the model's order (public: the model stores their names).
        Every silo's file must have them; other columns are not read.
    label : str
        The label column: 0/1 (binary), class indices 0..K-1 (multiclass), real values
        (regression), or the values of ``classes``. NaN labels leave their rows out of the
        fit's sums.
    format : {"parquet", "csv"}, default "parquet"
        Of every silo's file.
    classes : sequence, optional
        The public label set of a classifier (2 or more distinct values; kept sorted as
        ``np.unique`` sorts them): each silo encodes its labels as their index in it
        (binary: 1 for ``classes[1]``, 0 for any other label; multiclass: a label outside
        it leaves its row out). None: the labels are used as they are.

    Raises
    ------
    ValueError
        Naming the argument and what it allows.

    Notes
    -----
    A fit on a silo table (:func:`~dpxgb_dask.training.train` with ``y=None``, an
    estimator's ``fit(table)``) takes its feature names and count from the table and reads
    nothing in the user's process. Each silo's worker gets one call (its path and the
    columns), reads its file, checks the columns (a missing one is an error naming it and
    the path) and keeps the rows as one partition; it answers nothing about them. The
    silos' partitions have no copy elsewhere and are never moved: a silo lost during the
    fit ends it with an error naming the silo. A silo's worker answers only its own
    releases, so the fit names ``cross_silo="local"`` (each silo adds its own noise) or
    ``"secure"`` (each a share, masked) (:mod:`~dpxgb_dask.boosting.silos`); a fit on a
    silo table with ``cross_silo=None`` is refused. A fit on a silo table takes no
    ``sample_weight``, ``base_margin``, ``weight_bound`` or private evaluation sets
    (``evals``: their rows would be placed on the silos' workers).

    Examples
    --------
    >>> from dpxgb_dask import SiloTable
    >>> table = SiloTable({"hospital-a": "/data/visits.parquet",
    ...                    "hospital-b": "/srv/export/visits.parquet"},
    ...                   features=["age", "pressure"], label="readmitted")
    >>> table.silos
    ['hospital-a', 'hospital-b']
    """

    sources: dict
    features: tuple
    label: str
    format: str = "parquet"
    classes: tuple | None = None

    def __post_init__(self):
        set_field = object.__setattr__  # (frozen: fields are set once, here)
        set_field(self, "sources", _checked_sources(self.sources))
        set_field(self, "features", _checked_features(self.features))
        if not isinstance(self.label, str) or not self.label:
            raise ValueError(f"label must be a column name (a non-empty string), got "
                             f"{self.label!r}")
        if self.label in self.features:
            raise ValueError(f"label {self.label!r} must not be one of the features")
        if self.format not in SILO_FORMATS:
            raise ValueError(f"format must be one of {list(SILO_FORMATS)}, got "
                             f"{self.format!r}")
        if self.classes is not None:
            set_field(self, "classes", _checked_classes(self.classes))

    def __hash__(self):  # (the dict of sources is not hashable itself)
        return hash((tuple(self.sources.items()), self.features, self.label, self.format,
                     self.classes))

    @property
    def silos(self):
        """list of str: the silos, in the order of their partitions."""
        return list(self.sources)

    def with_classes(self, classes):
        """This table with the public label set ``classes`` (an estimator's ``classes=``),
        or itself when ``classes`` is None.

        Raises
        ------
        ValueError
            When the table has other classes of its own.
        """
        if classes is None:
            return self
        given = _checked_classes(classes)
        if self.classes is not None and self.classes != given:
            raise ValueError(f"classes {list(given)!r} differ from the silo table's own "
                             f"classes {list(self.classes)!r}: give one of them")
        return SiloTable(self.sources, self.features, self.label, self.format, given)

    def check_fit(self, y, objective, num_class, cross_silo, **unsupported):
        """Refuse what a fit on this table cannot take.

        Parameters
        ----------
        y : None
            The labels are the table's ``label`` column, read on the silos.
        objective : str
        num_class : int or None
            Of ``multi:softprob``: the number of classes ``classes`` must have (else None).
        cross_silo : {"local", "secure"}
            A silo's worker answers only its own releases, so a fit on silos is a
            cross-silo fit (:mod:`~dpxgb_dask.params.silos`).
        **unsupported
            Arguments of the fit that need rows in the user's process (weights, base
            margins, evaluation sets): each must be None or empty.

        Raises
        ------
        ValueError
            Naming the argument.
        """
        if y is not None:
            raise ValueError("y must be None when X is a SiloTable: the labels are its "
                             f"label column {self.label!r}, read on each silo")
        if cross_silo not in ("local", "secure"):
            raise ValueError("cross_silo must be 'local' or 'secure' when X is a SiloTable "
                             "(each silo releases only noisy sums of its own rows), got "
                             f"{cross_silo!r}")
        given = [name for name, value in unsupported.items() if value is not None
                 and not (isinstance(value, (list, tuple, dict)) and not value)]
        if given:
            raise ValueError(f"{given[0]} cannot be given with a SiloTable (its rows stay on "
                             "the silos, which load the features and the label only)")
        if self.classes is None:
            return
        if objective == "reg:squarederror":
            raise ValueError("a SiloTable's classes apply to classification, not to "
                             "objective='reg:squarederror'")
        expected = 2 if objective == "binary:logistic" else num_class
        if len(self.classes) != expected:
            raise ValueError(f"a SiloTable's classes must hold {expected} labels for "
                             f"objective={objective!r}, got {len(self.classes)}")

    def source(self, silo, categories=None):
        """What silo ``silo`` reads: the keyword arguments of
        :func:`~dpxgb_dask.inputs.read_silo_rows`, plain values only.

        Parameters
        ----------
        silo : str
        categories : list of (list or None), optional
            The fit's public category lists, one entry per feature.

        Returns
        -------
        dict
        """
        return {"path": self.sources[silo], "file_format": self.format,
                "features": list(self.features), "label": self.label,
                "classes": None if self.classes is None else list(self.classes),
                "categories": categories}


def _checked_sources(sources):
    """``sources`` as a dict of silo name -> path, both strings."""
    if not hasattr(sources, "items") or not sources:
        raise ValueError("sources must be a non-empty dict {silo: path} (a silo is a Dask "
                         f"worker's name or address), got {sources!r}")
    checked = {}
    for silo, path in sources.items():
        if isinstance(silo, bool) or not isinstance(silo, (str, int, np.integer)) \
                or str(silo) == "":
            raise ValueError(f"sources' silos must be workers' names or addresses (strings or "
                             f"integers), got {silo!r}")
        if str(silo) in checked:
            raise ValueError(f"sources names silo {str(silo)!r} twice")
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
            raise ValueError(f"sources[{silo!r}] must be a path (a string), got {path!r}")
        checked[str(silo)] = str(os.fspath(path))
    return checked


def _checked_features(features):
    """``features`` as a tuple of distinct, non-empty strings."""
    if isinstance(features, (str, bytes)) or not hasattr(features, "__iter__"):
        raise ValueError(f"features must be a list of column names, got {features!r}")
    features = tuple(features)
    if not features or not all(isinstance(f, str) and f for f in features):
        raise ValueError(f"features must be a non-empty list of column names (strings), got "
                         f"{list(features)!r}")
    if len(set(features)) != len(features):
        raise ValueError(f"features must be distinct, got {list(features)!r}")
    return features


def _checked_classes(classes):
    """``classes`` as a sorted tuple of 2 or more distinct plain values."""
    values = np.asarray(classes, dtype=object).reshape(-1) \
        if not isinstance(classes, (str, bytes)) else np.asarray([classes], dtype=object)
    try:
        unique = np.unique(values)
    except TypeError:
        raise ValueError(f"classes must be labels of one kind (numbers, or strings), got "
                         f"{classes!r}") from None
    if unique.size < 2 or unique.size != values.size:
        raise ValueError(f"classes must hold 2 or more distinct labels, got {classes!r}")
    return tuple(v.item() if isinstance(v, np.generic) else v for v in unique)
