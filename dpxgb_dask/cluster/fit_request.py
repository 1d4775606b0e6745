"""A fit's request to the scheduler: a typed, frozen record the client builds and the
scheduler reads (:class:`~dpxgb_dask.cluster.fit_request.FitRequest`), sent between them
as plain keyword arguments (msgpack data: strings, numbers, bytes, lists, dicts). The
scheduler rebuilds it field by field: it never unpickles anything a client sends and
derives every privacy number from the parameters itself.
"""
from dataclasses import dataclass
import re
from typing import Any, Optional

from ..boosting.selection import SelectionSpec, check_configurations, same_params
from ..model.booster import Booster
from ..params.plain import from_plain, to_plain

#: The fields of a fit request, each with what it holds on the wire.
FIT_REQUEST_FIELDS = {
    "fit_id": "the fit's id: letters, digits and dashes",
    "capability": "the fit's 32-byte secret",
    "placement": "worker address -> indices of the partitions it holds",
    "sources": "partition index -> ['replica', worker address] or ['client']",
    "params": "the training parameters as plain data (params.plain.to_plain)",
    "n_features": "the number of features, a positive integer",
    "feature_names": "a list of n_features strings, or None",
    "client_id": "the Dask id of the fitting client",
    "topic": "the client's progress topic, or None",
    "reload_topic": "the client's topic for reloading partitions of dask inputs, or None",
    "with_timings": "whether to return the fit's timings (a bool)",
    "init_model": "the model the fit continues (Booster.to_dict()), or None",
    "evaluations": "a list of [fit id, placement, sources] of private evaluation sets",
    "selection": "None, or a private selection: {'configurations': [plain params, ...], "
                 "'mean_runs', 'shape', 'holdout'}, its first configuration the params",
}

_FIT_ID = re.compile(r"^[A-Za-z0-9-]{1,128}$")
_TOPIC = re.compile(r"^dpxgb-(progress|reload)-[0-9a-f]{32}$")


@dataclass(frozen=True, kw_only=True)
class FitRequest:
    """One fit, as the client asks for it and the scheduler runs it
    (:meth:`~dpxgb_dask.cluster.scheduler.DPXGBSchedulerPlugin.coordinate`). Each field's
    wire form is in :data:`FIT_REQUEST_FIELDS`.

    Attributes
    ----------
    fit_id : str
    capability : bytes
        32 bytes.
    placement : dict of str to list of int
        Worker address -> the partitions it holds (0..n-1, each once).
    sources : dict of int to tuple
        Partition -> ``("replica", worker address)`` or ``("client",)``.
    params : TrainParams
        Validated.
    n_features : int
    feature_names : list of str or None
    client_id : str
    topic, reload_topic : str or None
        The client's progress topic and its topic for reloading partitions.
    with_timings : bool
    init_model : Booster or None
    evaluations : tuple of (fit id, placement, sources)
        The private evaluation sets' partitions.
    selection : (list of TrainParams, SelectionSpec) or None
        A private selection's configurations (the first is ``params``) and how it runs.
    """

    fit_id: str
    capability: bytes
    placement: dict
    sources: dict
    params: Any
    n_features: int
    feature_names: Optional[list]
    client_id: str
    topic: Optional[str]
    reload_topic: Optional[str]
    with_timings: bool
    init_model: Optional[Booster] = None
    evaluations: tuple = ()
    selection: Optional[tuple] = None

    def to_wire(self):
        """The request as plain keyword arguments (:data:`FIT_REQUEST_FIELDS`).

        Returns
        -------
        dict
        """
        return dict(fit_id=self.fit_id, capability=self.capability, placement=self.placement,
                    sources=self.sources, params=to_plain(self.params),
                    n_features=self.n_features,
                    feature_names=None if self.feature_names is None
                    else list(self.feature_names),
                    client_id=self.client_id, topic=self.topic,
                    reload_topic=self.reload_topic, with_timings=self.with_timings,
                    init_model=None if self.init_model is None else self.init_model.to_dict(),
                    evaluations=[list(e) for e in self.evaluations],
                    selection=None if self.selection is None else dict(
                        self.selection[1].to_dict(),
                        configurations=[to_plain(c) for c in self.selection[0]]))

    @classmethod
    def from_wire(cls, request, workers):
        """The request a client sent, checked (:func:`check_fit_request`).

        Returns
        -------
        FitRequest
        """
        return cls(**check_fit_request(request, workers))


