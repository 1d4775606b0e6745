"""``dpxgb serve``: the DP training service's HTTP API (FastAPI), which the data owner runs
next to the scheduler, holding the only Dask client analysts' work goes through.

The owner registers datasets and analysts and sets each analyst's budget on each dataset;
an analyst, with its bearer token, sees the public schemas of its datasets and its
budgets, submits jobs (JSON, validated against :class:`~.schemas.JobParams`), and reads
its jobs' status (ε planned and spent, never times), models (the dpxgb file and the
XGBoost export) and privacy reports: DP releases and public facts, nothing else about
the data. A refused request spends nothing. The owner lists analysts (with their budgets
and spend) and every job, revokes or renews an analyst's token, cancels jobs and deletes
datasets; an analyst cancels its own jobs. The OpenAPI description is at
``/openapi.json``; the web page for analysts at ``/``.
"""
import collections
import datetime
from importlib import resources
import logging
import math
import threading
import time

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..boosting.calibration import calibration_time_limit
from ..model.booster import Booster
from ..model.xgboost_json import to_xgboost_json
from ..privacy.validation import BudgetError, CalibrationError
from .runner import DEFAULT_JOB, check_dataset, largest_job_epsilon, planned_events
from .schemas import AnalystCreation, BudgetSetting, DatasetRegistration, JobParams, JobRequest
from .store import Conflict, NotFound

logger = logging.getLogger("dpxgb_dask.service")

#: Request bodies above this many bytes are refused (a job's JSON is a few hundred).
MAX_BODY_BYTES = 1 << 20
#: Job submissions an analyst may make in any 60 s (each is planned, which takes up to a few
#: seconds of the service's CPU, even when its budget then refuses it).
SUBMISSIONS_PER_MINUTE = 30
#: A submission whose planning takes longer is refused (422): at most this many seconds of
#: the service's CPU per request (a usual job plans in under 0.4 s).
PLANNING_SECONDS = 5.0
#: The search for a budget's largest job plans up to a dozen jobs (once per budget state:
#: its answer is cached), within this many seconds of the service's CPU.
LARGEST_JOB_SECONDS = 4 * PLANNING_SECONDS


class SubmissionLimit:
    """At most ``per_minute`` job submissions per analyst in any 60 s window; more are
    refused with 429 and a ``Retry-After``. The window counts the analyst's own requests
    only (nothing about others' or about the data).

    Parameters
    ----------
    per_minute : int
    """

    def __init__(self, per_minute=SUBMISSIONS_PER_MINUTE):
        self.per_minute = per_minute
        self._times = {}
        self._lock = threading.Lock()

    def admit(self, analyst_id):
        """Count one submission of ``analyst_id``, or raise HTTPException(429)."""
        now = time.monotonic()
        with self._lock:
            times = self._times.setdefault(analyst_id, collections.deque())
            while times and now - times[0] >= 60.0:
                times.popleft()
            if len(times) >= self.per_minute:
                wait = max(1, math.ceil(60.0 - (now - times[0])))
                raise HTTPException(
                    429, f"at most {self.per_minute} job submissions per minute per analyst; "
                         f"retry in {wait} s. Nothing was spent.",
                    headers={"Retry-After": str(wait)})
            times.append(now)

_bearer = HTTPBearer(auto_error=False)


def _store(request: Request):
    return request.app.state.store


def principal(request: Request,
              credentials: HTTPAuthorizationCredentials = Depends(_bearer)):
    """The caller: (id, name, role) of its bearer token's principal, or 401."""
    store = _store(request)
    who = None if credentials is None else store.authenticate(credentials.credentials)
    if who is None:
        raise HTTPException(401, "a valid bearer token is required",
                            headers={"WWW-Authenticate": "Bearer"})
    return who


def owner(who=Depends(principal)):
    """The caller, who must be the data owner (else 403)."""
    if who[2] != "owner":
        raise HTTPException(403, "only the data owner may do this")
    return who


def analyst(who=Depends(principal)):
    """The caller, who must be an analyst (else 403)."""
    if who[2] != "analyst":
        raise HTTPException(403, "only an analyst may do this (the owner's token lists "
                                 "every job at /v1/jobs and the analysts at /v1/analysts)")
    return who


