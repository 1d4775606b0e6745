"""The fit's progress (``progress.py``), the user's progress display, and the ``/dpxgb``
page of the Dask dashboard (``dashboard.py``)."""
import asyncio
from contextlib import contextmanager
import io
import json
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from dpxgb_dask.cluster.dashboard import FitBoard, page_link, render_page
from dpxgb_dask.params import resolve_params
from dpxgb_dask.privacy.accountants import get_accountant
from dpxgb_dask.privacy.ledger import Ledger
from dpxgb_dask.progress import FitProgress, ProgressDisplay
from dpxgb_dask.training import check_bounds_policy, train, train_in_process
from dpxgb_dask.model.certificate import stated_total

#: What the page says on a scheduler where no fit has run yet.
NOTHING_YET = "No dpxgb fit has run on this scheduler yet."

#: A date and a time of day, as the page once showed when each fit started.
DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}")

#: Pages of the standard dashboard that must answer 200 during and after fits.
#: (``/sitemap.json`` is not among them: distributed 2026.8 answers 500 there on every
#: scheduler, with or without dpxgb, from a KeyError in ``distributed.http.routing``.)
STANDARD_PAGES = ["/status", "/workers", "/info/main/workers.html", "/json/identity.json",
                  "/json/counts.json", "/health"]


def _in_process_events(seed, classification_data, **params):
    X, y, bounds = classification_data
    p = check_bounds_policy(resolve_params("binary:logistic", feature_bounds=bounds,
                                           random_state=seed, **params), X.shape[1])
    events = []
    booster, _ = train_in_process(p, X, y, publish=events.append)
    return booster, events


@pytest.mark.parametrize("params", [
    dict(epsilon=1.0, n_estimators=6, max_depth=3),
    dict(preset="dp-xgboost", epsilon=1.0, n_estimators=3, max_depth=2),
    dict(preset="s-bdt", epsilon=0.5, n_estimators=5),
])
def test_progress_spends_what_the_model_reports(seed, classification_data, params):
    booster, events = _in_process_events(seed, classification_data, **params)
    progress = FitProgress("fit")
    curve = []
    for event in events:
        if event["event"] == "done":
            # Before "done": the fit's accountant on every release made.
            # (the model file states it rounded up to 5 digits: model/certificate.py)
            assert stated_total(progress.epsilon_spent()) == booster.ledger["epsilon"]
        progress.update(event)
        if event["event"] == "tree":
            curve.append(progress.epsilon_spent())
    assert progress.state == "finished"
    assert progress.trees_built == booster.n_trees == len(curve)
    assert progress.epsilon_spent() == booster.ledger["epsilon"]
    assert progress.accountant == booster.ledger["accountant"]
    # The releases the events carry are exactly the model's ledger.
    assert Ledger(progress.releases).to_dict() == Ledger.from_dict(
        booster.ledger["events"]).to_dict()
    assert all(b >= a for a, b in zip(curve, curve[1:]))  # composition never gives back
    assert 0 < curve[0] < curve[-1] <= booster.ledger["epsilon"] * (1 + 1e-12)


def test_progress_reads_the_releases_only_when_asked(seed, classification_data, monkeypatch):
    """Issue 40: the scheduler's board folds each event in without making its releases'
    objects (a check per release, on the event loop, per tree); they are made once, when
    a page or the accountant reads them."""
    from dpxgb_dask.privacy.ledger import PrivacyEvent

    booster, events = _in_process_events(seed, classification_data, epsilon=1.0,
                                         n_estimators=4, max_depth=3)
    ledger = Ledger.from_dict(booster.ledger["events"]).to_dict()
    n_releases = sum(len(e["releases"]) for e in events)
    made = []
    original = PrivacyEvent.from_dict.__func__
    monkeypatch.setattr(PrivacyEvent, "from_dict",
                        classmethod(lambda cls, d: made.append(1) or original(cls, d)))
    progress = FitProgress("fit")
    for event in events:
        progress.update(event)
    assert made == [] and len(progress.tree_ends) == 4
    assert Ledger(progress.releases).to_dict() == ledger
    assert len(made) == n_releases
    assert len(progress.releases) == n_releases and len(made) == n_releases  # (made once)


