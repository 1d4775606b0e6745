"""The dpxgb page of the Dask dashboard: ``/dpxgb`` (HTML) and ``/dpxgb/fits.json``.

The scheduler plugin (:class:`~dpxgb_dask.cluster.scheduler.DPXGBSchedulerPlugin`) keeps a
:class:`FitBoard`: one :class:`~dpxgb_dask.progress.FitProgress` per running fit and for the last
``HISTORY`` finished ones. The page shows, per fit, trees built, the current level, the ε
spent so far under the fit's accountant, and the releases with their noise scales. It
refreshes itself while a fit runs.

Everything on the page is public: sizes from the plan, the releases' mechanisms,
sensitivities and noise scales (never their values), and accountant totals. No time is
shown, not even when a fit started: a fit's timing can depend on its private rows. Fits are
listed newest first, in the order they reached the scheduler.

A scheduler serves the page from its start when :func:`register` ran in its process before
it was made (``dask scheduler --preload dpxgb_dask.cluster.preload``, the embedded cluster
of ``client=None``, or ``import dpxgb_dask.cluster.preload`` before a ``LocalCluster``):
until a fit runs, the page says so and ``fits.json`` lists none. On any other scheduler the
plugin adds the routes when it starts, i.e. at the first fit. The page is linked from the
navigation bar of the dashboard's Bokeh pages, when Bokeh is installed, once the plugin has
started.
"""
import asyncio
from collections import Counter, OrderedDict
import html
import json
import math

import dask
from tornado import web

from ..progress import FitProgress
from .wire import PLUGIN_NAME

#: Finished fits kept on the page (their public summaries only).
HISTORY = 20

#: Releases listed one by one per fit (the most recent); all are counted by kind.
RECENT_RELEASES = 8

PAGE_PATH = "/dpxgb"
JSON_PATH = "/dpxgb/fits.json"

#: What the page says before the first fit.
NOTHING_YET = "No dpxgb fit has run on this scheduler yet."

#: Dask's configuration key listing the modules whose ``routes`` a new scheduler serves.
ROUTES_CONFIG = "distributed.scheduler.http.routes"


class FitBoard:
    """The fits the dashboard page shows: running ones and the last ``history`` finished."""

    def __init__(self, history=HISTORY):
        self.history = history
        self.fits = OrderedDict()

    def start(self, fit_id, client=None):
        """Add a running fit; returns its :class:`~dpxgb_dask.progress.FitProgress` (fed the
        coordinator's events by
        :meth:`~dpxgb_dask.cluster.scheduler.DPXGBSchedulerPlugin.coordinate`)."""
        progress = FitProgress(fit_id, client)
        self.fits[fit_id] = progress
        return progress

    def end(self, fit_id, state="failed", error=None):
        """Mark a fit ended, and forget the oldest ended fits beyond ``history``."""
        progress = self.fits.get(fit_id)
        if progress is not None:
            progress.end(state, error)
        ended = [k for k, v in self.fits.items() if v.state != "running"]
        for k in ended[:max(0, len(ended) - self.history)]:
            del self.fits[k]

    async def snapshot(self):
        """JSON-ready list of fits, newest first (in a thread: the ε of a running fit is
        an accountant call, and a fit may have thousands of releases)."""
        fits = list(self.fits.values())[::-1]
        return await asyncio.to_thread(lambda: [_fit_entry(f) for f in fits])


def _fit_entry(fit):
    try:
        epsilon = fit.epsilon_spent()
    except Exception:  # an accountant that cannot say: shown as "-"
        epsilon = None
    entry = fit.summary(epsilon)
    entry["releases_by_kind"] = _releases_by_kind(fit)
    try:
        entry["epsilon_curve"] = fit.epsilon_curve()
    except Exception:  # as for ε above
        entry["epsilon_curve"] = []
    entry["recent_releases"] = fit.release_table(last=RECENT_RELEASES)
    return _finite(entry)


