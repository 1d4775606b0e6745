"""The service's operations on its database: principals and their tokens, datasets,
budgets (each an analyst's :class:`~dpxgb_dask.privacy.budget.PrivacyBudget` on one
dataset, charged in the same transaction that checks it), jobs and their models.

Tokens are 256-bit random strings shown once; the database keeps their SHA-256 only.
"""
import hashlib
import hmac
import secrets
import uuid

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from ..privacy.accountants import get_accountant
from ..privacy.budget import PrivacyBudget
from ..privacy.ledger import Ledger
from ..privacy.validation import BudgetError
from .database import Budget, Dataset, Job, Principal

#: The states of a job; ``interrupted``: the service stopped while it ran (its whole plan
#: stays charged); ``cancelled``: by its analyst or the owner (refunded if it had not
#: started, else its whole plan stays charged).
JOB_STATES = ("queued", "running", "finished", "failed", "interrupted", "cancelled")
#: Of those, the states a job ends in.
ENDED = ("finished", "failed", "interrupted", "cancelled")


class NotFound(LookupError):
    """No such dataset, analyst or job for this principal (also: someone else's)."""


class Conflict(ValueError):
    """The request contradicts the service's state (a name taken, a job that ended)."""


def _named(column, name):
    """A name's condition, whatever its case (names are unique that way)."""
    return func.lower(column) == str(name).lower()


