"""What XGBoost's users call on its ``Booster``, on ours: importance scores, text and JSON
dumps of the trees, the number of rounds, and prediction from an ``xgboost.DMatrix``. All of
it reads the model's public values and DP releases only (post-processing)."""
import json

import numpy as np

from .._core import category_set_codes
from . import explain
from .xgboost_json import to_xgboost_json

#: ``dump_format`` values of :meth:`XGBoostMethods.get_dump`.
DUMP_FORMATS = ("text", "json")


class XGBoostMethods:
    """The methods of :class:`~dpxgb_dask.model.booster.Booster` named after XGBoost's."""

    def feature_importance(self, importance_type="leaf_spread"):
        """Importance of each feature, computed from the model's public values only: it
        releases nothing the model does not.

        Parameters
        ----------
        importance_type : {"leaf_spread", "weight", "gain", "total_gain", "cover", "total_cover"}
            "weight": the number of splits on the feature (with random splits, how features
            were drawn). "total_cover" and "cover": the sum and the mean over its splits of
            the split node's cover (XGBoost's; covers are released leaf masses summed up
            the tree). "total_gain" and "gain": the same of the split's gain estimated from
            the released leaves (:func:`~dpxgb_dask.model.explain.split_gains`).
            "leaf_spread": the sum over its splits of the absolute difference between the
            unweighted mean leaf value under the left child and the right one (which splits
            the noisy leaves say matter, for random splits too).

        Returns
        -------
        ndarray of float64, shape (n_features,)
            Normalised to sum to 1 (all zeros for a forest without splits).
        """
        return explain.feature_importance(self, importance_type)

    def get_score(self, fmap="", importance_type="weight"):
        """XGBoost's ``Booster.get_score``: each split feature's importance, not normalised
        (:meth:`feature_importance` names the kinds).

        Returns
        -------
        dict of str -> float
            By feature name (``f0``, ``f1``, ... without names); features without a split
            are left out, as XGBoost leaves them.
        """
        _check_fmap(fmap)
        scores = explain.feature_scores(self, importance_type)
        splits = explain.feature_scores(self, "weight")
        return {name: float(score) for name, score, n in
                zip(self._dump_names(), scores, splits) if n > 0}

    def get_fscore(self, fmap=""):
        """XGBoost's ``get_fscore``: :meth:`get_score` with ``importance_type="weight"``."""
        return self.get_score(fmap, "weight")

    def to_xgboost(self):
        """This model as an ``xgboost.Booster`` (its XGBoost export, loaded in memory), for
        what takes XGBoost's own types only: ``shap.TreeExplainer`` recognises the model
        types it lists, so ``shap.TreeExplainer(model.get_booster().to_xgboost())``
        explains this model (its contributions agree with ``predict(pred_contribs=True)``
        within float32 rounding).

        Returns
        -------
        xgboost.Booster

        Raises
        ------
        ImportError
            Without xgboost (``pip install xgboost``).
        """
        try:
            import xgboost
        except ImportError:
            raise ImportError("to_xgboost needs xgboost: pip install xgboost") from None
        text = json.dumps(to_xgboost_json(self), ensure_ascii=False)
        return xgboost.Booster(model_file=bytearray(text.encode("utf-8")))

    def num_boosted_rounds(self):
        """XGBoost's ``num_boosted_rounds``: the boosting rounds (``n_rounds``)."""
        return self.n_rounds

    def num_features(self):
        """XGBoost's ``num_features``."""
        return self.n_features

    def trees_to_dataframe(self):
        """One row per node, like ``xgboost.Booster.trees_to_dataframe`` (needs pandas);
        ``class`` is the class of the node's tree (0 unless multi:softprob); a
        ``categorical`` split sends the categories of the list ``category`` left
        (``threshold`` NaN)."""
        return explain.trees_to_dataframe(self)

    def get_dump(self, fmap="", with_stats=False, dump_format="text"):
        """XGBoost's ``Booster.get_dump``: one string per tree.

        Parameters
        ----------
        fmap : str
            Must be empty: the model's own feature names are used (``f0``... without).
        with_stats : bool
            Add each split's ``gain`` (:func:`~dpxgb_dask.model.explain.split_gains`) and
            each node's ``cover``.
        dump_format : {"text", "json"}
            XGBoost's text lines (``0:[f1<0.5] yes=1,no=2,missing=1``, a child indented by
            its depth; a categorical split ``[f0:{0,2}]`` sends its listed categories to
            ``yes``), or a JSON object per tree with XGBoost's keys (``nodeid``, ``depth``,
            ``split``, ``split_condition``, ``yes``, ``no``, ``missing``, ``children``;
            ``leaf`` at the leaves).

        Returns
        -------
        list of str
        """
        _check_fmap(fmap)
        if dump_format not in DUMP_FORMATS:
            raise ValueError(f"dump_format must be one of {list(DUMP_FORMATS)}, "
                             f"got {dump_format!r}")
        gains = explain.split_gains(self) if with_stats else None
        bounds = list(self.tree_roots) + [self.nodes["feature"].shape[0]]
        trees = []
        for t in range(self.n_trees):
            root = bounds[t]
            tree = self._dump_node(root, root, 0, gains)
            trees.append(json.dumps(tree) if dump_format == "json" else
                         "".join(_text_lines(tree)))
        return trees

    def _dump_names(self):
        return list(self.feature_names or [f"f{i}" for i in range(self.n_features)])

    def _dump_node(self, node, root, depth, gains):
        """Node ``node`` of the tree rooted at ``root`` and its subtree, as XGBoost's JSON
        dump (node ids local to the tree)."""
        n = self.nodes
        node, root = int(node), int(root)
        out = {"nodeid": node - root, "depth": depth}
        if n["left"][node] < 0:
            out = {"nodeid": node - root, "leaf": float(n["value"][node])}
        else:
            name = self._dump_names()[int(n["feature"][node])]
            left, right = int(n["left"][node]), int(n["right"][node])
            if n["categorical"][node]:
                codes = [int(c) for c in category_set_codes(n["category_set"][node])]
                out.update(split=name, split_condition=codes)
            else:
                out.update(split=name, split_condition=float(n["threshold"][node]))
            out.update(yes=left - root, no=right - root,
                       missing=(left if n["missing_left"][node] else right) - root)
            if gains is not None:
                out["gain"] = float(gains[node])
            out["children"] = [self._dump_node(c, root, depth + 1, gains) for c in (left, right)]
        if gains is not None:
            out["cover"] = float(n["cover"][node])
        return out