def _finite(value):
    """``value`` with every non-finite float (an ε of inf at δ = 0) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _releases_by_kind(fit):
    """Counts of releases per (purpose, mechanism, sensitivity, noise scale)."""
    counts = Counter((e.purpose, e.mechanism, e.sensitivity, e.noise_scale, e.epsilon,
                      e.noise_multiplier) for e in fit.releases)
    return [{"purpose": k[0], "mechanism": k[1], "sensitivity": k[2], "noise_scale": k[3],
             "epsilon": k[4], "noise_multiplier": k[5], "releases": n}
            for k, n in counts.items()]


def _board(scheduler):
    plugin = scheduler.plugins.get(PLUGIN_NAME)
    return getattr(plugin, "board", None)


class _BoardHandler(web.RequestHandler):
    def initialize(self, dask_server=None):
        """Tornado's hook: the handler reads the board of ``dask_server``."""
        self.scheduler = dask_server

    async def fits(self):
        board = _board(self.scheduler)
        return [] if board is None else await board.snapshot()


class FitsJSONHandler(_BoardHandler):
    """``/dpxgb/fits.json``: the board as JSON."""

    async def get(self):
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.write(json.dumps({"fits": await self.fits()}, allow_nan=False, default=str))


class FitsPageHandler(_BoardHandler):
    """``/dpxgb``: the board as an HTML page that refreshes itself while a fit runs."""

    async def get(self):
        self.set_header("Cache-Control", "no-store")
        self.write(render_page(await self.fits()))


def _fmt(value, digits=4):
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return html.escape(str(value))


def _table(rows, columns):
    head = "".join(f"<th>{html.escape(c)}</th>" for c, _ in columns)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(r.get(key))}</td>" for _, key in columns)
                   + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_KIND_COLUMNS = [("purpose", "purpose"), ("mechanism", "mechanism"),
                 ("sensitivity", "sensitivity"), ("ε per release", "epsilon"),
                 ("noise multiplier", "noise_multiplier"), ("noise scale", "noise_scale"),
                 ("releases", "releases")]
_RECENT_COLUMNS = [("purpose", "purpose"), ("mechanism", "mechanism"), ("tree", "tree"),
                   ("depth", "depth"), ("noise scale", "noise_scale"),
                   ("sampling rate", "sampling_rate"), ("pieces", "n_parallel")]


def _fit_section(fit):
    level = "-"
    if fit["state"] == "running" and fit["tree"] is not None:
        level = f"tree {fit['tree']}" + ("" if fit["depth"] is None else f", depth {fit['depth']}")
    target = "" if fit["epsilon_target"] is None else f" of {_fmt(fit['epsilon_target'])}"
    facts = [
        ("state", fit["state"] + (f" ({_fmt(fit['error'])})" if fit["error"] else "")),
        ("objective", _fmt(fit["objective"])),
        ("trees built", f"{fit['trees_built']} / {_fmt(fit['n_trees'])}"),
        ("current level", level),
        ("ε spent", f"<b class='eps'>{_fmt(fit['epsilon_spent'])}</b>{target} "
                    f"({_fmt(fit['accountant'])} accountant, δ = {_fmt(fit['delta'])})"),
        ("releases", str(fit["n_releases"])),
        ("client", _fmt(fit["client"])),
    ]
    dl = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts)
    return (f"<section class='fit {html.escape(fit['state'])}' data-fit='{_fmt(fit['fit'])}'>"
            f"<h2>fit {_fmt(fit['fit'][:12])}</h2><table class='facts'>{dl}</table>"
            f"<h3>Releases by kind</h3>{_table(fit['releases_by_kind'], _KIND_COLUMNS)}"
            f"<h3>Latest releases</h3>{_table(fit['recent_releases'], _RECENT_COLUMNS)}"
            "</section>")


