"""Runs the service's jobs on the Dask cluster, a few at a time, with the service's own
client (the only one analysts' work goes through).

A job's rows are read by the workers (``dask.dataframe.read_parquet`` / ``read_csv`` of the
dataset's location): they never pass through the service. The fit names no scheduler
budget: the service's database holds the analysts' budgets, charged before the job is
queued (:meth:`~dpxgb_dask.service.store.Store.submit`) and settled when it ends.
"""
from concurrent.futures import ThreadPoolExecutor
import functools
import json
import logging
import math
import threading
import time
import types
import warnings

import numpy as np

from ..boosting.calibration import make_plan
from ..inputs import encode_labels_lazily
from ..privacy.budget import PrivacyBudget
from ..privacy.validation import BudgetError, NoBudgetWarning
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


#: The parameters of the job :func:`largest_job_epsilon` sizes: every default of
#: :class:`~.schemas.JobParams`.
DEFAULT_JOB = {name: field.default for name, field in JobParams.model_fields.items()
               if name != "epsilon" and field.default is not None}
#: :func:`largest_job_epsilon`'s precision: its answer is admitted, and one this factor
#: larger is not.
LARGEST_JOB_RTOL = 0.01


def largest_job_epsilon(dataset, budget_state):
    """The largest ε of a job with :data:`DEFAULT_JOB`'s parameters on ``dataset`` that a
    budget admits now, under its accountant (public: the budget's charges and the
    dataset's schema).

    Under the PLD and RDP accountants ε does not add up: a budget of 1.0 that spent 0.974
    may still admit a job of ε 0.04. The admitted set {x : the budget's charges composed
    with the job's planned releases at ε = x stay within its total} is searched by
    bisection on log x (each step plans the job), to within :data:`LARGEST_JOB_RTOL`,
    rounded down.

    Parameters
    ----------
    dataset : Dataset
    budget_state : dict
        The budget as :class:`~dpxgb_dask.privacy.budget.PrivacyBudget`'s keywords.

    Returns
    -------
    float
        0.0 when not even a thousandth of the budget's total is admitted.
    """
    return _largest_job(json.dumps(dataset.schema, sort_keys=True),
                        json.dumps(budget_state, sort_keys=True))


@functools.lru_cache(maxsize=256)
def _largest_job(schema_json, state_json):
    dataset = types.SimpleNamespace(schema=json.loads(schema_json))  # (all planning reads)
    budget = PrivacyBudget(**json.loads(state_json))

    def admitted(epsilon):
        try:
            budget.check("largest-job", planned_events(dataset, dict(DEFAULT_JOB,
                                                                      epsilon=epsilon))[1])
        except BudgetError:
            return False
        return True

    hi = budget.epsilon
    if admitted(hi):
        return float(hi)
    lo = hi * 1e-3
    if not admitted(lo):
        return 0.0
    while hi / lo > 1.0 + LARGEST_JOB_RTOL:
        middle = math.sqrt(lo * hi)
        lo, hi = (middle, hi) if admitted(middle) else (lo, middle)
    return float(lo)


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


#: Tries to open a job's own Dask client (``JobRunner._job_client``): a busy scheduler can
#: fail the handshake.
CLIENT_ATTEMPTS = 3


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
        self._running = {}  # job id -> the Dask client of its fit
        self._cancelled = set()
        self._lock = threading.Lock()

    def submit(self, job_id):
        """Queue a job (already recorded and charged)."""
        self._pool.submit(self._run, job_id)

    def cancel(self, job_id):
        """Stop a running job: its fit's own Dask client closes, so the scheduler stops
        the fit and its workers drop its state (as for any client that leaves); the job
        ends ``cancelled`` with its whole plan charged. A job not running is left as it
        is (:meth:`~.store.Store.cancel_queued` cancels a queued one)."""
        with self._lock:
            client = self._running.get(job_id)
            if client is None:
                return
            self._cancelled.add(job_id)
        client.close()

    def _job_client(self, job_id):
        """A Dask client of the service's cluster for one job's fit (closing it stops the
        fit: :meth:`cancel`). Opening one is tried :data:`CLIENT_ATTEMPTS` times:
        ``distributed``'s handshake can fail on a busy scheduler (an ``AssertionError`` in
        ``Client._ensure_connected``), and the job has read no row yet."""
        for attempt in range(CLIENT_ATTEMPTS):
            try:
                client = type(self.client)(self.client.scheduler.address,
                                           security=self.client.security,
                                           set_as_default=False)
                break
            except (AssertionError, OSError, TimeoutError) as exc:
                if attempt + 1 == CLIENT_ATTEMPTS:
                    raise RuntimeError("the service could not open a Dask client of its "
                                       f"cluster for the job ({type(exc).__name__})") from exc
                time.sleep(0.5 * (attempt + 1))
        with self._lock:
            self._running[job_id] = client
        return client

    def _run(self, job_id):
        job = self.store.job(job_id)
        dataset = self.store.job_dataset(job)
        if not self.store.start(job_id):
            return  # (cancelled while it was queued)
        rows_read, client = False, None
        try:
            params = train_params(DatasetSchema.model_validate(dataset.schema),
                                  JobParams.model_validate(job.params))
            client = self._job_client(job_id)
            rows_read = True  # (from here an error may carry a cell, or depend on one)
            X, y = read_dataset(dataset)
            with warnings.catch_warnings():
                # (the service's database holds the budgets, not the scheduler's file)
                warnings.simplefilter("ignore", NoBudgetWarning)
                booster = train(params, X, y, client=client)
            model = booster.to_dict()
            self._end_at_step(job, lambda: self.store.finish(job_id, model, events_of(model)))
        except Exception as exc:  # the job fails, or was cancelled; the service goes on
            with self._lock:
                cancelled = job_id in self._cancelled
            if cancelled:
                self._end_at_step(job, lambda: self.store.cancelled_while_running(job_id))
                return
            # the whole text is the owner's (the service's log); the analyst's is public
            logger.warning("job %s failed: %s: %s", job_id, type(exc).__name__, exc,
                           exc_info=True)
            error = analyst_error(exc, rows_read)
            # before the rows are read the job released nothing, and failed on public facts
            # alone: it is not charged (whether it is cannot depend on a row)
            self._end_at_step(job, lambda: self.store.fail(job_id, error, released=rows_read))
        finally:
            with self._lock:
                self._running.pop(job_id, None)
                self._cancelled.discard(job_id)
            if client is not None:
                client.close()

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
