"""The coordinator: the only place that sequences a fit's releases, trees and depths.

It runs next to the data, inside the cluster (in the scheduler process, see
``training.py``), and talks to the partitions through a backend (``backends.py``). It is
the only code that holds exact aggregates: each one it gathers goes straight into a DP
mechanism (``decisions.py``), is recorded in the ledger, and is dropped. What it returns
and what it publishes as progress is public or a DP release.

One fit::

    bounds     public, or a DP estimate (Laplace on log-magnitude histograms)
    candidates uniform over the bounds, or a DP sketch (Laplace histogram -> quantile sketch),
               or iterative-Hessian refreshes during the first trees
    init score zero, or a DP mean of the labels
    per tree   rows: Poisson subsample (or DPBoost's disjoint ensembles); clipped gradients
               per depth: histograms of the level -> ONE release (parallel over nodes) ->
                          split decisions -> rows routed to the children
               leaves: ONE release of all leaves (parallel over leaves)
"""
from dataclasses import dataclass
import math
import time
import warnings

import numpy as np

from . import decisions, ops
from ._core.sketch import make_summary, query_cuts
from .model import Booster, Tree
from .privacy.accountants import PLDAccountant, get_accountant, privacy_report
from .privacy.ledger import Ledger
from .privacy.mechanisms import LaplaceMechanism
from .privacy.randomness import NoiseSource
from .privacy.sensitivity import dpboost_gain_sensitivity, dpxgboost_gain_sensitivity
from .privacy.validation import BudgetError

#: log2-magnitude range of the DP bounds estimate: |x| from 2**-20 to 2**44.
BOUNDS_MIN_EXPONENT = -20
BOUNDS_N_EXPONENTS = 64
#: Probability that the DP bounds estimate is wider than needed because of noise alone.
BOUNDS_FAILURE_PROBABILITY = 0.01
#: Bounds of a feature whose DP estimate found nothing above the noise.
DEFAULT_UNRESOLVED_BOUNDS = (-1.0, 1.0)


class DPBoundsWarning(UserWarning):
    """The DP feature-bounds estimate fell back to a public default for some features."""

_PURE = ("laplace", "exponential")


# -- the release schedule ---------------------------------------------------------------------


def _default_shares(p):
    shares = {}
    if p.split_candidates == "dp_sketch":
        shares["sketch"] = 1.0
    elif p.split_candidates == "iterative_hessian" and p.iterative_hessian_rounds > 0:
        shares["sketch"] = 0.1
    if p.split_method != "random":
        shares["split"] = 1.0
    shares["leaf"] = 1.0 if p.split_method != "random" else 0.9
    if p.init_score == "dp_mean":
        shares["init"] = 0.05
    return shares


def release_shares(p):
    """Normalised budget shares of the releases the method makes (dict purpose -> share).

    ``params.budget_shares`` overrides the default weights of the releases it names;
    releases it omits keep their default weight, and names of releases this method does
    not make are ignored.
    """
    wanted = _default_shares(p)
    if p.budget_shares:
        wanted.update({k: float(v) for k, v in p.budget_shares.items() if k in wanted})
    total = sum(wanted.values())
    return {k: v / total for k, v in wanted.items()}


@dataclass(frozen=True)
class Release:
    """Noise parameters of one kind of release (public)."""

    purpose: str
    mechanism: str
    sensitivity: float
    epsilon: float = None
    noise_multiplier: float = None


