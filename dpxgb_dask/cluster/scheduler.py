"""The scheduler side of dpxgb: the plugin whose handlers run a fit's coordinator
(``dpxgb_fit``) and keep the privacy budgets across fits (``dpxgb_budget``), and the
dashboard page's board.

The plugin is registered once per cluster by the first fit and stays, like an installed
library: it holds no data between fits (it keeps the public summaries of the last fits for
the dashboard page, :mod:`~dpxgb_dask.cluster.dashboard`). Starting a fit through a handler
(rather than ``Client.run_on_scheduler``) keeps the scheduler's event log as it was.
``dask scheduler --preload dpxgb_dask.cluster.preload`` installs it when the scheduler
starts.
"""
import asyncio
import hmac
import logging
import os
import time

import dask.config
from distributed.diagnostics.plugin import SchedulerPlugin

from ..boosting.coordinator import Coordinator
from ..boosting.calibration import make_plan
from ..boosting.selection import Selection, SelectionPlan
from ..boosting.silo_plan import planned_silo_events
from ..privacy.budget import BudgetStore, budget_record
from ..privacy.ledger import PrivacyEvent
from ..privacy.validation import BudgetError, CalibrationError
from .backend import DaskBackend, WorkerLost
from .codec import register_error
from .dashboard import FitBoard, install_routes
from .fit_request import FitRequest
from .wire import KEEPALIVE_SECONDS, PLUGIN_NAME, ClientLeftError, error_reply, reply

logger = logging.getLogger("dpxgb_dask")

register_error(BudgetError)  # (a refused fit's error keeps its type in the client)
register_error(CalibrationError)

#: How often the coordinator checks that its client is still connected.
CLIENT_CHECK_SECONDS = 0.5

#: Dask's config keys of dpxgb's scheduler plugin (environment ``DASK_DPXGB__...``).
BUDGET_FILE, CLIENTS_CREATE_BUDGETS, REQUIRE_BUDGET = CONFIG_KEYS = (
    "dpxgb.budget-file", "dpxgb.clients-create-budgets", "dpxgb.require-budget")

#: The refusal of a fit that names no budget where one is required.
BUDGET_REQUIRED = ("this scheduler requires every fit to name a privacy budget "
                   "(dpxgb.require-budget): pass budget=<name>")


def budget_file():
    """Where the scheduler keeps the privacy budgets across fits: Dask's config key
    ``dpxgb.budget-file`` (environment ``DASK_DPXGB__BUDGET_FILE``), by default
    ``~/.dpxgb/budgets.json`` in the scheduler's home."""
    path = dask.config.get(BUDGET_FILE, None)
    return os.path.expanduser(path or os.path.join("~", ".dpxgb", "budgets.json"))


def clients_create_budgets():
    """bool: Dask's config key ``dpxgb.clients-create-budgets`` (default true). False keeps
    budget creation to whoever can write the budget file (``dpxgb budget create --file``),
    so that clients cannot give themselves a new budget."""
    return bool(dask.config.get(CLIENTS_CREATE_BUDGETS, True))


def budget_required():
    """bool: Dask's config key ``dpxgb.require-budget``: the scheduler refuses a fit that
    names no budget."""
    return bool(dask.config.get(REQUIRE_BUDGET, False))


def _send_to_client(scheduler, client_id, topic, event):
    """Deliver a progress event straight to one client's event handler for ``topic``,
    without the scheduler's event log (which would keep it after the fit), and without a
    timestamp: the time a level takes grows with its nodes' rows (events carry counts and
    ε only)."""
    comm = scheduler.client_comms.get(client_id)
    if comm is not None:
        comm.send({"op": "event", "topic": topic, "event": event})


def _check_budget_message(name, epsilon, delta, accountant, fit_id, events):
    """Refuse a ``dpxgb_budget`` message whose fields are not plain data of their kind
    (they are read as data, never as code), naming the field."""
    def number(value):
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    fields = {
        "name": (isinstance(name, str), "a string"),
        "epsilon": (number(epsilon), "a number"),
        "delta": (number(delta), "a number"),
        "accountant": (isinstance(accountant, str), "a string"),
        "fit_id": (isinstance(fit_id, str), "a string"),
        "events": (isinstance(events, (list, tuple)) and all(isinstance(e, dict)
                                                             for e in events),
                   "a list of event dicts"),
    }
    values = dict(name=name, epsilon=epsilon, delta=delta, accountant=accountant,
                  fit_id=fit_id, events=events)
    for field, (ok, kind) in fields.items():
        if values[field] is not None and not ok:
            raise ValueError(f"the budget message's {field} must be {kind} or None, got a "
                             f"{type(values[field]).__name__}")


