"""Dask preload: ``dask scheduler --preload dpxgb_dask.cluster.preload`` installs dpxgb's
scheduler plugin when the scheduler starts (its ``dpxgb_fit`` and ``dpxgb_budget`` handlers
and the ``/dpxgb`` dashboard page) and the dashboard's ``/individual-dpxgb-fits`` plot, and
``dask worker --preload dpxgb_dask.cluster.preload`` installs the worker plugin. Without it,
the first fit registers both plugins (the plot needs the preload, or this module imported
before the scheduler starts in the same process)."""
from distributed import Scheduler

from . import dashboard_plot
from .scheduler import DPXGBSchedulerPlugin
from .wire import PLUGIN_NAME
from .worker import DPXGBWorkerPlugin

# (at import: distributed imports a preload before the scheduler builds its dashboard)
dashboard_plot.register()


async def dask_setup(server):
    """Install dpxgb's plugin on the server being started. (The first fit registers the
    worker plugin through the scheduler all the same, which sets it up again on each
    worker: harmless, as no fit has state there yet.)"""
    if isinstance(server, Scheduler):
        await server.register_scheduler_plugin(DPXGBSchedulerPlugin(), name=PLUGIN_NAME,
                                               idempotent=True)
    else:
        await server.plugin_add(DPXGBWorkerPlugin(), name=PLUGIN_NAME)
