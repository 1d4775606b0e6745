"""The dpxgb plot of the Dask dashboard: a Bokeh view of the fits at
``/individual-dpxgb-fits``.

``distributed`` lists the dashboard's individual plots (``/individual-plots.json``, which
JupyterLab's Dask sidebar reads) from the Bokeh applications whose path starts with
``individual-``, and builds those applications when the scheduler starts its HTTP server.
:func:`register` adds this one to ``distributed``'s table of scheduler applications; it
must run in the scheduler's process before the scheduler starts: the preload
(``dask scheduler --preload dpxgb_dask.cluster.preload``, as the ``k8s/`` manifests do) and
the embedded cluster of ``client=None`` do so, and so does importing
``dpxgb_dask.cluster.preload`` before a ``LocalCluster`` is made in the same process. It
registers the ``/dpxgb`` page too (:func:`~dpxgb_dask.cluster.dashboard.register`), which
such a scheduler then serves before its first fit.

The view shows what the ``/dpxgb`` page shows (:class:`~dpxgb_dask.cluster.dashboard.FitBoard`,
public values only): per fit, the ε spent against the trees built, trees and the current
level, and the releases by kind (never their values or timings).
"""
from . import dashboard
from .dashboard import _board

#: The plot's path on the dashboard (listed by ``/individual-plots.json`` as "Individual
#: Dpxgb Fits").
PLOT_PATH = "/individual-dpxgb-fits"

#: Refresh interval of an open view, in milliseconds.
REFRESH_MS = 1000

#: Line colours of the fits, newest first (Bokeh's Category10).
_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf"]


def register():
    """Add the view to ``distributed``'s scheduler dashboard applications, and the
    ``/dpxgb`` page to the routes of the schedulers made from now on (both idempotent).

    Returns
    -------
    bool
        Whether the view is registered (not without Bokeh; the page is, all the same).
    """
    # (the page needs no Bokeh: registered first; every caller of this wants both)
    dashboard.register()
    try:
        from distributed.dashboard.scheduler import applications
    except ImportError:  # no Bokeh: no dashboard
        return False
    applications.setdefault(PLOT_PATH, fits_document)
    return True


def _columns(fits):
    """The views' data sources from the board's snapshot (``FitBoard.snapshot``)."""
    curves = {"xs": [], "ys": [], "fit": [], "colour": []}
    table = {k: [] for k in ("fit", "state", "trees", "level", "epsilon", "target",
                             "releases")}
    kinds = {k: [] for k in ("fit", "purpose", "mechanism", "releases")}
    for i, fit in enumerate(fits):
        name = fit["fit"][:12]
        points = fit.get("epsilon_curve") or []
        curves["xs"].append([p[0] for p in points])
        curves["ys"].append([p[1] for p in points])
        curves["fit"].append(name)
        curves["colour"].append(_COLOURS[i % len(_COLOURS)])
        level = "-"
        if fit["state"] == "running" and fit["tree"] is not None:
            level = f"tree {fit['tree']}" + (
                "" if fit["depth"] is None else f", depth {fit['depth']}")
        table["fit"].append(name)
        table["state"].append(fit["state"])
        table["trees"].append(f"{fit['trees_built']} / {fit['n_trees'] or '-'}")
        table["level"].append(level)
        table["epsilon"].append(_number(fit["epsilon_spent"]))
        table["target"].append(_number(fit["epsilon_target"]))
        table["releases"].append(fit["n_releases"])
        for kind in fit["releases_by_kind"]:
            kinds["fit"].append(name)
            kinds["purpose"].append(kind["purpose"])
            kinds["mechanism"].append(kind["mechanism"])
            kinds["releases"].append(kind["releases"])
    return curves, table, kinds


def _number(value):
    return "-" if value is None else f"{value:.4g}"


def fits_document(scheduler, extra, doc):
    """Build the view in a Bokeh document (``distributed``'s application signature)."""
    from bokeh.layouts import column
    from bokeh.models import ColumnDataSource, DataTable, Div, TableColumn
    from bokeh.plotting import figure

    curves, table, kinds = (ColumnDataSource(data) for data in _columns([]))
    plot = figure(title="ε spent against trees built", x_axis_label="trees built",
                  y_axis_label="ε spent (the fit's accountant)", height=300,
                  sizing_mode="stretch_width", tools="pan,wheel_zoom,box_zoom,reset")
    plot.multi_line("xs", "ys", source=curves, line_color="colour", line_width=2,
                    legend_field="fit")
    plot.legend.location = "top_left"
    fits_table = DataTable(source=table, height=160, sizing_mode="stretch_width",
                           index_position=None, columns=[
                               TableColumn(field="fit", title="fit"),
                               TableColumn(field="state", title="state"),
                               TableColumn(field="trees", title="trees built"),
                               TableColumn(field="level", title="current level"),
                               TableColumn(field="epsilon", title="ε spent"),
                               TableColumn(field="target", title="ε target"),
                               TableColumn(field="releases", title="releases")])
    kinds_table = DataTable(source=kinds, height=200, sizing_mode="stretch_width",
                            index_position=None, columns=[
                                TableColumn(field="fit", title="fit"),
                                TableColumn(field="purpose", title="purpose"),
                                TableColumn(field="mechanism", title="mechanism"),
                                TableColumn(field="releases", title="releases")])
    note = Div(text="<b>dpxgb: differentially private fits</b>. Public values only: trees "
                    "built, the releases by kind and the ε they spend under each fit's "
                    "accountant.")

    async def refresh():
        board = _board(scheduler)
        fits = [] if board is None else await board.snapshot()
        for source, data in zip((curves, table, kinds), _columns(fits)):
            source.data = data

    doc.title = "dpxgb fits"
    doc.add_root(column(note, plot, fits_table, kinds_table, sizing_mode="stretch_width"))
    doc.add_next_tick_callback(refresh)
    doc.add_periodic_callback(refresh, REFRESH_MS)


def plot_link(client):
    """The address of the dpxgb plot on ``client``'s dashboard (None without a dashboard;
    the plot is there if :func:`register` ran before the scheduler started)."""
    link = client.dashboard_link
    if not link:
        return None
    return link.rsplit("/", 1)[0] + PLOT_PATH