class DPXGBSchedulerPlugin(SchedulerPlugin):
    """Installs the ``dpxgb_fit`` handler on the scheduler, which runs one fit's coordinator
    (:meth:`~dpxgb_dask.cluster.scheduler.DPXGBSchedulerPlugin.coordinate`), and the
    ``dpxgb_budget`` handler, which creates, reads and checks
    the privacy budgets across fits (:class:`~dpxgb_dask.privacy.budget.BudgetStore` in
    :func:`budget_file`). Both reply with :func:`~dpxgb_dask.cluster.wire.reply` or
    :func:`~dpxgb_dask.cluster.wire.error_reply`."""

    idempotent = True
    name = PLUGIN_NAME

    async def start(self, scheduler):
        """Install the handlers and the dashboard page on ``scheduler``."""
        self._scheduler = scheduler
        if getattr(self, "board", None) is None:  # a preloaded plugin is started twice
            self.running = {}  # fit id -> client id, while its coordinator runs
            # (fit id, partition) -> (capability, future of the worker address), while the
            # fit's client loads a partition of dask inputs again
            self.reloads = {}
            self.board = FitBoard()
            self._budget_lock = asyncio.Lock()
        scheduler.handlers["dpxgb_fit"] = self.fit
        scheduler.handlers["dpxgb_budget"] = self.budget
        scheduler.handlers["dpxgb_reloaded"] = self.reloaded
        install_routes(scheduler)

    async def close(self):
        """Remove the handlers."""
        self._scheduler.handlers.pop("dpxgb_fit", None)
        self._scheduler.handlers.pop("dpxgb_budget", None)
        self._scheduler.handlers.pop("dpxgb_reloaded", None)

    # -- budgets ----------------------------------------------------------------------------

    def budgets(self):
        """The :class:`~dpxgb_dask.privacy.budget.BudgetStore` of :func:`budget_file`
        (read again when the configured path changes)."""
        path = budget_file()
        store = getattr(self, "_budgets", None)
        if store is None or store.path != path:
            store = self._budgets = BudgetStore(path)
        return store

    async def run_budget(self, method, *args):
        """Run a :class:`~dpxgb_dask.privacy.budget.BudgetStore` method in a thread (the
        accounting of many fits takes a while: the event loop goes on serving the cluster),
        one at a time: a reservation's check and record are atomic."""
        async with self._budget_lock:
            return await asyncio.to_thread(getattr(self.budgets(), method), *args)

    async def budget(self, comm=None, *, action=None, name=None, epsilon=None, delta=None,
                     accountant=None, fit_id=None, events=None):
        """The ``dpxgb_budget`` handler. ``action``: "create" (``name``, ``epsilon``,
        ``delta``, ``accountant``), "status" (``name``), "list", or "admit" (``name``,
        ``fit_id``, ``events``: a fit's planned releases as dicts), which refuses a fit
        whose releases its budget cannot afford, or that names no budget where one is
        required (:func:`budget_required`), before any row is loaded."""
        try:
            _check_budget_message(name, epsilon, delta, accountant, fit_id, events)
            if action == "create":
                if not clients_create_budgets():
                    raise PermissionError(
                        "this scheduler does not let clients create budgets "
                        "(dpxgb.clients-create-budgets: false): its administrator creates "
                        "them with `dpxgb budget create NAME --file PATH`")
                result = await self.run_budget("create", name, epsilon, delta, accountant)
            elif action == "status":
                result = await self.run_budget("status", name)
            elif action == "list":
                result = await self.run_budget("statuses")
            elif action == "admit" and name is None:
                if budget_required():
                    raise BudgetError(BUDGET_REQUIRED)
                result = None
            elif action == "admit":
                result = await self.run_budget(
                    "check", name, fit_id, [PrivacyEvent.from_dict(e) for e in events])
            else:
                raise ValueError("action must be one of create, status, list, admit; got "
                                 f"{action!r}")
        except Exception as exc:
            return error_reply(exc)
        return reply(result)

    # -- fits ---------------------------------------------------------------------------------

    async def fit(self, comm=None, **request):
        """The ``dpxgb_fit`` handler: ``request`` is the plain keyword arguments of a
        :class:`~dpxgb_dask.cluster.fit_request.FitRequest` (its ``to_wire``), checked
        (``FitRequest.from_wire``) before :meth:`coordinate` runs the fit."""
        try:
            result = await self.coordinate(FitRequest.from_wire(request,
                                                                self._scheduler.workers))
        except Exception as exc:
            return error_reply(exc)
        return reply(result)

    async def coordinate(self, request):
        """Run one fit's coordinator in this process.

        ``request`` is a checked :class:`~dpxgb_dask.cluster.fit_request.FitRequest`; the
        release plan is computed here from its ``params``: every clip and every noise
        follows this one plan, whatever the client computed. ``evaluations`` holds the fit id,
        placement and sources of each private evaluation set's partitions; a partition
        whose source is the client is loaded again by the client (on ``reload_topic``).
        ``selection`` (configurations, spec) runs a private selection among the
        configurations instead (:class:`~dpxgb_dask.boosting.selection.Selection`), planned
        here too.

        The budget is reserved before the first release (a refused fit spends nothing)
        and charged with the releases made, however the fit ends. The fit runs as a task
        watched every ``CLIENT_CHECK_SECONDS``: if its client leaves the scheduler, the
        task is cancelled. Whatever happens, every worker drops the fit.

        Returns
        -------
        dict
            ``{"model": Booster.to_dict(arrays=True), "warnings": [...]}``, ``"scores"`` and
            ``"score_estimates"`` with private evaluation sets (DP metrics; unclipped means
            and their noise): public and DP values only; plus
            ``"timings"`` only when asked (wall-clock times grow with the rows
            of each node: a coarse side channel, which is why they are not sent by
            default).
        """
        r = request
        # (calibration: a thread)
        plan = await (
            asyncio.to_thread(make_plan, r.params, r.n_features) if r.selection is None
            else asyncio.to_thread(SelectionPlan, r.selection[0], r.n_features, r.selection[1]))
        backends = [self._backend(r.client_id, r.reload_topic, r.capability, where,
                                  silos=r.params.cross_silo is not None)
                    for where in [(r.fit_id, r.placement, r.sources)] + list(r.evaluations)]
        backend = backends[0]
        planned = None
        try:
            if r.params.budget is not None:
                planned = plan.ledger().events
                if backend.n_silos:  # (a secure fit's noise is accounted by RDP alone)
                    planned = planned_silo_events(planned, backend.n_silos,
                                                  r.params.cross_silo == "secure")
                await self.run_budget("reserve", r.params.budget, r.fit_id, planned)
            elif budget_required():
                raise BudgetError(BUDGET_REQUIRED)
        except BaseException:
            await asyncio.gather(*(b.close() for b in backends))
            raise
        self.running[r.fit_id] = r.client_id
        ended, coordinator, status = ("failed", None), None, None
        try:
            progress = self.board.start(r.fit_id, r.client_id)
            publish = self._publisher(progress, r.client_id, r.topic)
            coordinator = Coordinator(r.params, plan, backend, r.n_features, r.feature_names,
                                      publish, init_model=r.init_model,
                                      evaluations=backends[1:]) \
                if r.selection is None else Selection(plan, backend, r.feature_names, publish)
            booster = await self._watch(coordinator, r.fit_id, r.client_id, backends)
            ended = "finished", None
        except ClientLeftError as exc:
            ended = "stopped", str(exc)
            raise
        except BaseException as exc:
            ended = "failed", type(exc).__name__
            raise
        finally:
            status = await self._end(r.fit_id, r.params.budget, coordinator, backends, ended,
                                     planned=planned if backend.n_silos else None)
        model = booster.to_dict(arrays=True)
        if status is not None:
            model["ledger"]["budget"] = budget_record(status, r.fit_id)
        result = {"model": model, "warnings": [(category.__name__, str(message))
                                               for category, message in coordinator.warnings]}
        if coordinator.scores:
            result["scores"] = coordinator.scores
            result["score_estimates"] = coordinator.score_estimates
        if r.with_timings:
            result["timings"] = dict(coordinator.timings, **backend.counts())
        return result

    def _backend(self, client_id, reload_topic, capability, where, *, silos=False):
        """The :class:`~dpxgb_dask.cluster.backend.DaskBackend` of one loaded fit (its rows,
        or a private evaluation set's: ``where``, its fit id, placement and sources), whose
        lost partitions of dask inputs its client loads again; ``silos``: a cross-silo fit,
        each worker a silo."""
        fit_id, placement, sources = where
        async def reload(index):
            return await self._reload_by_client(client_id, reload_topic, fit_id, capability,
                                                index)

        return DaskBackend(self._scheduler, fit_id, capability, placement, sources=sources,
                           reload=reload, silos=silos)

    async def _reload_by_client(self, client_id, topic, fit_id, capability, index):
        """Have the fit's client load partition ``index`` of its dask inputs again (from
        the blocks' graph, which only the client holds) and return the worker that holds
        it now."""
        if topic is None:
            raise WorkerLost(f"partition {index} of the fit was lost with its worker and its "
                             "client offered no way to load it again")
        waiting = asyncio.get_running_loop().create_future()
        self.reloads[fit_id, index] = capability, waiting
        try:
            _send_to_client(self._scheduler, client_id, topic, {"fit": fit_id, "index": index})
            address, error = await waiting
        finally:
            self.reloads.pop((fit_id, index), None)
        if error is not None or address not in self._scheduler.workers:
            raise WorkerLost(f"partition {index} of the fit could not be loaded again: "
                             f"{error or 'its new worker left'}", address)
        return address

    async def reloaded(self, comm=None, fit=None, capability=None, index=None, address=None,
                       error=None):
        """The ``dpxgb_reloaded`` handler: a client says where it loaded partition
        ``index`` of fit ``fit`` again (``address``), or why it could not (``error``,
        a string); the call carries the fit's capability."""
        waiting = self.reloads.get((fit, index)) if isinstance(fit, str) else None
        if waiting is None or not isinstance(capability, bytes) \
                or not hmac.compare_digest(capability, waiting[0]):
            return error_reply(KeyError(f"no reload of partition {index!r} of fit {fit!r} is "
                                        "awaited with this capability"))
        if not waiting[1].done():
            waiting[1].set_result((address if isinstance(address, str) else None,
                                   None if error is None else str(error)[:1000]))
        return reply(None)

    def _publisher(self, progress, client_id, topic):
        """Where the coordinator's progress events go: the board, and the client's
        progress display (``topic``) when it asked for one."""
        def publish(event):
            progress.update(event)
            if topic is not None:
                _send_to_client(self._scheduler, client_id, topic, event)

        return publish

    async def _watch(self, coordinator, fit_id, client_id, backends):
        """Run the coordinator's fit as a task, stopped when its client leaves; keep the
        fit's leases meanwhile (a slow worker must not let the others' expire)."""
        fit = asyncio.ensure_future(coordinator.fit())
        last_touch = time.monotonic()
        while not fit.done():
            await asyncio.wait([fit], timeout=CLIENT_CHECK_SECONDS)
            if fit.done():
                break
            if client_id not in self._scheduler.clients:
                fit.cancel()
                raise ClientLeftError(f"the client of fit {fit_id} left the scheduler; "
                                      "the fit stopped and its state was dropped")
            if time.monotonic() - last_touch >= KEEPALIVE_SECONDS:
                for backend in backends:
                    asyncio.ensure_future(backend.touch())
                last_touch = time.monotonic()
        return fit.result()

    async def _end(self, fit_id, budget, coordinator, backends, ended, *, planned=None):
        """Close a fit however it ended: the board, the workers' states (of every backend:
        its rows' and its evaluation sets'), and the budget charged with the releases
        made.

        ``planned``: a cross-silo fit's reserved events. Its silos release to the
        coordinator (each with its own noise) before the coordinator records a round's
        events, so a round that fails after some silo answered made releases the ledger
        does not hold: a cross-silo fit that does not finish is charged its whole plan.

        Returns
        -------
        dict or None
            The budget's status after the charge (None without a budget). A charge that
            fails is logged (its reservation stays charged in full) and raised unless the
            fit's own error is on its way.
        """
        self.running.pop(fit_id, None)
        progress = self.board.fits.get(fit_id)
        if progress is not None and coordinator is not None:
            # the releases of a fit that stopped between events
            progress.update({"releases": coordinator.unpublished_releases()})
        self.board.end(fit_id, *ended)
        await asyncio.gather(*(backend.close() for backend in backends))
        if budget is None:
            return None
        made = () if coordinator is None else coordinator.ledger.events
        if planned is not None and ended[0] != "finished":
            made = planned
        try:
            return await self.run_budget("settle", budget, fit_id, made, ended[0])
        except Exception as exc:
            logger.error("fit %s: its budget %r could not be charged (%s); its reservation "
                         "stays charged in full", fit_id, budget, exc)
            if ended[0] == "finished":
                raise
            return None
