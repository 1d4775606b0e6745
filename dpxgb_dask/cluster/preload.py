"""Dask preload: ``dask scheduler --preload dpxgb_dask.cluster.preload`` installs dpxgb's
scheduler plugin when the scheduler starts (its ``dpxgb_fit`` and ``dpxgb_budget`` handlers
and the ``/dpxgb`` dashboard page), and ``dask worker --preload dpxgb_dask.cluster.preload``
installs the worker plugin. Without it, the first fit registers both."""
from distributed import Scheduler

from .scheduler import DPXGBSchedulerPlugin
from .wire import PLUGIN_NAME
from .worker import DPXGBWorkerPlugin


async def dask_setup(server):
    """Install dpxgb's plugin on the server being started. (The first fit registers the
    worker plugin through the scheduler all the same, which sets it up again on each
    worker: harmless, as no fit has state there yet.)"""
    if isinstance(server, Scheduler):
        await server.register_scheduler_plugin(DPXGBSchedulerPlugin(), name=PLUGIN_NAME,
                                               idempotent=True)
    else:
        await server.plugin_add(DPXGBWorkerPlugin(), name=PLUGIN_NAME)
