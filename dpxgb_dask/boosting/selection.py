"""Private selection among a few configurations of a fit: its plan and its runs.

A user who does not know whether their data is additive or full of interactions would
otherwise tune on the private rows with no accounting at all. A selection instead runs,
inside the cluster, Papernot & Steinke's private hyperparameter selection
(:mod:`~dpxgb_dask.privacy.selection`):

1. a secret fraction p of the rows is held out of every tree (each row by its own uniform
   number under a secret key, :func:`~dpxgb_dask.partition.rows.held_out`);
2. the number of runs K is drawn from the truncated negative binomial distribution, in
   secret;
3. each run draws one configuration uniformly (in secret), grows its trees on the other
   rows with ε_c (its fit-level releases, the DP bounds, initial score or sketch, read
   every row: all are in its ledger), and releases its score: the DP loss of its model on
   the held-out rows (the release "eval" of :mod:`~dpxgb_dask.boosting.scores`);
4. only the run with the best released score leaves the cluster: its model, its
   configuration's index, its score and its warnings. K, the other runs, their scores and
   their warnings never do.

The model's ledger holds each configuration's *planned* releases (one run each, tagged
with the configuration) and the selection's entry; the RDP accountant composes them
(Theorem 2 of Papernot & Steinke), and ε_c is calibrated so that this total is the fit's
ε (:class:`SelectionPlan`). The other accountants certify nothing for a selection, so a
selection is accounted with ``"rdp"``.

What a selection costs: with the three configurations of ``select="shapes"`` and the
default E[K] = 6, η = 1, each run trains with ε_c = 0.52 ε at ε = 1 and 0.57 ε at ε = 4
(Gaussian releases: their RDP curves compose gently), on 80% of the rows. Its wall time
is about E[K] fits. That time, like every timing, is no DP release: whoever watches the
cluster (or asks for ``return_timings``) can estimate K, which the theorem assumes secret.
"""
from dataclasses import dataclass, fields, replace
import math

import numpy as np

from ..model.certificate import privacy_summary
from ..objective import metric_names
from ..params import with_overrides
from ..params.defaults import SELECTION_FAMILIES as FAMILIES
from ..privacy.accountants import RDPAccountant
from ..privacy.ledger import Ledger
from ..privacy.selection import SelectionCount
from ..privacy.validation import BudgetError
from .coordinator import Coordinator
from .calibration import make_plan
from .streams import FitStreams

#: The name of a fit's selection in its ledger (a budget prefixes it with the fit's id).
SELECTION_NAME = "selection"

#: Parameters every configuration of a selection shares with the first: the data's public
#: facts, the budget and how it is accounted.
SHARED_PARAMS = ("objective", "num_class", "epsilon", "delta", "budget", "feature_bounds",
                 "label_bounds", "categories", "weight_bound", "n_threads",
                 "random_state", "reproducible_noise")

#: Relative precision of the calibration of ε_c (the total stays at or below ε).
CALIBRATION_RTOL = 1e-3

#: A selection whose runs would get less than ε / MAX_COST_FACTOR each is refused.
MAX_COST_FACTOR = 30.0

#: The most configurations and the largest E[K] a selection takes (a request beyond them
#: would hold the scheduler for hours).
MAX_CONFIGURATIONS, MAX_MEAN_RUNS = 16, 100.0

_NO_EVALS = ("a selection scores its runs on its own held-out rows: give no private "
             "evaluation sets (evals, eval_set)")


@dataclass(frozen=True)
class SelectionSpec:
    """How a selection runs (public).

    Parameters
    ----------
    mean_runs : float, optional
        E[K] >= 1, the expected number of runs; default 2 per configuration: with 3
        configurations, the runs then miss a given one with probability 0.25 and two given
        ones with probability 0.077; with E[K] = 3,
        whose runs get 10% more ε each, 0.40 and 0.14.
    shape : float, default 1.0
        η > 0 of the truncated negative binomial (1: geometric, Liu & Talwar).
    holdout : float, default 0.2
        Fraction p in (0, 1) of the rows held out of the trees to score the runs.
    """

    mean_runs: float = None
    shape: float = 1.0
    holdout: float = 0.2

    def __post_init__(self):
        SelectionCount(1.0 if self.mean_runs is None else self.mean_runs, self.shape)
        if self.mean_runs is not None and self.mean_runs > MAX_MEAN_RUNS:
            raise ValueError(f"mean_runs must be at most {MAX_MEAN_RUNS:g}, got "
                             f"{self.mean_runs!r}")
        if not (isinstance(self.holdout, (int, float)) and 0.0 < self.holdout < 1.0):
            raise ValueError(f"holdout must be a fraction in (0, 1), got {self.holdout!r}")

    def to_dict(self):
        return {"mean_runs": None if self.mean_runs is None else float(self.mean_runs),
                "shape": float(self.shape),
                "holdout": float(self.holdout)}