class ReleaseSchedule:
    """Every release of a fit and its noise, as a function of one scale ``s``.

    Pure-ε releases with share ``w`` occurring ``m`` times per tree get ε = s·w/m (so s is
    DP-XGBoost's ε per tree when the shares sum to one, §4.4); Gaussian releases get the
    noise multiplier z = sqrt(m/w)/s (zCDP ρ = s²w/(2m)). Everything is monotone in s,
    which :func:`calibrate_scale` finds by bisection on the accountant's ε of
    :meth:`ledger`, the exact ledger the fit will record.

    Parameters
    ----------
    params : TrainParams
    n_features : int
    scale : float
    """

    def __init__(self, params, n_features, scale):
        self.params = p = params
        self.n_features = n_features
        self.scale = float(scale)
        self.shares = shares = release_shares(p)
        s = self.scale
        h_bound = p.hessian_bound if p.newton else 1.0
        self.ih_rounds = (min(p.iterative_hessian_rounds, p.n_estimators)
                          if p.split_candidates == "iterative_hessian" else 0)
        self.releases = {}
        if "sketch" in shares and p.split_candidates == "dp_sketch":
            # One row adds its weight (<= 1 after clipping) to one bin of each feature.
            self.releases["sketch"] = Release("sketch", "laplace", float(n_features),
                                              epsilon=s * shares["sketch"])
        if "sketch" in shares and self.ih_rounds:
            self.releases["sketch"] = Release(
                "sketch", "gaussian", float(np.sqrt(n_features) * h_bound),
                noise_multiplier=math.sqrt(self.ih_rounds / shares["sketch"]) / s)
        if "split" in shares:
            if p.split_method == "exponential":
                g = p.gradient_bound
                sens = (dpboost_gain_sensitivity(g, p.reg_lambda)
                        if p.gain_sensitivity == "dpboost" else dpxgboost_gain_sensitivity(g))
                self.releases["split"] = Release("split", "exponential", float(sens),
                                                 epsilon=s * shares["split"] / p.max_depth)
            else:
                sens = float(np.sqrt(n_features * (p.gradient_bound**2 + h_bound**2)))
                self.releases["split"] = Release(
                    "split", "gaussian", sens,
                    noise_multiplier=math.sqrt(p.max_depth / shares["split"]) / s)
        if p.leaf_method == "gaussian":
            self.releases["leaf"] = Release(
                "leaf", "gaussian", 1.0, noise_multiplier=math.sqrt(1.0 / shares["leaf"]) / s)
        elif p.leaf_method == "laplace":
            self.releases["leaf"] = Release("leaf", "laplace", 1.0, epsilon=s * shares["leaf"])
        else:
            # NoisyAverage: a noisy gradient sum (Δ = g*) and a noisy row count (Δ = 1),
            # the leaf's ε split (1 - r) / r between them.
            r = p.leaf_noise_ratio
            self.releases["leaf"] = Release("leaf_sum", "laplace", p.gradient_bound,
                                            epsilon=s * shares["leaf"] * (1.0 - r))
            self.releases["leaf_count"] = Release("leaf_count", "laplace", 1.0,
                                                  epsilon=s * shares["leaf"] * r)
        if "init" in shares:
            # A noisy sum and a noisy count of labels in [-1, 1] (or {0, 1}): Δ = 1 each.
            self.releases["init"] = Release("init_score", "laplace", 1.0,
                                            epsilon=s * shares["init"] / 2)

    # ledger events of the plan --------------------------------------------------------------

    def tree_sampling(self, tree):
        """(sampling_rate, disjoint_group, disjoint_part) of a tree's rows."""
        p = self.params
        if p.ensemble_size:
            return 1.0, f"ensemble:{tree // p.ensemble_size}", tree % p.ensemble_size
        return p.subsample, None, None

    def event(self, kind, tree=None, depth=None, n_parallel=1, sensitivity=None, epsilon=None):
        """Keyword arguments of ``Ledger.record`` for one release of kind ``kind``."""
        r = self.releases[kind]
        fields = dict(purpose=r.purpose, mechanism=r.mechanism,
                      sensitivity=r.sensitivity if sensitivity is None else sensitivity)
        if r.mechanism == "gaussian":
            fields["noise_multiplier"] = r.noise_multiplier
        else:
            fields["epsilon"] = r.epsilon if epsilon is None else epsilon
        if tree is not None:
            rate, group, part = self.tree_sampling(tree)
            fields.update(tree=tree, sampling_rate=rate)
            if group is not None:
                fields.update(disjoint_group=group, disjoint_part=part)
        if depth is not None:
            fields["depth"] = depth
        if kind == "split":
            fields.update(parallel_over=("nodes",), n_parallel=max(1, n_parallel))
        elif kind in ("leaf", "leaf_count"):
            fields.update(parallel_over=("leaves",), n_parallel=max(1, n_parallel))
        elif kind == "sketch":
            fields.update(parallel_over=("bins",), n_parallel=max(1, n_parallel))
        elif kind == "init":
            fields["count"] = 2
        return fields

    def ledger(self):
        """The ledger of a fit that makes every planned release (the calibration target)."""
        p = self.params
        ledger = Ledger()
        if p.bounds_epsilon is not None and p.feature_bounds is None:
            ledger.record(**bounds_event(p, self.n_features))
        if "init" in self.releases:
            ledger.record(**self.event("init"))
        if "sketch" in self.releases and not self.ih_rounds:
            ledger.record(**self.event("sketch", n_parallel=p.n_sketch_bins))
        n_leaves = 2**p.max_depth
        for t in range(p.n_estimators):
            if t < self.ih_rounds:
                ledger.record(**self.event("sketch", tree=t, n_parallel=p.max_bin + 1))
            if "split" in self.releases:
                for d in range(p.max_depth):
                    ledger.record(**self.event("split", tree=t, depth=d, n_parallel=2**d))
            ledger.record(**self.event("leaf", tree=t, n_parallel=n_leaves))
            if "leaf_count" in self.releases:
                ledger.record(**self.event("leaf_count", tree=t, n_parallel=n_leaves))
        return ledger


def bounds_event(p, n_features):
    """Ledger fields of the DP feature-bounds estimate (Laplace on log2-magnitude counts)."""
    return dict(purpose="bounds", mechanism="laplace", sensitivity=float(n_features),
                epsilon=p.bounds_epsilon, parallel_over=("bins",),
                n_parallel=2 * BOUNDS_N_EXPONENTS + 1)


