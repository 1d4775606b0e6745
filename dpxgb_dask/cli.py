"""Command line: ``dpxgb demo | train | predict | report | budget | silo-identity | serve``.

=========================  ==================================================================
``dpxgb demo``             trains on generated data with public bounds, prints accuracy and ε
``dpxgb train``            trains on a CSV or Parquet file (or on each silo's own, ``--silo``)
                           and writes the model as JSON
``dpxgb predict``          scores a CSV or Parquet file with a saved model (no cluster needed)
``dpxgb report``           prints a saved model's privacy ledger as a table and its totals
``dpxgb budget``           creates a privacy budget across fits on the scheduler, or shows what
                           its fits spent (``create``, ``show``, ``list``)
``dpxgb silo-identity``    makes a silo's identity for secure aggregation and prints its
                           public key, for the other silos' operators
                           (:mod:`~dpxgb_dask.silo_cli`)
``dpxgb serve``            runs the DP training service for analysts
                           (:mod:`~dpxgb_dask.service.cli`)
``dpxgb service``          calls the service: datasets, budgets, jobs, models, reports
=========================  ==================================================================
"""
import argparse
import json
import os
import sys
import warnings

import dask
import numpy as np

# The package's public names load on first use: a command imports the cluster, the
# estimators or the accountants only when it needs them (``dpxgb predict`` needs neither).
import dpxgb_dask
from dpxgb_dask.inputs import parse_classes, table_labels
from dpxgb_dask.params.defaults import SELECTION_FAMILIES as FAMILIES
from dpxgb_dask.privacy.validation import BudgetError
from dpxgb_dask.service.cli import add_commands as add_service_commands
from dpxgb_dask.silo_cli import add_commands as add_silo_commands
from dpxgb_dask.silo_cli import add_silo_arguments, silo_table


class UsageError(SystemExit):
    """A bad input, said in one line naming the file, the column or the argument: the
    interpreter prints it to standard error, with no traceback, and exits with status 1."""

    def __init__(self, message):
        super().__init__(f"dpxgb: {message}")


def _file_problem(exc):
    """What is wrong with a file that could not be read, in a few words."""
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    if isinstance(exc, PermissionError):
        return "not readable (permission denied)"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return first


def _read_table(path, what="DATA", sep=","):
    """A CSV (columns separated by ``sep``) or Parquet table; a file that is missing, empty
    or not a table is a one-line error naming it."""
    import pandas as pd

    try:
        if str(path).endswith((".parquet", ".pq")):
            return pd.read_parquet(path)
        return pd.read_csv(path, sep=sep)
    except pd.errors.EmptyDataError:
        raise UsageError(f"{what} {path} is empty") from None
    except (OSError, ValueError) as exc:  # (pandas' and pyarrow's parse errors included)
        raise UsageError(f"{what} {path}: {_file_problem(exc)}") from None


def _read_json(path, argument):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as exc:
        raise UsageError(f"{argument} {path}: {_file_problem(exc)}") from None
    except ValueError as exc:
        raise UsageError(f"{argument} {path} is not JSON: {_file_problem(exc)}") from None


def _check_named_columns(names, columns, argument, data):
    """Refuse a file of per-column values that names a column the data lacks (the fit would
    otherwise go on without it)."""
    absent = [str(n) for n in names if str(n) not in columns]
    if absent:
        raise UsageError(f"{argument} names columns that {data} does not have: {absent} "
                         f"(its feature columns: {list(columns)})")


