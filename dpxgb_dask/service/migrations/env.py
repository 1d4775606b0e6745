"""Alembic's environment for the service's database: runs the migrations in ``versions/``
on the URL the service gives (``dpxgb_dask.service.database.upgrade``)."""
from alembic import context
from sqlalchemy import create_engine

from dpxgb_dask.service.database import Base

url = context.config.get_main_option("sqlalchemy.url")
engine = create_engine(url)
with engine.connect() as connection:
    context.configure(connection=connection, target_metadata=Base.metadata,
                      render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()
engine.dispose()
