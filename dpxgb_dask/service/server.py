"""The service put together: its database, its Dask client, the job runner and the HTTP
app (:class:`~dpxgb_dask.service.server.Service`), and
:func:`~dpxgb_dask.service.server.serve`, which runs it with uvicorn.
"""
import logging
import socket
import threading
import time

import uvicorn

from ..cluster.client import client_or_embedded
from . import DEFAULT_PORT
from .app import create_app
from .database import Database
from .runner import STATUS_QUANTUM_SECONDS, JobRunner
from .store import Store

logger = logging.getLogger("dpxgb_dask.service")


class Service:
    """The service on one database and one Dask client.

    On start, jobs that were running when the service last stopped end ``interrupted``
    (their whole plan stays charged) and queued jobs are run.

    Parameters
    ----------
    database_url : str
        A SQLAlchemy URL (``sqlite:///path/to/service.db``).
    client : distributed.Client
        The service's own client of the cluster.
    concurrency : int
        Jobs run at once.
    status_quantum : float
        A job's end is written (and seen) at a multiple of this many seconds after its
        submission (:data:`~dpxgb_dask.service.runner.STATUS_QUANTUM_SECONDS`); 0 writes
        it at once, which lets a polling analyst time the fit.
    """

    def __init__(self, database_url, client, concurrency=2,
                 status_quantum=STATUS_QUANTUM_SECONDS):
        self.database = Database(database_url)
        self.store = Store(self.database)
        self.runner = JobRunner(self.store, client, concurrency, status_quantum)
        self.app = create_app(self.store, self.runner)
        for job_id in self.store.interrupt_unfinished():
            self.runner.submit(job_id)

    def close(self):
        """Let the running jobs end, then close the database."""
        self.runner.close()
        self.database.close()


class ServiceThread:
    """A :class:`Service` served over HTTP by uvicorn in a thread of this process (a
    notebook's, a test's, a benchmark's), on a free port of ``host``.

    Parameters
    ----------
    database_url : str
    client : distributed.Client
    concurrency : int
    host : str
    status_quantum : float
        As :class:`Service`'s.

    Attributes
    ----------
    url : str
        ``http://host:port``.
    service : Service
    """

    def __init__(self, database_url, client, concurrency=2, host="127.0.0.1", *,
                 status_quantum=STATUS_QUANTUM_SECONDS):
        self.service = Service(database_url, client, concurrency, status_quantum)
        with socket.socket() as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        self.url = f"http://{host}:{port}"
        self._server = uvicorn.Server(uvicorn.Config(self.service.app, host=host, port=port,
                                                     log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True,
                                        name="dpxgb-service")
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the service did not start on {self.url}")
            time.sleep(0.05)

    def stop(self):
        """Stop serving, let the running jobs end, close the database."""
        self._server.should_exit = True
        self._thread.join(timeout=30)
        self.service.close()


def init_owner(database_url, name="owner"):
    """Create the database (or upgrade it) and its owner; return the owner's token.

    Raises
    ------
    ValueError
        The database has an owner already.
    """
    database = Database(database_url)
    try:
        store = Store(database)
        if store.has_owner():
            raise ValueError("this database has an owner already")
        return store.create_principal(name, "owner")
    finally:
        database.close()


def serve(database_url, scheduler=None, host="127.0.0.1", port=DEFAULT_PORT, concurrency=2,
          n_workers=2, *, status_quantum=STATUS_QUANTUM_SECONDS):
    """Run the service until interrupted.

    Parameters
    ----------
    database_url : str
    scheduler : str, optional
        The address of the cluster's scheduler; default: Dask's ``scheduler-address``
        setting (``DASK_SCHEDULER_ADDRESS``) if set, else an embedded ``LocalCluster`` of
        ``n_workers`` workers.
    host, port
        Where the service listens.
    concurrency : int
        Jobs run at once.
    status_quantum : float
        As :class:`Service`'s.
    """
    with client_or_embedded(scheduler, n_workers=n_workers) as client:
        service = Service(database_url, client, concurrency, status_quantum)
        try:
            uvicorn.run(service.app, host=host, port=port, log_level="info")
        finally:
            service.close()
