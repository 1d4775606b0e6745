"""The Dask plugins of dpxgb: ``dpxgb_call`` on every worker, ``dpxgb_fit`` on the scheduler.

The worker handler and the fits' states are in ``worker.py``; the coordinator that the
scheduler handler runs is ``training.coordinate``. This module only plugs them into
``distributed`` (and is the one place of the package that imports its plugin classes).
Both plugins are registered once per cluster by the first fit and stay, like an installed
library: they hold no data between fits (the scheduler plugin keeps the public summaries of
the last fits for the dashboard page, ``dashboard.py``). Starting a fit through a handler
(rather than ``Client.run_on_scheduler``) keeps the scheduler's event log as it was.

``dask scheduler --preload dpxgb_dask.plugin`` installs the scheduler plugin, hence the
``/dpxgb`` dashboard page, when the scheduler starts (:func:`dask_setup`); on a worker the
same preload installs the worker plugin.
"""
import asyncio
import os
import pickle

import dask.config
from distributed.diagnostics.plugin import SchedulerPlugin, WorkerPlugin

from .worker import PLUGIN_NAME, forget_worker, handle_call, sweep_forever


class DPXGBWorkerPlugin(WorkerPlugin):
    """Installs the ``dpxgb_call`` handler and the lease sweeper on a worker.

    Registered once per cluster by the first fit (``idempotent``: later registrations are
    no-ops, so a running fit never loses its state to a re-registration). It stays
    registered after the fit, like an installed library: it holds no data between fits.
    """

    idempotent = True
    name = PLUGIN_NAME

    def setup(self, worker):
        address = worker.address

        async def call(comm=None, **kwargs):
            return await handle_call(address, **kwargs)

        worker.handlers["dpxgb_call"] = call
        self._sweeper = asyncio.ensure_future(sweep_forever(address))

    def teardown(self, worker):
        worker.handlers.pop("dpxgb_call", None)
        if getattr(self, "_sweeper", None) is not None:
            self._sweeper.cancel()
        forget_worker(worker.address)


def budget_file():
    """Where the scheduler keeps the privacy budgets across fits: Dask's config key
    ``dpxgb.budget-file`` (environment ``DASK_DPXGB__BUDGET_FILE``), by default
    ``~/.dpxgb/budgets.json`` in the scheduler's home."""
    path = dask.config.get("dpxgb.budget-file", None)
    return os.path.expanduser(path or os.path.join("~", ".dpxgb", "budgets.json"))


#: The refusal of a fit that names no budget where one is required.
BUDGET_REQUIRED = ("this scheduler requires every fit to name a privacy budget "
                   "(dpxgb.require-budget): pass budget=<name>")


def clients_create_budgets():
    """bool: Dask's config key ``dpxgb.clients-create-budgets`` (default true). False keeps
    budget creation to whoever can write the budget file (``dpxgb budget create --file``),
    so that clients cannot give themselves a new budget."""
    return bool(dask.config.get("dpxgb.clients-create-budgets", True))


def budget_required():
    """bool: Dask's config key ``dpxgb.require-budget``: the scheduler refuses a fit that
    names no budget."""
    return bool(dask.config.get("dpxgb.require-budget", False))


class DPXGBSchedulerPlugin(SchedulerPlugin):
    """Installs the ``dpxgb_fit`` handler on the scheduler: it runs one fit's coordinator
    (``training.coordinate``) and replies ``{"payload": pickled result}`` or
    ``{"error": pickled exception}`` (``worker.unpack_reply``); and the ``dpxgb_budget``
    handler, which creates and reads the privacy budgets across fits
    (:class:`~dpxgb_dask.privacy.budget.BudgetStore` in :func:`budget_file`)."""

    idempotent = True
    name = PLUGIN_NAME

    async def start(self, scheduler):
        from .dashboard import FitBoard, install_routes

        self._scheduler = scheduler
        if getattr(self, "board", None) is None:  # a preloaded plugin is started twice
            self.running = {}  # fit id -> client id, while its coordinator runs
            self.board = FitBoard()
            self._budget_lock = asyncio.Lock()
        scheduler.handlers["dpxgb_fit"] = self.fit
        scheduler.handlers["dpxgb_budget"] = self.budget
        install_routes(scheduler)

    async def close(self):
        self._scheduler.handlers.pop("dpxgb_fit", None)
        self._scheduler.handlers.pop("dpxgb_budget", None)

    def budgets(self):
        """The :class:`~dpxgb_dask.privacy.budget.BudgetStore` of :func:`budget_file`
        (read again when the configured path changes)."""
        from .privacy.budget import BudgetStore

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

    async def budget(self, comm=None, action=None, name=None, epsilon=None, delta=None,
                     accountant=None, fit_id=None, events=None):
        """``action``: "create" (``name``, ``epsilon``, ``delta``, ``accountant``), "status"
        (``name``), "list", or "check" (``name``, ``fit_id``, ``events``: a fit's planned
        releases as dicts). Replies like :meth:`fit`."""
        from .privacy.ledger import PrivacyEvent

        try:
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
            elif action == "check":
                result = await self.run_budget(
                    "check", name, fit_id, [PrivacyEvent.from_dict(e) for e in events])
            elif action == "required":
                result = budget_required()
            else:
                raise ValueError("action must be one of create, status, list, check, "
                                 f"required; got {action!r}")
        except Exception as exc:
            return {"error": pickle.dumps(exc)}
        return {"payload": pickle.dumps(result)}

    async def fit(self, comm=None, payload=None):
        from .training import coordinate

        try:
            result = await coordinate(self._scheduler, **pickle.loads(payload))
        except Exception as exc:
            return {"error": pickle.dumps(exc)}
        return {"payload": pickle.dumps(result, protocol=5)}


async def dask_setup(server):
    """Preload hook: ``--preload dpxgb_dask.plugin`` installs dpxgb's plugin when the
    server starts: on a scheduler, the ``dpxgb_fit`` handler and the dashboard page; on a
    worker, the ``dpxgb_call`` handler. (The first fit registers the worker plugin through
    the scheduler all the same, which sets it up again on each worker: harmless, as no fit
    has state there yet.)"""
    from distributed import Scheduler

    if isinstance(server, Scheduler):
        await server.register_scheduler_plugin(DPXGBSchedulerPlugin(), name=PLUGIN_NAME,
                                               idempotent=True)
    else:
        await server.plugin_add(DPXGBWorkerPlugin(), name=PLUGIN_NAME)
