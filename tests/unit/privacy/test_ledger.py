"""The ledger: validation of events, explicit composition, explicit replays, JSON, budget."""

import json

import numpy as np
import pytest

from dpxgb_dask.privacy import (
    BasicAccountant,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    Ledger,
    NoiseSource,
    PrivacyEvent,
)

SEED = 2**128 + 5


def sample_ledger():
    ledger = Ledger()
    ledger.record("sketch", "laplace", 8.0, epsilon=0.3, parallel_over="bins", n_parallel=64, count=1)
    for t in range(2):
        for d in range(3):
            ledger.record("split", tree=t, depth=d, sampling_rate=0.5, parallel_over=("nodes",),
                          n_parallel=2**d, **ExponentialMechanism(3.0, 0.05).ledger_fields())
        ledger.record("leaf", tree=t, sampling_rate=0.5, parallel_over="leaves", n_parallel=8,
                      **LaplaceMechanism(1.0, 0.2).ledger_fields())
        ledger.record("leaf/hess", "gaussian", 0.25, sigma=1.0, tree=t, sampling_rate=0.5)
    ledger.record("init_score", "gaussian", 1.0, noise_multiplier=10.0, note="S-BDT DP initial score")
    return ledger


def test_record_derives_fields():
    ledger = sample_ledger()
    assert len(ledger) == 1 + 2 * 5 + 1
    split = ledger[1]
    assert split.subsample == "tree:0" and split.parallel_over == ("nodes",) and split.n_parallel == 1
    leaf = ledger[4]
    assert leaf.noise_scale == pytest.approx(LaplaceMechanism(1.0, 0.2).sensitivity / 0.2)
    assert leaf.resolution == LaplaceMechanism(1.0, 0.2).resolution
    hess = ledger[5]
    assert hess.noise_multiplier == 4.0 and hess.noise_scale == 1.0
    assert ledger[0].subsample is None


def test_noise_scale_for_laplace():
    e = Ledger.make_event("leaf", "laplace", 2.0, noise_scale=4.0)
    assert e.epsilon == 0.5