_STYLE = """
body { font-family: Helvetica, Arial, sans-serif; margin: 1em 2em; color: #222; }
nav a { margin-right: 1em; }
section.fit { border: 1px solid #ccc; border-radius: 6px; padding: 0.5em 1em; margin: 1em 0; }
section.running { border-color: #ECB172; }
table { border-collapse: collapse; margin: 0.3em 0; }
th, td { padding: 2px 10px; text-align: left; border-bottom: 1px solid #eee; }
table.facts th { color: #555; font-weight: normal; }
"""

_REFRESH = """
<script>
// Every second while a fit runs, every five otherwise (a fit may start any time).
let idle = 0;
setInterval(async function () {
  if (!document.querySelector("section.running") && ++idle % 5) { return; }
  const response = await fetch(window.location.href, {cache: "no-store"});
  const page = new DOMParser().parseFromString(await response.text(), "text/html");
  document.getElementById("fits").replaceWith(page.getElementById("fits"));
}, 1000);
</script>
"""


def render_page(fits):
    """The HTML page of the board (``fits``: :meth:`FitBoard.snapshot`)."""
    sections = "".join(_fit_section(f) for f in fits) or f"<p>{NOTHING_YET}</p>"
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>dpxgb</title>"
            f"<style>{_STYLE}</style></head><body>"
            "<nav><a href='status'>Dask dashboard</a><a href='dpxgb/fits.json'>JSON</a></nav>"
            "<h1>dpxgb: differentially private fits</h1>"
            "<p>Public values only: trees built, the releases' noise parameters and the ε "
            "they spend under each fit's accountant (neighbouring datasets: add or remove "
            f"one row).</p><div id='fits'>{sections}</div>{_REFRESH}</body></html>")


#: The page's routes, read by ``distributed`` from the modules that :data:`ROUTES_CONFIG`
#: lists when it makes a scheduler (each handler then gets ``dask_server=`` the scheduler).
routes = [(PAGE_PATH, FitsPageHandler, {}), (JSON_PATH, FitsJSONHandler, {})]


def register():
    """Serve the page from every scheduler made in this process from now on, from its start.

    Adds this module to Dask's :data:`ROUTES_CONFIG` (idempotent), so the page answers
    before the first fit, saying that none has run; dpxgb's scheduler plugin, once started,
    fills it. The preload runs it at import, which ``distributed`` does before it makes the
    scheduler. A scheduler made before, or in another process without the preload, gets the
    page from the plugin's start (:func:`install_routes`), i.e. at the first fit.
    """
    modules = dask.config.get(ROUTES_CONFIG, default=[])
    if __name__ not in modules:
        dask.config.set({ROUTES_CONFIG: [*modules, __name__]})


def _serves_page(app):
    """Whether ``app`` serves the page from its start (:func:`register`)."""
    return any(rule.target is FitsPageHandler for rule in app.wildcard_router.rules)


def install_routes(scheduler):
    """Serve the page from the scheduler's HTTP server, unless it does already, and link
    it from the dashboard's navigation bar (once per scheduler)."""
    app = getattr(scheduler, "http_application", None)
    if app is None or getattr(app, "_dpxgb_routes", False):
        return
    if not _serves_page(app):
        app.add_handlers(r".*", [(PAGE_PATH, FitsPageHandler, {"dask_server": scheduler}),
                                 (JSON_PATH, FitsJSONHandler, {"dask_server": scheduler})])
    app._dpxgb_routes = True
    try:
        from distributed.dashboard.scheduler import template_variables
    except ImportError:  # no Bokeh: no dashboard pages to link from
        return
    pages = template_variables(scheduler)["pages"]
    if "dpxgb" not in pages:
        pages.append("dpxgb")


def page_link(client):
    """The address of the dpxgb page of ``client``'s scheduler (None without a dashboard)."""
    link = client.dashboard_link
    if not link:
        return None
    return link.rsplit("/", 1)[0] + PAGE_PATH