def _read_bounds(path, columns, data):
    """Bounds file: JSON ``{"column": [lo, hi], ...}`` or CSV with columns feature,lo,hi,
    with that header or none (three columns)."""
    if str(path).endswith(".json"):
        spec = _read_json(path, "--bounds")
        if not isinstance(spec, dict):
            raise UsageError(f"--bounds {path} must hold a JSON object {{column: [lo, hi]}}")
    else:
        table = _read_table(path, "--bounds")
        if len(table.columns) == 3 and "feature" not in table.columns:  # no header
            import pandas as pd

            table = pd.read_csv(path, header=None, names=["feature", "lo", "hi"])
        if not {"feature", "lo", "hi"} <= set(table.columns):
            raise UsageError(f"--bounds {path} must have the columns feature,lo,hi, got "
                             f"{list(table.columns)}")
        spec = {str(r.feature): [r.lo, r.hi] for r in table.itertuples()}
    _check_named_columns(spec, columns, f"--bounds {path}", data)
    missing = [c for c in columns if c not in spec]
    if missing:
        raise UsageError(f"--bounds {path} has no bounds for columns {missing}")
    try:
        return np.array([spec[c] for c in columns], dtype=float).reshape(len(columns), 2)
    except (TypeError, ValueError):
        raise UsageError(f"--bounds {path}: each column's bounds must be two numbers "
                         "[lo, hi]") from None


def _text_columns(table, columns):
    """The columns of ``table`` among ``columns`` that hold neither numbers nor a pandas
    category dtype (a Parquet file's categories: the library reads their lists)."""
    import pandas as pd
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    return [str(c) for c in columns
            if not (is_numeric_dtype(table[c]) or is_bool_dtype(table[c])
                    or isinstance(table[c].dtype, pd.CategoricalDtype))]


def _load_model(path, key):
    """A saved model; a file that is missing or not a (valid) model is a one-line error."""
    try:
        return dpxgb_dask.load_model(path, key=key)
    except OSError as exc:
        raise UsageError(f"MODEL {path}: {_file_problem(exc)}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        reason = str(exc) if isinstance(exc, ValueError) else f"it lacks or mangles {exc}"
        raise UsageError(f"MODEL {path} is not a valid dpxgb_dask model: {reason}") from None


def _print_report(booster, out=None, verbose=False):
    """A model's privacy report (:meth:`~dpxgb_dask.model.booster.Booster.privacy_report`):
    its totals first, then its releases grouped by purpose and mechanism, and with
    ``verbose`` every release."""
    out = out or sys.stdout
    report = booster.privacy_report()
    rows = report["events"]
    for name in ("basic", "rdp", "pld"):
        out.write(f"epsilon ({name:5s}) = {report[name]:.6g}\n")
    out.write(f"delta = {report['delta']:g}; calibrated with the {report['accountant']} "
              f"accountant; neighbouring relation: {report['neighbouring_relation']}\n")
    for choice in report["not_dp"]:
        out.write(f"NOT DP: {choice['parameter']} reveals {choice['reveals']}; the epsilon "
                  "values above account for the DP releases only\n")
    budget = report["budget"]
    if budget is None:
        out.write("budget across fits: none named (this fit's epsilon holds for it alone)\n")
    else:
        out.write(f"budget across fits {budget['name']!r}: this fit "
                  f"{budget['this_fit']:.4g}, all {budget['n_fits']} fits "
                  f"{budget['spent']:.4g} of {budget['epsilon']:g} ({budget['accountant']}, "
                  f"delta = {budget['delta']:g}) when this fit ended\n")
    chosen = booster.ledger.get("selection")
    if chosen is not None:
        out.write(f"private selection: the best of a secret number of runs (mean "
                  f"{chosen['mean_runs']:g}, shape {chosen['shape']:g}) among "
                  f"{chosen['configurations']} configurations, each run with epsilon "
                  f"{chosen['candidate_epsilon']:.4g}; chose configuration {chosen['chosen']}"
                  f" (held-out {chosen['metric']} {chosen['score']:.4g}); the releases "
                  "below are one planned run of each configuration\n")
    groups = {}
    for r in rows:
        key = (r.get("purpose"), r.get("mechanism"))
        groups[key] = groups.get(key, 0) + 1
    out.write(f"\n{sum(groups.values())} releases:\n")
    _write_table(out, ["purpose", "mechanism", "releases"],
                 [{"purpose": p, "mechanism": m, "releases": n}
                  for (p, m), n in groups.items()])
    if not verbose:
        out.write("(dpxgb report --verbose lists every release)\n")
        return
    out.write("\n")
    _write_table(out, ["purpose", "mechanism", "tree", "depth", "sensitivity", "epsilon",
                       "noise_multiplier", "sampling_rate", "parallel_over", "n_parallel",
                       "count"], rows)


def _write_table(out, columns, rows):
    widths = {c: max(len(c), *(len(_fmt(r.get(c))) for r in rows)) if rows else len(c)
              for c in columns}
    out.write("  ".join(c.ljust(widths[c]) for c in columns).rstrip() + "\n")
    for r in rows:
        out.write("  ".join(_fmt(r.get(c)).ljust(widths[c]) for c in columns).rstrip() + "\n")


def _print_budget(status, out=None):
    out = out or sys.stdout
    out.write(f"budget {status['name']!r}: spent {status['spent']:.4g} of "
              f"{status['epsilon']:g} (remaining {status['remaining']:.4g}; "
              f"{status['accountant']} accountant, delta = {status['delta']:g}), "
              f"{status['n_fits']} fits\n")
    for fit in status["fits"]:
        out.write(f"  fit {fit['fit']}  {fit['state']:8s}  epsilon {fit['epsilon']:.4g}  "
                  f"({fit['n_releases']} releases)\n")


def _fmt(value):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) or "-"
    return str(value)


