"""The algorithm: DP gradient boosting over partitions it reaches through one protocol, with
no ``distributed`` import (it runs the same over in-process partitions).

:mod:`~dpxgb_dask.boosting.coordinator` sequences a fit and does nothing else; the release
plan (:mod:`~dpxgb_dask.boosting.plan`) holds every privacy number; the split, leaf and
candidate releases (:mod:`~dpxgb_dask.boosting.splits`, :mod:`~dpxgb_dask.boosting.leaves`,
:mod:`~dpxgb_dask.boosting.candidates`) are objects built once per fit; a partition's state
(:mod:`~dpxgb_dask.boosting.partition`) computes exact aggregates where the rows are, and
:mod:`~dpxgb_dask.boosting.protocol` is what the two sides say to each other.
"""