def resolve_selection(select, params, n_features, resolve=None, forced=None):
    """The configurations and spec of ``train(select=)``.

    Parameters
    ----------
    select : str or dict
        A name in :data:`~dpxgb_dask.params.defaults.SELECTION_FAMILIES`, or ``{"configurations": <a name or a list of dicts of
        parameters>, "mean_runs": ..., "shape": ..., "holdout": ...}`` (the last three
        optional, :class:`SelectionSpec`).
    params : TrainParams
        The fit's parameters (its data's public facts, its ε and budget).
    n_features : int
    resolve : callable, optional
        ``resolve(overrides, epsilon)``: the user's parameters with ``overrides``,
        resolved at ``epsilon`` (the default's ε schedule and a split method's own
        defaults then fit the configuration). None: ``overrides`` replace fields of
        ``params``.
    forced : dict, optional
        Fields every configuration takes after its resolution (the fit's own: no initial
        score where every row has a base margin).

    Returns
    -------
    (list of TrainParams, SelectionSpec)
        Each configuration resolved at the ε of one run (ε_c of a first calibration) and
        then given the selection's ε and ``params``' shared fields.
    """
    if isinstance(select, str):
        select = {"configurations": select}
    if not isinstance(select, dict) or "configurations" not in select:
        raise ValueError(f"select must be one of {sorted(FAMILIES)} or a dict with "
                         f"'configurations', got {select!r}")
    spec = SelectionSpec(**{k: v for k, v in select.items() if k != "configurations"})
    overrides = select["configurations"]
    if isinstance(overrides, str):
        if overrides not in FAMILIES:
            raise ValueError(f"select's configurations must be one of {sorted(FAMILIES)} or "
                             f"a list of dicts of parameters, got {overrides!r}")
        overrides = FAMILIES[overrides]
    if not isinstance(overrides, (list, tuple)) or not all(isinstance(o, dict)
                                                           for o in overrides):
        raise ValueError("select's configurations must be a list of dicts of parameters")
    if params.private_eval_sets:
        raise ValueError(_NO_EVALS)
    if params.cross_silo is not None:
        raise ValueError(f"select cannot run with cross_silo={params.cross_silo!r}: give "
                         "cross_silo=None, or no select")
    fixed = sorted({k for o in overrides for k in o} & set(SHARED_PARAMS))
    if fixed:
        raise ValueError(f"select's configurations may not set {fixed}: every configuration "
                         f"shares the fit's {', '.join(SHARED_PARAMS)}")
    shared = {name: getattr(params, name) for name in SHARED_PARAMS}

    def configurations(epsilon):
        out = []
        for o in overrides:
            c = with_overrides(params, **o) if resolve is None else resolve(o, epsilon)
            out.append(with_overrides(c, **shared, **(forced or {})))
        check_configurations(out)
        return out

    run_epsilon = SelectionPlan(configurations(params.epsilon), n_features, spec).candidate_epsilon
    return configurations(run_epsilon), spec


def check_configurations(configurations):
    """Refuse configurations a selection cannot run, naming the parameter.

    Parameters
    ----------
    configurations : sequence of TrainParams
        Validated; at least two.

    Raises
    ------
    ValueError
    """
    if not 2 <= len(configurations) <= MAX_CONFIGURATIONS:
        raise ValueError(f"a selection needs 2 to {MAX_CONFIGURATIONS} configurations, got "
                         f"{len(configurations)}")
    first = configurations[0]
    if any(c.cross_silo is not None for c in configurations):
        # (each run's score reads exact held-out loss sums, and a run's silos draw their
        # noise keys once per fit)
        raise ValueError("select cannot run with cross_silo: every configuration must have "
                         "cross_silo=None")
    if not first.delta > 0:
        raise ValueError("a selection is accounted by RDP alone, which needs delta > 0")
    for i, c in enumerate(configurations):
        for name in SHARED_PARAMS:
            if not _same(getattr(c, name), getattr(first, name)):
                raise ValueError(f"configuration {i} of the selection has {name}="
                                 f"{getattr(c, name)!r}, configuration 0 {getattr(first, name)!r}: "
                                 f"every configuration shares {', '.join(SHARED_PARAMS)}")
        if c.epsilon is None:
            raise ValueError("a selection needs epsilon (the selection's total), not "
                             "dp_epsilon_per_tree")
        if c.private_eval_sets:
            raise ValueError(_NO_EVALS)
        if c.filter_rounds:
            raise ValueError("a selection cannot run individual Rényi filters "
                             "(filter_rounds must be 0)")


