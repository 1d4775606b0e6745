"""S-BDT's individual Rényi filter in a fit (``filter_rounds``): no row exceeds its budget,
every row trains in the regular rounds, the rows' charges agree with a row-by-row
recomputation from their margins, and the fit's ε is the regular rounds' ε."""
import asyncio
import math

import dp_accounting
import numpy as np
import pytest

from dpxgb_dask.inputs import Targets
from dpxgb_dask import train
from dpxgb_dask.boosting.protocol import LocalBackend
from dpxgb_dask.boosting.coordinator import Coordinator
from dpxgb_dask.objective import Objective
from dpxgb_dask.partition.gradients import quantize
from dpxgb_dask.partition.state import PartitionState, load_partition
from dpxgb_dask.params import resolve_params
from dpxgb_dask.boosting.calibration import make_plan
from dpxgb_dask.model.certificate import check_privacy_claims
from dpxgb_dask.privacy.accountants import RDPAccountant
from dpxgb_dask.privacy.filter import subsampled_gaussian_rdp

BOUNDS = np.tile([-4.0, 4.0], (5, 1))
N_REGULAR, N_EXTRA = 8, 24


def _data(objective, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    signal = X[:, 0] - 0.8 * X[:, 1] + 0.5 * X[:, 2] * X[:, 3]
    if objective == "binary:logistic":
        y = (rng.random(n) < 1.0 / (1.0 + np.exp(-2.0 * signal))).astype(float)
    else:
        y = np.clip(signal + 0.3 * rng.normal(size=n), -3, 3)
    y[rng.random(n) < 0.02] = np.nan  # unlabelled rows take part in nothing
    return X, y


def _params(objective, **extra):
    if objective == "reg:squarederror":
        extra.setdefault("label_bounds", (-3.0, 3.0))
    fields = dict(preset="s-bdt", feature_bounds=BOUNDS, epsilon=1.0, n_estimators=N_REGULAR,
                  filter_rounds=N_EXTRA, max_depth=3)
    return resolve_params(objective, **dict(fields, **extra))


def naive_charge(g, u, terms, order, rate):
    """One row's divergence in one tree, row by row with ``dp_accounting``: each mechanism
    a Gaussian of noise multiplier z / r, r the row's share of the worst case."""
    events = []
    for term in terms:
        norm = math.sqrt(term.gradient_coords * g * g + term.denominator_coords * u * u)
        share = ((norm / term.resolution + term.margin)
                 / (term.sensitivity / term.resolution + term.margin))
        events.append(dp_accounting.GaussianDpEvent(1.0 / math.sqrt(term.weight) / share))
    event = dp_accounting.ComposedDpEvent(events)
    if rate < 1.0:
        event = dp_accounting.PoissonSampledDpEvent(rate, event)
    return float(dp_accounting.rdp.RdpAccountant([order]).compose(event)._rdp[0])


def _fit_watching_the_filter(params, X, y, monkeypatch, n_partitions=2):
    """An in-process fit; per tree, the margins and the admitted rows of every partition,
    and each paced call's (allowance, charges of the scaled rows, scaled g, g)."""
    objective = Objective.of(params)
    chunks = np.array_split(np.arange(len(y)), n_partitions)
    states = [load_partition(X[c], Targets(y[c]), objective, i) for i, c in enumerate(chunks)]
    seen, paced = [], []
    original, original_paced = PartitionState._pay_filter, PartitionState._paced
    original_start = PartitionState._start_tree

    def watched(self, rows, eligible, g, denominator, spec):
        admitted = original(self, rows, eligible, g, denominator, spec)
        seen.append((self.index, rows, self.margins[rows].copy(), admitted.copy(), spec,
                     np.array(g), np.array(denominator)))
        return admitted

    def watched_start(self, spec, routed=False):
        first = len(seen)
        original_start(self, spec, routed=routed)
        # the rows enter the sums with exactly the values they were charged for
        for _, rows, _, admitted, _, g, u in seen[first:]:
            # admitted, and in the Poisson sample (at the root, or at the leaf the tree
            # sent ahead routed the row to; ~node outside)
            in_tree = self.positions[rows] >= 0
            assert not (in_tree & ~admitted).any()
            stored = self.gradients[rows]
            assert np.array_equal(stored[in_tree], g[in_tree].astype(np.float32))
            assert not stored[~in_tree].any()
            if not self.row_filter.counts:
                assert np.array_equal(self.hessians[rows][in_tree],
                                      u[in_tree].astype(np.float32))

    def watched_paced(self, rows, labelled, g, h, spec):
        g_paced, h_paced, affordable = original_paced(self, rows, labelled, g, h, spec)
        f = self.row_filter
        allowance = (f.budget - self.filter_spent[rows]) / spec.filter_rounds_left
        u = np.ones_like(h) if f.counts else np.where(labelled, h_paced, 0.0)
        charge = f.charges(np.where(labelled, g_paced, 0.0), u, spec.filter_terms,
                           spec.filter_worst)
        paced.append((labelled & affordable, allowance, charge, g_paced, g))
        return g_paced, h_paced, affordable

    monkeypatch.setattr(PartitionState, "_pay_filter", watched)
    monkeypatch.setattr(PartitionState, "_paced", watched_paced)
    monkeypatch.setattr(PartitionState, "_start_tree", watched_start)
    plan = make_plan(params, X.shape[1])
    coordinator = Coordinator(params, plan, LocalBackend(states), X.shape[1])
    booster = asyncio.run(coordinator.fit())
    return booster, plan, states, seen, paced


@pytest.mark.parametrize("objective,subsample", [("binary:logistic", 1.0),
                                                 ("binary:logistic", 0.5),
                                                 ("reg:squarederror", 0.3)])
def test_no_row_exceeds_its_budget_and_every_row_trains_in_the_regular_rounds(
        objective, subsample, monkeypatch):
    """S-BDT's rule (``filter_spending="exclude"``)."""
    X, y = _data(objective)
    params = _params(objective, subsample=subsample, filter_spending="exclude")
    booster, plan, states, seen, paced = _fit_watching_the_filter(params, X, y, monkeypatch)
    assert not paced
    row_filter = plan.row_filter()
    assert booster.n_trees == N_REGULAR + N_EXTRA
    labelled = [~np.isnan(s.y) for s in states]
    for state in states:
        assert np.all(state.filter_spent <= row_filter.budget)
        assert np.all(state.filter_spent[np.isnan(state.y)] == 0.0)
    # the watched calls, tree by tree (each tree starts every partition's rows once)
    n_calls_per_tree = sum(len(range(0, s.n_rows, 8192)) for s in states)
    assert len(seen) == n_calls_per_tree * (N_REGULAR + N_EXTRA)
    admitted_per_tree = []
    for t in range(N_REGULAR + N_EXTRA):
        calls = seen[t * n_calls_per_tree:(t + 1) * n_calls_per_tree]
        admitted_per_tree.append(sum(int(a.sum()) for _, _, _, a, *_ in calls))
    n_labelled = sum(int(m.sum()) for m in labelled)
    assert admitted_per_tree[:N_REGULAR] == [n_labelled] * N_REGULAR
    # the extra rounds: rows that spent less than the worst case keep training, rows that
    # spent more than 8/32 of it per tree cannot afford the last ones
    assert 0 < admitted_per_tree[-1] < n_labelled


@pytest.mark.parametrize("objective", ["binary:logistic", "reg:squarederror"])
def test_paced_rows_spend_at_most_what_they_have_left_over_the_rounds_left(
        objective, monkeypatch):
    """``filter_spending="pace"``: in every extra round each row's scaled gradient costs
    at most (budget - spent) / rounds left, no row exceeds its budget, and the rows that
    could not afford the tree in full still train, scaled (S-BDT's rule drops them).
    Regression with hessian denominators (h = 1, scaled with the gradient): a count
    costs a row the same in every tree, which leaves little to pace."""
    X, y = _data(objective)
    extra = {"newton": True, "hessian_bound": 1.0} if objective == "reg:squarederror" else {}
    params = _params(objective, subsample=0.5, **extra)
    assert params.filter_spending == "pace"
    booster, plan, states, seen, paced = _fit_watching_the_filter(params, X, y, monkeypatch)
    row_filter = plan.row_filter()
    n_chunks = sum(len(range(0, s.n_rows, 8192)) for s in states)
    assert len(paced) == n_chunks * N_EXTRA  # the extra rounds only
    scaled_rows = 0
    for taking_part, allowance, charge, g_paced, g in paced:
        assert np.all(charge[taking_part] <= allowance[taking_part])
        assert np.all(np.abs(g_paced)[taking_part] <= np.abs(g)[taking_part])
        scaled_rows += int((np.abs(g_paced) < np.abs(g))[taking_part].sum())
    assert scaled_rows > 0
    for state in states:
        assert np.all(state.filter_spent <= row_filter.budget)
    # binary: hessian denominators scale too, and (nearly) every labelled row takes part
    # in every tree; regression: the rows whose residual stayed at g* spent it all
    n_labelled = sum(int((~np.isnan(s.y)).sum()) for s in states)
    taking_part = sum(int(a.sum()) for _, _, _, a, *_ in seen[-n_chunks:])
    assert taking_part >= (0.95 if objective == "binary:logistic" else 0.2) * n_labelled


def test_the_charges_agree_with_a_row_by_row_recomputation(monkeypatch):
    """The slow twin of the whole path: for 40 rows, their gradients at the margins the
    fit had, clipped as the paper clips them, charged with ``dp_accounting`` row by row,
    admitted while within the budget: the same rows enter the same trees and their spent
    divergence matches the workers' (within the charge table's step)."""
    objective = "binary:logistic"
    X, y = _data(objective, n=2000, seed=1)
    params = _params(objective, subsample=0.5, filter_spending="exclude")
    booster, plan, states, seen, _ = _fit_watching_the_filter(params, X, y, monkeypatch,
                                                              n_partitions=1)
    row_filter = plan.row_filter()
    obj = Objective.of(params)
    sample = np.random.default_rng(5).choice(np.flatnonzero(~np.isnan(y)), 40, replace=False)
    spent = np.zeros(sample.size)
    for t, (_, rows, margins, admitted, spec, *_) in enumerate(seen):
        assert rows == slice(0, 2000)
        g, h = obj.gradients(y[sample], margins[sample])
        g = quantize(g, params.gradient_bound)
        h = quantize(h, params.hessian_bound, lower=0.0)
        charges = np.array([naive_charge(a, b, spec.filter_terms, row_filter.order,
                                         params.subsample) for a, b in zip(g, h)])
        charges = np.minimum(charges, spec.filter_worst)
        # the table charges at most one step of ρ more per tree: admission may differ
        # only for a row within that many steps of its budget
        admit = spent + charges <= row_filter.budget
        tolerance = (t + 1) * np.max(np.diff(row_filter.table))
        assert np.array_equal(admit, admitted[sample]) or \
            np.all(np.abs(spent + charges - row_filter.budget)[admit != admitted[sample]]
                   < tolerance)
        spent = np.where(admitted[sample], spent + charges, spent)
    np.testing.assert_allclose(states[0].filter_spent[sample], spent, rtol=2e-2, atol=1e-6)
    assert np.all(states[0].filter_spent[sample] >= spent * (1 - 1e-9))


def test_the_fit_spends_the_regular_rounds_epsilon_and_its_claims_check(client):
    """On the cluster: the ledger holds one filter entry and every tree's releases name it;
    the RDP ε is the target, the extra trees would cost more without the filter, and the
    model's claims recompute."""
    X, y = _data("binary:logistic")
    params = dict(objective="binary:logistic", preset="s-bdt", feature_bounds=BOUNDS,
                  epsilon=1.0, n_estimators=N_REGULAR, filter_rounds=N_EXTRA, max_depth=3)
    model = train(params, X, y, client=client)
    summary = model.ledger
    check_privacy_claims(summary, model.params)
    events = summary["events"]["events"]
    filters = [e for e in events if e["mechanism"] == "renyi_filter"]
    assert len(filters) == 1 and filters[0]["individual_filter"] == "rows"
    trees = {e["tree"] for e in events if e.get("individual_filter") == "rows"
             and e["mechanism"] != "renyi_filter"}
    assert trees == set(range(N_REGULAR + N_EXTRA))
    assert summary["epsilon"] == pytest.approx(1.0, rel=2e-3)
    from dpxgb_dask.privacy.ledger import Ledger

    without = Ledger.from_dict(dict(summary["events"], events=[
        e for e in events if e["mechanism"] != "renyi_filter"]))
    assert RDPAccountant().get_epsilon(without, params.get("delta", 5e-8)) > 1.2


@pytest.mark.parametrize("extra", [
    dict(split_method="noisy_histogram", split_candidates="iterative_hessian"),
    dict(split_method="noisy_histogram", newton=False, subsample=0.3),
    dict(split_candidates="iterative_hessian", subsample=0.5),
])
def test_a_worst_case_row_pays_each_trees_ledger_divergence(extra):
    """Every Gaussian release of a tree is among the filter's terms: the leaves, a
    noisy-histogram split release per depth, the iterative-Hessian sketch of the first
    trees. A row at the clipping bounds pays what the ledger charges the tree (the
    accountant's curve of the tree's events), up to the charge table's step."""
    params = _params("binary:logistic", **extra)
    plan = make_plan(params, 5)
    row_filter = plan.row_filter()
    bounds = plan.row_bounds
    for tree in sorted({0, plan.ih_rounds, plan.n_rounds - 1}):
        terms = plan.filter_terms(tree)
        n_terms = 2 + (params.split_method == "noisy_histogram") + (tree < plan.ih_rounds)
        assert len(terms) == n_terms
        worst = plan.tree_divergence(tree)
        g, u = np.array([bounds.gradient]), np.array([bounds.denominator])
        rho = sum(0.5 * term.weight * float(term.share(g, u)[0]) ** 2 for term in terms)
        assert subsampled_gaussian_rdp(row_filter.order, rho, params.subsample) == \
            pytest.approx(worst, rel=1e-9)
        assert row_filter.charges(g, u, terms, worst)[0] == pytest.approx(worst, rel=1e-12)


@pytest.mark.parametrize("change,match", [
    (dict(accountant="pld"), "accountant='rdp'"),
    (dict(preset="dpboost"), "leaf_method='gaussian'"),
    (dict(preset="dp-xgboost"), "split_method 'random' or 'noisy_histogram'"),
    (dict(leaf_method="gaussian", split_method="noisy_histogram", ensemble_size=10,
          learning_rate=0.5), "ensemble_size=None"),
    (dict(gradient_rule="filter"), "gradient_rule='clip'"),
    (dict(split_method="partially_random"), "split_method 'random' or 'noisy_histogram'"),
    (dict(split_candidates="dp_sketch_per_tree"), "not 'dp_sketch_per_tree'"),
])
def test_combinations_the_filter_does_not_cover_are_refused(change, match):
    kwargs = dict(preset="s-bdt", feature_bounds=BOUNDS, epsilon=1.0, filter_rounds=5)
    kwargs.update(change)
    with pytest.raises(ValueError, match=f"filter_rounds=5 needs .*{match}"):
        resolve_params("binary:logistic", **kwargs)
    with pytest.raises(ValueError, match="filter_rounds=5 needs .*multi:softprob"):
        resolve_params("multi:softprob", num_class=3, preset="s-bdt", feature_bounds=BOUNDS,
                       epsilon=1.0, filter_rounds=5)


def test_a_continued_fit_keeps_each_parts_filter_apart():
    """Warm start of a filtered model with another filtered fit: each part's filter
    covers its own trees (the second is renamed), and the claims recompute."""
    from dpxgb_dask.training import continuation_params, train_in_process

    X, y = _data("binary:logistic")
    model, _ = train_in_process(_params("binary:logistic"), X, y)
    more = _params("binary:logistic", feature_bounds=None, epsilon=0.5)
    continued, _ = train_in_process(continuation_params(more, model, None, 5), X, y,
                                    xgb_model=model)
    assert continued.n_trees == 2 * (N_REGULAR + N_EXTRA)
    events = continued.ledger["events"]["events"]
    names = {e["individual_filter"] for e in events if e["mechanism"] == "renyi_filter"}
    first = N_REGULAR + N_EXTRA
    assert names == {"rows", f"rows@{first}"}
    for e in events:
        if e["mechanism"] != "renyi_filter" and e.get("tree") is not None:
            assert e["individual_filter"] == ("rows" if e["tree"] < first else f"rows@{first}")
    check_privacy_claims(continued.ledger, continued.params)
    # the two parts compose: more than either part, at most their sum
    assert 1.0 < continued.ledger["epsilon"] <= 1.5 * (1 + 2e-3)
