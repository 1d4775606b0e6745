"""No dpxgb handler unpickles what it receives (issue 30, item 1): fit requests are plain
keyword arguments checked field by field, and every other dpxgb message is
:mod:`~dpxgb_dask.cluster.codec` bytes, decoded into a fixed list of types.

A pickle whose loading would write a file is sent in every field of every dpxgb handler
(the scheduler's ``dpxgb_fit``, ``dpxgb_budget``, ``dpxgb_reloaded``, the workers'
``dpxgb_call``, whose payload is its action): each call is refused, and the file never appears.
"""
import os
import pathlib
import pickle
import warnings

import msgpack
import numpy as np
import pytest
from distributed.protocol import to_serialize

from dpxgb_dask.partition.messages import Prepare, Round, TreeEnd, TreeStart
from dpxgb_dask.cluster import codec
from dpxgb_dask.cluster.actions import LoadRows
from dpxgb_dask.cluster.backend import WorkerLost
from dpxgb_dask.cluster.fit_request import FIT_REQUEST_FIELDS, FitRequest
from dpxgb_dask.cluster.reduction import PeerLost
from dpxgb_dask.cluster.scheduler import DPXGBSchedulerPlugin
from dpxgb_dask.cluster.wire import PLUGIN_NAME, unpack_reply
from dpxgb_dask.cluster.worker import DPXGBWorkerPlugin
from dpxgb_dask.objective import Objective
from dpxgb_dask.params import resolve_params
from dpxgb_dask.privacy.validation import BudgetError