class SelectionPlan:
    """Every configuration's calibrated release plan at ε_c, and the selection's ledger.

    Built once per fit from public parameters, in the scheduler. ε_c is found by
    bisection (each configuration's plan calibrated to ε_c under RDP at the fit's δ, the
    selection's RDP total then converted at δ) to the largest value whose total is at
    most ε, within :data:`CALIBRATION_RTOL`.

    Parameters
    ----------
    configurations : sequence of TrainParams
        Checked by :func:`check_configurations`.
    n_features : int
    spec : SelectionSpec

    Attributes
    ----------
    candidate_epsilon : float
        ε_c of each run (its own ledger's RDP ε at δ).
    plans : list of ReleasePlan
        One per configuration, with the release "eval" of its score.
    metric : str
        The score (the objective's first private metric; lower is better).
    """

    def __init__(self, configurations, n_features, spec):
        check_configurations(configurations)
        self.configurations = list(configurations)
        self.n_features, self.spec = int(n_features), spec
        self.count = SelectionCount(spec.mean_runs or 2.0 * len(self.configurations),
                                    spec.shape)
        first = self.configurations[0]
        self.target, self.delta = first.epsilon, first.delta
        self.metric = _scored(first, first.epsilon).eval_metric[0]
        self.candidate_epsilon, self.plans = self._calibrate()
        self._ledger = self._selection_ledger(self.plans)
        #: the released model's trees run this many rounds at most (progress display)
        self.n_rounds = max(plan.n_rounds for plan in self.plans)
        self.trees_per_round = max(plan.trees_per_round for plan in self.plans)

    def _plans_at(self, epsilon):
        # a run's score: its last model's loss on the held-out rows
        return [make_plan(_scored(c, epsilon), self.n_features, scored_rounds=1)
                for c in self.configurations]

    def _total(self, plans):
        return RDPAccountant().get_epsilon(self._selection_ledger(plans), self.delta)

    def _calibrate(self):
        """(ε_c, plans): the largest ε_c found whose selection total is at most ε."""
        # a run's ε must exceed what its DP feature bounds take alone
        floor = max(c.bounds_epsilon or 0.0 for c in self.configurations)
        lo, hi = max(self.target / MAX_COST_FACTOR, 2.0 * floor), self.target
        lo_plans, why = self._feasible(lo)
        if lo_plans is None:
            raise ValueError(f"a selection of E[K] = {self.count.mean:g} runs cannot meet "
                             f"epsilon={self.target:g} with runs of epsilon >= {lo:g} "
                             f"({why}): lower mean_runs or bounds_epsilon, or raise epsilon")
        while hi - lo > CALIBRATION_RTOL * lo:
            mid = math.sqrt(lo * hi)
            plans, _ = self._feasible(mid)
            if plans is not None:
                lo, lo_plans = mid, plans
            else:
                hi = mid
        return lo, lo_plans

    def _feasible(self, epsilon):
        """(plans at ``epsilon``, None) if their selection costs at most ε, else (None,
        why)."""
        try:
            plans = self._plans_at(epsilon)
        except BudgetError as exc:  # (a run's own calibration cannot meet ``epsilon``)
            return None, str(exc)
        total = self._total(plans)
        if total <= self.target:
            return plans, None
        return None, f"the selection's total would be {total:.4g}"

    def _selection_ledger(self, plans):
        events = [replace(e, selection=SELECTION_NAME, selection_part=c)
                  for c, plan in enumerate(plans) for e in plan.ledger().events]
        ledger = Ledger(events)
        ledger.record("selection", "repeat_and_select", 1.0, selection=SELECTION_NAME,
                      selection_mean=self.count.mean, selection_shape=self.count.shape,
                      note=f"the best of K runs, E[K] = {self.count.mean:g}, each a random "
                           f"one of {len(plans)} configurations (Papernot & Steinke 2022)")
        return ledger

    def ledger(self):
        """The selection's ledger: each configuration's planned releases and the entry."""
        return self._ledger

    def summary(self, chosen, score):
        """The public description of the selection in the released model's ledger.

        Parameters
        ----------
        chosen : int
            The configuration of the best run (a DP release's post-processing).
        score : float
            Its released score.
        """
        return dict(self.spec.to_dict(), mean_runs=self.count.mean,
                    configurations=len(self.plans),
                    candidate_epsilon=self.candidate_epsilon, metric=self.metric,
                    chosen=int(chosen), score=float(score))


def same_params(a, b):
    """bool: two TrainParams are equal, field by field (arrays by value)."""
    return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in fields(a))


def _same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _scored(params, epsilon):
    """A run's parameters: ε_c under RDP, with one private evaluation set (its score, in
    the objective's first private metric)."""
    return replace(params, epsilon=epsilon, accountant="rdp", private_eval_sets=1,
                   eval_metric=tuple(metric_names(params.objective, private=True)))