def token_hash(token):
    """SHA-256 (hex) of a bearer token: what the database keeps."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_token():
    """A fresh bearer token: ``dpxgb_`` and 256 random bits."""
    return "dpxgb_" + secrets.token_urlsafe(32)


class Store:
    """The operations, each one transaction.

    Parameters
    ----------
    database : Database
    """

    def __init__(self, database):
        self.db = database

    # -- principals -----------------------------------------------------------------------

    def create_principal(self, name, role):
        """Add the owner or an analyst; return its token (shown once). Names are unique
        whatever their case."""
        token = new_token()
        try:
            with self.db.session() as s:
                taken = s.scalar(select(Principal).where(_named(Principal.name, name)))
                if taken is not None:
                    raise Conflict(f"a principal named {taken.name!r} exists already (names "
                                   "are unique whatever their case)")
                s.add(Principal(name=name, role=role, token_hash=token_hash(token)))
        except IntegrityError:  # (the same name created at the same moment)
            raise Conflict(f"a principal named {name!r} exists already") from None
        return token

    def has_owner(self):
        with self.db.session(write=False) as s:
            return s.scalar(select(Principal).where(Principal.role == "owner")) is not None

    def authenticate(self, token):
        """The (id, name, role) of the token's principal, or None."""
        if not isinstance(token, str) or not token.startswith("dpxgb_") or len(token) > 100:
            return None
        digest = token_hash(token)
        with self.db.session(write=False) as s:
            principal = s.scalar(select(Principal).where(Principal.token_hash == digest))
            if principal is None or not principal.active \
                    or not hmac.compare_digest(principal.token_hash, digest):
                return None
            return principal.id, principal.name, principal.role

    def analyst_id(self, name):
        with self.db.session(write=False) as s:
            principal = s.scalar(select(Principal).where(_named(Principal.name, name),
                                                         Principal.role == "analyst"))
            if principal is None:
                raise NotFound(f"no analyst named {name!r}")
            return principal.id

    def analysts(self):
        """Every analyst: ``{"name", "active", "budgets"}`` (:meth:`budgets`, deleted
        datasets' included)."""
        with self.db.session(write=False) as s:
            rows = [(p.id, p.name, p.active) for p in s.scalars(
                select(Principal).where(Principal.role == "analyst").order_by(Principal.name))]
        return [{"name": name, "active": active,
                 "budgets": self.budgets(analyst_id, with_deleted=True)}
                for analyst_id, name, active in rows]

    def principal_name(self, principal_id):
        with self.db.session(write=False) as s:
            return s.get(Principal, principal_id).name

    def revoke_token(self, name):
        """An analyst's token stops working at once (its jobs, budgets and models stay);
        :meth:`renew_token` gives it a new one."""
        with self.db.session() as s:
            principal = self._analyst_row(s, name)
            principal.active = False
            return principal.name

    def renew_token(self, name):
        """A new token for an analyst (the old one stops working); returns it, shown once."""
        token = new_token()
        with self.db.session() as s:
            principal = self._analyst_row(s, name)
            principal.token_hash, principal.active = token_hash(token), True
            return principal.name, token

    @staticmethod
    def _analyst_row(session, name):
        principal = session.scalar(select(Principal).where(
            _named(Principal.name, name), Principal.role == "analyst").with_for_update())
        if principal is None:
            raise NotFound(f"no analyst named {name!r}")
        return principal

    # -- datasets -------------------------------------------------------------------------

    def register_dataset(self, name, location, format, schema):
        try:
            with self.db.session() as s:
                taken = s.scalar(select(Dataset).where(_named(Dataset.name, name)))
                if taken is not None:
                    raise Conflict(_taken(taken))
                s.add(Dataset(name=name, location=location, format=format, schema=schema))
        except IntegrityError:
            raise Conflict(f"a dataset named {name!r} exists already") from None

    def taken_dataset_name(self, name):
        """Why ``name`` cannot be registered (a dataset, deleted or not, has it whatever
        its case), or None."""
        with self.db.session(write=False) as s:
            taken = s.scalar(select(Dataset).where(_named(Dataset.name, name)))
            return None if taken is None else _taken(taken)

    def delete_dataset(self, name):
        """Retire a dataset: no job runs on it any more and no analyst sees it; its jobs,
        models and budgets stay on record (the privacy spent on its data does not expire),
        and its name stays taken.

        Raises
        ------
        Conflict
            A job on it is queued or running (cancel it first).
        """
        with self.db.session() as s:
            dataset = s.scalar(select(Dataset).where(_named(Dataset.name, name),
                                                     Dataset.deleted.is_(False))
                               .with_for_update())
            if dataset is None:
                raise NotFound(f"no dataset named {name!r}")
            pending = list(s.scalars(select(Job.id).where(
                Job.dataset_id == dataset.id, Job.status.in_(("queued", "running")))))
            if pending:
                raise Conflict(f"dataset {dataset.name!r} has {len(pending)} jobs queued or "
                               f"running ({', '.join(sorted(pending))}); cancel them first")
            dataset.deleted = True
            return dataset.name

    def dataset(self, name, analyst_id=None):
        """The dataset ``name``, not deleted (for an analyst: only one it has a budget
        on)."""
        with self.db.session(write=False) as s:
            dataset = s.scalar(select(Dataset).where(_named(Dataset.name, name),
                                                     Dataset.deleted.is_(False)))
            if dataset is None or (analyst_id is not None and s.scalar(
                    select(Budget).where(Budget.dataset_id == dataset.id,
                                         Budget.analyst_id == analyst_id)) is None):
                raise NotFound(f"no dataset named {name!r} (for this principal)")
            return dataset

    def datasets(self, analyst_id=None):
        """Every dataset not deleted (the owner), or those an analyst has a budget on."""
        with self.db.session(write=False) as s:
            query = select(Dataset).where(Dataset.deleted.is_(False)).order_by(Dataset.name)
            if analyst_id is not None:
                query = query.join(Budget, Budget.dataset_id == Dataset.id).where(
                    Budget.analyst_id == analyst_id)
            return list(s.scalars(query))

    # -- budgets --------------------------------------------------------------------------

    def set_budget(self, analyst_name, dataset_name, epsilon, delta, accountant):
        """Create an analyst's budget on a dataset, or change its total (the charges
        stay)."""
        analyst_id = self.analyst_id(analyst_name)
        dataset = self.dataset(dataset_name)
        with self.db.session() as s:
            row = s.scalar(_locked_budget(analyst_id, dataset.id))
            fits = () if row is None else row.state["fits"]
            budget = PrivacyBudget(f"{analyst_name}/{dataset_name}", epsilon, delta,
                                   accountant, fits=fits)
            if row is None:
                s.add(Budget(analyst_id=analyst_id, dataset_id=dataset.id,
                             state=budget.to_dict(), spent=budget.spent()))
            else:
                row.state, row.spent = budget.to_dict(), budget.spent()
            return {"epsilon": budget.epsilon, "spent": budget.spent()}

    def budgets(self, analyst_id, with_deleted=False):
        """An analyst's budgets by dataset name: the total, what its jobs spent together
        (under the budget's accountant), what is left, and each job's own ε; those on
        deleted datasets too with ``with_deleted`` (the owner's view)."""
        with self.db.session(write=False) as s:
            query = select(Budget, Dataset.name).join(
                Dataset, Dataset.id == Budget.dataset_id).where(
                    Budget.analyst_id == analyst_id).order_by(Dataset.name)
            if not with_deleted:
                query = query.where(Dataset.deleted.is_(False))
            rows = list(s.execute(query))
            jobs = {j.id: j for j in s.scalars(select(Job).where(
                Job.analyst_id == analyst_id))}
        out = {}
        for row, name in rows:
            budget, spent = PrivacyBudget(**row.state), row.spent
            out[name] = {
                "epsilon": budget.epsilon, "delta": budget.delta,
                "accountant": budget.accountant, "spent": spent,
                "remaining": max(0.0, budget.epsilon - spent), "n_jobs": len(budget.fits),
                "jobs": [{"job": f["fit"], "state": f["state"],
                          "epsilon": jobs[f["fit"]].spent_epsilon
                          if jobs[f["fit"]].status in ENDED
                          else jobs[f["fit"]].planned_epsilon}
                         for f in budget.fits]}
        return out

    # -- jobs ------------------------------------------------------------------------------

    def check_total(self, analyst_id, dataset, epsilon):
        """Refuse a job whose ε alone exceeds the analyst's whole budget on the dataset,
        before its plan is computed (composition never spends less than one of its parts,
        and a plan at a large ε takes seconds to calibrate).

        Raises
        ------
        BudgetError
        """
        with self.db.session(write=False) as s:
            row = s.scalar(select(Budget).where(Budget.analyst_id == analyst_id,
                                                Budget.dataset_id == dataset.id))
            if row is None:
                raise NotFound(f"no dataset named {dataset.name!r} (for this principal)")
            total = row.state["epsilon"]
        if epsilon > total:
            raise BudgetError(f"your budget on {dataset.name!r} is epsilon = {total:g} in "
                              f"all, less than this job's {epsilon:g} alone. Nothing was "
                              "spent.")

    def submit(self, analyst_id, dataset, params, events):
        """Record a job and charge its planned releases to the analyst's budget on the
        dataset, in one transaction: a refused job is neither recorded nor charged.

        Parameters
        ----------
        analyst_id : int
        dataset : Dataset
        params : dict
            The validated request's parameters (:class:`~.schemas.JobParams`).
        events : list of PrivacyEvent
            Every release the job's fit will make (its plan's ledger).

        Returns
        -------
        str
            The job's id.

        Raises
        ------
        BudgetError
            The budget cannot afford the job.
        """
        job_id = uuid.uuid4().hex
        with self.db.session() as s:
            row = s.scalar(_locked_budget(analyst_id, dataset.id))
            if row is None:
                raise NotFound(f"no dataset named {dataset.name!r} (for this principal)")
            budget = PrivacyBudget(**row.state)
            total = budget.reserve(job_id, events)  # (BudgetError: the transaction rolls back)
            row.state, row.spent = budget.to_dict(), total
            s.add(Job(id=job_id, analyst_id=analyst_id, dataset_id=dataset.id, params=params,
                      status="queued", planned_epsilon=_own_epsilon(budget, events),
                      spent_epsilon=0.0))
        return job_id

    def budget_state(self, analyst_id, dataset):
        """The analyst's budget on ``dataset`` as
        :class:`~dpxgb_dask.privacy.budget.PrivacyBudget`'s keywords."""
        with self.db.session(write=False) as s:
            row = s.scalar(select(Budget).where(Budget.analyst_id == analyst_id,
                                                Budget.dataset_id == dataset.id))
            if row is None:
                raise NotFound(f"no dataset named {dataset.name!r} (for this principal)")
            return row.state

    def start(self, job_id):
        """A queued job starts running; False if it no longer is queued (cancelled)."""
        with self.db.session() as s:
            job = s.get(Job, job_id, with_for_update=True)
            if job.status != "queued":
                return False
            job.status = "running"
            return True

    def cancel_queued(self, job_id, analyst_id=None):
        """Cancel a job that has not started: nothing was released, so its charge is
        refunded. Returns its status after the call (``"cancelled"``, or ``"running"``
        for a job the runner must stop).

        Raises
        ------
        Conflict
            The job has ended.
        """
        with self.db.session() as s:
            job = s.get(Job, job_id, with_for_update=True) if isinstance(job_id, str) else None
            if job is None or (analyst_id is not None and job.analyst_id != analyst_id):
                raise NotFound(f"no job {job_id!r} (for this principal)")
            if job.status in ENDED:
                raise Conflict(f"job {job_id} has ended ({job.status}); nothing to cancel")
            if job.status == "running":
                return "running"
            row = s.scalar(_locked_budget(job.analyst_id, job.dataset_id))
            budget = PrivacyBudget(**row.state)
            budget.settle(job_id, [], "stopped")
            row.state, row.spent = budget.to_dict(), budget.spent()
            job.status, job.spent_epsilon = "cancelled", 0.0
            job.error = "cancelled before it started; nothing was spent"
            return "cancelled"

    def cancelled_while_running(self, job_id):
        """A running job was stopped on request: its whole plan stays charged (the
        releases it made are not known here)."""
        self._end(job_id, "cancelled", None,
                  error="cancelled while it ran; its whole plan stays charged")

    def finish(self, job_id, model, events):
        """A job's fit finished: keep its model and settle its charge with the releases
        it made."""
        self._end(job_id, "finished", events, model=model)

    def fail(self, job_id, error, released=True):
        """A job's fit failed: its whole plan stays charged (the releases it made are not
        known here), unless it failed before its rows were read (``released=False``: no
        release, and a failure on public facts only), and the error an analyst may read
        (:func:`~dpxgb_dask.service.runner.analyst_error`: naming arguments and public
        facts, never data) is kept."""
        self._end(job_id, "failed", None if released else [], error=error)

    def _end(self, job_id, status, events, model=None, error=None):
        with self.db.session() as s:
            job = s.get(Job, job_id)
            row = s.scalar(_locked_budget(job.analyst_id, job.dataset_id))
            if events is not None:
                budget = PrivacyBudget(**row.state)
                budget.settle(job_id, events, status)
                row.state, row.spent = budget.to_dict(), budget.spent()
                job.spent_epsilon = _own_epsilon(budget, events)
            else:  # (the whole plan stays charged)
                job.spent_epsilon = job.planned_epsilon
            job.status, job.model, job.error = status, model, error

    def interrupt_unfinished(self):
        """After a restart: jobs that were running stay charged with their whole plan and
        end ``interrupted``; the ids of queued jobs are returned, to run them now.

        Returns
        -------
        list of str
        """
        with self.db.session() as s:
            queued = []
            for job in s.scalars(select(Job).where(Job.status.in_(("queued", "running")))):
                if job.status == "running":
                    job.status = "interrupted"
                    job.spent_epsilon = job.planned_epsilon
                    job.error = "the service stopped while the job ran; its plan stays charged"
                else:
                    queued.append(job.id)
            return sorted(queued)

    def job(self, job_id, analyst_id=None):
        """A job (an analyst sees its own only)."""
        with self.db.session(write=False) as s:
            job = s.get(Job, job_id) if isinstance(job_id, str) else None
            if job is None or (analyst_id is not None and job.analyst_id != analyst_id):
                raise NotFound(f"no job {job_id!r} (for this principal)")
            return job

    def jobs(self, analyst_id=None):
        """An analyst's jobs, or every job (the owner: ``analyst_id=None``)."""
        with self.db.session(write=False) as s:
            query = select(Job).order_by(Job.created)
            if analyst_id is not None:
                query = query.where(Job.analyst_id == analyst_id)
            return list(s.scalars(query))

    def job_dataset(self, job):
        with self.db.session(write=False) as s:
            return s.get(Dataset, job.dataset_id)


def _locked_budget(analyst_id, dataset_id):
    """The SELECT of a budget row for a read-modify-write (a charge, a settle, the owner's
    change): ``FOR UPDATE``, so that on PostgreSQL (and any database with row locks) a
    second transaction on the same budget waits for this one's commit and reads what it
    wrote, instead of both reading the same state and the last write dropping the other's
    charge. SQLite has no row locks; there every writing transaction begins IMMEDIATE
    (:class:`~dpxgb_dask.service.database.Database`), one at a time."""
    return select(Budget).where(Budget.analyst_id == analyst_id,
                                Budget.dataset_id == dataset_id).with_for_update()


def _taken(dataset):
    deleted = " (deleted: its name stays with the privacy spent on its data)" \
        if dataset.deleted else ""
    return (f"a dataset named {dataset.name!r} exists already{deleted}; names are unique "
            "whatever their case")


def _own_epsilon(budget, events):
    """ε of one job's releases alone, under its budget's accountant and δ."""
    return float(get_accountant(budget.accountant).get_epsilon(Ledger(events), budget.delta))


def events_of(model):
    """The releases a model's fit made: the PrivacyEvents of its ledger (a model dict)."""
    return list(Ledger.from_dict(model["ledger"]["events"]).events)