def test_epsilon_spent_is_the_accountants_and_is_cached(seed, classification_data,
                                                        monkeypatch):
    booster, events = _in_process_events(seed, classification_data, epsilon=1.0,
                                         n_estimators=4, max_depth=3)
    progress = FitProgress("fit")
    for event in events[:-1]:
        progress.update(event)
    expected = get_accountant("pld").get_epsilon(Ledger(progress.releases), 1e-6)
    assert progress.epsilon_spent() == expected
    calls = []
    monkeypatch.setattr("dpxgb_dask.progress.get_accountant",
                        lambda name: calls.append(name))
    assert progress.epsilon_spent() == expected and not calls  # same releases: cached


def test_text_display_shows_trees_and_the_models_epsilon(seed, classification_data,
                                                         monkeypatch):
    monkeypatch.setattr("dpxgb_dask.progress.EPSILON_REFRESH_SECONDS", 0.0)
    booster, events = _in_process_events(seed, classification_data, epsilon=1.0,
                                         n_estimators=5, max_depth=3)
    out = io.StringIO()
    display = ProgressDisplay(5, kind="text", stream=out)
    for event in events:
        if display._pending is not None:
            display._pending.result()  # each running total arrives before the next tree
        display(event)
    assert display.wait_done(0)
    display.close()
    text = out.getvalue()
    assert "tree 5/5" in text and "(pld) after " in text
    info = booster.ledger
    assert text.endswith(f"done, 5 trees, ε = {info['epsilon']:.4g} (pld, δ = 1e-06)\n")


def test_a_text_display_off_a_terminal_writes_a_few_plain_lines(seed, classification_data):
    """Issue 43, item 5: with stderr in a file, the bar's redraws became 50+ lines. Off a
    terminal, a line per tenth of the trees and the last; on one, the bar in place."""
    _, events = _in_process_events(seed, classification_data, epsilon=1.0, n_estimators=40,
                                   max_depth=2)

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    written = {}
    for stream in (io.StringIO(), Terminal()):
        display = ProgressDisplay(40, kind="text", stream=stream)
        for event in events:
            display(event)
        display.close()
        written[type(stream).__name__] = stream.getvalue()
    log = written["StringIO"]
    assert "\r" not in log and log.count("\n") == 11  # trees 4, 8, ..., 40, then done
    assert log.splitlines()[0].startswith("dpxgb: tree 4/40")
    assert log.splitlines()[-1].startswith("dpxgb: done, 40 trees")
    assert written["Terminal"].count("\r") == 41 and written["Terminal"].count("\n") == 1


def test_widget_display(seed, classification_data):
    pytest.importorskip("ipywidgets")
    booster, events = _in_process_events(seed, classification_data, epsilon=1.0,
                                         n_estimators=3, max_depth=2)
    display = ProgressDisplay(3, kind="widget")
    for event in events:
        display(event)
    display.close()
    assert display._bar.value == 3 and display._bar.bar_style == "success"
    assert f"ε = {booster.ledger['epsilon']:.4g}" in display._label.value
    with pytest.raises(ValueError, match="kind must be"):
        ProgressDisplay(3, kind="tqdm")


def test_board_keeps_running_fits_and_the_last_finished():
    board = FitBoard(history=2)
    for i in range(4):
        board.start(f"fit{i}")
        board.end(f"fit{i}", "failed", "ValueError")
    board.start("running")
    assert list(board.fits) == ["fit2", "fit3", "running"]
    assert board.fits["fit3"].state == "failed"
    fits = asyncio.run(board.snapshot())
    assert [f["fit"] for f in fits] == ["running", "fit3", "fit2"]
    assert NOTHING_YET in render_page([])
    page = render_page(fits)
    assert "fit running" in page and "ValueError" in page


#: How long a test waits for the dashboard or a fit before failing. The waits poll for a
#: state, so a deadline costs nothing when the machine is fast and only bounds a hang:
#: under load (another job on both cores) one page took over 30 s.
DEADLINE_S = 600


def _get(url, deadline_s=DEADLINE_S):
    """(HTTP status, body); a request that times out is sent again until ``deadline_s``."""
    end = time.monotonic() + deadline_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")
        except TimeoutError:
            if time.monotonic() > end:
                raise


def _settled_fit(base, fit=None, deadline_s=DEADLINE_S):
    """The entry of ``fit`` (default: the newest) in ``fits.json`` once it is no longer
    running: the board marks a fit's end on the scheduler, which may come after the
    client's ``train`` returned or raised."""
    end = time.monotonic() + deadline_s
    while True:
        fits = json.loads(_get(base + "/dpxgb/fits.json")[1])["fits"]
        entry = next((f for f in fits if fit is None or f["fit"] == fit), None)
        if entry is not None and entry["state"] != "running":
            return entry
        if time.monotonic() > end:
            raise TimeoutError(f"the fit {fit or 'newest'} still runs on the board: {entry}")
        time.sleep(0.1)