def calibrate_scale(params, n_features, rtol=1e-3):
    """The scale s whose schedule spends ``params.epsilon`` under ``params.accountant``.

    ε(s) is increasing and close to a power law in s, so a safeguarded secant search
    (Illinois) on (log s, log ε) converges in a few accountant calls. For PLD the search
    uses a coarser discretisation (pessimistic, so its ε is an upper bound of the fine
    one), and the result is then checked, and if needed shrunk, with the reporting
    accountant: the returned s never spends more than the target.

    With ``dp_epsilon_per_tree`` (pure-ε methods only) s is that value and nothing is
    calibrated.

    Returns
    -------
    float

    Raises
    ------
    BudgetError
        The target cannot be met (e.g. the bounds estimate alone spends it).
    """
    p = params
    if p.dp_epsilon_per_tree is not None:
        return float(p.dp_epsilon_per_tree)
    target = p.epsilon
    if p.bounds_epsilon is not None and p.feature_bounds is None and p.bounds_epsilon >= target:
        raise BudgetError(f"bounds_epsilon={p.bounds_epsilon} leaves nothing of epsilon={target}")
    final = get_accountant(p.accountant)
    search = PLDAccountant(value_discretization_interval=1e-3) if p.accountant == "pld" else final

    def log_excess(s, accountant):
        eps = accountant.get_epsilon(ReleaseSchedule(p, n_features, s).ledger(), p.delta)
        return math.log(eps / target) if eps > 0 else -math.inf

    s = _solve_log(lambda s: log_excess(s, search), rtol)
    if search is not final:
        # Refine with the reporting accountant in a narrow bracket around the coarse answer.
        s = _solve_log(lambda s: log_excess(s, final), rtol, start=s, step=1.05)
    if log_excess(s, final) > 0.0:
        raise BudgetError(f"could not calibrate the noise to epsilon={target}")
    return s


def _solve_log(f, rtol, start=1.0, step=8.0):
    """Largest s with f(s) <= 0 (f increasing in s), to relative precision ``rtol``; the
    bracket grows from ``start`` by factors of ``step``."""
    lo, hi = start, start
    f_lo = f_hi = f(start)
    while f_lo > 0:
        hi, f_hi = lo, f_lo
        lo /= step
        if lo < 1e-12:
            raise BudgetError("epsilon is too small for the fixed releases of this plan "
                              "(e.g. bounds_epsilon)")
        f_lo = f(lo)
    while f_hi <= 0:
        lo, f_lo = hi, f_hi
        hi *= step
        if hi > 1e12:
            raise BudgetError("epsilon cannot be reached by this plan")
        f_hi = f(hi)
    x_lo, x_hi = math.log(lo), math.log(hi)
    side = 0
    for _ in range(100):
        if x_hi - x_lo < rtol:
            break
        if math.isfinite(f_lo) and math.isfinite(f_hi) and f_hi != f_lo:
            x = x_hi - f_hi * (x_hi - x_lo) / (f_hi - f_lo)
            x = min(max(x, x_lo + 0.1 * rtol), x_hi - 0.1 * rtol)
        else:
            x = 0.5 * (x_lo + x_hi)
        fx = f(math.exp(x))
        if fx <= 0:
            x_lo, f_lo = x, fx
            if side == -1:
                f_hi /= 2.0  # Illinois: halve the stale end so the bracket shrinks from both
            side = -1
        else:
            x_hi, f_hi = x, fx
            if side == 1:
                f_lo /= 2.0
            side = 1
        if abs(fx) < 0.25 * rtol and fx <= 0:
            return math.exp(x)
    return math.exp(x_lo)


# -- candidates -------------------------------------------------------------------------------


def uniform_cuts(feature_bounds, max_bin):
    """``max_bin - 1`` equal-width cuts per feature over the public bounds (public)."""
    return [np.linspace(lo, hi, max_bin + 1)[1:-1] for lo, hi in feature_bounds]


def sketch_cuts(noisy_weights, feature_bounds, max_bin):
    """Cut points from DP histograms of row weights (DP-XGBoost §4.1): the noisy bins,
    clipped at zero, are weighted points of the weighted quantile sketch (post-processing).

    Parameters
    ----------
    noisy_weights : ndarray of float64, shape (n_features, n_fine_bins)
    feature_bounds : ndarray of float64, shape (n_features, 2)
    max_bin : int

    Returns
    -------
    list of ndarray of float64
    """
    n_fine = noisy_weights.shape[1]
    cuts = []
    for (lo, hi), weights in zip(feature_bounds, noisy_weights):
        centres = lo + (np.arange(n_fine) + 0.5) * (hi - lo) / n_fine
        summary = make_summary(centres, np.clip(weights, 0.0, None))
        c = query_cuts(summary, max_bin - 1)
        cuts.append(c[c < hi] if c.size else np.linspace(lo, hi, max_bin + 1)[1:-1])
    return cuts


