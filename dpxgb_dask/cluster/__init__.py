"""Everything that runs dpxgb on a ``dask.distributed`` cluster, named by the process it runs
in: :mod:`~dpxgb_dask.cluster.client` (the user's process), :mod:`~dpxgb_dask.cluster.scheduler`
(the coordinator's handler, budgets, the dashboard page), :mod:`~dpxgb_dask.cluster.worker`
(the partitions' states), :mod:`~dpxgb_dask.cluster.backend` (the coordinator's way to the
workers) and :mod:`~dpxgb_dask.cluster.wire` (what all three agree on). This is the only
package that imports ``distributed``; it imports nothing here, so that a worker loads only
its own module.
"""
