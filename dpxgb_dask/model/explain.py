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
IMPORTANCE_TYPES = ("leaf_spread", "weight", "gain", "total_gain", "cover", "total_cover")


def _below(nodes, internal, leaf_values):
    """Each node's sum of ``leaf_values`` over the leaves below it (children follow their
    parent in the flat arrays: one backward pass)."""
    out = np.where(nodes["left"] < 0, leaf_values, 0.0)
    for j in internal[::-1]:
        out[j] = out[nodes["left"][j]] + out[nodes["right"][j]]
    return out


def split_gains(booster):
    """Each node's gain, estimated from the released leaves (post-processing).

    A leaf's value is ``v = -η G / (H + λ)`` before its clipping, with H its released
    denominator (its cover), so its gradient sum is taken as ``G = -(v / η)(H + λ)``; a
    node's G and H are those of the leaves below it, and a split's gain is XGBoost's loss
    change ``G_L²/(H_L + λ) + G_R²/(H_R + λ) - G²/(H + λ)``.

    Returns
    -------
    ndarray of float64, shape (n_nodes,)
        0 at the leaves.
    """
    nodes = booster.nodes
    internal = np.flatnonzero(nodes["left"] >= 0)
    rate = float(booster.params.get("learning_rate", 1.0))
    lam = float(booster.params.get("reg_lambda", 0.0))
    is_leaf = nodes["left"] < 0
    gradient = _below(nodes, internal, np.where(
        is_leaf, -nodes["value"] / rate * (nodes["cover"] + lam), 0.0))
    hessian = nodes["cover"]  # (a split node's: its leaves' sum, node_covers)
    term = gradient ** 2 / np.maximum(hessian + lam, np.finfo(float).tiny)
    gain = np.zeros(is_leaf.shape[0])
    gain[internal] = (term[nodes["left"][internal]] + term[nodes["right"][internal]]
                      - term[internal])
    return gain


def feature_scores(booster, importance_type):
    """Each feature's importance before normalisation (XGBoost's ``get_score``): the number
    of splits on it (``"weight"``), the sum (``"total_gain"``, ``"total_cover"``) or mean
    (``"gain"``, ``"cover"``) over them of :func:`split_gains` or the split node's cover, or
    ``"leaf_spread"`` (:meth:`Booster.feature_importance
    <dpxgb_dask.model.booster.Booster.feature_importance>`).

    Returns
    -------
    ndarray of float64, shape (n_features,)
    """
    if importance_type not in IMPORTANCE_TYPES:
        raise ValueError(f"importance_type must be one of {list(IMPORTANCE_TYPES)}, "
                         f"got {importance_type!r}")
    nodes = booster.nodes
    internal = np.flatnonzero(nodes["left"] >= 0)
    features = nodes["feature"][internal]
    splits = np.bincount(features, minlength=booster.n_features).astype(np.float64)
    if importance_type == "weight":
        return splits
    if importance_type == "leaf_spread":
        is_leaf = (nodes["left"] < 0).astype(np.float64)
        mean = _below(nodes, internal, nodes["value"] * is_leaf) / np.maximum(
            _below(nodes, internal, is_leaf), 1.0)
        per_split = np.abs(mean[nodes["left"][internal]] - mean[nodes["right"][internal]])
    elif importance_type.endswith("gain"):
        per_split = split_gains(booster)[internal]
    else:  # (XGBoost's cover, from released covers)
        per_split = nodes["cover"][internal]
    total = np.bincount(features, weights=per_split, minlength=booster.n_features)
    if importance_type in ("gain", "cover"):  # the mean over the feature's splits
        return np.where(splits > 0, total / np.maximum(splits, 1.0), 0.0)
    return total


def feature_importance(booster, importance_type="leaf_spread"):
    """:meth:`Booster.feature_importance <dpxgb_dask.model.booster.Booster.feature_importance>`."""
    score = feature_scores(booster, importance_type)
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