def hessian_refined_cuts(noisy_hessians, cuts, feature_bounds, max_bin, uniform_share=0.1):
    """Iterative-Hessian candidates (Maddock et al. §4.5.2): new cuts at the quantiles of
    the Hessian mass released over the current bins (post-processing).

    The released mass of each current bin is spread uniformly over the bin (mixed with a
    ``uniform_share`` of the uniform density, so that empty regions keep some candidates),
    and the ``max_bin - 1`` quantiles of that density are the new cuts: bins where the
    Hessian mass is large are split finer.

    Parameters
    ----------
    noisy_hessians : ndarray of float64, shape (n_features, n_bins)
        Noisy Hessian sums per current bin (the last bin, missing values, is ignored).
    cuts : list of ndarray of float64
    feature_bounds : ndarray of float64, shape (n_features, 2)
    max_bin : int

    Returns
    -------
    list of ndarray of float64
    """
    new = []
    targets = np.arange(1, max_bin) / max_bin
    for f, ((lo, hi), c) in enumerate(zip(feature_bounds, cuts)):
        edges = np.concatenate([[lo], c, [hi]])
        mass = np.clip(noisy_hessians[f, :edges.size - 1], 0.0, None)
        total = mass.sum()
        widths = np.diff(edges)
        density = (1.0 - uniform_share) * (mass / total if total > 0 else widths / (hi - lo)) \
            + uniform_share * widths / (hi - lo)
        cdf = np.concatenate([[0.0], np.cumsum(density)])
        cdf /= cdf[-1]
        refined = np.interp(targets, cdf, edges)
        refined = np.unique(refined[(refined > lo) & (refined < hi)])
        new.append(refined)
    return new


# -- the fit ----------------------------------------------------------------------------------


