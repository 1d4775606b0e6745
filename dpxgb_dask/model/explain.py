"""What a fitted model says about its features, trees and predictions, read off its public
values and DP releases only (post-processing): feature importance, the table of nodes, the
leaf each row reaches, and TreeSHAP contributions weighted by the nodes' covers (released
leaf masses summed up the tree: :func:`~dpxgb_dask.model.explain.node_covers`)."""
import numpy as np

from .._core import category_set_codes
from .._core.predict import contributions_raw, predict_leaves_raw

def node_covers(left, right, cover):
    """Every node's cover from its leaves' (post-processing): a split node's cover is the
    sum of its children's.

    Parameters
    ----------
    left, right : ndarray of int32, shape (n_nodes,)
        Children (-1 at leaves), after their parent in the arrays.
    cover : ndarray of float64, shape (n_nodes,)
        The leaves' covers (other entries are ignored).

    Returns
    -------
    ndarray of float64, shape (n_nodes,)
    """
    out = np.array(cover, dtype=np.float64)
    for j in np.flatnonzero(np.asarray(left) >= 0)[::-1]:
        out[j] = out[left[j]] + out[right[j]]
    return out


#: Kinds of :func:`feature_importance` (public values only).
IMPORTANCE_TYPES = ("leaf_spread", "weight", "cover", "total_cover")


def feature_importance(booster, importance_type="leaf_spread"):
    """:meth:`Booster.feature_importance <dpxgb_dask.model.booster.Booster.feature_importance>`."""
    if importance_type not in IMPORTANCE_TYPES:
        raise ValueError(f"importance_type must be one of {list(IMPORTANCE_TYPES)}, "
                         f"got {importance_type!r}")
    nodes = booster.nodes
    internal = np.flatnonzero(nodes["left"] >= 0)
    if importance_type == "weight":
        score = np.bincount(nodes["feature"][internal], minlength=booster.n_features)
    elif importance_type in ("cover", "total_cover"):  # (XGBoost's, from released covers)
        features = nodes["feature"][internal]
        score = np.bincount(features, weights=nodes["cover"][internal],
                            minlength=booster.n_features)
        if importance_type == "cover":  # the mean over the feature's splits
            splits = np.bincount(features, minlength=booster.n_features)
            score = np.where(splits > 0, score / np.maximum(splits, 1), 0.0)
    else:
        # Children follow their parent in the flat arrays: one backward pass gives
        # each node's sum and number of leaves below it.
        leaf_sum = np.where(nodes["left"] < 0, nodes["value"], 0.0)
        n_leaves = (nodes["left"] < 0).astype(np.float64)
        for j in internal[::-1]:
            left, right = nodes["left"][j], nodes["right"][j]
            leaf_sum[j] = leaf_sum[left] + leaf_sum[right]
            n_leaves[j] = n_leaves[left] + n_leaves[right]
        mean = leaf_sum / np.maximum(n_leaves, 1.0)
        spread = np.abs(mean[nodes["left"][internal]] - mean[nodes["right"][internal]])
        score = np.bincount(nodes["feature"][internal], weights=spread,
                            minlength=booster.n_features)
    score = score.astype(np.float64)
    total = score.sum()
    return score / total if total > 0 else score


def trees_to_dataframe(booster):
    """:meth:`Booster.trees_to_dataframe <dpxgb_dask.model.booster.Booster.trees_to_dataframe>`."""
    import pandas as pd

    tree_of_node = np.zeros(booster.nodes["feature"].shape[0], dtype=np.int64)
    bounds = list(booster.tree_roots) + [booster.nodes["feature"].shape[0]]
    for t in range(booster.n_trees):
        tree_of_node[bounds[t]:bounds[t + 1]] = t
    is_leaf = booster.nodes["left"] < 0
    names = booster.feature_names or [f"f{i}" for i in range(booster.n_features)]
    return pd.DataFrame({
        "tree": tree_of_node,
        "class": booster.tree_class[tree_of_node],
        "node": np.arange(tree_of_node.shape[0]),
        "feature": [None if leaf else names[f] for leaf, f in zip(is_leaf, booster.nodes["feature"])],
        "threshold": np.where(is_leaf | (booster.nodes["categorical"] == 1), np.nan,
                              booster.nodes["threshold"]),
        "categorical": ~is_leaf & (booster.nodes["categorical"] == 1),
        "category": [[booster.categories[f][int(code)] for code in category_set_codes(words)]
                     if not leaf and c else None
                     for leaf, f, words, c in zip(is_leaf, booster.nodes["feature"],
                                                  booster.nodes["category_set"],
                                                  booster.nodes["categorical"])],
        "missing_left": np.where(is_leaf, False, booster.nodes["missing_left"].astype(bool)),
        "left": booster.nodes["left"],
        "right": booster.nodes["right"],
        "value": np.where(is_leaf, booster.nodes["value"], np.nan),
        "cover": booster.nodes["cover"],
    })


def leaf_ids(booster, X, n_threads=1):
    """:meth:`Booster.predict_leaf <dpxgb_dask.model.booster.Booster.predict_leaf>` of
    prepared rows ``X`` (float64, shape (n_samples, n_features), clipped and encoded)."""
    n, roots = booster.nodes, booster.tree_roots
    out = np.zeros((X.shape[0], booster.n_trees), dtype=np.int32)
    predict_leaves_raw(X, n["feature"], n["threshold"], n["categorical"], n["category_set"],
                       n["missing_left"], n["left"], n["right"], roots, out, n_threads)
    return out - roots[None, :]


def contributions(booster, X, n_threads=1):
    """:meth:`Booster.predict_contributions
    <dpxgb_dask.model.booster.Booster.predict_contributions>` of prepared rows ``X``."""
    n = booster.nodes
    depth = np.zeros(n["left"].shape[0], dtype=np.int64)
    for j in np.flatnonzero(n["left"] >= 0):  # children after parents
        depth[n["left"][j]] = depth[n["right"][j]] = depth[j] + 1
    blocks = []
    for k in range(booster.n_outputs):
        out = np.zeros((X.shape[0], booster.n_features + 1))
        out[:, -1] = booster.base_score if booster.n_classes is None else booster.base_score[k]
        roots = np.ascontiguousarray(booster.tree_roots[booster.tree_class == k])
        contributions_raw(X, n["feature"], n["threshold"], n["categorical"],
                          n["category_set"], n["missing_left"], n["left"], n["right"],
                          n["value"], n["cover"], roots, int(depth.max(initial=0)), out,
                          n_threads)
        blocks.append(out)
    return blocks[0] if booster.n_classes is None else np.stack(blocks, axis=1)
