"""The service's state in a SQL database (SQLAlchemy): registered datasets, principals (the
owner and the analysts) with their hashed tokens, one privacy budget per analyst and
dataset, jobs and their models. SQLite by default, any SQLAlchemy URL in production; the
schema is created and upgraded by Alembic's migrations (``service/migrations``).
"""
from contextlib import contextmanager
import os
import time

from sqlalchemy import (JSON, Boolean, Float, ForeignKey, Integer, String, Text,
                        UniqueConstraint, create_engine, event)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker

#: Schema revision the code expects (Alembic's head).
SCHEMA_REVISION = "0003"


class Base(DeclarativeBase):
    """The service's tables."""


class Dataset(Base):
    """A dataset the owner registered: where the workers read it, and its public schema
    (:class:`~dpxgb_dask.service.schemas.DatasetSchema` as JSON). A ``deleted`` one runs
    no job and is listed to no analyst; its row stays, with its jobs and budgets, since the
    privacy spent on its data does not expire (its name stays taken)."""

    __tablename__ = "datasets"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    location: Mapped[str] = mapped_column(Text)
    format: Mapped[str] = mapped_column(String(16))
    schema: Mapped[dict] = mapped_column(JSON)
    created: Mapped[float] = mapped_column(Float, default=time.time)
    deleted: Mapped[bool] = mapped_column(Boolean, default=False)


class Principal(Base):
    """Who calls the service: the owner (``role="owner"``) or an analyst; ``token_hash``
    is the SHA-256 of its bearer token (the token itself is shown once, never stored); a
    principal whose token the owner revoked is not ``active`` until it is given a new one.
    Names are unique whatever their case (migration 0003's index on ``lower(name)``, as
    for datasets)."""

    __tablename__ = "principals"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created: Mapped[float] = mapped_column(Float, default=time.time)
    active: Mapped[bool] = mapped_column(Boolean, default=True)


class Budget(Base):
    """An analyst's privacy budget on one dataset, which only the owner sets:
    ``state`` is :meth:`~dpxgb_dask.privacy.budget.PrivacyBudget.to_dict` (the charges of
    the analyst's jobs on the dataset), ``spent`` its ε spent, kept with every charge."""

    __tablename__ = "budgets"
    __table_args__ = (UniqueConstraint("analyst_id", "dataset_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    analyst_id: Mapped[int] = mapped_column(ForeignKey("principals.id"))
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id"))
    state: Mapped[dict] = mapped_column(JSON)
    spent: Mapped[float] = mapped_column(Float, default=0.0)


class Job(Base):
    """An analyst's fit: its validated request, its state, the ε it planned and spent,
    and, once finished, the model (its dict: a DP release)."""

    __tablename__ = "jobs"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    analyst_id: Mapped[int] = mapped_column(ForeignKey("principals.id"))
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id"))
    params: Mapped[dict] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16))
    planned_epsilon: Mapped[float] = mapped_column(Float)
    spent_epsilon: Mapped[float] = mapped_column(Float, default=0.0)
    error: Mapped[str] = mapped_column(Text, nullable=True)
    model: Mapped[dict] = mapped_column(JSON, nullable=True)
    created: Mapped[float] = mapped_column(Float, default=time.time)


def migrations_directory():
    """The directory of the service's Alembic migrations."""
    return os.path.join(os.path.dirname(__file__), "migrations")


def upgrade(url):
    """Create or upgrade the database at ``url`` to :data:`SCHEMA_REVISION` (Alembic)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", migrations_directory())
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    command.upgrade(config, "head")


def sqlite_url(path):
    """The SQLAlchemy URL of a SQLite file."""
    return f"sqlite:///{os.path.abspath(path)}"


class Database:
    """The service's connection to its database: the engine and its sessions.

    Parameters
    ----------
    url : str
        A SQLAlchemy URL (``sqlite:///path``, ``postgresql+psycopg://...``); the schema is
        upgraded to :data:`SCHEMA_REVISION` first.
    """

    def __init__(self, url):
        upgrade(url)
        self.url = url
        self.engine = create_engine(url)
        reader = self.engine.execution_options(dpxgb_read_only=True)
        if self.engine.dialect.name == "sqlite":
            # one writer at a time, waiting for the lock instead of failing at once: a
            # writing transaction begins IMMEDIATE (a budget's check and charge are one
            # atomic step), a reading one DEFERRED (under WAL, readers never wait)
            event.listen(self.engine, "connect", _sqlite_connect)
            event.listen(self.engine, "begin", _sqlite_begin)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._read_sessions = sessionmaker(reader, expire_on_commit=False)

    @contextmanager
    def session(self, write=True):
        """A transaction: committed when the block ends, rolled back if it raises;
        ``write=False`` for one that only reads."""
        sessions = self._sessions if write else self._read_sessions
        with sessions() as session, session.begin():
            yield session

    def close(self):
        self.engine.dispose()


def _sqlite_begin(connection):
    read_only = connection.get_execution_options().get("dpxgb_read_only", False)
    connection.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")


def _sqlite_connect(connection, _record):
    connection.isolation_level = None  # (transactions begin as the "begin" hook says)
    cursor = connection.cursor()
    cursor.execute("PRAGMA busy_timeout = 30000")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.execute("PRAGMA journal_mode = WAL")
    cursor.close()
