"""The service's commands: ``dpxgb serve`` (run it), and ``dpxgb service VERB`` (the
owner's and the analysts' calls, through :class:`~dpxgb_dask.service.client.Client`).

The token comes from ``--token-file`` or the environment variable ``DPXGB_TOKEN``, never
from the command line (where other users of the machine could read it). The service's
modules (FastAPI, SQLAlchemy, the cluster) load only when one of these commands runs.
"""
import json
import os
import sys

import dpxgb_dask.service as service_package

#: The environment variable holding a principal's token.
TOKEN_VARIABLE = "DPXGB_TOKEN"


def add_commands(sub):
    """Add ``serve`` and ``service`` to the ``dpxgb`` parser's sub-commands ``sub``."""
    sv = sub.add_parser("serve", help="run the DP training service (HTTP) for analysts")
    sv.add_argument("--database", default="dpxgb-service.db",
                    help="a SQLite file, or any SQLAlchemy URL (postgresql+psycopg://...)")
    sv.add_argument("--scheduler", default=None,
                    help="address of the cluster's Dask scheduler (default: "
                         "DASK_SCHEDULER_ADDRESS if set, else an embedded LocalCluster)")
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=service_package.DEFAULT_PORT)
    sv.add_argument("--concurrency", type=int, default=2, help="jobs run at once")
    sv.add_argument("--status-quantum", type=float, default=None,
                    help="a job's end is written at a multiple of this many seconds after "
                         "its submission, so that polling times it only to this step "
                         "(0: at once; default: dpxgb_dask.service.runner."
                         "STATUS_QUANTUM_SECONDS)")
    sv.add_argument("--init", action="store_true",
                    help="create the database and its owner, print the owner's token, exit")
    sv.set_defaults(func=cmd_serve)

    sc = sub.add_parser("service", help="call the DP training service")
    sc.add_argument("verb", choices=list(_ARITY))
    sc.add_argument("args", nargs="*",
                    help="submit DATASET; job/model/report/cancel JOB; largest-job DATASET; "
                         "add-dataset NAME LOCATION FORMAT SCHEMA.json; delete-dataset NAME; "
                         "add-analyst NAME; revoke-token/renew-token ANALYST; set-budget "
                         "ANALYST DATASET")
    sc.add_argument("--url", default=f"http://127.0.0.1:{service_package.DEFAULT_PORT}")
    sc.add_argument("--token-file", help=f"the file holding your token (default: "
                                         f"${TOKEN_VARIABLE})")
    sc.add_argument("--params", default="{}",
                    help="submit: the training parameters, as JSON ('{\"epsilon\": 1}') or "
                         "NAME=VALUE pairs (epsilon=1,n_estimators=50)")
    sc.add_argument("--epsilon", type=float, help="set-budget: total epsilon")
    sc.add_argument("--delta", type=float, default=1e-6, help="set-budget: delta")
    sc.add_argument("--accountant", default="pld", choices=["pld", "rdp", "basic", "best"])
    sc.add_argument("--out", help="model, submit --wait: write the model file here (default: "
                                  "print it); add-analyst, renew-token: write the new token "
                                  "here, readable by you alone (default: print it)")
    sc.add_argument("--wait", action="store_true",
                    help="submit: wait for the job to end (printing its final state)")
    sc.add_argument("--wait-for-service", type=float, default=0.0, metavar="SECONDS",
                    help="keep trying to reach the service this long first (one that was "
                         "just started)")
    sc.add_argument("--xgboost", action="store_true", help="model: XGBoost's JSON")
    sc.set_defaults(func=cmd_service)


def _database_url(value):
    return value if "://" in value else service_package.database.sqlite_url(value)


def cmd_serve(args):
    """``dpxgb serve``: create the database and its owner (``--init``), or run the
    service."""
    if args.init:
        print(service_package.server.init_owner(_database_url(args.database)))
        return
    step = {} if args.status_quantum is None else {"status_quantum": args.status_quantum}
    service_package.serve(_database_url(args.database), args.scheduler, args.host,
                          args.port, args.concurrency, **step)