def _check_fmap(fmap):
    if fmap:
        raise ValueError("fmap must be '' (no feature map file is read): the model's own "
                         "feature names are used")


def _text_lines(node, depth=0):
    """XGBoost's text dump of a node of :meth:`XGBoostMethods._dump_node` and its subtree."""
    stats = "".join(f",{key}={node[key]:.9g}" for key in ("gain", "cover") if key in node)
    if "leaf" in node:
        yield f"{chr(9) * depth}{node['nodeid']}:leaf={node['leaf']:.9g}{stats}\n"
        return
    condition = node["split_condition"]
    test = ("{" + ",".join(map(str, condition)) + "}" if isinstance(condition, list)
            else f"<{condition:.9g}")
    separator = ":" if isinstance(condition, list) else ""
    yield (f"{chr(9) * depth}{node['nodeid']}:[{node['split']}{separator}{test}] "
           f"yes={node['yes']},no={node['no']},missing={node['missing']}{stats}\n")
    for child in node["children"]:
        yield from _text_lines(child, depth + 1)


def dmatrix_inputs(X, base_margin=None):
    """The rows (and base margins) of an ``xgboost.DMatrix`` as the predictors take them;
    any other X as it is.

    A DMatrix stores its present values only (missing ones, NaN, are absent): its rows come
    back dense, NaN where a value is absent, as a pandas frame with its feature names when it
    has them. Its base margins apply unless ``base_margin`` is given.

    Returns
    -------
    X, base_margin
    """
    if type(X).__name__ != "DMatrix" or not type(X).__module__.startswith("xgboost"):
        return X, base_margin
    sparse = X.get_data().tocoo()
    rows = np.full(sparse.shape, np.nan)
    rows[sparse.row, sparse.col] = sparse.data
    if X.feature_names is not None:
        import pandas as pd

        rows = pd.DataFrame(rows, columns=list(X.feature_names))
    stored = X.get_base_margin()
    if base_margin is None and stored is not None and np.size(stored) > 0:
        base_margin = np.asarray(stored, dtype=np.float64)
    return rows, base_margin
