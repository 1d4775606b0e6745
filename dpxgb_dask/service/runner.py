"""Runs the service's jobs on the Dask cluster, a few at a time, with the service's own
client (the only one analysts' work goes through).

A job's rows are read by the workers (``dask.dataframe.read_parquet`` / ``read_csv`` of the
dataset's location): they never pass through the service. The fit names no scheduler
budget: the service's database holds the analysts' budgets, charged before the job is
queued (:meth:`~dpxgb_dask.service.store.Store.submit`) and settled when it ends.
"""
from concurrent.futures import ThreadPoolExecutor
import logging
import math
import threading
import time
import warnings

import numpy as np

from ..boosting.calibration import make_plan
from ..inputs import encode_labels_lazily
from ..privacy.validation import NoBudgetWarning
from ..training import train
from .schemas import DatasetSchema, JobParams, train_params
from .store import events_of

logger = logging.getLogger("dpxgb_dask.service")


def read_dataset(dataset):
    """The dask collections (X, y) of a registered dataset, read by the workers.

    Parameters
    ----------
    dataset : Dataset
        Its ``location``, ``format`` and ``schema``.

    Returns
    -------
    X : dask.dataframe.DataFrame
        The schema's features, in its order.
    y : dask.dataframe.Series
    """
    import dask.dataframe as dd

    schema = DatasetSchema.model_validate(dataset.schema)
    columns = [f.name for f in schema.features] + [schema.label]
    if dataset.format == "parquet":
        frame = dd.read_parquet(dataset.location, columns=columns)
    else:
        frame = dd.read_csv(dataset.location, usecols=columns)
    y = frame[schema.label]
    if schema.classes is not None:  # (the registered classes map the labels, strings too)
        y = encode_labels_lazily(y, np.asarray(schema.classes, dtype=object))
    return frame[[f.name for f in schema.features]], y


def check_dataset(location, format, schema):
    """Check the owner's registration against its data, before any analyst can spend on it:
    the location reads as ``format``, every feature and the label are columns of it, and
    every feature is numeric (a categorical one: its codes 0..k-1). Read in the service's
    process, which is the owner's (Parquet: the metadata; CSV: dask's sample of the first
    bytes); the errors are the owner's, and may name the data's columns.

    Parameters
    ----------
    location : str
    format : {"parquet", "csv"}
    schema : dict
        :class:`~dpxgb_dask.service.schemas.DatasetSchema`, validated.

    Raises
    ------
    ValueError
        Naming the field (``location`` or ``schema``) and what is wrong.
    """
    import dask.dataframe as dd
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    schema = DatasetSchema.model_validate(schema)
    try:
        frame = dd.read_parquet(location) if format == "parquet" else dd.read_csv(location)
    except Exception as exc:  # (whatever the reader says: the owner's own file)
        raise ValueError(f"location: no {format} dataset can be read at {location!r} "
                         f"({type(exc).__name__}: {exc})") from None
    needed = [f.name for f in schema.features] + [schema.label]
    absent = [name for name in needed if name not in frame.columns]
    if absent:
        raise ValueError(f"schema: the columns {absent} are not in the data at {location!r} "
                         f"(its columns: {list(frame.columns)[:50]})")
    for feature in schema.features:
        dtype = frame.dtypes[feature.name]
        if not (is_numeric_dtype(dtype) or is_bool_dtype(dtype)):
            raise ValueError(f"schema.features: {feature.name!r} is of dtype {dtype} in the "
                             "data; a feature must be numeric (a categorical one holds its "
                             "codes 0..k-1)")
    if schema.objective == "reg:squarederror" and not is_numeric_dtype(
            frame.dtypes[schema.label]):
        raise ValueError(f"schema.label: {schema.label!r} is of dtype "
                         f"{frame.dtypes[schema.label]} in the data; a regression label "
                         "must be numeric")
    if schema.classes is not None:
        # (the whole label column, read here for the owner: a job leaves out a row whose
        # label is not a registered class, since its failure would depend on that row)
        column = (dd.read_parquet(location, columns=[schema.label]) if format == "parquet"
                  else dd.read_csv(location, usecols=[schema.label]))[schema.label]
        labels = column.dropna().unique().compute()
        unknown = sorted(set(labels.tolist()) - set(schema.classes), key=str)
        if unknown:
            raise ValueError(f"schema.classes: the label column {schema.label!r} holds "
                             f"labels that are not classes, {unknown[:10]!r}; the classes "
                             f"are {list(schema.classes)!r}")