def test_gaussian_mechanism_fields_round_trip():
    mech = GaussianMechanism(2.0, sigma=5.0)
    e = Ledger().record("leaf", **mech.ledger_fields())
    assert e.noise_scale == pytest.approx(5.0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(mechanism="median"), "mechanism"),
        (dict(epsilon=None), "needs epsilon"),
        (dict(epsilon=-1.0), "epsilon"),
        (dict(sensitivity=0.0), "sensitivity"),
        (dict(sampling_rate=0.0), "sampling_rate"),
        (dict(sampling_rate=0.5), "needs tree or subsample"),
        (dict(subsample="s1"), "only meaningful"),
        (dict(parallel_over="features"), "not a disjoint axis"),
        (dict(parallel_over="classes"), "not a disjoint axis"),
        (dict(parallel_over="rows"), "must be in"),
        (dict(n_parallel=4), "needs parallel_over"),
        (dict(count=0), "count"),
        (dict(disjoint_group="ensemble0"), "go together"),
        (dict(tree=-1), "tree"),
        (dict(purpose=""), "purpose"),
    ],
)
def test_invalid_events_are_refused(kwargs, match):
    args = dict(purpose="leaf", mechanism="laplace", sensitivity=1.0, epsilon=1.0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        Ledger.make_event(**args)


def test_gaussian_event_needs_noise_multiplier():
    with pytest.raises(ValueError, match="noise_multiplier"):
        Ledger.make_event("leaf", "gaussian", 1.0, epsilon=1.0)
    with pytest.raises(ValueError, match="not both"):
        Ledger.make_event("leaf", "gaussian", 1.0, noise_multiplier=1.0, sigma=2.0)


def test_every_record_counts():
    # reviewer's repro a8.py: three releases with identical events (stream indices 0, 1 and
    # rng=None) were recorded as one, eps 1 instead of 3
    src = NoiseSource(SEED)
    mech = LaplaceMechanism(1.0, 1.0)
    ledger = Ledger()
    x = np.array([5.0])
    for rng in (src.stream(purpose="leaf", tree=0, index=0), src.stream(purpose="leaf", tree=0, index=1), None):
        mech.release(x, rng)
        ledger.record("leaf", tree=0, **mech.ledger_fields())
    assert len(ledger) == 3
    assert BasicAccountant().get_epsilon(ledger, 0.0) == pytest.approx(3.0)
    # a different event with the same key counts too
    ledger.record("leaf", "laplace", 1.0, epsilon=0.5, tree=0)
    assert BasicAccountant().get_epsilon(ledger, 0.0) == pytest.approx(3.5)
    # several events with one key survive serialisation
    assert Ledger.from_json(ledger.to_json()).events == ledger.events


def test_replay_needs_identical_event_with_same_stream():
    src = NoiseSource(SEED)
    mech = LaplaceMechanism(1.0, 1.0)
    rng = src.stream(purpose="leaf", tree=0)
    first = mech.release(np.array([2.0]), rng)
    ledger = Ledger()
    a = ledger.record("leaf", tree=0, **mech.ledger_fields(stream=rng))
    assert a.stream == rng.stream_id
    # recomputing the release after a failure: same key, same noise, not counted again
    again = src.stream(purpose="leaf", tree=0, replay=True)
    np.testing.assert_array_equal(mech.release(np.array([2.0]), again), first)
    b = ledger.record("leaf", tree=0, replay=True, **mech.ledger_fields(stream=again))
    assert b is a and len(ledger) == 1
    # a replay claim with another stream, another event, or no stream is refused
    other = src.stream(purpose="leaf", tree=0, index=1)
    with pytest.raises(ValueError, match="no identical release"):
        ledger.record("leaf", tree=0, replay=True, **mech.ledger_fields(stream=other))
    with pytest.raises(ValueError, match="no identical release"):
        ledger.record("leaf", tree=1, replay=True, **mech.ledger_fields(stream=again))
    with pytest.raises(ValueError, match="needs the stream identifier"):
        ledger.record("leaf", tree=0, replay=True, **mech.ledger_fields())
    assert len(ledger) == 1
    # several streams of one release are joined
    e = Ledger().record("split", "gaussian", 1.0, noise_multiplier=2.0, stream=[rng, other])
    assert e.stream == f"{rng.stream_id},{other.stream_id}"
    with pytest.raises(ValueError, match="stream"):
        Ledger().record("split", "gaussian", 1.0, noise_multiplier=2.0, stream=3)


def test_replay_adds_nothing_and_a_new_release_counts():
    ledger = Ledger()
    ledger.record("leaf", "laplace", 1.0, epsilon=1.0, tree=0, stream="s0")
    assert ledger.record("leaf", "laplace", 1.0, epsilon=1.0, tree=0, stream="s0", replay=True) is ledger[0]
    assert len(ledger) == 1
    ledger.record("leaf", "laplace", 1.0, epsilon=1.0, tree=0, stream="s0")
    assert len(ledger) == 2
    assert BasicAccountant().get_epsilon(ledger, 0.0) == pytest.approx(2.0)


def test_json_round_trip_and_table():
    ledger = sample_ledger()
    text = ledger.to_json(indent=2)
    data = json.loads(text)
    assert data["format"] == "dpxgb_dask.privacy.ledger" and data["neighbouring"] == "add_or_remove_one"
    again = Ledger.from_json(text)
    assert again.events == ledger.events
    assert again.to_json(indent=2) == text
    rows = ledger.table()
    assert len(rows) == len(ledger) and rows[0]["index"] == 0
    assert {"tree", "depth", "purpose", "mechanism", "sensitivity", "epsilon", "noise_multiplier",
            "noise_scale", "sampling_rate", "parallel_over", "n_parallel", "count"} <= set(rows[0])
    assert json.dumps(rows)  # plain JSON types only


def test_from_json_rejects_other_formats():
    with pytest.raises(ValueError, match="format"):
        Ledger.from_json('{"format": "other"}')
    bad = json.loads(sample_ledger().to_json())
    bad["version"] = 99
    with pytest.raises(ValueError, match="version"):
        Ledger.from_dict(bad)
    bad = json.loads(sample_ledger().to_json())
    bad["events"][0]["unknown"] = 1
    with pytest.raises(ValueError, match="unknown event fields"):
        Ledger.from_dict(bad)


def test_event_from_dict_round_trip():
    e = PrivacyEvent("leaf", "laplace", 1.0, epsilon=0.5, tree=3, sampling_rate=0.2,
                     parallel_over=("leaves",), n_parallel=16, disjoint_group="ens", disjoint_part=2)
    assert PrivacyEvent.from_dict(e.to_dict()) == e


def test_version_1_ledgers_are_read():
    data = json.loads(sample_ledger().to_json())
    assert data["version"] == 2
    data["version"] = 1
    for event in data["events"]:
        del event["stream"]
    assert Ledger.from_dict(data).events == sample_ledger().events


def test_a_ledger_serialises_without_a_budget():
    # the format's budget fields are written empty: budgets live in privacy/budget.py
    data = json.loads(sample_ledger().to_json())
    assert data["budget_epsilon"] is None and data["budget_delta"] == 0.0
    assert Ledger.from_dict(dict(data, budget_epsilon=3.0)).events == sample_ledger().events


def test_ledger_rejects_non_events():
    with pytest.raises(TypeError):
        Ledger().add({"purpose": "x"})
