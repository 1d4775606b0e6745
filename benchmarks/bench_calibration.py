"""Calibration benchmark: how long planning a fit's noise takes, and what it spends.

Usage::

    python benchmarks/bench_calibration.py [--repeat 3] [--out benchmarks/results/calibration.md]

For each plan (the default at several ε, the presets, a few explicit methods) the table
gives the time of one calibration (``calibrate_budget_scale``: no cache; the best of
``--repeat``), how many times it asked the accountant for ε at each PLD discretisation
(the coarse search's 1e-3 and the reporting accountant's, the slow one), and the ε of the
calibrated plan over the target under the reporting accountant. A fit plans once per
process (the cache of ``make_plan``), and a client admitting a fit and its scheduler
share it when they share a process; a service plans each request.

No data is read: a plan is a function of public parameters.
"""
import argparse
import contextlib
import time

from tables import Report

from dpxgb_dask.boosting.calibration import calibrate_budget_scale
from dpxgb_dask.boosting.plan import ReleasePlan
from dpxgb_dask.params.resolution import resolve_params
from dpxgb_dask.privacy import accountants
from dpxgb_dask.privacy.accountants import get_accountant

#: (label, objective, preset, parameters, number of features)
PLANS = [
    ("default, ε 0.01", "binary:logistic", None, dict(epsilon=0.01), 14),
    ("default, ε 0.1", "binary:logistic", None, dict(epsilon=0.1), 14),
    ("default, ε 1", "binary:logistic", None, dict(epsilon=1.0), 14),
    ("default, ε 10", "binary:logistic", None, dict(epsilon=10.0), 14),
    ("default regression, ε 0.1", "reg:squarederror", None,
     dict(epsilon=0.1, label_bounds=(-10.0, 10.0)), 8),
    ("default regression, ε 1", "reg:squarederror", None,
     dict(epsilon=1.0, label_bounds=(-10.0, 10.0)), 8),
    ("noisy_histogram, 20 trees of depth 4, ε 4", "binary:logistic", None,
     dict(epsilon=4.0, split_method="noisy_histogram", n_estimators=20, max_depth=4), 5),
    ("default, 20 trees of depth 3, ε 2", "binary:logistic", None,
     dict(epsilon=2.0, n_estimators=20, max_depth=3), 24),
    ("preset s-bdt, ε 0.5", "binary:logistic", "s-bdt", dict(epsilon=0.5), 5),
    ("preset maddock, ε 1", "binary:logistic", "maddock", dict(epsilon=1.0), 5),
]


@contextlib.contextmanager
def counted_pld_calls(counts):
    """Count the PLD accountant's ε queries by discretisation into ``counts``."""
    original = accountants.PLDAccountant.get_epsilon

    def get_epsilon(self, ledger, delta):
        key = self.value_discretization_interval
        counts[key] = counts.get(key, 0) + 1
        return original(self, ledger, delta)

    accountants.PLDAccountant.get_epsilon = get_epsilon
    try:
        yield counts
    finally:
        accountants.PLDAccountant.get_epsilon = original


def measure(objective, preset, explicit, n_features, repeat):
    """(best seconds, {discretisation: calls} of one calibration, ε / target)."""
    params = resolve_params(objective, preset, n_features=n_features,
                            feature_bounds=[[-4.0, 4.0]] * n_features, **explicit)
    best, counts = float("inf"), {}
    for _ in range(repeat):
        counts = {}
        with counted_pld_calls(counts):
            start = time.perf_counter()
            scale = calibrate_budget_scale(params, n_features)
            best = min(best, time.perf_counter() - start)
    spent = get_accountant(params.accountant).get_epsilon(
        ReleasePlan(params, n_features, scale).ledger(), params.delta)
    return best, counts, params.accountant, spent / params.epsilon


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=None, help="write the Markdown report here")
    args = parser.parse_args()
    report = Report("bench_calibration.py")
    report.say("# Calibration: planning a fit's noise", "",
               "One calibration of each plan (no cache), the best of "
               f"{args.repeat}; the PLD accountant's ε queries at the coarse search's "
               "discretisation and at the reporting one; the calibrated plan's ε over the "
               "target, under the reporting accountant.", "")
    report.say("| plan | accountant | calibration (ms) | coarse PLD calls (1e-3) | "
               "reporting PLD calls | ε spent / target |",
               "|---|---|---|---|---|---|")
    total = 0.0
    for label, objective, preset, explicit, n_features in PLANS:
        seconds, counts, accountant, ratio = measure(objective, preset, explicit,
                                                     n_features, args.repeat)
        total += seconds
        coarse = counts.get(1e-3, 0)
        fine = sum(n for vdi, n in counts.items() if vdi != 1e-3)
        report.say(f"| {label} ({n_features} features) | {accountant} | {1e3 * seconds:.0f} | "
                   f"{coarse if accountant == 'pld' else '-'} | "
                   f"{fine if accountant == 'pld' else '-'} | {ratio:.6f} |")
    report.say("", f"All {len(PLANS)} plans: {total:.2f} s (the best of {args.repeat} "
                   "each).", "")
    report.finish(args.out)


if __name__ == "__main__":
    main()
