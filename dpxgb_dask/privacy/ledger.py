"""The privacy ledger: one event per DP release, serialisable, with explicit composition.

A ledger holds events only: the accountants (``accountants.py``) compose them, and a
budget across fits (``budget.py``) checks planned events against its total.

Neighbouring relation: datasets differ by adding or removing one row.

Each :class:`PrivacyEvent` describes one release: where it happened (tree, depth, purpose),
which mechanism (Laplace, Gaussian, exponential), its sensitivity and noise, the Poisson
subsample it was computed on, and how it composes:

* ``parallel_over`` / ``n_parallel``: the release is made of ``n_parallel`` pieces computed
  on disjoint sets of rows (the nodes of one depth, the leaves of a tree, the bins of a
  histogram). By parallel composition the event costs one application of the mechanism,
  whatever ``n_parallel`` is; the ledger states this instead of hiding it in a division.
  The silos of a cross-silo fit hold disjoint rows too: a release made at each silo on
  its own rows is parallel over ``"silos"``.
  Features and classes are *not* disjoint (every row has every feature), so they cannot
  be declared parallel: put them in the sensitivity or in ``count``.
* ``count``: the release repeats the mechanism ``count`` times sequentially on the same
  rows (e.g. one Laplace histogram per feature, each with this ε).
* ``subsample`` / ``sampling_rate``: events computed on the same Poisson subsample (each
  row kept independently with probability γ; by default the subsample of the event's
  tree) are amplified *together*: the accountants compose them first and apply the
  amplification to the composite, never to each event separately (that would
  under-count, since they all see the same sample).
* ``disjoint_group`` / ``disjoint_part``: whole groups of events computed on disjoint parts
  of the data (DPBoost's trees inside one ensemble) compose in parallel across parts. One
  Poisson subsample must stay inside one place: all its events free, or all in the same
  part of the same group (the accountants refuse anything else).
* ``individual_filter``: the release's rows passed an individual Rényi filter of that name
  (S-BDT; Feldman & Zrnic 2021): a row takes part only while its own Rényi divergence at
  the filter's order, summed over the filter's releases, stays within the filter's budget.
  The filter itself is one entry of mechanism ``"renyi_filter"`` (``rdp_order`` α,
  ``rdp_budget`` B), which is no release: every accountant may still charge the covered
  releases as if every row took part in full (valid, the filter only removes
  contributions); the RDP accountant may instead charge B at order α for all of them
  (:mod:`~dpxgb_dask.privacy.filter`).
* ``selection`` / ``selection_part``: the release belongs to configuration
  ``selection_part`` of a private selection of that name (Papernot & Steinke 2022,
  :mod:`~dpxgb_dask.privacy.selection`): a candidate run draws one configuration and makes
  its releases, and only the best run of a secret random number of runs is released. The
  selection itself is one entry of mechanism ``"repeat_and_select"`` (``selection_mean``
  E[K], ``selection_shape`` η), which is no release: its configurations' events are the
  *planned* releases of one run each (the number of runs is never recorded). Only the RDP
  accountant knows the selection's guarantee; the basic and PLD accountants certify no
  finite ε for a ledger holding one.

Every call of :meth:`Ledger.record` counts
------------------------------------------
Each recorded event is one release and is composed, even if an identical event with the
same ``(tree, depth, purpose, group, part)`` is already in the ledger: the noise key of a
release also has an ``index``, and a mechanism called with ``rng=None`` draws fresh noise,
so two identical-looking events are in general two independent releases. The only
exception is an explicit replay, ``record(..., replay=True)``: it is accepted (and costs
nothing) only if an identical event, including the same ``stream`` identifier
(:attr:`~dpxgb_dask.privacy.randomness.RandomStream.stream_id`), is already recorded, i.e.
the release was recomputed with the very same noise; otherwise it raises ``ValueError``.

Retries of Dask tasks never reach the ledger: tasks compute exact, noise-free partial
results, and the coordinator adds the noise and records the event once per release, after
the (possibly retried) tasks have finished.
"""

from __future__ import annotations

import dataclasses
import json
import numbers
from typing import Optional

from .selection import SelectionCount
from .validation import check_epsilon, check_positive, check_sampling_rate

