"""A real service for the tests: a SQLite file, a LocalCluster of worker processes, and the
HTTP API served by uvicorn on a free port of this machine (ServiceThread)."""
import numpy as np
import pandas as pd
import pytest

FEATURES = ["age", "hours", "score", "group"]
N_ROWS = 4000


def dataset_schema():
    """The public schema of the generated dataset."""
    return {
        "features": [{"name": "age", "bounds": [17.0, 90.0]},
                     {"name": "hours", "bounds": [0.0, 100.0]},
                     {"name": "score", "bounds": [-5.0, 5.0]},
                     {"name": "group", "categories": [0, 1, 2]}],
        "label": "label", "objective": "binary:logistic", "classes": [0, 1],
    }


def _frame(seed):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"age": rng.uniform(17, 90, N_ROWS),
                          "hours": rng.uniform(0, 100, N_ROWS),
                          "score": rng.normal(size=N_ROWS),
                          "group": rng.integers(0, 3, N_ROWS).astype(float)})
    margin = 0.05 * (frame["age"] - 50) + 1.5 * frame["score"] + (frame["group"] == 2)
    frame["label"] = (margin + rng.logistic(size=N_ROWS) > 0).astype(float)
    return frame


@pytest.fixture(scope="package")
def cluster():
    """The service tests' LocalCluster (closed after them)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster:
        yield cluster


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory):
    """Two Parquet datasets (of 2 files each) and a CSV one."""
    root = tmp_path_factory.mktemp("data")
    for name, seed in (("adult", 1), ("census", 2)):
        (root / name).mkdir()
        frame = _frame(seed)
        half = len(frame) // 2
        frame.iloc[:half].to_parquet(root / name / "part-0.parquet")
        frame.iloc[half:].to_parquet(root / name / "part-1.parquet")
    _frame(3).to_csv(root / "survey.csv", index=False)
    return root


@pytest.fixture(scope="package")
def dask_client(cluster):
    """The service's Dask client; not the default client (later tests expect none)."""
    from distributed import Client

    with Client(cluster, set_as_default=False) as client:
        yield client


@pytest.fixture(scope="module")
def deployment(tmp_path_factory, dask_client, data_dir):
    """A service with an owner, the datasets registered and two analysts: ``alice`` with
    budgets on ``adult`` (ε 3) and ``survey`` (ε 2), ``bob`` on ``census`` (ε 1).

    Yields
    ------
    dict
        ``url``, ``database``, ``running`` (the ServiceThread), ``owner``, ``alice``,
        ``bob`` (tokens).
    """
    from dpxgb_dask.service import Client
    from dpxgb_dask.service.database import sqlite_url
    from dpxgb_dask.service.server import ServiceThread, init_owner

    database = sqlite_url(tmp_path_factory.mktemp("service") / "service.db")
    owner_token = init_owner(database)
    # (ends written at once: the status step has its own test, test_service.py)
    running = ServiceThread(database, dask_client, status_quantum=0)
    with Client(running.url, owner_token) as owner:
        for name in ("adult", "census"):
            owner.register_dataset(name, str(data_dir / name), "parquet", dataset_schema())
        owner.register_dataset("survey", str(data_dir / "survey.csv"), "csv",
                               dataset_schema())
        tokens = {name: owner.create_analyst(name)["token"] for name in ("alice", "bob")}
        owner.set_budget("alice", "adult", 3.0)
        owner.set_budget("alice", "survey", 2.0)
        owner.set_budget("bob", "census", 1.0)
    yield dict(url=running.url, database=database, running=running, owner=owner_token,
               **tokens)
    running.stop()


def _stored_status(database_url, job_id):
    import sqlalchemy as sa

    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as connection:
            return connection.execute(sa.text("SELECT status FROM jobs WHERE id = :id"),
                                      {"id": job_id}).scalar()
    finally:
        engine.dispose()


@pytest.fixture
def stored_status():
    """``stored_status(database_url, job_id)``: a job's status as the service's database
    holds it (the owner's view: an analyst sees a running job as queued)."""
    return _stored_status


@pytest.fixture
def fresh_rows():
    """Rows of the datasets' distribution that no dataset holds: ``fresh_rows(seed)``."""
    return _frame


@pytest.fixture
def start_service(dask_client):
    """``start_service(database_url)``: a ServiceThread on the session's cluster."""
    from dpxgb_dask.service.server import ServiceThread

    return lambda database_url: ServiceThread(database_url, dask_client, status_quantum=0)


@pytest.fixture
def service_schema():
    """The public schema of the generated datasets."""
    return dataset_schema()


def _postgres_binaries():
    """The directory of PostgreSQL's ``initdb``, ``pg_ctl`` and ``postgres``, or None."""
    import glob
    import os
    import shutil

    found = shutil.which("initdb")
    candidates = ([os.path.dirname(found)] if found else []) + sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for directory in candidates:
        if all(os.access(os.path.join(directory, name), os.X_OK)
               for name in ("initdb", "pg_ctl", "postgres")):
            return directory
    return None


@pytest.fixture(scope="session")
def postgresql_url():
    """A throwaway PostgreSQL server for the session, on a unix socket in a fresh directory
    (no TCP port), and the SQLAlchemy URL of its database. PostgreSQL refuses to run as
    root: under root the server runs as the ``postgres`` user (Debian's package creates
    it). Skipped, with the reason, where the server or psycopg is absent (CI installs
    both: ``.ci/run`` and the test extra)."""
    import os
    import pwd
    import shutil
    import subprocess
    import tempfile

    pytest.importorskip("psycopg", reason="the PostgreSQL tests need psycopg "
                                          "(pip install '.[test]')")
    binaries = _postgres_binaries()
    if binaries is None:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl, postgres): "
                    "apt-get install postgresql")
    prefix = []
    root = tempfile.mkdtemp(prefix="dpxgb-pg-")
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root without a 'postgres' user to run the server as")
        os.chown(root, user.pw_uid, user.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data = os.path.join(root, "data")
    log = os.path.join(root, "server.log")

    def run(*args):
        subprocess.run(prefix + [os.path.join(binaries, args[0]), *args[1:]], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)

    run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8")
    run("pg_ctl", "-D", data, "-l", log, "-w", "-t", "60", "start", "-o",
        f"-k {root} -c listen_addresses='' -c max_connections=100 -p 5432")
    try:
        yield f"postgresql+psycopg://postgres@/postgres?host={root}&port=5432"
    finally:
        run("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)
