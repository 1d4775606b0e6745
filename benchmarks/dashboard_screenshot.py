"""Screenshot of the dpxgb page of the Dask dashboard during a real fit.

Starts a LocalCluster (2 workers), trains one DP classifier to the end (ε = 1) and a
second one (ε = 0.3) that is still running when headless Chromium loads ``/dpxgb``.
Writes ``benchmarks/results/dashboard.png`` and prints the fits as the page's JSON shows
them, next to the ε each model reports.

    python benchmarks/dashboard_screenshot.py [--out PATH]
"""
import argparse
import json
from pathlib import Path
import shutil
import subprocess
import threading
import time
import urllib.request

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "dashboard.png"))
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium is required (Debian: apt-get install chromium)")

    from distributed import Client, LocalCluster
    from sklearn.datasets import make_classification

    from dpxgb_dask import DPXGBClassifier
    from dpxgb_dask.cluster.dashboard import page_link

    X, y = make_classification(n_samples=50_000, n_features=20, n_informative=10,
                               random_state=0)
    bounds = np.tile([-6.0, 6.0], (X.shape[1], 1))  # public: chosen without the data
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        url = page_link(client)
        first = DPXGBClassifier(epsilon=1.0, feature_bounds=bounds, classes=[0, 1],
                                client=client).fit(X, y)
        second = DPXGBClassifier(epsilon=0.3, feature_bounds=bounds, classes=[0, 1],
                                 client=client)
        thread = threading.Thread(target=second.fit, args=(X, y))
        thread.start()
        while True:
            with urllib.request.urlopen(url + "/fits.json") as response:
                fits = json.load(response)["fits"]
            if fits[0]["state"] == "running" and fits[0]["trees_built"] >= 60:
                break
            time.sleep(0.05)
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        "--disable-dev-shm-usage", "--hide-scrollbars",
                        "--virtual-time-budget=2000", "--window-size=1100,1350",
                        f"--screenshot={args.out}", url], check=True, capture_output=True)
        thread.join()
        with urllib.request.urlopen(url + "/fits.json") as response:
            after = json.load(response)["fits"]
    print(f"screenshot: {args.out} (Chromium started when the second fit had built "
          f"{fits[0]['trees_built']} of {fits[0]['n_trees']} trees)")
    print("| fit | state | trees | eps on the page | eps the model reports |")
    print("|---|---|---|---|---|")
    for fit, model in zip(after[::-1], (first, second)):
        print(f"| {fit['fit'][:12]} | {fit['state']} | {fit['trees_built']}/{fit['n_trees']} "
              f"| {fit['epsilon_spent']:.6g} | {model.privacy_report()['epsilon']:.6g} |")


if __name__ == "__main__":
    main()
