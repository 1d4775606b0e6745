"""The scheduler enforces the plan (issue 30, item 1, first step): a fit request carries
the training parameters as plain data and no plan; the scheduler validates the parameters
and computes the release plan itself, so every clip and every noise follows that one plan
whatever the client computed."""
from dataclasses import replace

import numpy as np
import pytest

import dpxgb_dask.training as training
from dpxgb_dask.boosting.calibration import make_plan
from dpxgb_dask.cluster.scheduler import DPXGBSchedulerPlugin
from dpxgb_dask.cluster.wire import PLUGIN_NAME, unpack_reply
from dpxgb_dask.params import resolve_params
from dpxgb_dask.params.plain import from_plain, to_plain
from dpxgb_dask.privacy.ledger import Ledger
from dpxgb_dask.training import check_bounds_policy

BOUNDS = np.tile([-4.0, 4.0], (4, 1))


def _params(**extra):
    return check_bounds_policy(resolve_params(
        "binary:logistic", epsilon=1.0, n_estimators=4, max_depth=3, feature_bounds=BOUNDS,
        split_method="noisy_histogram", gradient_bound=0.3, **extra), 4)


def test_plain_parameters_round_trip_and_are_validated():
    p = _params(random_state=2**200, categories=[None, None, None, ["a", "b"]],
                budget_shares={"leaf": 2.0})
    back = from_plain(to_plain(p), 4)
    assert to_plain(back) == to_plain(p) and back.random_state == p.random_state
    np.testing.assert_array_equal(back.feature_bounds, p.feature_bounds)
    with pytest.raises(ValueError, match=r"params has unknown fields \['plan'\]"):
        from_plain(dict(to_plain(p), plan="forged"), 4)
    with pytest.raises(ValueError, match="gradient_bound must be in"):
        from_plain(dict(to_plain(p), gradient_bound=-1.0), 4)
    with pytest.raises(ValueError, match="feature_bounds has 4 rows, X has 5 features"):
        from_plain(to_plain(p), 5)


def test_the_noise_follows_the_schedulers_plan_not_the_clients(client, classification_data,
                                                               monkeypatch):
    """A client whose plan is sized for g* = 0.003 while its parameters say g* = 0.3 (the
    workers clip at 0.3: a third of the split noise and a hundredth of the gradients'
    share of it, before) gets the noise of g* = 0.3."""
    X, y, _ = classification_data
    X = X[:, :4]
    honest = _params()
    forged = make_plan(replace(honest, gradient_bound=0.003), 4)
    monkeypatch.setattr(training, "make_plan", lambda params, n_features: forged)
    booster = training.train(honest, X, y, client=client)
    recorded = Ledger.from_dict(booster.ledger["events"]).events
    enforced = make_plan(honest, 4).ledger().events
    assert [(e.purpose, e.sensitivity, e.noise_multiplier) for e in recorded] == \
        [(e.purpose, e.sensitivity, e.noise_multiplier) for e in enforced]
    split = [e for e in recorded if e.purpose == "split"][0]
    forged_split = [e for e in forged.ledger().events if e.purpose == "split"][0]
    assert split.sensitivity > 3 * forged_split.sensitivity  # (the client's plan: 0.20)
    assert booster.params["gradient_bound"] == 0.3


def test_a_request_carrying_a_plan_is_refused(client):
    client.register_plugin(DPXGBSchedulerPlugin(), name=PLUGIN_NAME)
    p = _params()
    workers = sorted(client.scheduler_info()["workers"])
    request = dict(fit_id="forged", capability=b"0" * 32, placement={workers[0]: [0]},
                   sources={}, params=to_plain(p), n_features=4, feature_names=None,
                   client_id=client.id, topic=None, reload_topic=None, with_timings=False,
                   init_model=None, evaluations=[],
                   plan=make_plan(p, 4).ledger().to_dict())
    answer = client.sync(client.scheduler.dpxgb_fit, **request)
    with pytest.raises(ValueError, match=r"unknown fields \['plan'\]"):
        unpack_reply(answer)
