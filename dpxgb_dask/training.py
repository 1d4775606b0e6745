"""Client-side entry point: ``train(params, X, y, client=None) -> Booster``.

The user's process validates the inputs, puts the row partitions on the workers, and asks
the scheduler to run the coordinator (``Client.run_on_scheduler``): the loop over trees and
depths, and every exact aggregate, stay inside the cluster. The user's process receives
progress events (public values) and the final model (DP releases and public values only).
"""
from contextlib import contextmanager
import sys
import uuid
import warnings

from . import data
from .backends import DaskBackend
from .coordinator import Coordinator
from .model import Booster
from .params import TrainParams, check_feature_bounds, check_label_bounds, resolve_params
from .privacy.validation import PrivacyLeakWarning, warn_if_large_epsilon


@contextmanager
def _client_or_embedded(client, n_workers=2, threads_per_worker=1):
    """Yield ``client``, the current default client, or a fresh embedded LocalCluster's."""
    if client is not None:
        yield client
        return
    from distributed import Client, LocalCluster, default_client

    try:
        yield default_client()
        return
    except ValueError:
        pass
    with LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                      processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as embedded:
        yield embedded


class _ProgressPrinter:
    """Shows the coordinator's progress events (tree, depth, ε spent) when ``verbose``."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr

    def __call__(self, event):
        msg = event[1] if isinstance(event, tuple) else event
        kind = msg.get("event")
        if kind == "tree":
            n = msg["n_trees"]
            done = msg["tree"] + 1
            bar = "#" * int(30 * done / n)
            self.stream.write(f"\rdpxgb [{bar:<30}] tree {done}/{n}  "
                              f"eps (basic composition) {msg['epsilon_basic']:.4g}")
            if done == n:
                self.stream.write("\n")
            self.stream.flush()
        elif kind == "done":
            self.stream.write(f"dpxgb: done, epsilon spent {msg['epsilon']:.4g}\n")
            self.stream.flush()


async def _coordinate(dataset_name, params, n_features, feature_names, topic, with_timings,
                      dask_scheduler=None):
    """Run one fit's coordinator inside the scheduler process (``run_on_scheduler``).

    Returns
    -------
    dict
        ``{"model": Booster.to_dict()}``: public and DP values only; plus ``"timings"``
        only when asked (wall-clock times grow with the rows of each node: a coarse side
        channel, which is why they are not sent by default).
    """
    from distributed import Client

    async with Client(dask_scheduler.address, asynchronous=True,
                      name="dpxgb-coordinator") as client:
        parts = await client.get_dataset(dataset_name)
        backend = DaskBackend(client, parts)
        await backend.locate()

        def publish(event):
            dask_scheduler.log_event(topic, event)

        coordinator = Coordinator(params, backend, n_features, feature_names, publish)
        booster = await coordinator.fit(parts)
        result = {"model": booster.to_dict()}
        if with_timings:
            result["timings"] = dict(coordinator.timings, bytes_gathered=backend.bytes_gathered)
        return result


def check_bounds_policy(params, n_features):
    """Validate bounds against the data's width and apply the bounds policy.

    Feature bounds must be public (``feature_bounds``), estimated with an explicit budget
    (``bounds_epsilon``), or forced from the data with ``feature_bounds="data"``, which
    warns with a :class:`PrivacyLeakWarning`.

    Returns
    -------
    TrainParams
        With ``feature_bounds`` as a float array when given.
    """
    from dataclasses import replace

    bounds = params.feature_bounds
    if isinstance(bounds, str):
        if bounds != "data":
            raise ValueError(f"feature_bounds must be an array of shape (n_features, 2) or "
                             f"'data', got {bounds!r}")
        warnings.warn("feature_bounds='data' reads the exact minimum and maximum of every "
                      "feature and stores them in the model: this is not differentially "
                      "private. Give public bounds or bounds_epsilon instead.",
                      PrivacyLeakWarning, stacklevel=3)
    elif bounds is not None:
        params = replace(params, feature_bounds=check_feature_bounds(bounds, n_features))
    elif params.bounds_epsilon is None:
        raise ValueError("feature_bounds is required: give public per-feature (lo, hi) bounds, "
                         "or bounds_epsilon to spend on a DP estimate of them")
    if params.objective == "reg:squarederror":
        if params.label_bounds is None:
            raise ValueError("label_bounds is required for regression: give the public "
                             "(lo, hi) range of the label")
        params = replace(params, label_bounds=check_label_bounds(params.label_bounds))
    return params


def train(params, X, y, client=None, verbose=False, n_partitions=None, return_timings=False):
    """Train a DP gradient-boosted model on a Dask cluster.

    Parameters
    ----------
    params : dict or TrainParams
        ``objective`` ("binary:logistic" or "reg:squarederror"), optional ``preset`` and any
        field of :class:`dpxgb_dask.params.TrainParams` (e.g. ``epsilon``,
        ``feature_bounds``, ``n_estimators``).
    X : ndarray, pandas.DataFrame, dask.array.Array or dask.dataframe.DataFrame
        Shape (n_rows, n_features), numeric; NaN marks missing values.
    y : array-like or dask collection, shape (n_rows,)
    client : distributed.Client, optional
        Default: the current default client, else an embedded LocalCluster (2 workers)
        that this call starts and closes.
    verbose : bool
        Show a progress bar of the coordinator's events.
    n_partitions : int, optional
        For NumPy / pandas inputs: row chunks to scatter (default one per worker).
    return_timings : bool
        Also return the coordinator's timings (per tree, per level, bytes gathered), for
        benchmarks: wall-clock times depend on node sizes, so they are not DP.

    Returns
    -------
    Booster
        (and a dict of timings when ``return_timings``)
    """
    if isinstance(params, TrainParams):
        p = params
    else:
        given = dict(params)
        objective = given.pop("objective", "binary:logistic")
        preset = given.pop("preset", None)
        p = resolve_params(objective, preset=preset, **given)
    feature_names, n_features = data.describe_features(X)
    p = check_bounds_policy(p, n_features)
    if p.epsilon is not None:
        warn_if_large_epsilon(p.epsilon, stacklevel=3)

    with _client_or_embedded(client) as c:
        parts = data.to_partitions(c, X, y, p.objective, p.label_bounds, n_partitions)
        name = f"dpxgb-data-{uuid.uuid4().hex}"
        topic = f"dpxgb-progress-{uuid.uuid4().hex}"
        c.publish_dataset(parts, name=name)
        if verbose:
            c.subscribe_topic(topic, _ProgressPrinter())
        try:
            result = c.run_on_scheduler(_coordinate, name, p, n_features, feature_names, topic,
                                        return_timings)
        finally:
            if verbose:
                c.unsubscribe_topic(topic)
            c.unpublish_dataset(name)
            c.cancel(parts)
    booster = Booster.from_dict(result["model"])
    if p.epsilon is None:
        # dp_epsilon_per_tree: the total is known only now.
        warn_if_large_epsilon(booster.ledger["epsilon"], stacklevel=3)
    if return_timings:
        return booster, result["timings"]
    return booster