def planned_events(dataset, params):
    """The releases a job will make (its plan's ledger), from public facts only: the
    dataset's schema and the job's parameters.

    Returns
    -------
    train_params : TrainParams
    events : list of PrivacyEvent
    """
    schema = DatasetSchema.model_validate(dataset.schema)
    resolved = train_params(schema, JobParams.model_validate(params))
    return resolved, list(make_plan(resolved, len(schema.features)).ledger().events)


#: A job's end (its status, charge and model) is written at the first multiple of this many
#: seconds after its submission, so that an analyst who polls learns its duration only to
#: within this step (a fit's duration grows with the rows).
STATUS_QUANTUM_SECONDS = 10.0


def next_step(created, now, quantum):
    """The first time ``created + k * quantum`` (k = 1, 2, ...) at or after ``now``; ``now``
    itself when ``quantum`` is 0."""
    if quantum <= 0:
        return now
    return created + max(1, math.ceil((now - created) / quantum)) * quantum


#: What an analyst reads of a job that failed once its rows were being read: the message of
#: such an error may quote a cell (a CSV value that did not parse) or depend on the rows.
DATA_ERROR = ("the job failed while its rows were read or trained on; the message may "
              "depend on the data, so it is kept in the service's log for the dataset's "
              "owner")


def analyst_error(exc, rows_read):
    """The error an analyst reads of a failed job: a fixed vocabulary.

    Before any row is read, the job fails only on public facts (its parameters, checked
    against the dataset's registered schema): the project's validation message names the
    fields and those facts, and is shown whole. From the moment the rows are read, the
    analyst reads the exception's type and :data:`DATA_ERROR`, never its message.

    Parameters
    ----------
    exc : Exception
    rows_read : bool
        Whether the job had started reading its rows.

    Returns
    -------
    str
    """
    if rows_read:
        return f"{type(exc).__name__}: {DATA_ERROR}"
    return f"{type(exc).__name__}: {exc}"[:2000]


class JobRunner:
    """Runs queued jobs on ``client``'s cluster, ``concurrency`` at a time.

    Parameters
    ----------
    store : Store
    client : distributed.Client
    concurrency : int
    """

    def __init__(self, store, client, concurrency=2, status_quantum=STATUS_QUANTUM_SECONDS):
        self.store = store
        self.client = client
        self.status_quantum = status_quantum
        self._pool = ThreadPoolExecutor(max_workers=concurrency,
                                        thread_name_prefix="dpxgb-job")
        self._ends = {}  # job id -> (its timer, the write of its end)
        self._lock = threading.Lock()

    def submit(self, job_id):
        """Queue a job (already recorded and charged)."""
        self._pool.submit(self._run, job_id)

    def _run(self, job_id):
        job = self.store.job(job_id)
        dataset = self.store.job_dataset(job)
        rows_read = False
        try:
            self.store.start(job_id)
            params = train_params(DatasetSchema.model_validate(dataset.schema),
                                  JobParams.model_validate(job.params))
            rows_read = True  # (from here an error may carry a cell, or depend on one)
            X, y = read_dataset(dataset)
            with warnings.catch_warnings():
                # (the service's database holds the budgets, not the scheduler's file)
                warnings.simplefilter("ignore", NoBudgetWarning)
                booster = train(params, X, y, client=self.client)
            model = booster.to_dict()
            self._end_at_step(job, lambda: self.store.finish(job_id, model, events_of(model)))
        except Exception as exc:  # the job fails; the service goes on
            # the whole text is the owner's (the service's log); the analyst's is public
            logger.warning("job %s failed: %s: %s", job_id, type(exc).__name__, exc)
            error = analyst_error(exc, rows_read)
            # before the rows are read the job released nothing, and failed on public facts
            # alone: it is not charged (whether it is cannot depend on a row)
            self._end_at_step(job, lambda: self.store.fail(job_id, error, released=rows_read))

    def _end_at_step(self, job, write):
        """Write a job's end at its next step (:data:`STATUS_QUANTUM_SECONDS`), from a timer:
        the job's thread is free for the next job now."""
        now = time.time()
        delay = next_step(job.created, now, self.status_quantum) - now
        if delay <= 0:
            return write()
        timer = threading.Timer(delay, self._write_end, (job.id,))
        timer.daemon = True
        with self._lock:
            self._ends[job.id] = timer, write
        timer.start()

    def _write_end(self, job_id):
        with self._lock:
            pending = self._ends.pop(job_id, None)
        if pending is not None:
            pending[1]()

    def close(self):
        """Wait for the running jobs, write the ends still waiting for their step, then
        stop."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            pending, self._ends = list(self._ends.values()), {}
        for timer, write in pending:
            timer.cancel()
            write()
