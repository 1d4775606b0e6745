"""dpxgb_dask: differentially private gradient-boosted trees on dask.distributed."""

__version__ = "0.1.0.dev0"
