"""Export a :class:`~dpxgb_dask.model.booster.Booster` to XGBoost's JSON model format.

``xgboost.Booster(model_file=path)`` loads the file and predicts what the Booster
predicts. Only public values and DP releases are written, as in our own format: XGBoost's
per-node ``loss_changes`` (exact gains in a model XGBoost trained) are written as zeros,
``base_weights`` hold the leaf values, and ``sum_hessian`` holds the nodes' covers: each
leaf's released denominator (a hessian sum or count, floored), a split node's the sum of its
children's (post-processing; 1 per leaf for Laplace leaves, which release no mass). With
them ``predict(pred_contribs=True)``, ``pred_interactions`` and ``shap.TreeExplainer``
work on the file and add up to the margins. The privacy
ledger and the training parameters travel in the learner's ``attributes``
(``dpxgb_ledger``, ``dpxgb_params``: JSON strings, read back with ``Booster.attr``).

Differences of representation:

* XGBoost computes in float32: it stores thresholds and leaf values as float32 and sums
  the trees' leaf values in float32, where we use float64. Margins then differ by float32
  rounding, at most about 2(T + 1) float32 ulps of the largest running margin for T trees
  (tests/unit/model/test_export.py checks that bound; measured up to 4e-6 on margins and
  1.5e-6 on probabilities with 100-200 trees).
* XGBoost sends a row left when ``x < split_condition``; ours when ``x <= threshold``. The
  split condition is the smallest float32 above the threshold. XGBoost reads features as
  float32, so a feature value within float32 rounding of a threshold can take the other
  branch; it also refuses infinite features, which our predict clips to the bounds.
* A categorical feature is of type "c": XGBoost reads its category codes (the index in
  the public list, e.g. a pandas column of that ``CategoricalDtype`` with
  ``enable_categorical=True``); each of its splits lists its set of categories (which
  XGBoost sends right: the children are swapped). Nodes are numbered breadth first with
  each node's XGBoost-left child first, the order XGBoost's TreeSHAP needs; a model trained
  by this version stores its nodes in that order already, so ``pred_leaf`` gives the same
  ids as our ``Booster.predict(pred_leaf=True)``. A code that is not an integer (only
  with ``encoded=True`` input) goes right here, where XGBoost truncates it first.
* A multiclass model (``multi:softprob``, ``tree_info`` giving each tree's class) writes its
  K base margins as XGBoost's vector intercept, which XGBoost reads from version 3.1 on.
* Our regression predictions are clipped to ``label_bounds``; XGBoost's are not (clip
  them, ``np.clip(pred, *label_bounds)``: the bounds are in the ``dpxgb_params``
  attribute).
* Feature names are written as UTF-8 (XGBoost's reader keeps a ``\\u`` escape as its
  six characters). XGBoost refuses ``[``, ``]`` and ``<`` in a name, so these, and ``%``,
  are written percent-encoded (``x[1]`` as ``x%5B1%5D``: :func:`xgboost_feature_name`);
  name a frame's columns so before predicting with XGBoost, and read a name back with
  :func:`feature_name_from_xgboost`.
"""
import json
import re

import numpy as np

from .._core import category_set_codes

#: The characters of a feature name written percent-encoded in the export: those XGBoost
#: refuses, and the escape's own ``%`` (so that every ``%`` of the export starts an escape).
_ENCODED = {"%": "%25", "[": "%5B", "]": "%5D", "<": "%3C"}
_DECODED = {code: character for character, code in _ENCODED.items()}


def xgboost_feature_name(name):
    """Feature ``name`` as the export writes it (``%``, ``[``, ``]`` and ``<``
    percent-encoded; any other character as it is).

    Parameters
    ----------
    name : str

    Returns
    -------
    str
    """
    return "".join(_ENCODED.get(character, character) for character in str(name))


def feature_name_from_xgboost(name):
    """The inverse of :func:`xgboost_feature_name`."""
    return re.sub("%(25|5B|5D|3C)", lambda m: _DECODED[m.group(0)], str(name))


#: XGBoost's "no parent" node id (the root's parent).
_NO_PARENT = 2147483647
#: The XGBoost JSON format version this writer follows (read by XGBoost >= 2.0).
XGBOOST_FORMAT_VERSION = [2, 1, 0]


def _split_conditions(thresholds):
    """Smallest float32 strictly above each float64 threshold: ``x <= t`` as ``x < c``."""
    t32 = thresholds.astype(np.float32)
    up = np.nextafter(t32, np.float32(np.inf))
    return np.where(t32.astype(np.float64) <= thresholds, up, t32)


def _breadth_first(left, right):
    """Node indices in breadth-first order from the root 0, each left child before its
    sibling (``left``/``right``: -1 at leaves)."""
    order, level = [], [0]
    while level:
        order.extend(level)
        level = [child for node in level if left[node] >= 0
                 for child in (left[node], right[node])]
    return np.asarray(order, dtype=np.int64)