def _train_params(args):
    params = {"objective": args.objective, "preset": args.preset, "epsilon": args.epsilon,
              "delta": args.delta, "random_state": args.seed,
              "reproducible_noise": args.reproducible_noise or None,
              "budget": args.budget}
    for name in ("n_estimators", "max_depth", "learning_rate", "subsample", "bounds_epsilon",
                 "num_class", "accountant", "filter_rounds", "filter_spending",
                 "cross_silo", "unknown_labels"):
        value = getattr(args, name, None)
        if value is not None:
            params[name] = value
    return {k: v for k, v in params.items() if v is not None}


def cmd_demo(args):
    """``dpxgb demo``: a DP classifier on generated rows with public bounds, its test
    accuracy, AUC and the ε it spent."""
    from sklearn.datasets import make_classification
    from sklearn.metrics import roc_auc_score

    X, y = make_classification(n_samples=args.rows, n_features=20, n_informative=10,
                               random_state=args.data_seed)
    split = int(0.8 * args.rows)
    # The bounds are chosen without looking at the data (the generator's features are
    # roughly standard normal): public, and values outside are clipped.
    bounds = np.tile([-6.0, 6.0], (X.shape[1], 1))
    params = {"objective": "binary:logistic", "epsilon": args.epsilon, "feature_bounds": bounds,
              "preset": args.preset, "random_state": args.seed,
              "reproducible_noise": args.reproducible_noise or None,
              "budget": args.budget}
    booster = dpxgb_dask.train({k: v for k, v in params.items() if v is not None}, X[:split],
                               y[:split], client=args.scheduler, verbose=not args.quiet)
    proba = booster.predict(X[split:])
    accuracy = float(((proba > 0.5) == y[split:]).mean())
    auc = float(roc_auc_score(y[split:], proba))
    info = booster.ledger
    print(f"demo: {split} training rows, {args.rows - split} test rows, {booster.n_trees} trees")
    print(f"test accuracy = {accuracy:.4f}   test AUC = {auc:.4f}")
    print(f"epsilon spent = {info['epsilon']:.4f} ({info['accountant']} accountant, "
          f"delta = {info['delta']:g}); basic composition: "
          f"{info['epsilon_by_accountant']['basic']:.4f}")
    return 0


