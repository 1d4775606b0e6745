"""Keep each budget's spent ε in its row (computed when a job is charged or settled, not
at every read of the budgets).

Revision ID: 0002
Revises: 0001
"""
from alembic import op
import sqlalchemy as sa

from dpxgb_dask.privacy.budget import PrivacyBudget

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("budgets") as batch:
        batch.add_column(sa.Column("spent", sa.Float, nullable=False, server_default="0"))
    budgets = sa.table("budgets", sa.column("id", sa.Integer), sa.column("state", sa.JSON),
                       sa.column("spent", sa.Float))
    connection = op.get_bind()
    for row in connection.execute(sa.select(budgets.c.id, budgets.c.state)).all():
        connection.execute(budgets.update().where(budgets.c.id == row.id).values(
            spent=PrivacyBudget(**row.state).spent()))


def downgrade():
    with op.batch_alter_table("budgets") as batch:
        batch.drop_column("spent")