def _own(who):
    """The analyst whose rows the caller may read: its own id, or None for the owner
    (every analyst's)."""
    return None if who[2] == "owner" else who[0]


owner_routes = APIRouter(prefix="/v1", tags=["owner"])
analyst_routes = APIRouter(prefix="/v1", tags=["analyst"])


def create_app(store, runner):
    """The service's ASGI app.

    Parameters
    ----------
    store : Store
        The database's operations.
    runner : JobRunner
        Runs the queued jobs on the cluster.

    Returns
    -------
    fastapi.FastAPI
    """
    app = FastAPI(title="dpxgb_dask service",
                  description="Differentially private gradient-boosted trees, trained on "
                              "registered datasets that analysts never see.",
                  version="1")
    app.state.store, app.state.runner = store, runner
    app.state.submissions = SubmissionLimit()
    app.include_router(owner_routes)
    app.include_router(analyst_routes)
    app.add_middleware(BodyLimit)
    app.add_exception_handler(NotFound, _error_handler(404))
    app.add_exception_handler(Conflict, _error_handler(409))
    app.add_exception_handler(BudgetError, _error_handler(409))
    app.add_exception_handler(RequestValidationError, _invalid)
    app.get("/", response_class=HTMLResponse, include_in_schema=False)(_page)
    return app


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is refused with 413, by its
    ``Content-Length`` before it is read, and by the bytes read otherwise (a chunked body
    names no length): the app reads at most ``limit`` bytes and one chunk of any body.

    Parameters
    ----------
    app : ASGI app
    limit : int
    """

    def __init__(self, app, limit=MAX_BODY_BYTES):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            return await self._refuse(scope, receive, send)
        read = 0

        async def receive_within_limit():
            nonlocal read
            message = await receive()
            if message["type"] == "http.request":
                read += len(message.get("body", b""))
                if read > self.limit:
                    # (FastAPI lets an HTTPException raised while it reads a body through)
                    raise HTTPException(413, self._detail())
            return message

        return await self.app(scope, receive_within_limit, send)

    def _detail(self):
        return f"the request body exceeds {self.limit} bytes"

    async def _refuse(self, scope, receive, send):
        await JSONResponse({"detail": self._detail()}, status_code=413)(scope, receive, send)


def _error_handler(status):
    async def handle(request, exc):
        return JSONResponse({"detail": str(exc)}, status_code=status)

    return handle


async def _invalid(request, exc):
    """A request that does not validate: 422, naming each bad field (a body sent without
    JSON's Content-Type is said to be that, not a bad value)."""
    content_type = request.headers.get("content-type", "")
    if request.method in ("POST", "PUT") and content_type.split(";")[0].strip().lower() \
            != "application/json" and any(e["loc"] == ("body",) for e in exc.errors()):
        return JSONResponse({"detail": [{"field": "body", "error": (
            "send the body as JSON with the header Content-Type: application/json (got "
            f"{content_type or 'no Content-Type'})")}]}, status_code=422)
    errors = [{"field": _field(e), "error": e["msg"]} for e in exc.errors()]
    return JSONResponse({"detail": errors}, status_code=422)


def _params_field(message):
    """The job parameter a planning error names (its first word, when that is one of
    :class:`~.schemas.JobParams`' fields), else the parameters as a whole."""
    first = message.split("=")[0].split(" ")[0]
    return f"params.{first}" if first in JobParams.model_fields else "params"


def _field(error):
    """The name of a validation error's field: ``params.epsilon``, or ``body`` (with the
    position of a JSON syntax error)."""
    if error["type"] == "json_invalid":
        return f"body (JSON syntax, at character {error['loc'][-1]})"
    names = [str(p) for p in error["loc"][1:]]
    return ".".join(names) or "body"


def _page():
    return resources.files(__package__).joinpath("page.html").read_text()


# -- the owner ---------------------------------------------------------------------------------

@owner_routes.post("/datasets", status_code=201)
def register_dataset(body: DatasetRegistration, request: Request, who=Depends(owner)):
    """Register a dataset: where the workers read it, and its public schema, checked
    against the data (:func:`~.runner.check_dataset`)."""
    store = _store(request)
    taken = store.taken_dataset_name(body.name)
    if taken is not None:
        raise HTTPException(409, taken)
    schema = body.dataset_schema.model_dump()
    try:
        check_dataset(body.location, body.format, schema)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    store.register_dataset(body.name, body.location, body.format, schema)
    return {"name": body.name}


@owner_routes.delete("/datasets/{name}")
def delete_dataset(name: str, request: Request, who=Depends(owner)):
    """Delete a dataset: no analyst sees it or runs a job on it any more (409 while a job
    on it is queued or running: cancel those first). Its jobs, models and budgets stay on
    record, since the privacy spent on its data does not expire; its name stays taken."""
    return {"name": _store(request).delete_dataset(name), "deleted": True}


@owner_routes.post("/analysts", status_code=201)
def create_analyst(body: AnalystCreation, request: Request, who=Depends(owner)):
    """Add an analyst; the response holds its token, shown this once. Names are unique
    whatever their case."""
    token = _store(request).create_principal(body.name, "analyst")
    return {"name": body.name, "token": token}


@owner_routes.get("/analysts")
def list_analysts(request: Request, who=Depends(owner)):
    """Every analyst: its name, whether its token works, and its budgets on each dataset
    (total, spent, remaining, its jobs' ε)."""
    return _store(request).analysts()


@owner_routes.delete("/analysts/{name}/token")
def revoke_token(name: str, request: Request, who=Depends(owner)):
    """Revoke an analyst's token: it stops working at once (its jobs, models and budgets
    stay; a job already queued still runs)."""
    return {"name": _store(request).revoke_token(name), "active": False}


@owner_routes.post("/analysts/{name}/token")
def renew_token(name: str, request: Request, who=Depends(owner)):
    """A new token for an analyst, shown this once; the old one stops working."""
    found, token = _store(request).renew_token(name)
    return {"name": found, "token": token}


@owner_routes.put("/analysts/{name}/budgets/{dataset}")
def set_budget(name: str, dataset: str, body: BudgetSetting, request: Request,
               who=Depends(owner)):
    """Set an analyst's budget on a dataset (its charges so far stay)."""
    try:
        status = _store(request).set_budget(name, dataset, body.epsilon, body.delta,
                                            body.accountant)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    return {"epsilon": status["epsilon"], "spent": status["spent"]}


# -- analysts (and the owner, for datasets) ------------------------------------------------------

@analyst_routes.get("/datasets")
def list_datasets(request: Request, who=Depends(principal)):
    """The public schemas of the datasets the caller may use."""
    rows = _store(request).datasets(None if who[2] == "owner" else who[0])
    return [{"name": d.name, "schema": d.schema} for d in rows]


@analyst_routes.get("/budgets")
def budgets(request: Request, who=Depends(analyst)):
    """The caller's budgets: total, spent and remaining ε per dataset. Under the PLD and
    RDP accountants ε does not add up, so ``remaining`` (total − spent) is not the largest
    job the budget admits: ``/v1/budgets/{dataset}/largest-job`` says that."""
    return _store(request).budgets(who[0])


@analyst_routes.get("/budgets/{dataset}/largest-job")
def largest_job(dataset: str, request: Request, who=Depends(analyst)):
    """The largest ε of a job with the default parameters that the caller's budget on
    ``dataset`` admits now, under its accountant (to 1%, rounded down): the budget's
    composition, not ``remaining``, decides (:func:`~.runner.largest_job_epsilon`)."""
    store = _store(request)
    found = store.dataset(dataset, who[0])
    try:
        with calibration_time_limit(LARGEST_JOB_SECONDS):  # (a worker thread: sync def)
            epsilon = largest_job_epsilon(found, store.budget_state(who[0], found))
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    return {"dataset": found.name, "epsilon": epsilon, "params": DEFAULT_JOB}


@analyst_routes.post("/jobs", status_code=202)
def submit(body: JobRequest, request: Request, who=Depends(analyst)):
    """Submit a job: its planned releases are charged to the caller's budget on the
    dataset now (refused, with nothing spent, if the budget cannot afford them)."""
    request.app.state.submissions.admit(who[0])
    store = _store(request)
    dataset = store.dataset(body.dataset, who[0])
    store.check_total(who[0], dataset, body.params.epsilon)
    params = body.params.model_dump(exclude_none=True)
    try:
        with calibration_time_limit(PLANNING_SECONDS):  # (in a worker thread: sync def)
            _, events = planned_events(dataset, params)
    except CalibrationError as exc:  # (the parameters cannot be met: not the budget's 409)
        raise HTTPException(422, [{"field": f"params.{exc.parameter}",
                                   "error": str(exc)}]) from None
    except ValueError as exc:
        raise HTTPException(422, [{"field": _params_field(str(exc)),
                                   "error": str(exc)}]) from None
    job_id = store.submit(who[0], dataset, params, events)
    request.app.state.runner.submit(job_id)
    return _job_view(store, store.job(job_id), who)


@analyst_routes.get("/jobs")
def jobs(request: Request, who=Depends(principal)):
    """The caller's jobs (the owner: every analyst's, each naming its analyst)."""
    store = _store(request)
    return [_job_view(store, j, who) for j in store.jobs(_own(who))]


@analyst_routes.get("/jobs/{job_id}")
def job(job_id: str, request: Request, who=Depends(principal)):
    """A job's state and ε (planned, and spent once it ended): no times."""
    store = _store(request)
    return _job_view(store, store.job(job_id, _own(who)), who)


@analyst_routes.post("/jobs/{job_id}/cancel")
def cancel(job_id: str, request: Request, who=Depends(principal)):
    """Cancel a job (its analyst's or the owner's call). A queued job is refunded, since
    it released nothing; a running one stops within seconds and its whole plan stays
    charged; a job that ended answers 409."""
    store = _store(request)
    if store.cancel_queued(job_id, _own(who)) == "running":
        request.app.state.runner.cancel(job_id)
    return _job_view(store, store.job(job_id), who)


def _finished_model(request, job_id, who):
    found = _store(request).job(job_id, who[0])
    if found.status != "finished":
        raise HTTPException(409, f"job {job_id} has no model (it is {found.status})")
    return found.model


@analyst_routes.get("/jobs/{job_id}/model")
def model(job_id: str, request: Request, who=Depends(analyst)):
    """The job's DP model: the dpxgb model file's JSON (``load_model`` reads it)."""
    return _finished_model(request, job_id, who)


@analyst_routes.get("/jobs/{job_id}/model/xgboost")
def model_xgboost(job_id: str, request: Request, who=Depends(analyst)):
    """The job's DP model in XGBoost's JSON format."""
    return to_xgboost_json(Booster.from_dict(_finished_model(request, job_id, who)))


@analyst_routes.get("/jobs/{job_id}/report")
def report(job_id: str, request: Request, who=Depends(analyst)):
    """The job's privacy report, recomputed from its model's ledger."""
    return Booster.from_dict(_finished_model(request, job_id, who)).privacy_report()


def _utc(seconds):
    """A Unix time as ISO 8601 in UTC, to the second."""
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).isoformat(
        timespec="seconds")


def _job_view(store, job, who):
    """What a principal sees of a job: public and DP facts only, and the time its request
    was recorded (its analyst's own act; the job's start and end are not shown). The
    owner's view names the analyst too. A running job shows as queued: the moment it
    starts would time the jobs ahead of it (its end is written at a public step,
    :data:`~dpxgb_dask.service.runner.STATUS_QUANTUM_SECONDS`)."""
    status = "queued" if job.status == "running" else job.status
    view = {"id": job.id, "dataset": store.job_dataset(job).name, "status": status,
            "submitted": _utc(job.created),
            "params": job.params, "planned_epsilon": job.planned_epsilon,
            "spent_epsilon": job.spent_epsilon, "error": job.error,
            "has_model": job.status == "finished"}
    if who[2] == "owner":
        view["analyst"] = store.principal_name(job.analyst_id)
    return view