@contextmanager
def _paused_fit(client, params, X, y, monkeypatch, at_round=8):
    """Start a fit in a thread and hold its coordinator before round ``at_round`` (the
    LocalCluster's scheduler runs in this process) until the ``with`` block ends.

    Yields the dict that receives ``"booster"`` (or ``"error"``) once the fit ends."""
    from dpxgb_dask.boosting.coordinator import Coordinator

    gate, paused = threading.Event(), threading.Event()
    original = Coordinator._round

    async def gated_round(self, **fields):
        if self._seq + 1 == at_round:
            paused.set()
            await asyncio.to_thread(gate.wait, DEADLINE_S)
        return await original(self, **fields)

    monkeypatch.setattr(Coordinator, "_round", gated_round)
    result = {}

    def run():
        try:
            result["booster"] = train(params, X, y, client=client)
        except BaseException as exc:  # reported by the test
            result["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert paused.wait(DEADLINE_S), "the fit never reached the paused round"
        yield result
    finally:
        gate.set()
        thread.join()
        monkeypatch.setattr(Coordinator, "_round", original)


#: The only keys of a fit on the page, by where their value comes from.
PARAMETER_KEYS = {"objective", "n_trees", "accountant", "delta", "epsilon_target"}
PROGRESS_KEYS = {"fit", "client", "state", "error", "trees_built", "tree",
                 "depth", "n_releases", "epsilon_spent", "releases_by_kind",
                 "recent_releases", "epsilon_curve"}
RELEASE_KEYS = {"purpose", "mechanism", "tree", "depth", "sensitivity", "epsilon",
                "noise_multiplier", "noise_scale", "sampling_rate", "n_parallel", "count"}


def _check_public(entry, booster, running):
    """Every value of a fit's entry is a public parameter, a count of the fit's progress,
    a field of a release in the model's ledger, or the accountant's ε of those releases."""
    assert set(entry) == PARAMETER_KEYS | PROGRESS_KEYS
    params, info = booster.params, booster.ledger
    assert entry["objective"] == params["objective"]
    assert entry["n_trees"] == params["n_estimators"]
    assert entry["epsilon_target"] == params["epsilon"] and entry["delta"] == params["delta"]
    assert entry["accountant"] == params["accountant"]
    events = Ledger.from_dict(info["events"]).events
    made = events[:entry["n_releases"]]
    assert 0 <= entry["trees_built"] <= entry["n_trees"]
    if running:
        assert entry["epsilon_spent"] == pytest.approx(
            get_accountant(params["accountant"]).get_epsilon(Ledger(made), params["delta"]))
    else:
        assert entry["n_releases"] == len(events) and entry["trees_built"] == entry["n_trees"]
        assert entry["epsilon_spent"] == info["epsilon"]
    rows = [{k: getattr(e, k) for k in RELEASE_KEYS} for e in made]
    assert entry["recent_releases"] == rows[-len(entry["recent_releases"]):]
    kinds = entry["releases_by_kind"]
    assert sum(k["releases"] for k in kinds) == len(made)
    for kind in kinds:
        assert set(kind) == {"purpose", "mechanism", "sensitivity", "noise_scale", "epsilon",
                             "noise_multiplier", "releases"}
        same = [r for r in rows if all(r[k] == kind[k] for k in kind if k != "releases")]
        assert len(same) == kind["releases"]


def test_page_during_and_after_a_fit(client, seed, classification_data, monkeypatch):
    X, y, bounds = classification_data
    base = page_link(client).rsplit("/", 1)[0]
    params = {"feature_bounds": bounds, "epsilon": 1.0, "random_state": seed,
              "n_estimators": 12, "max_depth": 3, "split_method": "noisy_histogram"}
    with _paused_fit(client, params, X, y, monkeypatch) as result:
        for path in STANDARD_PAGES + ["/dpxgb", "/dpxgb/fits.json"]:
            assert _get(base + path)[0] == 200, path
        fits = json.loads(_get(base + "/dpxgb/fits.json")[1])["fits"]
        during = next(f for f in fits if f["state"] == "running")
        page_during = _get(base + "/dpxgb")[1]
    assert "error" not in result, result.get("error")
    booster = result["booster"]
    _check_public(during, booster, running=True)
    # Held mid-fit: some trees and releases made, a level in progress, ε partly spent.
    assert 0 < during["trees_built"] < 12 and during["depth"] is not None
    assert 0 < during["epsilon_spent"] < booster.ledger["epsilon"]
    assert "class='fit running'" in page_during
    assert f"<b class='eps'>{during['epsilon_spent']:.4g}</b>" in page_during

    for path in STANDARD_PAGES:
        assert _get(base + path)[0] == 200, path
    after = _settled_fit(base, during["fit"])
    assert after["client"] == client.id and after["state"] == "finished"
    _check_public(after, booster, running=False)
    status, page = _get(base + "/dpxgb")
    assert status == 200
    assert f"<b class='eps'>{booster.ledger['epsilon']:.4g}</b>" in page
    if "bokeh" in _get(base + "/status")[1].lower():
        assert 'href="dpxgb"' in _get(base + "/status")[1]  # linked from the navigation bar


def test_a_failed_fit_is_marked_failed_with_its_releases(client, seed, classification_data,
                                                        monkeypatch):
    from dpxgb_dask.boosting.coordinator import Coordinator

    X, y, bounds = classification_data
    original = Coordinator._round

    async def failing_round(self, **fields):
        if self._seq + 1 == 6:
            raise ZeroDivisionError("injected")
        return await original(self, **fields)

    monkeypatch.setattr(Coordinator, "_round", failing_round)
    with pytest.raises(ZeroDivisionError):
        train({"feature_bounds": bounds, "epsilon": 1.0, "random_state": seed,
               "n_estimators": 6, "max_depth": 3, "split_method": "noisy_histogram"}, X, y,
              client=client)
    base = page_link(client).rsplit("/", 1)[0]
    fit = _settled_fit(base)
    assert fit["state"] == "failed" and fit["error"] == "ZeroDivisionError"
    assert fit["n_releases"] > 0 and fit["epsilon_spent"] > 0
    assert "failed" in _get(base + "/dpxgb")[1]


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(_chromium() is None,
                    reason="no chromium on PATH (Debian: apt-get install chromium; "
                           ".ci/run installs it)")
def test_page_in_headless_chromium(client, seed, classification_data, tmp_path, monkeypatch):
    X, y, bounds = classification_data
    url = page_link(client)
    shot = tmp_path / "dpxgb.png"
    browser = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-dev-shm-usage", "--virtual-time-budget=3000"]

    def dom():
        return subprocess.run(browser + ["--dump-dom", url], capture_output=True, text=True,
                              timeout=DEADLINE_S, check=True).stdout

    params = {"feature_bounds": bounds, "epsilon": 0.5, "random_state": seed,
              "n_estimators": 10, "max_depth": 3, "split_method": "noisy_histogram"}
    with _paused_fit(client, params, X, y, monkeypatch) as result:
        running = next(f for f in json.loads(_get(url + "/fits.json")[1])["fits"]
                       if f["state"] == "running")
        during = dom()
        subprocess.run(browser + [f"--screenshot={shot}", "--window-size=1200,900", url],
                       capture_output=True, timeout=DEADLINE_S, check=True)
    booster = result["booster"]
    _settled_fit(url.rsplit("/", 1)[0], running["fit"])
    after = dom()
    assert "dpxgb: differentially private fits" in during
    assert 'class="fit running"' in during
    assert f"<b class=\"eps\">{running['epsilon_spent']:.4g}</b>" in during
    assert f"{running['trees_built']} / 10" in during
    assert f"<b class=\"eps\">{booster.ledger['epsilon']:.4g}</b>" in after
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_preload_serves_the_page_before_any_fit():
    from distributed import Scheduler, Worker

    async def run():
        async with Scheduler(port=0, dashboard_address=":0",
                             preload=["dpxgb_dask.cluster.preload"]) as scheduler:
            port = scheduler.http_server.port
            status, body = await asyncio.to_thread(
                _get, f"http://127.0.0.1:{port}/dpxgb")
            assert status == 200 and NOTHING_YET in body
            status, body = await asyncio.to_thread(
                _get, f"http://127.0.0.1:{port}/dpxgb/fits.json")
            assert json.loads(body) == {"fits": []}
            async with Worker(scheduler.address, preload=["dpxgb_dask.cluster.preload"]) as worker:
                assert "dpxgb_call" in worker.handlers

    asyncio.run(run())


def _numbers(value):
    """Every number in a JSON value, however deep."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)


def test_no_time_of_a_fit_is_shown(client, seed, classification_data):
    """Issue "Day one as a user", item 6: the page and ``fits.json`` showed when each fit
    started. A fit's timing can depend on its private rows (a level's duration grows with
    its nodes' rows), and the docs promise no duration or time: neither shows one, under
    ``started`` or any other name."""
    X, y, bounds = classification_data
    since = time.time() - 86_400
    train({"feature_bounds": bounds, "epsilon": 1.0, "random_state": seed,
           "n_estimators": 3, "max_depth": 2}, X, y, client=client)
    until = time.time() + 86_400
    base = page_link(client).rsplit("/", 1)[0]
    _settled_fit(base)
    fits = json.loads(_get(base + "/dpxgb/fits.json")[1])["fits"]
    assert fits and [f for f in fits if "started" in f] == []
    # (a Unix time within a day of the fit, in seconds or milliseconds)
    assert [v for v in _numbers(fits) if since <= v <= until
            or since * 1000 <= v <= until * 1000] == []
    status, page = _get(base + "/dpxgb")
    assert status == 200 and "class='fit " in page
    assert "<th>started</th>" not in page and DATE_TIME.findall(page) == []


def test_a_cluster_started_as_the_docs_say_serves_the_page_before_any_fit():
    """Issue "Day one as a user", item 6: ``/dpxgb`` answered 404 until the first fit
    installed it. A ``LocalCluster`` made after ``import dpxgb_dask.cluster.preload`` (what
    docs/jupyter.md says; the embedded cluster of ``client=None`` does the same) serves it
    from the start, saying that nothing has run yet."""
    from distributed import LocalCluster

    from dpxgb_dask.cluster import dashboard_plot

    # What importing the preload runs (here explicitly: the module may be imported already).
    dashboard_plot.register()
    with LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cluster:
        base = cluster.dashboard_link.rsplit("/", 1)[0]
        status, body = _get(base + "/dpxgb")
        assert status == 200 and NOTHING_YET in body
        status, body = _get(base + "/dpxgb/fits.json")
        assert status == 200 and json.loads(body) == {"fits": []}


def test_demo_progress_bar_shows_the_epsilon_the_model_reports(cluster, capsys):
    from dpxgb_dask.cli import main

    assert main(["demo", "--rows", "5000", "--scheduler", cluster.scheduler_address]) == 0
    captured = capsys.readouterr()
    spent = re.search(r"epsilon spent = ([\d.]+) \((\w+) accountant", captured.out)
    done = re.search(r"done, (\d+) trees, ε = ([\d.]+) \((\w+), ", captured.err)
    assert spent and done, captured
    assert done.group(3) == spent.group(2) == "pld"
    assert float(done.group(2)) == pytest.approx(float(spent.group(1)), abs=5e-4)
    assert "basic" not in captured.err  # the bar speaks of the fit's own accountant only


# -- the Bokeh plot under /individual-dpxgb-fits (JupyterLab's Dask sidebar lists it) --------

_SHADOW_TEXT_JS = """(async () => {
  await new Promise(r => setTimeout(r, %d));
  const texts = [];
  const walk = (root) => {
    root.querySelectorAll('*').forEach(el => { if (el.shadowRoot) walk(el.shadowRoot); });
    texts.push(root.textContent || '');
  };
  walk(document);
  return texts.join('\\n');
})()"""


def _rendered_text(url, ready, wait_ms=500):
    """The text a headless Chromium renders at ``url``, shadow roots included (Bokeh draws
    its widgets in shadow DOM, which ``--dump-dom`` leaves out), read through the DevTools
    protocol every ``wait_ms`` until ``ready(text)`` holds (or :data:`DEADLINE_S` passes:
    the text is returned as it is, for the test's assertions to name what is missing)."""
    from tornado.websocket import websocket_connect

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    browser = subprocess.Popen(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         f"--remote-debugging-port={port}", "--window-size=1200,900", url],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + DEADLINE_S
        pages = []
        while not pages:
            try:
                targets = json.loads(_get(f"http://127.0.0.1:{port}/json/list")[1])
                pages = [t for t in targets if t.get("type") == "page"]
            except OSError:
                pass
            if not pages and time.time() > deadline:
                raise TimeoutError("chromium's debugging port never answered")
            time.sleep(0.2)

        async def evaluate():
            ws = await websocket_connect(pages[0]["webSocketDebuggerUrl"],
                                         max_message_size=2**26)
            attempt, text, reply = 0, None, {}
            # (until the page's own context stays, it loads, and the plot is drawn)
            while text is None or not ready(text):
                if time.time() > deadline:
                    if text is None:
                        raise RuntimeError(f"chromium did not evaluate the page: {reply}")
                    break
                attempt += 1
                await ws.write_message(json.dumps({
                    "id": attempt, "method": "Runtime.evaluate",
                    "params": {"expression": _SHADOW_TEXT_JS % wait_ms, "returnByValue": True,
                               "awaitPromise": True}}))
                reply = {}
                while reply.get("id") != attempt:
                    reply = json.loads(await ws.read_message())
                value = reply.get("result", {}).get("result", {})
                if "value" in value:
                    text = value["value"]
                else:
                    await asyncio.sleep(0.5)
            ws.close()
            return text

        return asyncio.run(evaluate())
    finally:
        browser.kill()
        browser.wait()


def test_the_plot_is_listed_among_the_dashboards_individual_plots(client):
    from dpxgb_dask.cluster.dashboard_plot import PLOT_PATH

    base = page_link(client).rsplit("/", 1)[0]
    listed = json.loads(_get(base + "/individual-plots.json")[1])
    assert listed["Individual Dpxgb Fits"] == PLOT_PATH
    status, page = _get(base + PLOT_PATH)
    assert status == 200 and "bokeh" in page.lower()


def test_the_plot_draws_epsilon_against_trees_from_public_values(client, seed,
                                                                 classification_data):
    from dpxgb_dask.cluster.dashboard_plot import _columns

    X, y, bounds = classification_data
    booster = train({"feature_bounds": bounds, "epsilon": 1.0, "random_state": seed,
                     "n_estimators": 30, "max_depth": 3}, X, y, client=client)
    base = page_link(client).rsplit("/", 1)[0]
    fit = _settled_fit(base)
    curve = fit["epsilon_curve"]
    assert [k for k, _ in curve] == list(range(1, 31))  # (30 trees: a point per tree)
    assert all(a < b for (_, a), (_, b) in zip(curve, curve[1:]))  # ε grows with the trees
    # (the model file states its total rounded up to 5 digits: model/certificate.py)
    assert curve[-1][1] == pytest.approx(booster.ledger["epsilon"], rel=1e-4)
    assert curve[-1][1] <= booster.ledger["epsilon"]
    curves, table, kinds = _columns([fit])
    assert curves["xs"] == [list(range(1, 31))] and table["state"] == ["finished"]
    assert table["trees"] == ["30 / 30"] and {"leaf"} <= set(kinds["purpose"])


@pytest.mark.skipif(_chromium() is None,
                    reason="no chromium on PATH (Debian: apt-get install chromium; "
                           ".ci/run installs it)")
def test_the_plot_in_headless_chromium(client, seed, classification_data, monkeypatch):
    from dpxgb_dask.cluster.dashboard_plot import PLOT_PATH

    X, y, bounds = classification_data
    base = page_link(client).rsplit("/", 1)[0]
    params = {"feature_bounds": bounds, "epsilon": 0.5, "random_state": seed,
              "n_estimators": 10, "max_depth": 3, "split_method": "noisy_histogram"}
    with _paused_fit(client, params, X, y, monkeypatch) as result:
        running = next(f for f in json.loads(_get(base + "/dpxgb/fits.json")[1])["fits"]
                       if f["state"] == "running")
        during = _rendered_text(base + PLOT_PATH,
                                lambda text: f"{running['trees_built']} / 10" in text)
    booster = result["booster"]
    _settled_fit(base, running["fit"])
    after = _rendered_text(base + PLOT_PATH, lambda text: "finished" in text)
    assert "dpxgb: differentially private fits" in during
    assert "ε spent against trees built" in during or "trees built" in during
    assert running["fit"][:12] in during and "running" in during
    assert f"{running['trees_built']} / 10" in during
    assert f"{running['epsilon_spent']:.4g}" in during
    assert running["fit"][:12] in after and "finished" in after
    assert f"{booster.ledger['epsilon']:.4g}" in after
