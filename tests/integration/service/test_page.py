"""The service's web page, in headless Chromium: with an analyst's token it shows the
analyst's datasets' schemas, budgets (with the largest job each admits), jobs and their
parameters, and submits a job; with the owner's, the analysts and every job."""
import json
import re
import shutil
import socket
import subprocess
import time

import httpx
import pytest


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


needs_chromium = pytest.mark.skipif(
    _chromium() is None,
    reason="no chromium on PATH (Debian: apt-get install chromium; .ci/run installs it)")
BROWSER = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]


def _dom(url):
    return subprocess.run([_chromium(), *BROWSER, "--virtual-time-budget=8000", "--dump-dom",
                           url], capture_output=True, text=True, timeout=120,
                          check=True).stdout


@needs_chromium
def test_the_page_shows_an_analysts_budgets_and_jobs(deployment):
    from dpxgb_dask.service import Client

    with Client(deployment["url"], deployment["alice"]) as alice:
        job = alice.submit("adult", epsilon=0.3, n_estimators=2, max_depth=2)
        alice.wait(job["id"], timeout=300)
        spent = alice.budgets()["adult"]["spent"]
        # (asked once here, the page's request reads the service's cache: the search plans
        # a dozen jobs, longer than the browser's time budget on a loaded machine)
        largest = {"adult": alice.largest_job("adult")["epsilon"]}
    browser = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-dev-shm-usage", "--virtual-time-budget=5000", "--dump-dom"]
    dom = subprocess.run(browser + [f"{deployment['url']}/#token={deployment['alice']}"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert '<tr class="budget"><td>adult</td><td>3.000</td>' in dom
    assert f"<td>{spent:#.4g}</td>" in dom  # (JavaScript's toPrecision(4))
    assert f'<tr class="job"><td>{job["id"]}</td><td>adult</td><td>finished</td>' \
        '<td>epsilon=0.3, delta=0.000001, n_estimators=2, max_depth=2' in dom
    assert ">report</button>" in dom and ">XGBoost JSON</button>" in dom
    assert re.search(r"<td>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00</td>", dom)  # (submitted)
    # the schemas, and each budget's largest job (more than its remaining ε under PLD)
    assert '<tr class="dataset"><td>adult</td><td>binary:logistic</td><td>label</td>' \
        '<td>0, 1</td><td>age [17, 90]; hours [0, 100]; score [-5, 5]; group {0, 1, 2}' in dom
    assert f"<td>{3.0 - spent:#.4g}</td><td>{largest['adult']:#.4g}</td>" in dom
    assert largest["adult"] > 3.0 - spent  # (PLD: more than total - spent)
    # without a token: nothing but the form, and the API's refusal
    dom = subprocess.run(browser + [deployment["url"] + "/"], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert 'class="job"' not in dom and 'class="budget"' not in dom


@needs_chromium
def test_the_owner_s_token_shows_the_owner_s_view(deployment):
    dom = _dom(f"{deployment['url']}/#token={deployment['owner']}")
    assert '<tr class="analyst"><td>alice</td><td>active</td><td>adult</td><td>3.000</td>' in dom
    assert '<tr class="analyst"><td>bob</td><td>active</td><td>census</td>' in dom
    assert "only an analyst may do this" not in dom


class _DevTools:
    """Headless Chromium driven through its DevTools protocol (a websocket)."""

    def __init__(self, url):
        import websocket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.process = subprocess.Popen(
            [_chromium(), *BROWSER, f"--remote-debugging-port={port}",
             "--remote-allow-origins=*", url], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        deadline, pages = time.monotonic() + 60, []
        while not pages and time.monotonic() < deadline:
            try:
                pages = [t for t in httpx.get(f"http://127.0.0.1:{port}/json").json()
                         if t["type"] == "page"]
            except httpx.TransportError:
                time.sleep(0.2)
        self.socket = websocket.create_connection(pages[0]["webSocketDebuggerUrl"],
                                                  timeout=60)
        self.calls = 0

    def evaluate(self, expression):
        """The value of a JavaScript expression in the page (a promise awaited)."""
        self.calls += 1
        self.socket.send(json.dumps({"id": self.calls, "method": "Runtime.evaluate", "params": {
            "expression": expression, "awaitPromise": True, "returnByValue": True}}))
        while True:
            answer = json.loads(self.socket.recv())
            if answer.get("id") == self.calls:
                return answer["result"]["result"].get("value")

    def wait_for(self, expression, seconds=60):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.evaluate(expression):
                return True
            time.sleep(0.2)
        return False

    def close(self):
        self.socket.close()
        self.process.kill()
        self.process.wait()


@needs_chromium
def test_the_page_submits_a_job_and_writes_no_exponents(deployment):
    from dpxgb_dask.service import Client

    browser = _DevTools(f"{deployment['url']}/#token={deployment['alice']}")
    try:
        assert browser.wait_for("document.querySelectorAll('#job-dataset option').length == 2")
        # ε values: 4 significant digits, a tiny one said so (it was 6.253e-8)
        assert browser.evaluate("[fmt(6.253e-8), fmt(0.3), fmt(0), fmt(2.5)].join('|')") \
            == "< 0.0001|0.3000|0|2.500"
        browser.evaluate("""
            document.getElementById('job-dataset').value = 'survey';
            document.getElementById('job-epsilon').value = '0.25';
            document.getElementById('job-trees').value = '3';
            document.getElementById('job-depth').value = '2';
            document.getElementById('job-more').value = 'learning_rate=0.5';
            document.getElementById('submit').requestSubmit(); true""")
        assert browser.wait_for(
            "document.getElementById('submitted').textContent.startsWith('submitted: job')")
        job_id = browser.evaluate(
            "document.getElementById('submitted').textContent.split(' ').pop()")
    finally:
        browser.close()
    with Client(deployment["url"], deployment["alice"]) as alice:
        job = alice.job(job_id)
        assert job["dataset"] == "survey" and job["params"]["epsilon"] == 0.25
        assert job["params"]["n_estimators"] == 3 and job["params"]["learning_rate"] == 0.5
        alice.wait(job_id, timeout=300)