def cmd_train(args):
    """``dpxgb train``: fit on a CSV or Parquet table, or on each silo's own file
    (``--silo``), and write the model file (signed with ``--key-file``)."""
    X, y, data = _training_data(args)
    columns = list(X.features) if y is None else [str(c) for c in X.columns]
    params = _train_params(args)
    classes = None if args.classes is None else parse_classes(args.classes)
    if classes is not None and args.objective == "multi:softprob":
        params.setdefault("num_class", len(classes))
    if y is None:  # (each silo maps its own labels by the classes)
        X = X.with_classes(classes)
    elif args.objective != "reg:squarederror":
        y = table_labels(y, args.label, classes, params.get("num_class", 2),
                         params.get("unknown_labels", "raise"))
    categorical = []
    if args.categories:
        params["categories"] = _read_json(args.categories, "--categories")
        if not isinstance(params["categories"], dict):
            raise UsageError("--categories must hold a JSON object {column: [values]}")
        categorical = [str(c) for c in params["categories"]]
        _check_named_columns(categorical, columns, f"--categories {args.categories}", data)
    # (a silo table's columns are checked by each silo, on its own file)
    text = [] if y is None else _text_columns(X, [c for c in X.columns
                                                  if str(c) not in categorical])
    if text:
        raise UsageError(f"DATA {args.data}: columns {text} are not numeric: give their "
                         "public category lists in --categories FILE, or encode them as "
                         "numbers")
    if args.bounds:
        # a categorical column's bounds are its codes' (set by train)
        numerical = [c for c in columns if c not in categorical]
        given = _read_bounds(args.bounds, numerical, data)
        rows = iter(given)
        params["feature_bounds"] = np.array([(0.0, 0.0) if c in categorical else next(rows)
                                             for c in columns])
    elif args.bounds_epsilon is None and args.xgb_model is None:
        raise UsageError("give --bounds FILE (public feature bounds) or --bounds-epsilon")
    if args.label_bounds:
        params["label_bounds"] = tuple(args.label_bounds)
    key = _read_key(args.key_file)  # before the fit: a bad key file must not waste it
    if os.path.exists(args.out) and not args.force:  # (before the fit, too)
        raise UsageError(f"--out {args.out} exists: give --force to overwrite it, or "
                         "another --out")
    continued = None
    if args.xgb_model is not None:
        # with --key-file, the model continued must carry a signature under that key too:
        # the continued model is signed with it and vouches for both parts
        continued = _load_model(args.xgb_model, key)
    select = args.select
    if select is not None and select not in FAMILIES:
        select = _read_json(select, "--select")
    booster = dpxgb_dask.train(params, X, y, client=args.scheduler, verbose=not args.quiet,
                               xgb_model=continued, select=select)
    booster.save_model(args.out, key=key)
    info = booster.ledger
    print(f"wrote {args.out}: {booster.n_trees} trees; epsilon spent = {info['epsilon']:.6g} "
          f"({info['accountant']}), basic composition "
          f"{float(info['epsilon_by_accountant']['basic']):.6g}, "
          f"delta = {info['delta']:g}")
    if "selection" in info:
        chosen = info["selection"]
        print(f"selected configuration {chosen['chosen']} of {chosen['configurations']} "
              f"(held-out {chosen['metric']} {chosen['score']:.4g}, DP); each run had "
              f"epsilon {chosen['candidate_epsilon']:.4g}")
    return 0


def _training_data(args):
    """X, y and their name in messages for ``dpxgb train``: the DATA table's features and
    label, or (``--silo``) a :class:`~dpxgb_dask.silo_table.SiloTable` of each silo's own
    file, read by the silos and not here (y is then None)."""
    if args.silo:
        if args.data is not None:
            raise UsageError("give DATA or --silo NAME=PATH, not both")
        return silo_table(args), None, "the silo table"
    if args.data is None:
        raise UsageError("give DATA (a CSV or Parquet file), or --silo NAME=PATH for each "
                         "silo with --features")
    if args.features is not None or args.format is not None:
        raise UsageError("--features and --format describe the --silo files; DATA's "
                         "features are its columns but --label")
    table = _read_table(args.data, sep=args.sep)
    if len(table) == 0:
        raise UsageError(f"DATA {args.data} has no rows")
    if args.label not in table.columns:
        raise UsageError(f"--label {args.label!r} is not a column of {args.data} (its "
                         f"columns: {list(table.columns)})")
    return table.drop(columns=[args.label]), table[args.label], args.data