__all__ = ["MECHANISMS", "PARALLEL_AXES", "Ledger", "PrivacyEvent"]

MECHANISMS = ("laplace", "gaussian", "exponential", "renyi_filter", "repeat_and_select")
#: Axes whose pieces hold disjoint rows under add/remove of one row.
PARALLEL_AXES = ("nodes", "leaves", "bins", "silos")
_NOT_DISJOINT = {
    "features": "every row contributes to every feature; include n_features in the sensitivity "
    "or use count=n_features",
    "classes": "every row contributes to every class's gradients; include them in the sensitivity "
    "or use count",
    "trees": "trees on disjoint data are declared with disjoint_group/disjoint_part",
}
_FORMAT = "dpxgb_dask.privacy.ledger"
#: Version written by :meth:`Ledger.to_dict`. Version 2 added the ``stream`` field and
#: allows several events with the same key (every record counts); version 1 is still read.
_VERSION = 2
_READABLE_VERSIONS = (1, 2)
#: Fields of the format from when a ledger could carry a budget (budgets are now checked by
#: ``budget.py``): written with these values so that files keep their bytes and earlier
#: readers still read them; ignored when read.
_UNUSED_BUDGET_FIELDS = {"budget_epsilon": None, "budget_delta": 0.0}


def _opt_int(value, name, minimum=0):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be None or an int >= {minimum}, got {value!r}")
    return int(value)


def _stream_identifier(stream):
    """``stream`` argument of :meth:`Ledger.make_event` as a str (or None)."""
    if stream is None or isinstance(stream, str):
        return stream
    if hasattr(stream, "stream_id"):
        return stream.stream_id
    if isinstance(stream, (list, tuple)) and stream:
        return ",".join(_stream_identifier(s) for s in stream)
    raise ValueError(
        f"stream must be a RandomStream, a str or a non-empty sequence of them, got {type(stream).__name__}"
    )