class HeldOutRows:
    """The held-out rows of a fit's own partitions, as a run's private evaluation set: its
    coordinator's ``reduce("round_loss_sums", ...)`` reads the rows its trees left out.

    Parameters
    ----------
    backend : PartitionBackend
        The fit's (closed by whoever opened it).
    """

    def __init__(self, backend):
        self.backend = backend

    async def reduce(self, name, *args):
        if name != "round_loss_sums":
            raise ValueError(f"the held-out rows answer round_loss_sums only, not {name!r}")
        return await self.backend.reduce("held_out_loss_sums", *args)


class Selection:
    """Run a private selection: K secret runs, each one configuration's fit and score,
    and release the best run alone (see the module docstring).

    It takes the place of one :class:`~dpxgb_dask.boosting.coordinator.Coordinator` in the
    scheduler: both are a :class:`~dpxgb_dask.boosting.protocol.FitRun`.

    Parameters
    ----------
    plan : SelectionPlan
    backend : PartitionBackend
    feature_names : list of str or None
    publish : callable, optional
        Receives the selection's public progress: its start and its end (a run's own
        progress is not published: the number of runs is secret).
    """

    def __init__(self, plan, backend, feature_names=None, publish=None):
        self.plan, self.backend, self.feature_names = plan, backend, feature_names
        self._publish_to = publish or (lambda event: None)
        first = plan.configurations[0]
        self.streams, self.warnings = FitStreams.for_fit(first)
        # every run holds out the same rows
        self._holdout = (self.streams.sampling_key("holdout"), float(plan.spec.holdout))
        self._accountant = RDPAccountant()
        # what a run of each configuration may spend: its plan (a run's own releases are
        # checked against it, since the selection is charged its plan)
        self._planned = [self._accountant.curve(run_plan.ledger()) for run_plan in plan.plans]
        self.scores, self.score_estimates = [], []
        self.timings = {}  # (a count of the runs would publish K to a benchmark that asks)
        self._published = False

    @property
    def ledger(self):
        """The selection's planned ledger: a selection is charged in full however it ends
        (the number of runs made is secret)."""
        return self.plan.ledger()

    def unpublished_releases(self):
        """The selection's releases, once (with its last progress event)."""
        if self._published:
            return []
        self._published = True
        return [e.to_dict() for e in self.ledger.events]

    async def fit(self):
        """The best run's :class:`~dpxgb_dask.model.booster.Booster`, its ledger the
        selection's (public and DP values only)."""
        plan, first = self.plan, self.plan.configurations[0]
        self._publish_to({"event": "start", "n_trees": plan.n_rounds * plan.trees_per_round,
                          "epsilon": first.epsilon, "accountant": "rdp",
                          "delta": first.delta, "objective": first.objective, "releases": []})
        n_runs = plan.count.draw(self.streams.noise_stream("selection_runs"))
        best = None
        for run in range(n_runs):
            chosen = int(self.streams.noise_stream("selection_choice", index=run)
                         .uniform_below(len(plan.plans))[0])
            booster, score, said = await self._run(run, chosen)
            if best is None or score < best[0]:  # (the private metrics: lower is better)
                best = score, chosen, booster, said
        score, chosen, booster, said = best
        # the best run's warnings only: another run's would tell of it (and of K)
        self.warnings.extend(w for w in said if w not in self.warnings)
        released = replace(plan.plans[chosen].params, epsilon=first.epsilon,
                           private_eval_sets=0, eval_metric=None, random_state=first.random_state)
        booster.params = released.to_dict()
        booster.ledger = privacy_summary(self.ledger, released, None)
        booster.ledger["selection"] = plan.summary(chosen, score)
        self._publish_to({"event": "done", "epsilon": booster.ledger["epsilon"],
                          "accountant": "rdp", "delta": first.delta,
                          "releases": self.unpublished_releases()})
        return booster

    async def _run(self, run, chosen):
        """One run of configuration ``chosen``: its model, its released score and its
        warnings. A run whose releases would cost more than its plan fails the selection
        (the selection is charged its plan)."""
        run_plan = self.plan.plans[chosen]
        params = run_plan.params
        if params.random_state is not None:  # independent runs: each its own secret seed
            words = self.streams.noise_stream("selection_seed", index=run).uint64(2)
            params = replace(params, random_state=int(words[0]) | (int(words[1]) << 64))
        coordinator = Coordinator(params, run_plan, self.backend, self.plan.n_features,
                                  self.feature_names, evaluations=[HeldOutRows(self.backend)],
                                  holdout=self._holdout)
        booster = await coordinator.fit()
        spent = self._accountant.curve(coordinator.ledger)
        planned = self._planned[chosen]
        if np.any(spent > planned * (1.0 + 1e-9) + 1e-12):
            raise AssertionError(f"a run of configuration {chosen} released more than its "
                                 "plan: the selection's ledger would not cover it")
        return booster, coordinator.scores[0][self.plan.metric][-1], coordinator.warnings