def cmd_predict(args):
    """``dpxgb predict``: score a table with a saved model, here (no cluster)."""
    import pandas as pd

    booster = _load_model(args.model, _read_key(args.key_file))
    table = _read_table(args.data, sep=args.sep)
    if booster.feature_names:
        missing = [c for c in booster.feature_names if c not in table.columns]
        if missing:
            raise UsageError(f"DATA {args.data} lacks the model's columns {missing}")
        table = table[booster.feature_names]
    elif table.shape[1] != booster.n_features:
        raise UsageError(f"DATA {args.data} has {table.shape[1]} columns; the model takes "
                         f"{booster.n_features} features")
    categorical = booster.categories or [None] * booster.n_features
    text = _text_columns(table, [c for c, values in zip(table.columns, categorical)
                                 if values is None])
    if text:
        raise UsageError(f"DATA {args.data}: columns {text} are not numeric (the model "
                         "reads them as numbers)")
    preds = booster.predict(table, output_margin=args.margin)
    if preds.ndim == 2:  # multi:softprob: one column per class
        out = pd.DataFrame(preds, columns=[f"prediction_{k}" for k in range(preds.shape[1])])
    else:
        out = pd.DataFrame({"prediction": preds})
    if args.out:
        out.to_csv(args.out, index=False)
    else:
        out.to_csv(sys.stdout, index=False)
    return 0


def cmd_report(args):
    """``dpxgb report``: a saved model's privacy totals (and, with ``--verbose``, every
    release)."""
    _print_report(_load_model(args.model, _read_key(args.key_file)), verbose=args.verbose)
    return 0


