"""Names unique whatever their case (``Alice`` and ``alice`` are one principal), a
principal's token revocable (``active``), a dataset retired rather than erased
(``deleted``: its jobs and the privacy they spent stay on record).

Revision ID: 0003
Revises: 0002
"""
from alembic import op
import sqlalchemy as sa

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _refuse_case_duplicates(table):
    names = [row[0] for row in op.get_bind().execute(sa.text(f"SELECT name FROM {table}"))]
    folded = {}
    for name in names:
        folded.setdefault(name.lower(), []).append(name)
    clashes = [group for group in folded.values() if len(group) > 1]
    if clashes:
        raise RuntimeError(f"the {table} {clashes} differ only in case; rename all but one of "
                           "each (names are now unique whatever their case), then upgrade")


def upgrade():
    for table in ("principals", "datasets"):
        _refuse_case_duplicates(table)
    with op.batch_alter_table("principals") as batch:
        batch.add_column(sa.Column("active", sa.Boolean, nullable=False,
                                   server_default=sa.true()))
    with op.batch_alter_table("datasets") as batch:
        batch.add_column(sa.Column("deleted", sa.Boolean, nullable=False,
                                   server_default=sa.false()))
    # (after the batch operations: SQLite's batch mode copies a table without the indexes
    # on expressions, which it cannot reflect)
    for table in ("principals", "datasets"):
        op.create_index(f"ix_{table}_name_folded", table, [sa.text("lower(name)")],
                        unique=True)


def downgrade():
    with op.batch_alter_table("datasets") as batch:
        batch.drop_column("deleted")
    with op.batch_alter_table("principals") as batch:
        batch.drop_column("active")
    for table in ("principals", "datasets"):
        op.drop_index(f"ix_{table}_name_folded", table)