def _token(args):
    if args.token_file:
        with open(args.token_file) as f:
            return f.read().strip()
    token = os.environ.get(TOKEN_VARIABLE)
    if not token:
        raise SystemExit(f"dpxgb service: give your token with --token-file or "
                         f"${TOKEN_VARIABLE}")
    return token


#: Each verb's number of arguments (the owner's: analysts, add-dataset, delete-dataset,
#: add-analyst, revoke-token, renew-token, set-budget; jobs and cancel are both's).
_ARITY = {"datasets": 0, "budgets": 0, "largest-job": 1, "submit": 1, "jobs": 0, "job": 1,
          "cancel": 1, "model": 1, "report": 1, "analysts": 0, "add-dataset": 4,
          "delete-dataset": 1, "add-analyst": 1, "revoke-token": 1, "renew-token": 1,
          "set-budget": 2}


def cmd_service(args):
    """``dpxgb service VERB``: one call to the service; prints its JSON answer."""
    if len(args.args) != _ARITY[args.verb]:
        raise SystemExit(f"dpxgb service {args.verb}: takes {_ARITY[args.verb]} arguments, "
                         f"got {len(args.args)}")
    import httpx

    try:
        with service_package.Client(args.url, _token(args)) as service:
            if args.wait_for_service > 0:
                service.wait_for_service(args.wait_for_service)
            result = _call(service, args)
    except service_package.ServiceError as exc:
        raise SystemExit(f"dpxgb service {args.verb}: the service answered {exc.status}: "
                         f"{_said(exc.detail)}") from None
    except (httpx.TransportError, TimeoutError) as exc:
        raise SystemExit(f"dpxgb service {args.verb}: no answer from {args.url}: "
                         f"{exc}") from None
    if args.verb == "model" and args.out:
        with open(args.out, "w") as f:
            json.dump(result, f)
        return
    if args.verb in ("add-analyst", "renew-token") and args.out:
        # (created for its owner alone before the token is written into it)
        with os.fdopen(os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
                       "w") as f:
            f.write(result.pop("token") + "\n")
    json.dump(result, sys.stdout, indent=2)
    print()


def _said(detail):
    """A service's refusal in one line: its reason, or each field with its error."""
    if isinstance(detail, list):
        return "; ".join(f"{d.get('field')}: {d.get('error')}" if isinstance(d, dict)
                         else str(d) for d in detail)
    return " ".join(str(detail).split())


def job_params(text):
    """``--params``: a JSON object, or ``NAME=VALUE`` pairs separated by commas (each value
    read as JSON when it is, else as a string)."""
    if text.strip().startswith("{"):
        try:
            return json.loads(text)
        except ValueError as exc:
            raise SystemExit(f"dpxgb service submit: --params is not a JSON object: {exc}")
    params = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        name, equals, value = pair.partition("=")
        if not equals or not name.strip():
            raise SystemExit("dpxgb service submit: --params must be a JSON object or "
                             f"NAME=VALUE pairs (epsilon=1,n_estimators=50), got {text!r}")
        try:
            params[name.strip()] = json.loads(value)
        except ValueError:
            params[name.strip()] = value.strip()
    return params


def _call(service, args):
    a = args.args
    if args.verb == "submit":
        job = service.submit(a[0], **job_params(args.params))
        if not args.wait:
            return job
        booster = service.wait(job["id"])
        if args.out:
            with open(args.out, "w") as f:
                json.dump(booster.to_dict(), f)
        return service.job(job["id"])
    if args.verb in ("job", "report", "cancel", "largest-job", "delete-dataset",
                     "revoke-token", "renew-token"):
        return getattr(service, args.verb.replace("-", "_"))(a[0])
    if args.verb == "model":
        return service.xgboost_model(a[0]) if args.xgboost else service.model(a[0]).to_dict()
    if args.verb == "add-dataset":
        with open(a[3]) as f:
            schema = json.load(f)
        return service.register_dataset(a[0], a[1], a[2], schema)
    if args.verb == "add-analyst":
        return service.create_analyst(a[0])
    if args.verb == "set-budget":
        if args.epsilon is None:
            raise SystemExit("dpxgb service set-budget: --epsilon is required")
        return service.set_budget(a[0], a[1], args.epsilon, args.delta, args.accountant)
    return getattr(service, args.verb)()
