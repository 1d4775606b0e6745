"""The service's web page for analysts, in headless Chromium: with a token, it shows the
analyst's budgets and jobs, as the API says them."""
import shutil
import subprocess

import pytest


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(_chromium() is None,
                    reason="no chromium on PATH (Debian: apt-get install chromium; "
                           ".ci/run installs it)")
def test_the_page_shows_an_analysts_budgets_and_jobs(deployment):
    from dpxgb_dask.service import Client

    with Client(deployment["url"], deployment["alice"]) as alice:
        job = alice.submit("adult", epsilon=0.3, n_estimators=2, max_depth=2)
        alice.wait(job["id"], timeout=300)
        spent = alice.budgets()["adult"]["spent"]
    browser = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-dev-shm-usage", "--virtual-time-budget=5000", "--dump-dom"]
    dom = subprocess.run(browser + [f"{deployment['url']}/#token={deployment['alice']}"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert '<tr class="budget"><td>adult</td><td>3.000</td>' in dom
    assert f"<td>{spent:#.4g}</td>" in dom  # (JavaScript's toPrecision(4))
    assert f'<tr class="job"><td>{job["id"]}</td><td>adult</td><td>finished</td>' in dom
    assert ">report</button>" in dom and ">XGBoost JSON</button>" in dom
    # without a token: nothing but the form, and the API's refusal
    dom = subprocess.run(browser + [deployment["url"] + "/"], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert 'class="job"' not in dom and 'class="budget"' not in dom
