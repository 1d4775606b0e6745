"""The service's database is created and upgraded by its Alembic migrations: a database
left at the first revision, with a charged budget, upgrades to the current schema with
its budget's spent ε filled in from its charges, its principals active and its names
unique whatever their case."""
import json

import pytest
import sqlalchemy as sa


def test_a_first_revision_database_upgrades_and_keeps_its_budgets(tmp_path):
    from alembic import command
    from alembic.config import Config

    from dpxgb_dask.privacy.budget import PrivacyBudget
    from dpxgb_dask.privacy.ledger import Ledger
    from dpxgb_dask.service.database import (SCHEMA_REVISION, Database, migrations_directory,
                                             sqlite_url)
    from dpxgb_dask.service.store import Conflict, Store

    url = sqlite_url(tmp_path / "old.db")
    config = Config()
    config.set_main_option("script_location", migrations_directory())
    config.set_main_option("sqlalchemy.url", url)
    command.upgrade(config, "0001")
    ledger = Ledger()
    ledger.record("leaf", "gaussian", 1.0, noise_multiplier=2.0, tree=0)
    budget = PrivacyBudget("alice/adult", 5.0, 1e-6)
    budget.reserve("job0", ledger.events)
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        connection.execute(sa.text(
            "INSERT INTO principals VALUES (1, 'alice', 'analyst', :h, 0)"), {"h": "0" * 64})
        connection.execute(sa.text(
            "INSERT INTO datasets VALUES (1, 'adult', '/d', 'parquet', '{}', 0)"))
        connection.execute(sa.text("INSERT INTO budgets VALUES (1, 1, 1, :s)"),
                           {"s": json.dumps(budget.to_dict())})
        connection.execute(sa.text("INSERT INTO jobs VALUES ('job0', 1, 1, '{}', 'running', "
                                   "0.5, 0.0, NULL, NULL, 0)"))
        assert "spent" not in [c["name"] for c in sa.inspect(connection).get_columns("budgets")]
    engine.dispose()

    database = Database(url)  # upgrades to the head
    try:
        with database.engine.connect() as connection:
            revision = connection.execute(sa.text("SELECT version_num FROM alembic_version"))
            assert revision.scalar() == SCHEMA_REVISION
        store = Store(database)
        budgets = store.budgets(1)
        assert budgets["adult"]["spent"] == pytest.approx(budget.spent(), rel=1e-12)
        assert budgets["adult"]["spent"] > 0 and budgets["adult"]["n_jobs"] == 1
        # 0003: the analyst stays active, the dataset not deleted, and names are unique
        # whatever their case, in the database's own index too
        assert store.analysts()[0]["active"] and store.dataset("ADULT").name == "adult"
        with pytest.raises(Conflict):
            store.create_principal("Alice", "analyst")
        with pytest.raises(sa.exc.IntegrityError), database.engine.begin() as connection:
            connection.execute(sa.text(
                "INSERT INTO principals (name, role, token_hash, created, active) "
                "VALUES ('ALICE', 'analyst', :h, 0, 1)"), {"h": "1" * 64})
    finally:
        database.close()