class _WritesAFile:
    """Unpickling this writes ``path``: the proof that something was unpickled."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return pathlib.Path.write_text, (pathlib.Path(self.path), "unpickled")


@pytest.fixture
def bomb(tmp_path):
    path = tmp_path / "unpickled.txt"
    data = pickle.dumps(_WritesAFile(str(path)))
    pickle.loads(data)  # the pickle works: loading it writes the file ...
    assert path.read_text() == "unpickled"
    path.unlink()  # ... which the tests then expect never to appear again
    return path, data


def _plugins(client):
    client.register_plugin(DPXGBWorkerPlugin(), name=PLUGIN_NAME)
    client.register_plugin(DPXGBSchedulerPlugin(), name=PLUGIN_NAME)


def _valid_request(client):
    workers = sorted(client.scheduler_info()["workers"])
    params = resolve_params("binary:logistic", epsilon=1.0, n_estimators=2, max_depth=2,
                            feature_bounds=np.tile([0.0, 1.0], (3, 1)))
    return FitRequest(fit_id="f" * 32, capability=os.urandom(32), placement={workers[0]: [0]},
                      sources={}, params=params, n_features=3, feature_names=None,
                      client_id=client.id, topic=None, reload_topic=None,
                      with_timings=False).to_wire()


def _refused(answer):
    with pytest.raises(Exception) as caught:
        unpack_reply(answer)
    return caught.value


def test_every_scheduler_handler_refuses_a_pickle_in_every_field(client, bomb):
    path, data = bomb
    _plugins(client)
    request = _valid_request(client)
    for field in FIT_REQUEST_FIELDS:
        for value in (data, to_serialize(_WritesAFile(str(path)))):
            answer = client.sync(client.scheduler.dpxgb_fit, **dict(request, **{field: value}))
            error = _refused(answer)
            assert isinstance(error, ValueError) and field in str(error), (field, error)
    answer = client.sync(client.scheduler.dpxgb_fit, payload=data)  # the old, pickled form
    assert "unknown fields ['payload']" in str(_refused(answer))
    for field in ("name", "epsilon", "delta", "accountant", "fit_id", "events"):
        for action in ("create", "status", "admit"):
            answer = client.sync(client.scheduler.dpxgb_budget, action=action,
                                 **{field: data})
            error = _refused(answer)
            assert isinstance(error, ValueError) and field in str(error), (field, error)
    answer = client.sync(client.scheduler.dpxgb_budget, action=data)
    assert "action must be one of" in str(_refused(answer))
    for field in ("fit", "capability", "index", "address", "error"):
        answer = client.sync(client.scheduler.dpxgb_reloaded,
                             **dict(dict(fit="f", capability=b"0" * 32, index=0,
                                         address=None, error=None), **{field: data}))
        assert isinstance(_refused(answer), KeyError)
    assert not path.exists()


def test_every_worker_action_refuses_a_pickle(client, bomb):
    path, data = bomb
    _plugins(client)
    workers = sorted(client.scheduler_info()["workers"])

    async def call(worker, **message):
        return await client.rpc(worker).dpxgb_call(**message)

    for worker in workers:
        # the action is the payload's type: a pickle is no action, whatever it would be
        answer = client.sync(call, worker, fit="f" * 32, capability=os.urandom(32),
                             payload=data)
        error = _refused(answer)
        assert isinstance(error, codec.MessageError), error
        assert "not a dpxgb message" in str(error)
        # a protocol type that is no action, and a plain tuple (the old positional form)
        for payload in (codec.encode(Prepare(None, None, 0, 0.0, {0: 0})),
                        codec.encode(("round", 1))):
            answer = client.sync(call, worker, fit="f" * 32, capability=os.urandom(32),
                                 payload=payload)
            assert "a dpxgb_call carries one of the actions" in str(_refused(answer))
        # a well-formed load whose rows are a pickle's bytes, not an array
        answer = client.sync(call, worker, fit="f" * 32, capability=os.urandom(32),
                             payload=codec.encode(
                                 LoadRows(0, Objective("binary:logistic"), 1, False)),
                             rows=data, labels=data)
        assert "rows must be an array of numbers, got bytes" in str(_refused(answer))
        # and whose targets' weights or margins are (the labels' array is well-formed)
        for field in ("weights", "margins"):
            answer = client.sync(call, worker, fit="f" * 32, capability=os.urandom(32),
                                 payload=codec.encode(
                                     LoadRows(0, Objective("binary:logistic"), 1, False)),
                                 rows=np.zeros((2, 1)), labels=np.zeros(2), **{field: data})
            assert f"{field} must be an array of numbers, got bytes" in str(_refused(answer))
    assert not path.exists()


def test_a_fit_still_trains_and_its_messages_are_plain(client, classification_data):
    """The whole fit runs on the plain messages (the trainer's tests check the models)."""
    from dpxgb_dask import DPXGBClassifier

    X, y, _ = classification_data
    model = DPXGBClassifier(n_estimators=3, max_depth=2, classes=[0, 1], client=client,
                            feature_bounds=np.tile([-5.0, 5.0], (X.shape[1], 1)),
                            random_state=2**100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (no budget, bounds: not this test's subject)
        model.fit(X[:2000], y[:2000])
    assert model.get_booster().n_trees == 3


def test_the_codec_round_trips_the_protocol_and_refuses_everything_else():
    start = TreeStart(sample_key=2**127 + 5, sample_interval=(0.0, 2.0), gradient_bound=1.0,
                      gradient_rule="clip", hessian_bound=1.0)
    end = TreeEnd(splits=(np.arange(3), np.ones(3, bool)), values=np.linspace(0, 1, 7))
    histogram = np.zeros(4, dtype=[("g", "<f8"), ("h", "<f8"), ("count", "<u4")])
    histogram["g"] = [1, 2, 3, 4]
    message = {
        "round": Round(seq=3, end_tree=end, start_tree=start, histogram_nodes=np.arange(2)),
        "prepare": Prepare(feature_bounds=np.zeros((2, 2)), cuts=[np.arange(3.0)] * 2,
                           missing_bin=4, base_score=0.5, row_offsets={0: 0, 1: 100}),
        "load": (0, np.ones((3, 2), np.float32), np.zeros(3), Objective("binary:logistic"),
                 1, False),
        "histogram": histogram, "empty": np.zeros((0, 3)),
        7: [None, True, 1.5, "s", b"b", 2**70, np.int64(3)],
    }
    back = codec.decode(codec.encode(message))
    assert back["round"].start_tree == start and back["round"].seq == 3
    np.testing.assert_array_equal(back["round"].end_tree.values, end.values)
    assert isinstance(back["round"].end_tree.splits, tuple)
    assert back["prepare"].row_offsets == {0: 0, 1: 100}
    assert back["load"][3] == Objective("binary:logistic")
    assert back["load"][1].dtype == np.float32 and back["load"][1].flags.writeable
    assert back["histogram"].dtype == histogram.dtype and back["histogram"].flags.writeable
    assert not np.shares_memory(back["histogram"], histogram)
    np.testing.assert_array_equal(back["histogram"]["g"], histogram["g"])
    assert back["empty"].shape == (0, 3) and back["empty"].flags.writeable
    assert back[7] == [None, True, 1.5, "s", b"b", 2**70, 3]

    for error in (PeerLost("lost", "tcp://a:1"), WorkerLost("gone", "tcp://b:2"),
                  BudgetError("over"), KeyError(3), codec.MessageError("m")):
        again = codec.decode(codec.encode(error))
        assert type(again) is type(error) and again.args == error.args
        assert getattr(again, "address", None) == getattr(error, "address", None)

    class Unlisted(Exception):
        pass

    assert type(codec.decode(codec.encode(Unlisted("x")))) is RuntimeError

    with pytest.raises(TypeError, match="dtype object"):
        codec.encode(np.array(["a"], dtype=object))
    with pytest.raises(TypeError, match="cannot send a"):
        codec.encode(_WritesAFile("x"))
    forged = msgpack.packb({codec._TAG: ["dataclass", "_WritesAFile", {"path": "x"}]})
    with pytest.raises(codec.MessageError, match="may not hold a '_WritesAFile'"):
        codec.decode(forged)
    forged = msgpack.packb({codec._TAG: ["array", "|O", [1], b"\0" * 8]})
    with pytest.raises(codec.MessageError, match="dtype object"):
        codec.decode(forged)
    forged = msgpack.packb({codec._TAG: ["array", [["a"], ["|O"], [0], 8], [1], b"\0" * 8]})
    with pytest.raises(codec.MessageError):
        codec.decode(forged)
    forged = msgpack.packb({codec._TAG: ["pickle", b"\x80\x05"]})
    with pytest.raises(codec.MessageError, match="unknown kind 'pickle'"):
        codec.decode(forged)
    with pytest.raises(codec.MessageError, match="must be bytes"):
        codec.decode(to_serialize(1))


@pytest.mark.parametrize("field, value, says", [
    ("fit_id", "../x", "fit_id"),
    ("fit_id", 3, "fit_id"),
    ("capability", b"short", "capability"),
    ("capability", "0" * 32, "capability"),
    ("placement", {}, "placement"),
    ("placement", {"tcp://10.9.9.9:1": [0]}, "not in the cluster"),
    ("placement", "WORKER:[0, 0]", "partitions 0 to n - 1"),
    ("sources", {0: ["blocks", "graph"]}, "sources"),
    ("sources", {5: ["client"]}, "sources"),
    ("sources", {0: ["replica", "tcp://10.9.9.9:1"]}, "sources"),
    ("n_features", True, "n_features"),
    ("n_features", 0, "n_features"),
    ("feature_names", ["a"], "feature_names"),
    ("client_id", "", "client_id"),
    ("topic", "other-topic", "topic"),
    ("reload_topic", "dpxgb-reload-x", "reload_topic"),
    ("with_timings", "yes", "with_timings"),
    ("init_model", {"format": "pickle"}, "init_model is not a dpxgb model"),
    ("evaluations", [["other-eval0", {}, {}]], "evaluations"),
    ("params", {"plan": "forged"}, "unknown fields ['plan']"),
    ("params", "binary:logistic", "params must be a dict"),
])
def test_a_bad_fit_request_is_refused_naming_its_field(client, field, value, says):
    _plugins(client)
    request = _valid_request(client)
    worker = next(iter(request["placement"]))
    if value == "WORKER:[0, 0]":
        value = {worker: [0, 0]}
    with pytest.raises(ValueError, match=repr(says)[1:-1].replace("[", r"\[")
                       .replace("]", r"\]").replace("(", r"\(").replace(")", r"\)")):
        FitRequest.from_wire(dict(request, **{field: value}), [worker])
    answer = client.sync(client.scheduler.dpxgb_fit, **dict(request, **{field: value}))
    assert isinstance(_refused(answer), ValueError)

    def running(dask_scheduler=None):
        return dict(dask_scheduler.plugins[PLUGIN_NAME].running)

    assert client.run_on_scheduler(running) == {}