def check_fit_request(request, workers):
    """The fit request's fields, checked: the parameters validated
    (:func:`~dpxgb_dask.params.plain.from_plain`) and the model rebuilt.

    Parameters
    ----------
    request : dict
        The handler's keyword arguments.
    workers : collection of str
        The addresses of the cluster's workers.

    Returns
    -------
    dict
        The fields of :class:`FitRequest`, with ``params`` a
        :class:`~dpxgb_dask.params.fields.TrainParams`, ``init_model`` a
        :class:`~dpxgb_dask.model.booster.Booster` or None, and ``selection`` None or
        (configurations, :class:`~dpxgb_dask.boosting.selection.SelectionSpec`).

    Raises
    ------
    ValueError
        Naming the first missing, unknown or bad field.
    """
    unknown = sorted(set(request) - set(FIT_REQUEST_FIELDS))
    missing = sorted(set(FIT_REQUEST_FIELDS) - set(request))
    if unknown or missing:
        raise ValueError(f"a fit request has the fields {sorted(FIT_REQUEST_FIELDS)}; got "
                         f"unknown fields {unknown} and missing fields {missing}")
    r = {field: _lists(value) for field, value in request.items()}
    _check(r, "fit_id", isinstance(r["fit_id"], str) and _FIT_ID.match(r["fit_id"]))
    _check(r, "capability", isinstance(r["capability"], bytes) and len(r["capability"]) == 32)
    _check(r, "n_features", _is_int(r["n_features"]) and r["n_features"] >= 1)
    names = r["feature_names"]
    _check(r, "feature_names", names is None or (
        isinstance(names, list) and len(names) == r["n_features"]
        and all(isinstance(n, str) for n in names)))
    _check(r, "client_id", isinstance(r["client_id"], str) and 0 < len(r["client_id"]) <= 256)
    for field in ("topic", "reload_topic"):
        _check(r, field, r[field] is None or (isinstance(r[field], str)
                                              and _TOPIC.match(r[field])))
    _check(r, "with_timings", isinstance(r["with_timings"], bool))
    r["placement"], r["sources"] = _where(r["placement"], r["sources"], workers, "")
    evaluations = r["evaluations"]
    _check(r, "evaluations", isinstance(evaluations, list) and all(
        isinstance(e, list) and len(e) == 3 and isinstance(e[0], str)
        and e[0].startswith(r["fit_id"] + "-eval") and _FIT_ID.match(e[0])
        for e in evaluations))
    r["evaluations"] = tuple((e[0], *_where(e[1], e[2], workers, f"evaluations[{i}] "))
                             for i, e in enumerate(evaluations))
    r["params"] = from_plain(r["params"], r["n_features"])
    if r["selection"] is not None:
        r["selection"] = _selection(r)
    if r["init_model"] is not None:
        _check(r, "init_model", isinstance(r["init_model"], dict))
        try:
            r["init_model"] = Booster.from_dict(r["init_model"])
        except Exception as exc:
            raise ValueError(f"init_model is not a dpxgb model: {type(exc).__name__}: "
                             f"{exc}") from None
    return r


def _selection(request):
    """The request's selection, checked: (configurations, SelectionSpec)."""
    selection = request["selection"]
    _check(request, "selection", isinstance(selection, dict) and set(selection) == {
        "configurations", "mean_runs", "shape", "holdout"} and isinstance(
            selection["configurations"], list))
    configurations = [from_plain(c, request["n_features"]) for c in selection["configurations"]]
    if not configurations or not same_params(configurations[0], request["params"]):
        raise ValueError("the fit request's selection must have the params as its first "
                         "configuration")
    if request["init_model"] is not None:
        raise ValueError("a selection cannot continue a model (init_model must be None)")
    spec = {k: v for k, v in selection.items() if k != "configurations"}
    if not all((isinstance(v, (int, float)) and not isinstance(v, bool))
               or (k == "mean_runs" and v is None) for k, v in spec.items()):
        raise ValueError(f"the fit request's selection's mean_runs, shape and holdout must be "
                         f"numbers, got {spec!r}")
    check_configurations(configurations)
    return configurations, SelectionSpec(**spec)


def _check(request, field, ok):
    if not ok:
        value = request[field]
        shown = repr(value) if len(repr(value)) <= 80 else f"a {type(value).__name__}"
        raise ValueError(f"the fit request's {field} must be {FIT_REQUEST_FIELDS[field]}; "
                         f"got {shown}")


def _lists(value):
    """``value`` with every tuple a list (Dask's msgpack turns the lists a client sent into
    tuples)."""
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    return value


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _where(placement, sources, workers, prefix):
    """``placement`` and ``sources`` checked: partitions numbered 0..n-1, each on one worker
    of the cluster, each source a replica on another worker of the cluster or the client."""
    if not (isinstance(placement, dict) and placement and all(
            isinstance(w, str) and isinstance(p, list) and all(_is_int(i) for i in p)
            for w, p in placement.items())):
        raise ValueError(f"the fit request's {prefix}placement must be "
                         f"{FIT_REQUEST_FIELDS['placement']}, non-empty")
    outside = sorted(set(placement) - set(workers))
    if outside:
        raise ValueError(f"the fit request's {prefix}placement names workers that are not "
                         f"in the cluster: {outside}")
    indices = sorted(i for p in placement.values() for i in p)
    if indices != list(range(len(indices))):
        raise ValueError(f"the fit request's {prefix}placement must hold partitions 0 to "
                         f"n - 1, each once")
    checked = {}
    for index, source in (sources.items() if isinstance(sources, dict) else [(None, None)]):
        if not (_is_int(index) and 0 <= index < len(indices) and isinstance(source, list)
                and (source == ["client"] or (len(source) == 2 and source[0] == "replica"
                                              and source[1] in workers))):
            raise ValueError(f"the fit request's {prefix}sources must be "
                             f"{FIT_REQUEST_FIELDS['sources']} (a worker of the cluster); "
                             f"got {index!r}: {source!r}")
        checked[index] = tuple(source)
    return placement, checked
