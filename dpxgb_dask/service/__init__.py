"""The DP training service (``dpxgb serve``): analysts who never hold a Dask client train
DP models on registered datasets through an HTTP API, with budgets in a database.

=============  =========================================================================
``app``        the HTTP API (FastAPI) and its web page
``schemas``    what requests may hold; a job's training parameters
``store``      the database's operations: tokens, datasets, budgets, jobs
``database``   the tables (SQLAlchemy) and their migrations (Alembic)
``runner``     runs the jobs on the cluster with the service's Dask client
``server``     the service put together, and ``serve``
``client``     a thin Python client, :class:`~dpxgb_dask.service.client.Client`
``cli``        the ``dpxgb serve`` and ``dpxgb service`` commands
=============  =========================================================================
"""
from .._lazy import lazy_exports

#: ``dpxgb serve``'s port (the k8s manifests' too): not one of Dask's (the scheduler's
#: 8786, its dashboard's 8787), so the service runs next to a scheduler as it is.
DEFAULT_PORT = 8000

_EXPORTS = {
    "Client": ".client",
    "ServiceError": ".client",
    "Service": ".server",
    "serve": ".server",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
__all__ = sorted(_EXPORTS)