def _tree(booster, index, n_features):
    """One tree in XGBoost's JSON layout (node ids local to the tree, root 0)."""
    nodes = booster.nodes
    roots = list(booster.tree_roots) + [len(nodes["feature"])]
    start, stop = int(roots[index]), int(roots[index + 1])
    left = nodes["left"][start:stop].astype(np.int64)
    right = nodes["right"][start:stop].astype(np.int64)
    is_leaf = left < 0
    left = np.where(is_leaf, -1, left - start)
    right = np.where(is_leaf, -1, right - start)
    n = stop - start
    values = nodes["value"][start:stop]
    conditions = np.where(is_leaf, values.astype(np.float32),
                          _split_conditions(nodes["threshold"][start:stop]))
    weights = np.where(is_leaf, values, 0.0).astype(np.float32)
    missing_left = nodes["missing_left"][start:stop].astype(bool)
    # XGBoost sends the categories it lists at a node right, ours goes left: swap the
    # children (and the default direction) of a categorical node
    category = nodes["categorical"][start:stop].astype(bool) & ~is_leaf
    left, right = np.where(category, right, left), np.where(category, left, right)
    missing_left = np.where(category, ~missing_left, missing_left)
    conditions = np.where(category, np.float32(0.0), conditions)
    # breadth first, XGBoost-left child first (files of older versions stored a categorical
    # node's set child first)
    order = _breadth_first(left, right)
    new_id = np.empty(n, dtype=np.int64)
    new_id[order] = np.arange(n)
    left = np.where(is_leaf, -1, new_id[left])[order]
    right = np.where(is_leaf, -1, new_id[right])[order]
    is_leaf, values, conditions, weights, missing_left, category = (
        a[order] for a in (is_leaf, values, conditions, weights, missing_left, category))
    parents = np.full(n, _NO_PARENT, dtype=np.int64)
    parents[left[~is_leaf]] = np.flatnonzero(~is_leaf)
    parents[right[~is_leaf]] = np.flatnonzero(~is_leaf)
    start_ids = start + order  # the forest's index of each exported node
    split_nodes = np.flatnonzero(category)
    # each categorical node's left set, concatenated (segments: where each node's starts)
    sets = [category_set_codes(nodes["category_set"][start_ids[j]]).tolist() for j in split_nodes]
    sizes = [len(codes) for codes in sets]
    return {
        "base_weights": weights.tolist(),
        "categories": [code for codes in sets for code in codes],
        "categories_nodes": split_nodes.tolist(),
        "categories_segments": np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int).tolist()
        if sizes else [],
        "categories_sizes": sizes,
        "default_left": np.where(is_leaf, 0, missing_left).astype(int).tolist(),
        "id": index,
        "left_children": left.tolist(),
        "right_children": right.tolist(),
        "loss_changes": [0.0] * n,  # exact gains are private: never written
        "parents": parents.tolist(),
        "split_conditions": conditions.astype(np.float32).tolist(),
        "split_indices": np.where(is_leaf, 0, nodes["feature"][start_ids]).astype(int).tolist(),
        "split_type": category.astype(int).tolist(),
        # the covers (released denominators summed up the tree), never exact hessian sums
        "sum_hessian": nodes["cover"][start_ids].tolist(),
        "tree_param": {"num_deleted": "0", "num_feature": str(n_features),
                       "num_nodes": str(n), "size_leaf_vector": "1"},
    }


def _feature_types(booster):
    """XGBoost's feature types: "c" (categorical: its codes) or "float"."""
    if booster.categories is not None:
        return ["c" if c is not None else "float" for c in booster.categories]
    return ["float"] * booster.n_features if booster.feature_names else []


def to_xgboost_json(booster):
    """XGBoost's JSON model of ``booster`` (a dict for ``json.dump``).

    Parameters
    ----------
    booster : Booster

    Returns
    -------
    dict
    """
    n_features, n_trees = booster.n_features, booster.n_trees
    n_classes = booster.n_classes or 0
    per_round = n_classes or 1
    if booster.objective == "multi:softprob":
        # one intercept per class, in margin space (XGBoost >= 3.1 reads the vector)
        base_score = "[" + ",".join(repr(float(b)) for b in booster.base_score) + "]"
        objective = {"name": "multi:softprob",
                     "softmax_multiclass_param": {"num_class": str(n_classes)}}
    elif booster.objective == "binary:logistic":
        # XGBoost keeps the base score of a logistic model as a probability
        base_score = repr(float(1.0 / (1.0 + np.exp(-booster.base_score))))
        objective = {"name": "binary:logistic", "reg_loss_param": {"scale_pos_weight": "1"}}
    else:
        base_score = repr(booster.base_score)
        objective = {"name": "reg:squarederror", "reg_loss_param": {"scale_pos_weight": "1"}}
    return {
        "learner": {
            "attributes": {
                "dpxgb_ledger": json.dumps(booster.ledger),
                "dpxgb_params": json.dumps(booster.params),
            },
            "feature_names": [xgboost_feature_name(n) for n in booster.feature_names or []],
            "feature_types": _feature_types(booster),
            "gradient_booster": {
                "model": {
                    "gbtree_model_param": {"num_parallel_tree": "1", "num_trees": str(n_trees)},
                    # a round's trees (one per class) form one iteration
                    "iteration_indptr": list(range(0, n_trees + 1, per_round)),
                    "tree_info": booster.tree_class.astype(int).tolist(),
                    "trees": [_tree(booster, t, n_features) for t in range(n_trees)],
                },
                "name": "gbtree",
            },
            "learner_model_param": {
                # a plain number: XGBoost 2.x reads only that, 3.x reads it too
                "base_score": base_score, "boost_from_average": "0",
                "num_class": str(n_classes), "num_feature": str(n_features),
                "num_target": "1"},
            "objective": objective,
        },
        "version": XGBOOST_FORMAT_VERSION,
    }
