"""The algorithm: DP gradient boosting over partitions it reaches through one protocol, with
no ``distributed`` import (it runs the same over in-process partitions).

:mod:`~dpxgb_dask.boosting.coordinator` sequences a fit and does nothing else; the release
plan (:mod:`~dpxgb_dask.boosting.plan`) holds every privacy number; the split, leaf and
candidate releases (:mod:`~dpxgb_dask.boosting.splits`, :mod:`~dpxgb_dask.boosting.leaves`,
:mod:`~dpxgb_dask.boosting.candidates`) are objects built once per fit. This package runs
in the coordinator's process; the partitions, where the rows are, run
:mod:`dpxgb_dask.partition` and apply its messages
(:mod:`~dpxgb_dask.partition.messages`); :mod:`~dpxgb_dask.boosting.protocol` holds the
interfaces the coordinator is written against.
"""