def _pos_int(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return int(value)


@dataclasses.dataclass(frozen=True)
class PrivacyEvent:
    """One DP release. Build it with :meth:`Ledger.record`; fields are validated on creation.

    Parameters
    ----------
    purpose : str
        What was released: ``"bounds"``, ``"sketch"``, ``"init_score"``, ``"split"``,
        ``"leaf"``, ...
    mechanism : {"laplace", "gaussian", "exponential"}
    sensitivity : float
        L1 (Laplace), L2 (Gaussian) or utility (exponential) sensitivity.
    epsilon : float or None
        ε of one application (Laplace, exponential).
    noise_multiplier : float or None
        σ/Δ₂ (Gaussian).
    tree, depth : int or None
        Location of the release (None for fit-level releases).
    sampling_rate : float, default 1.0
        Poisson sampling probability γ of the rows the release was computed on.
    subsample : str or None
        Identifier of that Poisson subsample; defaults to ``"tree:<tree>"`` when γ < 1.
    parallel_over : tuple of str
        Disjoint axes the release is split over (subset of :data:`PARALLEL_AXES`).
    n_parallel : int, default 1
        Number of disjoint pieces.
    count : int, default 1
        Sequential repetitions of the mechanism on the same rows.
    disjoint_group : str or None
        Name of a group of events on disjoint data parts (parallel across parts).
    disjoint_part : int or None
        Part index inside ``disjoint_group``.
    resolution : float or None
        Grid step of the noise (reproducibility only).
    note : str
        Free text.
    individual_filter : str or None
        Name of the individual Rényi filter the release's rows passed; on a
        ``"renyi_filter"`` entry, the filter's own name.
    rdp_order, rdp_budget : float or None
        A ``"renyi_filter"`` entry's order α > 1 and budget B >= 0: every row's Rényi
        divergence at α over the releases of the filter is at most B.
    selection : str or None
        Name of the private selection the release is a planned release of; on a
        ``"repeat_and_select"`` entry, the selection's own name.
    selection_part : int or None
        The configuration (0, 1, ...) of the selection the release belongs to.
    selection_mean, selection_shape : float or None
        A ``"repeat_and_select"`` entry's E[K] >= 1 and η > 0
        (:class:`~dpxgb_dask.privacy.selection.SelectionCount`).
    noise_shares : int or None
        A Gaussian release whose noise is the sum of this many silos' discrete Gaussian
        shares (the distributed discrete Gaussian of secure aggregation,
        :meth:`~dpxgb_dask.privacy.mechanisms.GaussianMechanism.share_parameters`): only
        the RDP accountant describes it.
    stream : str or None
        Public identifier of the noise stream(s) of the release
        (:attr:`~dpxgb_dask.privacy.randomness.RandomStream.stream_id`, several joined by
        ``","``); needed to record a replay (:meth:`Ledger.record` with ``replay=True``).
    """

    purpose: str
    mechanism: str
    sensitivity: float
    epsilon: Optional[float] = None
    noise_multiplier: Optional[float] = None
    tree: Optional[int] = None
    depth: Optional[int] = None
    sampling_rate: float = 1.0
    subsample: Optional[str] = None
    parallel_over: tuple = ()
    n_parallel: int = 1
    count: int = 1
    disjoint_group: Optional[str] = None
    disjoint_part: Optional[int] = None
    resolution: Optional[float] = None
    note: str = ""
    stream: Optional[str] = None
    individual_filter: Optional[str] = None
    rdp_order: Optional[float] = None
    rdp_budget: Optional[float] = None
    selection: Optional[str] = None
    selection_part: Optional[int] = None
    selection_mean: Optional[float] = None
    selection_shape: Optional[float] = None
    noise_shares: Optional[int] = None

    def __post_init__(self):
        put = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        if not isinstance(self.purpose, str) or not self.purpose:
            raise ValueError(f"purpose must be a non-empty str, got {self.purpose!r}")
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"mechanism must be one of {MECHANISMS}, got {self.mechanism!r}")
        put("sensitivity", check_positive(self.sensitivity, "sensitivity"))
        if self.individual_filter is not None and (not isinstance(self.individual_filter, str)
                                                   or not self.individual_filter):
            raise ValueError(f"individual_filter must be None or a non-empty str, "
                             f"got {self.individual_filter!r}")
        if self.mechanism == "renyi_filter":
            if self.individual_filter is None or self.rdp_order is None or self.rdp_budget is None:
                raise ValueError("a renyi_filter entry needs individual_filter (its name), "
                                 "rdp_order and rdp_budget")
            if self.epsilon is not None or self.noise_multiplier is not None:
                raise ValueError("a renyi_filter entry has no epsilon or noise_multiplier")
            order = float(self.rdp_order)
            if not order > 1.0 or not order < float("inf"):
                raise ValueError(f"rdp_order must be a finite float > 1, got {self.rdp_order!r}")
            put("rdp_order", order)
            put("rdp_budget", check_epsilon(self.rdp_budget, "rdp_budget"))
        elif self.rdp_order is not None or self.rdp_budget is not None:
            raise ValueError("rdp_order and rdp_budget belong to a renyi_filter entry")
        elif self.mechanism == "repeat_and_select":
            self._check_selection_entry()
        elif self.mechanism == "gaussian":
            if self.noise_multiplier is None or self.epsilon is not None:
                raise ValueError("a gaussian event needs noise_multiplier (or sigma) and no epsilon")
            put("noise_multiplier", check_positive(self.noise_multiplier, "noise_multiplier"))
        else:
            if self.epsilon is None or self.noise_multiplier is not None:
                raise ValueError(f"a {self.mechanism} event needs epsilon (or noise_scale) and no noise_multiplier")
            put("epsilon", check_epsilon(self.epsilon))
        put("tree", _opt_int(self.tree, "tree"))
        put("depth", _opt_int(self.depth, "depth"))
        put("sampling_rate", check_sampling_rate(self.sampling_rate))
        if self.sampling_rate < 1.0:
            if self.subsample is None:
                if self.tree is None:
                    raise ValueError("a subsampled event (sampling_rate < 1) needs tree or subsample to name its Poisson sample")
                put("subsample", f"tree:{self.tree}")
            elif not isinstance(self.subsample, str) or not self.subsample:
                raise ValueError(f"subsample must be a non-empty str, got {self.subsample!r}")
        elif self.subsample is not None:
            raise ValueError("subsample is only meaningful with sampling_rate < 1")
        axes = (self.parallel_over,) if isinstance(self.parallel_over, str) else tuple(self.parallel_over)
        for axis in axes:
            if axis in _NOT_DISJOINT:
                raise ValueError(f"parallel_over={axis!r} is not a disjoint axis: {_NOT_DISJOINT[axis]}")
            if axis not in PARALLEL_AXES:
                raise ValueError(f"parallel_over entries must be in {PARALLEL_AXES}, got {axis!r}")
        put("parallel_over", axes)
        put("n_parallel", _pos_int(self.n_parallel, "n_parallel"))
        if self.n_parallel > 1 and not axes:
            raise ValueError("n_parallel > 1 needs parallel_over naming the disjoint axis")
        put("count", _pos_int(self.count, "count"))
        if (self.disjoint_group is None) != (self.disjoint_part is None):
            raise ValueError("disjoint_group and disjoint_part go together")
        if self.disjoint_group is not None and (not isinstance(self.disjoint_group, str) or not self.disjoint_group):
            raise ValueError(f"disjoint_group must be a non-empty str, got {self.disjoint_group!r}")
        put("disjoint_part", _opt_int(self.disjoint_part, "disjoint_part"))
        if self.resolution is not None:
            put("resolution", check_positive(self.resolution, "resolution"))
        if not isinstance(self.note, str):
            raise ValueError(f"note must be a str, got {self.note!r}")
        if self.stream is not None and (not isinstance(self.stream, str) or not self.stream):
            raise ValueError(f"stream must be None or a non-empty str, got {self.stream!r}")
        self._check_selection_fields()
        if self.noise_shares is not None:
            if self.mechanism != "gaussian":
                raise ValueError("noise_shares belongs to a gaussian event")
            put("noise_shares", _opt_int(self.noise_shares, "noise_shares", minimum=2))

    def _check_selection_entry(self):
        """A ``repeat_and_select`` entry: its name, E[K] and η, and no noise of its own."""
        if self.selection is None or self.selection_mean is None or self.selection_shape is None:
            raise ValueError("a repeat_and_select entry needs selection (its name), "
                             "selection_mean and selection_shape")
        if self.epsilon is not None or self.noise_multiplier is not None:
            raise ValueError("a repeat_and_select entry has no epsilon or noise_multiplier")
        count = SelectionCount(self.selection_mean, self.selection_shape)  # (validates)
        object.__setattr__(self, "selection_mean", count.mean)
        object.__setattr__(self, "selection_shape", count.shape)

    def _check_selection_fields(self):
        """``selection`` names a selection; a release in one names its configuration."""
        if self.selection is not None and (not isinstance(self.selection, str)
                                           or not self.selection):
            raise ValueError(f"selection must be None or a non-empty str, got {self.selection!r}")
        entry = self.mechanism == "repeat_and_select"
        if not entry and (self.selection_mean is not None or self.selection_shape is not None):
            raise ValueError("selection_mean and selection_shape belong to a repeat_and_select "
                             "entry")
        if entry and self.selection_part is not None:
            raise ValueError("a repeat_and_select entry has no selection_part")
        if not entry and (self.selection is None) != (self.selection_part is None):
            raise ValueError("a release in a selection needs selection and selection_part")
        object.__setattr__(self, "selection_part",
                           _opt_int(self.selection_part, "selection_part"))
        if self.selection is not None and (self.is_filter or self.individual_filter):
            raise ValueError("individual Rényi filters cannot be part of a private selection")

    @property
    def key(self):
        """(tree, depth, purpose, disjoint_group, disjoint_part): where the release happened.

        Several events may share a key (each recorded release counts); a replay must match
        an existing event with the same key exactly, ``stream`` included.
        """
        return (self.tree, self.depth, self.purpose, self.disjoint_group, self.disjoint_part)

    @property
    def is_filter(self):
        """bool: True for an individual Rényi filter's entry (no release)."""
        return self.mechanism == "renyi_filter"

    @property
    def is_selection_entry(self):
        """bool: True for a private selection's entry (no release)."""
        return self.mechanism == "repeat_and_select"

    @property
    def is_pure(self):
        """bool: True for ε-DP mechanisms (Laplace, exponential)."""
        return self.mechanism in ("laplace", "exponential")

    @property
    def noise_scale(self):
        """float or None: Laplace scale Δ/ε, Gaussian σ = z·Δ, None for exponential."""
        if self.mechanism == "laplace":
            return self.sensitivity / self.epsilon
        if self.mechanism == "gaussian":
            return self.noise_multiplier * self.sensitivity
        return None

    @property
    def profile(self):
        """Privacy-relevant parameters (what the accountants see); sensitivity cancels out."""
        return (self.mechanism, self.epsilon, self.noise_multiplier, self.count)

    def to_dict(self):
        """dict of JSON-compatible fields (tuple ``parallel_over`` becomes a list)."""
        # (a shallow copy: every field is a number, a string, None or a tuple of strings;
        # dataclasses.asdict deep-copies each, which the coordinator paid per release)
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["parallel_over"] = list(self.parallel_over)
        for name in ("individual_filter", "rdp_order", "rdp_budget", "selection",
                     "selection_part", "selection_mean", "selection_shape", "noise_shares"):
            if out[name] is None:  # (fields added later: written only when set)
                del out[name]
        return out

    @classmethod
    def from_dict(cls, data):
        """Inverse of :meth:`to_dict`; unknown fields raise ValueError."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown event fields: {sorted(unknown)}")
        data = dict(data)
        data["parallel_over"] = tuple(data.get("parallel_over", ()))
        return cls(**data)


class Ledger:
    """Append-only record of DP releases.

    Parameters
    ----------
    events : iterable of PrivacyEvent, optional
        Initial events.

    Examples
    --------
    >>> ledger = Ledger()
    >>> _ = ledger.record("split", "exponential", 3.0, epsilon=0.1, tree=0, depth=0,
    ...                   parallel_over="nodes", n_parallel=1)
    >>> Ledger.from_json(ledger.to_json()).events == ledger.events
    True
    """

    def __init__(self, events=()):
        self._events = []
        self._by_key = {}  # key -> list of events with that key
        events = list(events)
        for event in events:
            if not isinstance(event, PrivacyEvent):
                raise TypeError(f"events must be PrivacyEvent objects, got {type(event).__name__}")
        for event in events:
            self._append(event)

    @property
    def events(self):
        """tuple of PrivacyEvent, in recording order."""
        return tuple(self._events)

    def __len__(self):
        return len(self._events)

    def __iter__(self):
        return iter(self._events)

    def __getitem__(self, index):
        return self._events[index]

    def __repr__(self):
        return f"Ledger(n_events={len(self._events)})"

    @staticmethod
    def make_event(purpose, mechanism, sensitivity, *, epsilon=None, noise_multiplier=None, sigma=None,
                   noise_scale=None, stream=None, **fields):
        """Build a :class:`PrivacyEvent`, converting ``sigma`` / ``noise_scale`` to ε or z.

        For Laplace, ``noise_scale`` b gives ε = Δ/b; for Gaussian, ``sigma`` (or
        ``noise_scale``) gives z = σ/Δ. ``stream`` may be a
        :class:`~dpxgb_dask.privacy.randomness.RandomStream` (its ``stream_id`` is stored), a
        str, or a sequence of them (for a release drawing from several streams). Other keyword
        arguments are event fields.
        """
        stream = _stream_identifier(stream)
        sensitivity = check_positive(sensitivity, "sensitivity")
        if sigma is not None and noise_scale is not None:
            raise ValueError("give at most one of sigma and noise_scale")
        scale = sigma if sigma is not None else noise_scale
        if scale is not None:
            scale = check_positive(scale, "sigma" if sigma is not None else "noise_scale")
            if mechanism == "gaussian":
                if noise_multiplier is not None:
                    raise ValueError("give noise_multiplier or sigma, not both")
                noise_multiplier = scale / sensitivity
            elif mechanism == "laplace" and sigma is None:
                if epsilon is not None:
                    raise ValueError("give epsilon or noise_scale, not both")
                epsilon = sensitivity / scale
            else:
                raise ValueError(f"sigma/noise_scale does not apply to mechanism {mechanism!r}")
        return PrivacyEvent(purpose=purpose, mechanism=mechanism, sensitivity=sensitivity, epsilon=epsilon,
                            noise_multiplier=noise_multiplier, stream=stream, **fields)

    def record(self, purpose, mechanism, sensitivity, *, replay=False, **fields):
        """Record one release and return its event.

        Parameters
        ----------
        purpose : str
        mechanism : {"laplace", "gaussian", "exponential"}
        sensitivity : float
        replay : bool, default False
            True declares that this release is a recomputation of an already recorded
            release with the very same noise (its stream was obtained with
            ``NoiseSource.stream(..., replay=True)``). It is accepted only if an identical
            event -- same key, same fields, same non-None ``stream`` -- is already recorded;
            nothing is added then.
        **fields
            ``epsilon``, ``noise_multiplier``, ``sigma``, ``noise_scale``, ``stream`` and the
            :class:`PrivacyEvent` fields (tree, depth, sampling_rate, subsample,
            parallel_over, n_parallel, count, disjoint_group, disjoint_part, resolution,
            note). Mechanism objects provide the first ones via ``mech.ledger_fields()``.

        Returns
        -------
        PrivacyEvent
            The recorded event, or for a replay the existing identical event.

        Raises
        ------
        ValueError
            ``replay=True`` but no identical event with the same stream is recorded.

        Notes
        -----
        Without ``replay=True`` every call counts, even when an identical event with the same
        key is already recorded (the two releases may have used different noise, e.g.
        different stream indices or ``rng=None``). Retried Dask tasks do not call this: the
        coordinator records each release once, after adding the noise.
        """
        return self.add(self.make_event(purpose, mechanism, sensitivity, **fields), replay=replay)

    def add(self, event, *, replay=False):
        """Record a prebuilt :class:`PrivacyEvent` (same rules as :meth:`record`)."""
        if not isinstance(event, PrivacyEvent):
            raise TypeError(f"event must be a PrivacyEvent, got {type(event).__name__}")
        if not isinstance(replay, bool):
            raise ValueError(f"replay must be a bool, got {replay!r}")
        if replay:
            return self._replayed(event)
        self._append(event)
        return event

    def _append(self, event):
        self._events.append(event)
        self._by_key.setdefault(event.key, []).append(event)

    def _replayed(self, event):
        """The recorded event identical to ``event`` (a replay), or ValueError."""
        if event.stream is None:
            raise ValueError(
                "replay=True needs the stream identifier of the release (stream=rng or "
                "stream=rng.stream_id): without it a replay cannot be told from a new release"
            )
        for existing in self._by_key.get(event.key, ()):
            if existing == event:
                return existing
        raise ValueError(
            f"replay=True but no identical release with the same stream is recorded for "
            f"(tree, depth, purpose, group, part)={event.key}: a release with new noise must be "
            "recorded without replay=True"
        )

    def table(self):
        """Tabular view: one dict per event with derived ``noise_scale`` (for a CLI report)."""
        rows = []
        for i, event in enumerate(self._events):
            row = {"index": i}
            row.update(event.to_dict())
            row["noise_scale"] = event.noise_scale
            rows.append(row)
        return rows

    def to_dict(self):
        """JSON-compatible dict: format tag, version, neighbouring relation, events."""
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "neighbouring": "add_or_remove_one",
            **_UNUSED_BUDGET_FIELDS,
            "events": [e.to_dict() for e in self._events],
        }

    def to_json(self, indent=None):
        """Serialise to a JSON string (floats round-trip exactly)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data):
        """Inverse of :meth:`to_dict`; rejects other formats and versions."""
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError(f"not a serialised ledger (format must be {_FORMAT!r})")
        if data.get("version") not in _READABLE_VERSIONS:
            raise ValueError(
                f"unsupported ledger version {data.get('version')!r}, expected one of {_READABLE_VERSIONS}"
            )
        if data.get("neighbouring") != "add_or_remove_one":
            raise ValueError("only the add_or_remove_one neighbouring relation is supported")
        return cls(PrivacyEvent.from_dict(e) for e in data.get("events", []))

    @classmethod
    def from_json(cls, text):
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(json.loads(text))
