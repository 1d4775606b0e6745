"""Train on the dask-kubernetes operator's cluster of ``k8s/daskcluster.yaml``.

From a laptop with kubectl access (or a Jupyter pod in the cluster)::

    python k8s/train.py data.csv --label y --bounds bounds.json --classes 0 1 --epsilon 1

It creates the DaskCluster (or connects to it when it exists), trains a DP classifier on
the CSV's rows (loaded in this process and scattered to the workers), prints the dpxgb
dashboard page and the privacy report, writes ``model.json``, and closes the cluster it
created. Reading the table inside the cluster instead (``dask.dataframe.read_parquet`` on
shared storage) keeps the rows off the laptop.
"""
import argparse
from pathlib import Path

SPEC = Path(__file__).with_name("daskcluster.yaml")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--label", required=True)
    parser.add_argument("--bounds", required=True, help="JSON {column: [lo, hi]} (public)")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--classes", nargs=2, required=True,
                        help="the public label set, e.g. --classes 0 1")
    parser.add_argument("--out", default="model.json")
    args = parser.parse_args(argv)

    import json

    import numpy as np
    import pandas as pd
    from dask_kubernetes.operator import KubeCluster
    from distributed import Client

    from dpxgb_dask import DPXGBClassifier
    from dpxgb_dask.cluster.dashboard import page_link

    table = pd.read_csv(args.data)
    X, y = table.drop(columns=[args.label]), table[args.label]
    classes = np.asarray(args.classes).astype(y.dtype)  # public: the column's dtype only
    spec = json.loads(Path(args.bounds).read_text())
    bounds = np.array([spec[c] for c in X.columns], dtype=float)
    with KubeCluster(custom_cluster_spec=str(SPEC)) as cluster, Client(cluster) as client:
        print("dpxgb page:", page_link(client))
        model = DPXGBClassifier(epsilon=args.epsilon, feature_bounds=bounds, classes=classes,
                                client=client, verbose=True).fit(X, y)
    report = model.privacy_report()
    print(f"epsilon = {report['epsilon']:.4g} ({report['accountant']}), "
          f"delta = {report['delta']:g}")
    model.booster_.save_model(args.out)


if __name__ == "__main__":
    main()
