"""Privacy budgets across fits: a named total (ε, δ) under one accountant, charged with the
releases of every fit that names it, and kept in a file that outlives the process.

Composition across fits
-----------------------
Every fit reads all the rows of the dataset, so the releases of several fits compose
sequentially: the budget's ledger is the concatenation of the fits' ledgers and its
accountant composes them, ε at the budget's δ being what the fits have spent together
(with PLD or RDP this is much less than the sum of the fits' ε: ten fits at ε = 1 under
PLD at δ = 1e-6 spend about 3.5, not 10). Only the names that tie releases together are
made each fit's own (:func:`fit_events`): a fit's Poisson subsample of tree 3 and another
fit's are different samples, amplified separately, and the disjoint row parts of one fit's
DPBoost ensemble are disjoint from each other, never from another fit's rows.

Protocol
--------
:meth:`PrivacyBudget.reserve` takes the planned releases of a fit before its first release
(DESIGN.md: "checked before data is touched"). If they would bring the total above the
budget it raises :class:`~dpxgb_dask.privacy.validation.BudgetError` and records nothing.
:meth:`PrivacyBudget.settle` replaces the reservation by the releases the fit actually
made, however it ended (finished, failed, stopped). A reservation that is never settled (the
process died mid-fit) stays charged in full, which can only overstate what was spent.

Every number here is computed from public parameters (mechanisms, sensitivities, noise
scales, sampling rates): a budget's status is public.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import time

from .accountants import get_accountant
from .composition import rdp_only
from .json_files import locked_file, write_json_atomically
from .ledger import Ledger, PrivacyEvent
from .validation import BudgetError, check_delta, check_epsilon

__all__ = ["BudgetStore", "PrivacyBudget", "budget_record", "check_within", "fit_events"]

_FORMAT = "dpxgb-budgets"
_VERSION = 1
#: Accountants a budget may use (``"best"``: the smallest of the three).
BUDGET_ACCOUNTANTS = ("basic", "best", "pld", "rdp")
_MAX_NAME = 100
#: How a charged fit ended ("reserved" while it runs).
FIT_STATES = ("finished", "failed", "stopped")


def _check_name(name):
    if not isinstance(name, str) or not name.strip() or len(name) > _MAX_NAME \
            or not name.isprintable():
        raise ValueError(f"budget must be a non-empty printable str of at most {_MAX_NAME} "
                         f"characters (the budget's name), got {name!r}")
    return name


def check_within(events, epsilon, delta, accountant):
    """The ε that ``events`` spend together, or
    :class:`~dpxgb_dask.privacy.validation.BudgetError` if it exceeds ``epsilon`` (compared
    exactly: a budget is never overdrawn by a rounding margin).

    Check before a release touches data, record after it: a caller checks its planned
    events with those already spent.

    Parameters
    ----------
    events : sequence of PrivacyEvent
    epsilon : float
        The budget's total ε (> 0).
    delta : float
        δ at which ``events`` are accounted.
    accountant : Accountant

    Returns
    -------
    float
        ε of ``events`` under ``accountant`` at ``delta`` (0 for no events).

    Raises
    ------
    BudgetError
        Naming the ε reached and the budget.
    """
    epsilon = check_epsilon(epsilon, "epsilon")
    events = list(events)
    spent = float(accountant.get_epsilon(Ledger(events), delta)) if events else 0.0
    if spent > epsilon:
        hint = _rdp_only_hint(events, spent)
        raise BudgetError(f"{len(events)} releases would bring the privacy loss to "
                          f"epsilon={spent:.6g} at delta={delta:g} ({accountant!r}), above "
                          f"the budget epsilon={epsilon:g}{'; ' + hint if hint else ''}")
    return spent


def _rdp_only_hint(events, spent):
    """Why ``events`` spend ε = ∞ when RDP alone accounts them (else "")."""
    if math.isinf(spent) and rdp_only(events):
        return ("a private selection or distributed noise is accounted by RDP alone: use a "
                "budget with accountant 'rdp' or 'best'")
    return ""


def fit_events(events, fit_id):
    """A fit's release events as a budget records them: its Poisson subsample, disjoint
    group, individual filter and selection names prefixed by ``fit_id``, its noise stream ids dropped
    (they identify replays within one fit only).

    Parameters
    ----------
    events : iterable of PrivacyEvent
    fit_id : str

    Returns
    -------
    list of PrivacyEvent
    """
    out = []
    for event in events:
        changes = {"stream": None}
        if event.subsample is not None:
            changes["subsample"] = f"{fit_id}/{event.subsample}"
        if event.disjoint_group is not None:
            changes["disjoint_group"] = f"{fit_id}/{event.disjoint_group}"
        if event.individual_filter is not None:
            changes["individual_filter"] = f"{fit_id}/{event.individual_filter}"
        if event.selection is not None:
            changes["selection"] = f"{fit_id}/{event.selection}"
        out.append(dataclasses.replace(event, **changes))
    return out


class PrivacyBudget:
    """A named privacy budget and the fits charged to it.

    Parameters
    ----------
    name : str
    epsilon : float
        Total ε the fits may spend together, > 0.
    delta : float
        δ at which the total is accounted, in [0, 1).
    accountant : {"pld", "rdp", "basic", "best"}
        Composes the fits' releases (:func:`~dpxgb_dask.privacy.accountants.get_accountant`).
    fits : list of dict, optional
        The charges so far (as :meth:`to_dict` writes them).
    created : float, optional
        Creation time (Unix seconds).
    """

    def __init__(self, name, epsilon, delta, accountant="pld", fits=(), created=None):
        self.name = _check_name(name)
        self.epsilon = check_epsilon(epsilon, "epsilon")
        self.delta = check_delta(delta, "delta")
        if accountant not in BUDGET_ACCOUNTANTS:
            raise ValueError(f"accountant must be one of {list(BUDGET_ACCOUNTANTS)}, "
                             f"got {accountant!r}")
        self.accountant = accountant
        self.created = time.time() if created is None else float(created)
        self.fits = []
        for fit in fits:
            self.fits.append({
                "fit": str(fit["fit"]), "state": fit["state"], "time": float(fit["time"]),
                "events": [e if isinstance(e, PrivacyEvent) else PrivacyEvent.from_dict(e)
                           for e in fit["events"]]})

    def __repr__(self):
        return (f"PrivacyBudget({self.name!r}, epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"accountant={self.accountant!r}, fits={len(self.fits)})")

    def _events(self):
        return [e for fit in self.fits for e in fit["events"]]

    def _epsilon_of(self, events):
        if not events:
            return 0.0
        return float(get_accountant(self.accountant).get_epsilon(Ledger(events), self.delta))

    def spent(self):
        """float: ε the charged fits have spent together, at ``delta`` under
        ``accountant`` (reservations count in full)."""
        return self._epsilon_of(self._events())

    def reserve(self, fit_id, events):
        """Charge a fit's planned releases, or refuse it.

        Parameters
        ----------
        fit_id : str
        events : iterable of PrivacyEvent
            Every release the fit will make (``ReleasePlan.ledger()``).

        Returns
        -------
        float
            The total ε with this fit.

        Raises
        ------
        BudgetError
            If the total would exceed ``epsilon``; nothing is recorded.
        ValueError
            If ``fit_id`` is already charged.
        """
        fit_id, events = str(fit_id), list(events)
        total = self.check(fit_id, events)
        self.fits.append({"fit": fit_id, "state": "reserved", "time": time.time(),
                          "events": fit_events(events, fit_id)})
        return total

    def check(self, fit_id, events):
        """The total ε with a fit's planned releases, or
        :class:`~dpxgb_dask.privacy.validation.BudgetError` (nothing is recorded either way;
        :meth:`reserve` checks and records).

        Parameters
        ----------
        fit_id : str
        events : iterable of PrivacyEvent

        Returns
        -------
        float
        """
        fit_id = str(fit_id)
        if any(f["fit"] == fit_id for f in self.fits):
            raise ValueError(f"fit {fit_id} is already charged to budget {self.name!r}")
        planned = fit_events(events, fit_id)
        try:
            total = check_within(self._events() + planned, self.epsilon, self.delta,
                                 get_accountant(self.accountant))
        except BudgetError:
            total = self._epsilon_of(self._events() + planned)
            spent_before = self.spent()
            advice = _rdp_only_hint(planned, total) \
                or "Lower epsilon or n_estimators, or use another budget"
            raise BudgetError(
                f"budget {self.name!r} refuses this fit: its releases would bring the total "
                f"to epsilon = {total:.6g} (at delta = {self.delta:g}, {self.accountant} "
                f"accountant) above the budget's {self.epsilon:g}; {spent_before:.6g} is "
                f"spent by {len(self.fits)} fits. Nothing was spent. {advice}.") from None
        return total

    def settle(self, fit_id, events, state):
        """Replace a fit's reservation by the releases it made.

        Parameters
        ----------
        fit_id : str
        events : iterable of PrivacyEvent
            The fit's recorded releases (its ledger), as many as it made before it ended.
        state : {"finished", "failed", "stopped"}
        """
        if state not in FIT_STATES:
            raise ValueError(f"state must be one of {list(FIT_STATES)}, got {state!r}")
        for fit in self.fits:
            if fit["fit"] == str(fit_id):
                fit["events"] = fit_events(events, fit["fit"])
                fit["state"] = state
                fit["time"] = time.time()
                return
        raise ValueError(f"fit {fit_id} has no reservation in budget {self.name!r}")

    def status(self):
        """Public summary: totals and one row per fit.

        Returns
        -------
        dict
            ``{"name", "epsilon", "delta", "accountant", "spent", "remaining", "n_fits",
            "fits": [{"fit", "state", "time", "n_releases", "epsilon"}]}``; a fit's
            ``epsilon`` is its own releases' ε under the budget's accountant and δ.
        """
        spent = self.spent()
        return {
            "name": self.name, "epsilon": self.epsilon, "delta": self.delta,
            "accountant": self.accountant, "spent": spent,
            "remaining": max(0.0, self.epsilon - spent), "n_fits": len(self.fits),
            "created": self.created,
            "fits": [{"fit": f["fit"], "state": f["state"], "time": f["time"],
                      "n_releases": len(f["events"]),
                      "epsilon": self._epsilon_of(f["events"])} for f in self.fits],
        }

    def to_dict(self):
        """JSON-ready dict (inverse: ``PrivacyBudget(**d)``)."""
        return {"name": self.name, "epsilon": self.epsilon, "delta": self.delta,
                "accountant": self.accountant, "created": self.created,
                "fits": [dict(f, events=[e.to_dict() for e in f["events"]])
                         for f in self.fits]}


class BudgetStore:
    """Named budgets kept in one JSON file.

    Every operation takes an exclusive lock on ``<path>.lock`` (``fcntl.flock``), reads the
    file, and writes it back atomically (a temporary file, ``fsync``, ``os.replace``) if it
    changed anything: several processes on one machine (a scheduler, an embedded cluster,
    ``dpxgb budget create --file``) share the file without losing each other's updates.

    Parameters
    ----------
    path : str or os.PathLike
        The file (created with its directory at the first budget). A file of another
        format is refused rather than overwritten.
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        self._budgets = {}
        with self._locked():  # refuses a file of another format now
            pass

    @contextlib.contextmanager
    def _locked(self, save=False):
        with locked_file(self.path, create=save):
            self._load()
            yield
            if save:
                self._save()

    def _load(self):
        self._budgets = {}
        if not os.path.exists(self.path):
            return
        with open(self.path, encoding="utf-8") as f:
            try:
                data = json.load(f)
            except ValueError as exc:
                raise ValueError(f"the budget file {self.path} is not JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != _FORMAT \
                or data.get("version") != _VERSION:
            raise ValueError(f"the budget file {self.path} is not a dpxgb budget file "
                             f"(format {_FORMAT!r}, version {_VERSION})")
        for entry in data.get("budgets", []):
            budget = PrivacyBudget(**entry)
            self._budgets[budget.name] = budget

    def names(self):
        """list of str: the budgets' names, sorted."""
        with self._locked():
            return sorted(self._budgets)

    def create(self, name, epsilon, delta, accountant="pld"):
        """Create and save a budget; a name already in use is refused (a budget is never
        reset by creating it again).

        Returns
        -------
        dict
            Its :meth:`PrivacyBudget.status`.
        """
        budget = PrivacyBudget(name, epsilon, delta, accountant)
        with self._locked(save=True):
            if name in self._budgets:
                raise ValueError(f"budget {name!r} already exists (epsilon = "
                                 f"{self._budgets[name].epsilon:g}); choose another name")
            self._budgets[name] = budget
        return budget.status()

    def _get(self, name):
        _check_name(name)
        if name not in self._budgets:
            known = ", ".join(repr(n) for n in sorted(self._budgets)) or "none"
            raise ValueError(f"budget {name!r} does not exist on this scheduler (budgets: "
                             f"{known}); create it first (dpxgb budget create, or "
                             "dpxgb_dask.create_budget)")
        return self._budgets[name]

    def check(self, name, fit_id, events):
        """:meth:`PrivacyBudget.check` (nothing saved)."""
        with self._locked():
            return self._get(name).check(fit_id, events)

    def reserve(self, name, fit_id, events):
        """:meth:`PrivacyBudget.reserve`, saved."""
        with self._locked(save=True):
            return self._get(name).reserve(fit_id, events)

    def settle(self, name, fit_id, events, state):
        """:meth:`PrivacyBudget.settle`, saved; returns the budget's status."""
        with self._locked(save=True):
            budget = self._get(name)
            budget.settle(fit_id, events, state)
            return budget.status()

    def status(self, name):
        """:meth:`PrivacyBudget.status` of the budget ``name``; ValueError naming the
        known budgets when there is no such budget."""
        with self._locked():
            return self._get(name).status()

    def statuses(self):
        """list of dict: :meth:`PrivacyBudget.status` of every budget, by name."""
        with self._locked():
            return [self._budgets[n].status() for n in sorted(self._budgets)]

    def _save(self):
        write_json_atomically(self.path, {
            "format": _FORMAT, "version": _VERSION,
            "budgets": [self._budgets[n].to_dict() for n in sorted(self._budgets)]})


def budget_record(status, fit_id):
    """What a model says of its budget across fits (public): the budget's terms, the ε of
    this fit's releases under the budget's accountant and δ, and the budget's total after
    it.

    Parameters
    ----------
    status : dict
        :meth:`PrivacyBudget.status` after the fit was charged.
    fit_id : str

    Returns
    -------
    dict
        ``{"name", "epsilon", "delta", "accountant", "spent", "remaining", "n_fits",
        "this_fit"}``.
    """
    this_fit = next(f for f in status["fits"] if f["fit"] == fit_id)
    return {"name": status["name"], "epsilon": status["epsilon"], "delta": status["delta"],
            "accountant": status["accountant"], "spent": status["spent"],
            "remaining": status["remaining"], "n_fits": status["n_fits"],
            "this_fit": this_fit["epsilon"]}
