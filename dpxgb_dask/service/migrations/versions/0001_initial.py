"""The first schema: datasets, principals, budgets, jobs.

Revision ID: 0001
Revises:
"""
from alembic import op
import sqlalchemy as sa

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "datasets",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(100), nullable=False, unique=True),
        sa.Column("location", sa.Text, nullable=False),
        sa.Column("format", sa.String(16), nullable=False),
        sa.Column("schema", sa.JSON, nullable=False),
        sa.Column("created", sa.Float, nullable=False))
    op.create_table(
        "principals",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(100), nullable=False, unique=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created", sa.Float, nullable=False))
    op.create_table(
        "budgets",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("analyst_id", sa.Integer, sa.ForeignKey("principals.id"), nullable=False),
        sa.Column("dataset_id", sa.Integer, sa.ForeignKey("datasets.id"), nullable=False),
        sa.Column("state", sa.JSON, nullable=False),
        sa.UniqueConstraint("analyst_id", "dataset_id"))
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("analyst_id", sa.Integer, sa.ForeignKey("principals.id"), nullable=False),
        sa.Column("dataset_id", sa.Integer, sa.ForeignKey("datasets.id"), nullable=False),
        sa.Column("params", sa.JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("planned_epsilon", sa.Float, nullable=False),
        sa.Column("spent_epsilon", sa.Float, nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("model", sa.JSON),
        sa.Column("created", sa.Float, nullable=False))
    op.create_index("jobs_by_analyst", "jobs", ["analyst_id"])


def downgrade():
    op.drop_index("jobs_by_analyst", "jobs")
    for table in ("jobs", "budgets", "principals", "datasets"):
        op.drop_table(table)