def cmd_budget(args):
    """``dpxgb budget create|show|list``: privacy budgets across fits, on the scheduler or
    in its budget file (``--file``)."""
    if args.file is not None:  # the scheduler's file, read where it lies
        store = dpxgb_dask.privacy.BudgetStore(args.file)  # (locked while read or written: safe while the
        if args.action == "create":      # scheduler runs)
            if not args.name or args.epsilon is None:
                raise UsageError("budget create needs the budget's NAME and --epsilon")
            statuses = [store.create(args.name, args.epsilon, args.delta, args.accountant)]
        else:
            statuses = [store.status(args.name)] if args.name else store.statuses()
    else:
        if args.action in ("create", "show") and not args.name:
            raise UsageError(f"budget {args.action} needs the budget's NAME")
        if args.action == "create":
            if args.epsilon is None:
                raise UsageError("budget create needs --epsilon")
            statuses = [dpxgb_dask.create_budget(args.name, args.epsilon, args.delta,
                                                 args.accountant, client=args.scheduler)]
        elif args.name:
            statuses = [dpxgb_dask.budget_status(args.name, client=args.scheduler)]
        else:
            statuses = dpxgb_dask.list_budgets(client=args.scheduler)
    if args.json:
        json.dump(statuses if args.action == "list" else statuses[0], sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        for status in statuses:
            _print_budget(status)
        if not statuses:
            print("no budgets")
    return 0


def _read_key(path):
    """The signing key of model files: the bytes of ``path`` without surrounding
    whitespace (a trailing newline is common in key files); None: no signature."""
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            key = f.read().strip()
    except OSError as exc:
        raise UsageError(f"--key-file {path}: {_file_problem(exc)}") from None
    if not key:
        raise UsageError(f"--key-file {path} is empty")
    return key


def build_parser():
    """The ``dpxgb`` argument parser, one sub-command per ``cmd_*`` function.

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(prog="dpxgb", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p):
        p.add_argument("--epsilon", type=float, default=1.0, help="total privacy budget")
        p.add_argument("--delta", type=float, default=None)
        p.add_argument("--preset", choices=["dp-xgboost", "dpboost", "maddock", "s-bdt"])
        p.add_argument("--seed", type=int, default=None,
                       help="seed of the public random choices (random trees); the noise is "
                            "drawn fresh at every fit unless --reproducible-noise")
        p.add_argument("--reproducible-noise", action="store_true",
                       help="key the noise by --seed too, to reproduce a fit (warns: two such "
                            "fits on neighbouring data share their noise)")
        p.add_argument("--scheduler", default=None,
                       help="address of a Dask scheduler (default: DASK_SCHEDULER_ADDRESS if set, "
                            "else an embedded LocalCluster)")
        p.add_argument("--budget", default=None, metavar="NAME",
                       help="charge the fit to this privacy budget on the scheduler (see "
                            "`dpxgb budget`); refused if it would exceed it")
        p.add_argument("--budget-file", metavar="PATH",
                       help="with --budget on the embedded cluster: the budgets file its "
                            "scheduler keeps (`dpxgb budget create NAME --file PATH`)")
        p.add_argument("--quiet", action="store_true", help="no progress bar")

    demo = sub.add_parser("demo", help="train on generated data; print accuracy and epsilon")
    common(demo)
    demo.add_argument("--rows", type=int, default=50_000)
    demo.add_argument("--data-seed", type=int, default=0)
    demo.set_defaults(func=cmd_demo)

    tr = sub.add_parser("train", help="train on a CSV or Parquet file, or on silos' own files")
    tr.add_argument("data", nargs="?", help="a CSV or Parquet table (or --silo instead)")
    add_silo_arguments(tr)
    tr.add_argument("--label", required=True)
    tr.add_argument("--objective", default="binary:logistic",
                    choices=["binary:logistic", "reg:squarederror", "multi:softprob"])
    tr.add_argument("--num-class", type=int, default=None,
                    help="multi:softprob: the public number of classes K (labels 0..K-1)")
    tr.add_argument("--bounds", help="public feature bounds: JSON {col: [lo, hi]} or CSV "
                                     "feature,lo,hi (that header, or none)")
    tr.add_argument("--bounds-epsilon", type=float, default=None,
                    help="budget for a DP estimate of the feature bounds")
    tr.add_argument("--label-bounds", type=float, nargs=2, metavar=("LO", "HI"))
    tr.add_argument("--classes", metavar="A,B,...",
                    help="the public label set, comma-separated (values that read as numbers "
                         "are numbers): labels map to their index; default: the labels are "
                         "the class indices 0, 1, ...")
    tr.add_argument("--unknown-labels", choices=["raise", "missing"],
                    help="a label outside the classes: refused (default) or its row left "
                         "out")
    tr.add_argument("--categories", metavar="FILE",
                    help="public category lists of the categorical columns: JSON "
                         "{column: [values]} (a value outside its list is missing)")
    tr.add_argument("--n-estimators", type=int)
    tr.add_argument("--max-depth", type=int)
    tr.add_argument("--learning-rate", type=float)
    tr.add_argument("--subsample", type=float)
    tr.add_argument("--accountant", choices=["pld", "rdp", "basic"],
                    help="the accountant that calibrates the noise (default: the preset's, "
                         "else pld)")
    tr.add_argument("--filter-rounds", type=int,
                    help="S-BDT's individual Renyi filter: this many extra rounds on the rows "
                         "with budget left (needs --accountant rdp or an RDP preset)")
    tr.add_argument("--filter-spending", choices=["pace", "exclude"],
                    help="with --filter-rounds: rows pace what they have left over the extra "
                         "rounds (default) or take part in full while they can (S-BDT)")
    tr.add_argument("--out", default="model.json")
    tr.add_argument("--force", action="store_true",
                    help="overwrite the --out file if it exists (refused otherwise)")
    tr.add_argument("--sep", default=",", help="DATA's column separator, if CSV (default ,)")
    tr.add_argument("--xgb-model", metavar="MODEL",
                    help="continue this saved model: --n-estimators more trees for --epsilon "
                         "more, from its margins, bounds and cuts (with --key-file it must be "
                         "signed with that key)")
    tr.add_argument("--key-file", help="sign the model file with the secret in this file "
                                       "(HMAC-SHA256)")
    tr.add_argument("--select", metavar="FAMILY|FILE",
                    help="choose privately among configurations, all within --epsilon: "
                         f"{', '.join(sorted(FAMILIES))}, or a JSON file "
                         '{"configurations": [{...}, ...], "mean_runs": 3}')
    common(tr)
    tr.set_defaults(func=cmd_train)

    pr = sub.add_parser("predict", help="score a CSV or Parquet file with a saved model")
    pr.add_argument("model")
    pr.add_argument("data")
    pr.add_argument("--sep", default=",", help="DATA's column separator, if CSV (default ,)")
    pr.add_argument("--out", help="output CSV (default: standard output)")
    pr.add_argument("--margin", action="store_true", help="raw margins instead of predictions")
    pr.add_argument("--key-file", help="refuse a model not signed with the secret in this file")
    pr.set_defaults(func=cmd_predict)

    rp = sub.add_parser("report", help="print a model's privacy ledger and totals")
    rp.add_argument("model")
    rp.add_argument("--key-file", help="refuse a model not signed with the secret in this file")
    rp.add_argument("--verbose", action="store_true",
                    help="after the totals, every release of the ledger, one per line")
    rp.set_defaults(func=cmd_report)

    bu = sub.add_parser("budget", help="privacy budgets across fits, kept on the scheduler")
    bu.add_argument("action", choices=["create", "show", "list"])
    bu.add_argument("name", nargs="?", help="the budget's name (create, show)")
    bu.add_argument("--epsilon", type=float, help="create: total epsilon of all its fits")
    bu.add_argument("--delta", type=float, default=1e-6, help="create: delta (default 1e-6)")
    bu.add_argument("--accountant", default="pld", choices=["pld", "rdp", "basic", "best"],
                    help="create: composes the fits' releases (default pld)")
    bu.add_argument("--scheduler", default=None,
                    help="address of the scheduler that keeps the budget (default: an "
                         "embedded cluster, i.e. this machine's budget file)")
    bu.add_argument("--file", default=None,
                    help="work on a scheduler's budget file directly, on its machine (the "
                         "way to create budgets when clients may not: "
                         "dpxgb.clients-create-budgets false)")
    bu.add_argument("--json", action="store_true", help="print JSON")
    bu.set_defaults(func=cmd_budget)
    add_silo_commands(sub)
    add_service_commands(sub)
    return parser


def _warning_line(message, category, *_):
    """A warning as one line on standard error (not the line of source that raised it)."""
    sys.stderr.write(f"dpxgb: {category.__name__}: {' '.join(str(message).split())}\n")


def main(argv=None):
    """Entry point of the ``dpxgb`` command.

    A bad input (an error the library raises about an argument: ``ValueError``,
    ``TypeError``, ``OSError``, a refused budget) is said in one line, ``dpxgb COMMAND:
    message``, with exit status 1; ``DPXGB_TRACEBACK=1`` shows the traceback instead.
    """
    args = build_parser().parse_args(argv)
    budget_file = getattr(args, "budget_file", None)
    # (Dask's scheduler-address: where client=None connects, cluster.client.configured_scheduler)
    if budget_file is not None and (args.scheduler or dask.config.get("scheduler-address",
                                                                      None)):
        raise UsageError(f"{args.command}: --budget-file is for the embedded cluster; a "
                         "running scheduler (--scheduler, DASK_SCHEDULER_ADDRESS) keeps its "
                         "own (its dpxgb.budget-file)")
    settings = {} if budget_file is None else {"dpxgb.budget-file": budget_file}
    try:
        with warnings.catch_warnings(), dask.config.set(settings):
            warnings.showwarning = _warning_line
            return args.func(args)
    except BrokenPipeError:  # (`dpxgb predict ... | head`: the reader left; end quietly)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # (128 + SIGPIPE, as a command killed by the closed pipe)
    except (ValueError, TypeError, OSError, BudgetError) as exc:
        if os.environ.get("DPXGB_TRACEBACK"):
            raise
        message = " ".join(str(exc).split()) or type(exc).__name__
        raise UsageError(f"{args.command}: {message}") from None


if __name__ == "__main__":
    sys.exit(main())
