"""``dpxgb serve``: the DP training service's HTTP API (FastAPI), which the data owner runs
next to the scheduler, holding the only Dask client analysts' work goes through.

The owner registers datasets and analysts and sets each analyst's budget on each dataset;
an analyst, with its bearer token, sees the public schemas of its datasets and its
budgets, submits jobs (JSON, validated against :class:`~.schemas.JobParams`), and reads
its jobs' status (ε planned and spent, never times), models (the dpxgb file and the
XGBoost export) and privacy reports: DP releases and public facts, nothing else about
the data. A refused request spends nothing. The OpenAPI description is at
``/openapi.json``; the web page for analysts at ``/``.
"""
import collections
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
from ..privacy.validation import BudgetError
from .runner import check_dataset, planned_events
from .schemas import AnalystCreation, BudgetSetting, DatasetRegistration, JobRequest
from .store import NotFound

logger = logging.getLogger("dpxgb_dask.service")

#: Request bodies above this many bytes are refused (a job's JSON is a few hundred).
MAX_BODY_BYTES = 1 << 20
#: Job submissions an analyst may make in any 60 s (each is planned, which takes up to a few
#: seconds of the service's CPU, even when its budget then refuses it).
SUBMISSIONS_PER_MINUTE = 30
#: A submission whose planning takes longer is refused (422): at most this many seconds of
#: the service's CPU per request (a usual job plans in under 0.4 s).
PLANNING_SECONDS = 5.0


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
        raise HTTPException(403, "only an analyst may do this")
    return who


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
    """A request that does not validate: 422, naming each bad field."""
    errors = [{"field": _field(e), "error": e["msg"]} for e in exc.errors()]
    return JSONResponse({"detail": errors}, status_code=422)


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
    try:
        store.dataset(body.name)
    except NotFound:
        pass
    else:
        raise HTTPException(409, f"a dataset named {body.name!r} exists already")
    schema = body.dataset_schema.model_dump()
    try:
        check_dataset(body.location, body.format, schema)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    try:
        store.register_dataset(body.name, body.location, body.format, schema)
    except ValueError as exc:
        raise HTTPException(409, str(exc)) from None
    return {"name": body.name}


@owner_routes.post("/analysts", status_code=201)
def create_analyst(body: AnalystCreation, request: Request, who=Depends(owner)):
    """Add an analyst; the response holds its token, shown this once."""
    try:
        token = _store(request).create_principal(body.name, "analyst")
    except ValueError as exc:
        raise HTTPException(409, str(exc)) from None
    return {"name": body.name, "token": token}


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
    """The caller's budgets: total, spent and remaining ε per dataset."""
    return _store(request).budgets(who[0])


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
    except ValueError as exc:
        raise HTTPException(422, [{"field": "params", "error": str(exc)}]) from None
    job_id = store.submit(who[0], dataset, params, events)
    request.app.state.runner.submit(job_id)
    return _job_view(store.job(job_id), dataset.name)


@analyst_routes.get("/jobs")
def jobs(request: Request, who=Depends(analyst)):
    """The caller's jobs."""
    store = _store(request)
    return [_job_view(j, store.job_dataset(j).name) for j in store.jobs(who[0])]


@analyst_routes.get("/jobs/{job_id}")
def job(job_id: str, request: Request, who=Depends(analyst)):
    """A job's state and ε (planned, and spent once it ended): no times."""
    store = _store(request)
    found = store.job(job_id, who[0])
    return _job_view(found, store.job_dataset(found).name)


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


def _job_view(job, dataset_name):
    """What an analyst sees of a job: public and DP facts only. A running job shows as
    queued: the moment it starts would time the jobs ahead of it (its end is written at
    a public step, :data:`~dpxgb_dask.service.runner.STATUS_QUANTUM_SECONDS`)."""
    status = "queued" if job.status == "running" else job.status
    return {"id": job.id, "dataset": dataset_name, "status": status,
            "params": job.params, "planned_epsilon": job.planned_epsilon,
            "spent_epsilon": job.spent_epsilon, "error": job.error,
            "has_model": job.status == "finished"}
