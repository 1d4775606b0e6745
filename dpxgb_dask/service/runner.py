"""Runs the service's jobs on the Dask cluster, a few at a time, with the service's own
client (the only one analysts' work goes through).

A job's rows are read by the workers (``dask.dataframe.read_parquet`` / ``read_csv`` of the
dataset's location): they never pass through the service. The fit names no scheduler
budget: the service's database holds the analysts' budgets, charged before the job is
queued (:meth:`~dpxgb_dask.service.store.Store.submit`) and settled when it ends.
"""
from concurrent.futures import ThreadPoolExecutor
import logging
import warnings

from ..boosting.calibration import make_plan
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
    return frame[[f.name for f in schema.features]], frame[schema.label]


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


class JobRunner:
    """Runs queued jobs on ``client``'s cluster, ``concurrency`` at a time.

    Parameters
    ----------
    store : Store
    client : distributed.Client
    concurrency : int
    """

    def __init__(self, store, client, concurrency=2):
        self.store = store
        self.client = client
        self._pool = ThreadPoolExecutor(max_workers=concurrency,
                                        thread_name_prefix="dpxgb-job")

    def submit(self, job_id):
        """Queue a job (already recorded and charged)."""
        self._pool.submit(self._run, job_id)

    def _run(self, job_id):
        job = self.store.job(job_id)
        dataset = self.store.job_dataset(job)
        try:
            self.store.start(job_id)
            params = train_params(DatasetSchema.model_validate(dataset.schema),
                                  JobParams.model_validate(job.params))
            X, y = read_dataset(dataset)
            with warnings.catch_warnings():
                # (the service's database holds the budgets, not the scheduler's file)
                warnings.simplefilter("ignore", NoBudgetWarning)
                booster = train(params, X, y, client=self.client)
            model = booster.to_dict()
            self.store.finish(job_id, model, events_of(model))
        except Exception as exc:  # the job fails; the service goes on
            logger.warning("job %s failed: %s: %s", job_id, type(exc).__name__, exc)
            self.store.fail(job_id, f"{type(exc).__name__}: {exc}"[:2000])

    def close(self):
        """Wait for the running jobs, then stop."""
        self._pool.shutdown(wait=True, cancel_futures=True)