class Coordinator:
    """Sequence one fit: bounds, candidates, trees and depths, every DP release and its ledger.

    Parameters
    ----------
    params : TrainParams
    backend : LocalBackend or DaskBackend
    n_features : int
    feature_names : list of str or None
    publish : callable, optional
        ``publish(dict)`` receives progress events (public values only).
    """

    def __init__(self, params, backend, n_features, feature_names=None, publish=None):
        self.params = params
        self.backend = backend
        self.n_features = n_features
        self.feature_names = feature_names
        self._publish = publish or (lambda event: None)
        self.noise = NoiseSource(params.random_state)
        self.ledger = Ledger()
        self.timings = {"level": [], "tree": [], "bytes_per_level": []}
        self._ensemble_keys = {}

    def _stream(self, purpose, tree=None, depth=None, index=0):
        return self.noise.stream(purpose=purpose, tree=tree, depth=depth, index=index)

    def _key128(self, purpose, tree=None):
        words = self._stream(purpose, tree=tree).uint64(2)
        return int(words[0]) | (int(words[1]) << 64)

    async def fit(self, raw_parts):
        """Train and return the :class:`Booster` (public and DP values only).

        Parameters
        ----------
        raw_parts : list of handles of ``ops.RawPart``
        """
        p = self.params
        be = self.backend
        scale = await be.run_cpu(calibrate_scale, p, self.n_features)
        schedule = ReleaseSchedule(p, self.n_features, scale)
        self._publish({"event": "start", "n_trees": p.n_estimators, "scale": scale})

        lengths = await be.gather(await be.map(ops.part_length, raw_parts, name="dpxgb-length"))
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64).tolist()

        bounds = await self._feature_bounds(raw_parts)
        y_offset, y_scale = 0.0, 1.0
        if p.objective == "reg:squarederror":
            lo, hi = p.label_bounds
            y_offset, y_scale = (lo + hi) / 2.0, (hi - lo) / 2.0
        base_score = await self._init_score(raw_parts, schedule, y_offset, y_scale)

        max_bin = p.max_bin
        missing_bin = max_bin
        cuts = await self._candidates(raw_parts, bounds, schedule)
        if p.objective == "reg:squarederror":
            labels = await be.map(ops.scale_labels, raw_parts, args=(y_offset, y_scale),
                                  name="dpxgb-scale-labels")
        else:
            labels = [None] * be.n_partitions
        binned = await be.map(_bin_part_task, raw_parts, offsets, labels,
                              args=(bounds, cuts, missing_bin, p.n_threads), name="dpxgb-bin")
        margins = await be.map(ops.initial_margin, binned, args=(base_score,),
                               name="dpxgb-init-margin")
        booster = Booster(p.objective, base_score, cuts, bounds, p.to_dict(), None,
                          self.feature_names, p.label_bounds)
        n_cuts = np.array([len(c) for c in cuts])

        # Regression margins live in the scaled label range [-1, 1] (as predictions do).
        margin_clip = (-1.0, 1.0) if p.objective == "reg:squarederror" else None
        # Gradients of the trees of one batch are taken at the batch's starting margins;
        # each tree's output is added to `pending` as soon as it is built (with the cuts it
        # was grown with), and `pending` becomes the margins when the batch ends.
        pending = margins
        for t in range(p.n_estimators):
            t0 = time.perf_counter()
            batch_start = (t // p.batch_size) * p.batch_size
            batch_len = min(p.batch_size, p.n_estimators - batch_start)
            with be.span("dpxgb", f"tree-{t}"):
                key, interval = self._tree_rows(t)
                states = await be.map(ops.start_tree, binned, margins,
                                      args=(p.objective, key, interval, p.gradient_bound,
                                            p.gradient_rule, p.hessian_bound if p.newton else 1.0),
                                      name=f"dpxgb-gradients-tree{t}")
                if t < schedule.ih_rounds:
                    cuts = await self._refresh_candidates(t, binned, states, schedule, cuts, bounds)
                    new_binned = await be.map(ops.rebin_part, binned, raw_parts,
                                              args=(bounds, cuts, p.n_threads),
                                              name=f"dpxgb-rebin-tree{t}")
                    be.release(binned)
                    binned = new_binned
                    n_cuts = np.array([len(c) for c in cuts])
                tree, n_leaves = await self._grow_tree(t, binned, states, cuts, n_cuts, schedule)
                be.release(states)
                shrink = p.learning_rate / batch_len
                for node in tree.leaves:
                    tree.leaves[node] *= shrink
                booster.append_tree(tree)
                new_pending = await be.map(ops.update_margin, binned, pending,
                                           args=([tree.to_arrays()], p.n_threads, margin_clip),
                                           name=f"dpxgb-margins-tree{t}")
                if pending is not margins:
                    be.release(pending)
                pending = new_pending
                if t == batch_start + batch_len - 1:
                    be.release(margins)
                    margins = pending
            self.timings["tree"].append(time.perf_counter() - t0)
            spent = get_accountant("basic").get_epsilon(self.ledger, p.delta)
            self._publish({"event": "tree", "tree": t, "n_trees": p.n_estimators,
                           "n_leaves": int(n_leaves), "epsilon_basic": spent})
        be.release(margins)
        be.release(binned)

        if p.objective == "reg:squarederror":
            booster = _rescale_regression(booster, y_offset, y_scale)
        booster.cuts = [np.asarray(c, dtype=np.float64) for c in cuts]
        booster.ledger = self.privacy_summary(scale)
        self._publish({"event": "done", "epsilon": booster.ledger["epsilon"]})
        return booster

    def privacy_summary(self, scale):
        """Ledger and totals (JSON-ready): every accountant's ε at the fit's δ."""
        p = self.params
        report = privacy_report(self.ledger, p.delta)
        return {
            "events": self.ledger.to_dict(),
            "delta": p.delta,
            "accountant": p.accountant,
            "epsilon": get_accountant(p.accountant).get_epsilon(self.ledger, p.delta),
            "epsilon_by_accountant": _jsonable(report),
            "scale": scale,
            "neighbouring_relation": "add/remove one row",
        }

    # -- fit-level releases -----------------------------------------------------------------

    async def _feature_bounds(self, raw_parts):
        p = self.params
        be = self.backend
        if isinstance(p.feature_bounds, str) and p.feature_bounds == "data":
            # Forced by the user with a PrivacyLeakWarning (see training.py): exact extrema.
            per_part = await be.gather(await be.map(ops.feature_min_max, raw_parts,
                                                    name="dpxgb-data-bounds"))
            stacked = np.stack(per_part)
            with np.errstate(all="ignore"):
                lo = np.nanmin(stacked[:, :, 0], axis=0)
                hi = np.nanmax(stacked[:, :, 1], axis=0)
            lo = np.where(np.isnan(lo), 0.0, lo)
            hi = np.where(np.isnan(hi) | (hi <= lo), lo + 1.0, hi)
            return np.stack([lo, hi], axis=1)
        if p.feature_bounds is not None:
            return np.asarray(p.feature_bounds, dtype=np.float64)
        return await self._dp_bounds(raw_parts)

    async def _dp_bounds(self, raw_parts):
        """DP feature bounds: Laplace counts of rows by sign and binary magnitude; the
        outermost bins whose noisy count clears a threshold give the bounds."""
        p = self.params
        be = self.backend
        counts = await be.reduce_gather(
            await be.map(ops.log2_magnitude_histogram, raw_parts,
                         args=(BOUNDS_N_EXPONENTS, BOUNDS_MIN_EXPONENT), name="dpxgb-bounds"),
            name="dpxgb-bounds-reduce")
        fields = bounds_event(p, self.n_features)
        # One row adds 1 to one bin of each feature: L1 sensitivity F over F coordinates.
        mech = LaplaceMechanism(fields["sensitivity"], fields["epsilon"],
                                coords_per_row=self.n_features)
        noisy = mech.release(counts, self._stream("bounds"))
        del counts
        self.ledger.record(**fields)
        n_bins = noisy.shape[1]
        scale = fields["sensitivity"] / fields["epsilon"]
        threshold = scale * math.log(noisy.size / (2 * BOUNDS_FAILURE_PROBABILITY))
        k = BOUNDS_N_EXPONENTS
        # Bin edges: negative bins n-1-k hold [-2^(k+1+m), -2^(k+m)); the middle bin holds
        # (-2^m, 2^m); positive bins n+1+k hold [2^(k+m), 2^(k+1+m)).
        upper = np.empty(n_bins)
        lower = np.empty(n_bins)
        e = BOUNDS_MIN_EXPONENT + np.arange(k)
        lower[k + 1:], upper[k + 1:] = 2.0**e, 2.0 ** (e + 1)
        lower[:k], upper[:k] = -(2.0 ** (e[::-1] + 1)), -(2.0 ** e[::-1])
        lower[k], upper[k] = -(2.0**BOUNDS_MIN_EXPONENT), 2.0**BOUNDS_MIN_EXPONENT
        bounds = np.empty((self.n_features, 2))
        unresolved = []
        for f in range(self.n_features):
            above = np.flatnonzero(noisy[f] > threshold)
            if above.size == 0:
                # Post-processing of the DP counts: nothing clears the noise (a feature that is
                # mostly missing, or too small a budget): fall back to a public default.
                unresolved.append(f)
                bounds[f] = DEFAULT_UNRESOLVED_BOUNDS
            else:
                bounds[f] = lower[above[0]], upper[above[-1]]
        if unresolved:
            warnings.warn(f"the DP bounds estimate found no magnitude above the noise for "
                          f"features {unresolved}; they use the public default range "
                          f"{DEFAULT_UNRESOLVED_BOUNDS}. Give feature_bounds or a larger "
                          "bounds_epsilon.", DPBoundsWarning, stacklevel=2)
        self._publish({"event": "bounds", "epsilon": p.bounds_epsilon})
        return bounds

    async def _init_score(self, raw_parts, schedule, y_offset, y_scale):
        p = self.params
        if p.init_score == "zero":
            return 0.0
        be = self.backend
        # Labels in {0, 1}, or regression labels scaled to [-1, 1]: one row moves the sum
        # and the count by at most 1 each.
        lower = 0.0 if p.objective == "binary:logistic" else -1.0
        total = await be.reduce_gather(
            await be.map(ops.clipped_label_sum, raw_parts, args=(y_offset, y_scale, lower),
                         name="dpxgb-init"), name="dpxgb-init-reduce")
        fields = schedule.event("init")
        # Two releases (count=2 in the ledger): the sum and the count, Δ = 1 each.
        mech = LaplaceMechanism(1.0, fields["epsilon"], coords_per_row=1)
        noisy_sum = mech.release(total[:1], self._stream("init_score/sum"))[0]
        noisy_count = mech.release(total[1:], self._stream("init_score/count"))[0]
        self.ledger.record(**fields)
        mean = noisy_sum / max(noisy_count, 1.0)
        if p.objective == "binary:logistic":
            prob = float(np.clip(mean, 0.01, 0.99))
            return float(np.log(prob / (1.0 - prob)))
        return float(np.clip(mean, -1.0, 1.0))

    async def _candidates(self, raw_parts, bounds, schedule):
        p = self.params
        if p.split_candidates in ("uniform", "iterative_hessian"):
            return uniform_cuts(bounds, p.max_bin)
        be = self.backend
        # Every row's weight is its hessian at the initial margin (1 for counts, 1/4 for the
        # logistic loss at p = 1/2): the sketch of DP-XGBoost §4.1.
        weight = 0.25 if (p.newton and p.objective == "binary:logistic") else 1.0
        hist = await be.reduce_gather(
            await be.map(ops.fine_histogram, raw_parts, args=(bounds, p.n_sketch_bins, weight),
                         name="dpxgb-sketch"), name="dpxgb-sketch-reduce")
        fields = schedule.event("sketch", n_parallel=p.n_sketch_bins,
                                sensitivity=self.n_features * weight)
        mech = LaplaceMechanism(fields["sensitivity"], fields["epsilon"],
                                coords_per_row=self.n_features)
        noisy = mech.release(hist, self._stream("sketch"))
        del hist
        self.ledger.record(**fields)
        return sketch_cuts(noisy, bounds, p.max_bin)

    async def _refresh_candidates(self, t, binned, states, schedule, cuts, bounds):
        """Iterative Hessian: release the root Hessian histogram, refine the cuts."""
        p = self.params
        be = self.backend
        hist = await be.reduce_gather(
            await be.map(ops.level_histograms, binned, states, args=([0], None, None, p.n_threads),
                         name=f"dpxgb-ih-histogram-tree{t}"), name=f"dpxgb-ih-reduce-tree{t}")
        fields = schedule.event("sketch", tree=t, n_parallel=p.max_bin + 1)
        from .privacy.mechanisms import GaussianMechanism

        h_values = hist[0]["sum_hessians"] if p.newton else hist[0]["count"].astype(np.float64)
        mech = GaussianMechanism(fields["sensitivity"], noise_multiplier=fields["noise_multiplier"],
                                 coords_per_row=self.n_features)
        noisy = mech.release(h_values, self._stream("sketch", tree=t))
        del hist, h_values
        self.ledger.record(**fields)
        return hessian_refined_cuts(noisy, cuts, bounds, p.max_bin)

    # -- trees ------------------------------------------------------------------------------

    def _tree_rows(self, t):
        """(key, [lo, hi)) of the rows of tree t (Poisson, DPBoost ensemble, or all)."""
        p = self.params
        if p.ensemble_size:
            e, k = divmod(t, p.ensemble_size)
            size = min(p.ensemble_size, p.n_estimators - e * p.ensemble_size)
            eta = p.learning_rate
            total = 1.0 - (1.0 - eta) ** size
            lo = (1.0 - (1.0 - eta) ** k) / total
            hi = (1.0 - (1.0 - eta) ** (k + 1)) / total if k + 1 < size else 1.0
            if not (0.0 <= lo <= hi <= 1.0):
                raise AssertionError(f"ensemble row interval ({lo}, {hi}) of tree {t} is not "
                                     "inside [0, 1]: the trees would not be disjoint")
            if e not in self._ensemble_keys:
                # One key per ensemble: its trees take disjoint intervals of the same numbers.
                self._ensemble_keys[e] = self._key128("ensemble_rows", tree=e)
            return self._ensemble_keys[e], (lo, hi if k + 1 < size else 1.0 + 1e-9)
        if p.subsample < 1.0:
            return self._key128("subsample", tree=t), (0.0, p.subsample)
        return 0, (0.0, 2.0)

    async def _grow_tree(self, t, binned, states, cuts, n_cuts, schedule):
        p = self.params
        be = self.backend
        tree = Tree(cuts)
        n_features = self.n_features
        open_nodes = np.array([0], dtype=np.int64)
        ranges = np.zeros((1, n_features, 2), dtype=np.int64)
        ranges[0, :, 1] = n_cuts
        previous = None
        previous_nodes = None
        closed = []
        for d in range(p.max_depth):
            t_level = time.perf_counter()
            if open_nodes.size == 0:
                break
            with be.span(f"depth-{d}"):
                splits, states, previous, previous_nodes = await self._grow_level(
                    t, d, binned, states, open_nodes, ranges, n_cuts, previous, previous_nodes,
                    schedule)
            for i, node in enumerate(open_nodes):
                if splits.is_split[i]:
                    tree.add_split(node, splits.feature[i], splits.bin_threshold[i],
                                   splits.missing_left[i])
                else:
                    closed.append(int(node))
            ranges = decisions.child_ranges(ranges, splits)
            children = []
            for node in open_nodes[splits.is_split]:
                children.extend([2 * node + 1, 2 * node + 2])
            open_nodes = np.array(children, dtype=np.int64)
            self.timings["level"].append(time.perf_counter() - t_level)
            self._publish({"event": "level", "tree": t, "depth": d,
                           "n_nodes": int(splits.is_split.size)})
        if previous is not None:
            be.release(previous)
        leaves = np.array(sorted(closed + [int(n) for n in open_nodes]), dtype=np.int64)
        # Leaf sums: route the rows through the whole tree in one task.
        for i, node in enumerate(leaves):
            tree.add_leaf(node, float(i))
        index_arrays = tree.to_arrays()
        sums = await be.reduce_gather(
            await be.map(ops.tree_leaf_sums, binned, states,
                         args=(index_arrays, leaves.size, p.n_threads),
                         name=f"dpxgb-leaf-sums-tree{t}"), name=f"dpxgb-leaf-reduce-tree{t}")
        values = await be.run_cpu(self._release_leaves, t, sums, schedule)
        del sums
        for node, value in zip(leaves, values):
            tree.add_leaf(node, value)
        return tree, leaves.size

    async def _grow_level(self, t, d, binned, states, open_nodes, ranges, n_cuts, previous,
                          previous_nodes, schedule):
        """Split decisions of one level (one DP release, or data-independent choices), and
        the rows routed to the children."""
        p = self.params
        be = self.backend
        if p.split_method == "random":
            splits = decisions.random_splits(open_nodes, ranges, n_cuts, p.feature_selection,
                                             t, self._stream("split", tree=t, depth=d))
        else:
            bytes_before = be.bytes_gathered
            previous_column = previous if previous is not None else [None] * be.n_partitions
            local = await be.map(_level_histograms_task, binned, states, previous_column,
                                 args=(open_nodes, previous_nodes, p.n_threads),
                                 name=f"dpxgb-histograms-tree{t}-depth{d}")
            exact = await be.reduce_gather(local, name=f"dpxgb-reduce-tree{t}-depth{d}")
            self.timings["bytes_per_level"].append(be.bytes_gathered - bytes_before)
            splits = await be.run_cpu(self._release_splits, t, d, open_nodes, exact,
                                      n_cuts, schedule)
            del exact
            if previous is not None:
                be.release(previous)
            previous, previous_nodes = local, open_nodes
            # Data-dependent splits: route the rows now, the next level needs them.
            is_split, feature, split_bin, missing_left = splits.as_heap_arrays()
            new_states = await be.map(ops.route_rows, binned, states,
                                      args=(is_split, feature, split_bin, missing_left,
                                            p.n_threads),
                                      name=f"dpxgb-route-tree{t}-depth{d}")
            be.release(states)
            states = new_states
        return splits, states, previous, previous_nodes

    def _release_splits(self, t, d, nodes, exact, n_cuts, schedule):
        p = self.params
        fields = schedule.event("split", tree=t, depth=d, n_parallel=len(nodes))
        if p.split_method == "exponential":
            splits, _ = decisions.exponential_splits(
                nodes, exact, n_cuts, p.reg_lambda, p.newton, fields["sensitivity"],
                fields["epsilon"], self._stream("split", tree=t, depth=d))
        else:
            splits, _, _, _ = decisions.noisy_histogram_splits(
                nodes, exact, n_cuts, p.reg_lambda, p.newton, p.gradient_bound, p.hessian_bound,
                fields["noise_multiplier"], self._stream("split/grad", tree=t, depth=d),
                self._stream("split/hess", tree=t, depth=d))
        self.ledger.record(**fields)
        return splits

    def _release_leaves(self, t, sums, schedule):
        p = self.params
        n_leaves = sums.shape[0]
        if p.leaf_method == "gaussian":
            fields = schedule.event("leaf", tree=t, n_parallel=n_leaves)
            sigma_g, sigma_h = decisions.leaf_balanced_sigmas(
                fields["noise_multiplier"], p.gradient_bound,
                p.hessian_bound if p.newton else 1.0, p.leaf_noise_ratio)
            fields["note"] = (f"whitened pair: sigma_G={sigma_g:.6g} on the gradient sums, "
                              f"sigma_H={sigma_h:.6g} on the {'hessian sums' if p.newton else 'counts'}")
            values, _, _ = decisions.gaussian_leaves(
                sums, p.newton, p.reg_lambda, p.min_child_weight, p.gradient_bound,
                p.hessian_bound, fields["noise_multiplier"], p.leaf_noise_ratio, p.leaf_bound,
                self._stream("leaf/grad", tree=t), self._stream("leaf/hess", tree=t))
        elif p.leaf_method == "noisy_average":
            fields = schedule.event("leaf", tree=t, n_parallel=n_leaves)
            count_fields = schedule.event("leaf_count", tree=t, n_parallel=n_leaves)
            values, _ = decisions.noisy_average_leaves(
                sums, p.reg_lambda, p.min_child_weight, p.gradient_bound, fields["epsilon"],
                count_fields["epsilon"], p.leaf_bound, self._stream("leaf/grad", tree=t),
                self._stream("leaf/count", tree=t))
            self.ledger.record(**count_fields)
        else:
            clip = p.leaf_bound
            if p.leaf_clipping == "geometric":
                t_in_ensemble = t % p.ensemble_size if p.ensemble_size else t
                clip = min(clip, p.gradient_bound * (1.0 - p.learning_rate) ** t_in_ensemble)
            sensitivity = decisions.laplace_leaf_sensitivity(
                p.gradient_bound, p.reg_lambda, p.min_child_weight, clip)
            fields = schedule.event("leaf", tree=t, n_parallel=n_leaves, sensitivity=sensitivity)
            values, _ = decisions.laplace_leaves(
                sums, p.reg_lambda, p.min_child_weight, clip, sensitivity, fields["epsilon"],
                self._stream("leaf", tree=t))
        self.ledger.record(**fields)
        return values


def _bin_part_task(raw, row_offset, labels, bounds, cuts, missing_bin, n_threads):
    return ops.bin_part(raw, bounds, cuts, row_offset, missing_bin, y=labels, n_threads=n_threads)


def _level_histograms_task(binned, state, previous, nodes, previous_nodes, n_threads):
    return ops.level_histograms(binned, state, nodes, previous=previous,
                                previous_nodes=previous_nodes, n_threads=n_threads)


def _rescale_regression(booster, offset, scale):
    """Fold the label scaling back: predictions in label units, ``offset + scale·margin``."""
    booster.base_score = offset + scale * booster.base_score
    nodes = booster._nodes
    leaf = nodes["left"] < 0
    nodes["value"] = np.where(leaf, nodes["value"] * scale, nodes["value"])
    return booster


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.floating, np.integer)):
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    return obj
