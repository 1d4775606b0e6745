"""The trained model: a forest stored as flat arrays, its cut points, parameters and ledger.

Everything a :class:`Booster` holds is public or a DP release: split features and cut
points (public, or DP releases), default directions and leaf values (DP releases), the
base score (public or a DP release), parameters, and the privacy ledger. It holds no exact
sums, gains, counts or raw data values; :meth:`Booster.save_model` writes exactly these
fields, so the file can be shared wherever the model can.
"""
import copy
import json
import os

import numpy as np

from .._core import CATEGORY_SET_WORDS, category_sets
from .._core.predict import predict_raw
from ..categories import encode
from ..inputs import base_margin_rows, float_values
from ..objective import OBJECTIVES, softmax
from . import explain
from .dask_predict import explain_dask, predict_dask
from .signature import check_signature, signature
from .xgboost_api import XGBoostMethods, dmatrix_inputs
from .xgboost_json import to_xgboost_json

#: Version of the JSON model format written by :meth:`Booster.save_model`.
#: Version 3 adds each node's ``cover``; version 2 added each categorical node's left set
#: (``category_set``). Older files are still read: version 1 categorical nodes send the one
#: category ``threshold`` left, and files without covers give every leaf cover 1.
MODEL_FORMAT_VERSION = 3
_READABLE_VERSIONS = (1, 2, 3)
MODEL_FORMAT_NAME = "dpxgb_dask.booster"


#: dtype of a node's category set: CATEGORY_SET_WORDS uint64 words (a 2-D node array).
CATEGORY_SET = np.dtype((np.uint64, (CATEGORY_SET_WORDS,)))

#: Node fields of the saved forest: raw thresholds only, valid whatever the cuts were.
NODE_FIELDS = {
    # name: dtype of the flat node arrays (one entry per node of every tree)
    "feature": np.int32,
    "threshold": np.float64,  # a categorical node's smallest left code (informative)
    "categorical": np.uint8,  # 1: the categories of category_set go left, the rest right
    "category_set": CATEGORY_SET,  # left category codes, bit sets (_core.category_sets)
    "missing_left": np.uint8,
    "left": np.int32,
    "right": np.int32,
    "value": np.float64,
    # a leaf's released denominator (boosting.leaves.leaf_covers) or 1; a split node's,
    # the sum of its children's: post-processing, the mass TreeSHAP weighs paths by
    "cover": np.float64,
}


class Booster(XGBoostMethods):
    """A differentially private gradient-boosted forest.

    Parameters
    ----------
    objective : {"reg:squarederror", "binary:logistic", "multi:softprob"}
    base_score : float, or array-like of shape (K,) for multi:softprob
        Initial margin(s) added to every prediction (public or a DP release).
    cuts : list of ndarray of float64
        Per-feature cut points (public or DP releases).
    feature_bounds : ndarray of float64, shape (n_features, 2)
        Public (or DP-estimated) bounds the features were clipped to.
    params : dict
        Training parameters (public).
    ledger : dict, optional
        The privacy ledger (JSON-ready), one event per DP release.
    feature_names : list of str, optional
    label_bounds : tuple of float, optional
        Regression only: public bounds of the label.
    n_classes : int, optional
        multi:softprob only: the number of classes K; every tree then belongs to one class
        (``tree_class``) and margins have shape (n_rows, K).
    categories : list of (list or None), optional
        The public category list of each categorical feature (``categories.py``): predict
        takes their values and encodes them; a split on one sends a set of its categories
        left (``category_set``).
    """

    def __init__(self, objective, base_score, cuts, feature_bounds, params, *, ledger=None,
                 feature_names=None, label_bounds=None, n_classes=None, categories=None):
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
        if (objective == "multi:softprob") != (n_classes is not None):
            raise ValueError("n_classes is given for objective='multi:softprob', and only then")
        self.objective = objective
        self.n_classes = None if n_classes is None else int(n_classes)
        if self.n_classes is None:
            self.base_score = float(base_score)
        else:
            self.base_score = np.asarray(base_score, dtype=np.float64).reshape(-1).copy()
            if self.base_score.shape != (self.n_classes,):
                raise ValueError(f"base_score must hold {self.n_classes} margins, got "
                                 f"{self.base_score.shape[0]}")
        self.cuts = [np.asarray(c, dtype=np.float64) for c in cuts]
        self.feature_bounds = np.asarray(feature_bounds, dtype=np.float64).reshape(-1, 2)
        self.params = dict(params)
        self.ledger = ledger if ledger is not None else {}
        self.feature_names = list(feature_names) if feature_names is not None else None
        self.label_bounds = tuple(label_bounds) if label_bounds is not None else None
        self.categories = [list(c) if c is not None else None for c in categories] \
            if categories is not None else None
        self._node_arrays = {name: np.zeros(0, dtype=dtype)
                             for name, dtype in NODE_FIELDS.items()}
        self._appended = []  # trees appended since the nodes were last joined
        self._appended_nodes = 0  # their nodes
        self._tree_roots = np.zeros(0, dtype=np.int32)
        self._tree_class = np.zeros(0, dtype=np.int32)

    # -- building ---------------------------------------------------------------------

    def append_tree(self, tree, output_class=None):
        """Append a grown tree to the forest (multi:softprob: the class whose margin it
        adds to).

        Parameters
        ----------
        tree : object
            Its ``to_arrays()`` gives the node fields of :data:`NODE_FIELDS` (and
            ``bin_threshold``), breadth first, indices local to the tree
            (:class:`~dpxgb_dask.boosting.tree.Tree`).
        output_class : int, optional
        """
        if (output_class is None) != (self.n_classes is None):
            raise ValueError("output_class is given for a multi:softprob forest, and only then")
        arrays = tree.to_arrays()
        offset = self._node_arrays["feature"].shape[0] + self._appended_nodes
        for name in ("left", "right"):
            arrays[name] = np.where(arrays[name] >= 0, arrays[name] + offset, -1).astype(np.int32)
        self._appended.append(arrays)  # (joined when next read: not once per tree)
        self._appended_nodes += arrays["feature"].shape[0]
        self._tree_roots = np.append(self._tree_roots, np.int32(offset)).astype(np.int32)
        self._tree_class = np.append(self._tree_class, np.int32(output_class or 0))

    @property
    def _nodes(self):
        """dict of field -> ndarray: every node of the forest, trees one after another."""
        if self._appended:
            self._node_arrays = {name: np.concatenate(
                [self._node_arrays[name]] + [a[name] for a in self._appended])
                for name in NODE_FIELDS}
            self._appended, self._appended_nodes = [], 0
        return self._node_arrays

    def append_forest(self, other):
        """Append the trees of ``other`` (a Booster over the same features, its leaf values
        in the same units) after this forest's: the model of a continued fit."""
        if other.n_features != self.n_features:
            raise ValueError(f"the forests have {self.n_features} and {other.n_features} "
                             "features")
        if other.n_classes != self.n_classes:
            raise ValueError(f"the forests have {self.n_classes} and {other.n_classes} classes")
        offset = self._nodes["feature"].shape[0]
        for name in NODE_FIELDS:
            add = other._nodes[name]
            if name in ("left", "right"):
                add = np.where(add >= 0, add + offset, -1).astype(np.int32)
            self._nodes[name] = np.concatenate([self._nodes[name], add])
        self._tree_roots = np.concatenate([self._tree_roots,
                                           other._tree_roots + np.int32(offset)]).astype(np.int32)
        self._tree_class = np.concatenate([self._tree_class, other._tree_class])

    def continued_by(self, new_part, params, ledger):
        """The model of a fit that continued this one: this forest's trees, then
        ``new_part``'s.

        Parameters
        ----------
        new_part : Booster
            The continuing fit's trees (label units, this model's base score).
        params : dict
            The continuing fit's public parameters; the first part's are kept as their
            ``continued_from``.
        ledger : dict
            The privacy summary of both parts
            (:func:`~dpxgb_dask.model.certificate.continued_summary`).

        Returns
        -------
        Booster
        """
        model = Booster.from_dict(self.to_dict())
        model.append_forest(new_part)
        model.params = dict(params, continued_from=self.params)
        model.ledger = ledger
        return model

    # -- inspection -------------------------------------------------------------------

    @property
    def n_features(self):
        return len(self.cuts)

    @property
    def n_trees(self):
        return int(self._tree_roots.shape[0])

    @property
    def nodes(self):
        """The forest's flat node arrays (read-only views), keyed by field name."""
        out = {}
        for name, arr in self._nodes.items():
            view = arr.view()
            view.flags.writeable = False
            out[name] = view
        return out

    @property
    def tree_roots(self):
        view = self._tree_roots.view()
        view.flags.writeable = False
        return view

    @property
    def tree_class(self):
        """ndarray of int32, shape (n_trees,): the class each tree adds to (all 0 unless
        multi:softprob)."""
        view = self._tree_class.view()
        view.flags.writeable = False
        return view

    @property
    def n_outputs(self):
        """Margins per row: K for multi:softprob, 1 otherwise."""
        return self.n_classes or 1

    # -- prediction -------------------------------------------------------------------

    def training_columns(self, X):
        """A (pandas or dask) frame's training columns, taken by name in the training
        order when the model knows their names; any other X as it is."""
        if hasattr(X, "columns") and getattr(X, "ndim", 2) == 2 and self.feature_names is not None:
            by_name = {str(c): c for c in X.columns}  # names are kept as strings
            missing = [c for c in self.feature_names if c not in by_name]
            if missing:
                raise ValueError(f"X lacks the training columns {missing}")
            X = X[[by_name[c] for c in self.feature_names]]
        return X

    def _as_features(self, X, encoded=False):
        X = self.training_columns(X)
        if self.categories is not None and not encoded:
            if getattr(X, "ndim", 2) != 2 or np.shape(X)[1] != self.n_features:
                raise ValueError(f"X must have shape (n_samples, {self.n_features}), got "
                                 f"{np.shape(X)}")
            X = encode(X, self.categories)
        X = np.asarray(float_values(X, "X"), dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have shape (n_samples, {self.n_features}), got {X.shape}")
        lo, hi = self.feature_bounds[:, 0], self.feature_bounds[:, 1]
        # Clip exactly as training did (NaN stays NaN: it is routed by the default direction).
        return np.clip(X, lo, hi)

    def predict_margin(self, X, n_threads=1, encoded=False, base_margin=None):
        """Raw margins: base score (or each row's base margin) plus the sum of the trees'
        leaf values (per class for multi:softprob).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Categorical features as their values (as codes with ``encoded``).
        n_threads : int
        encoded : bool
            The categorical features already hold their codes (the workers' rows).
        base_margin : array-like of shape (n_samples,) or (n_samples, K), optional
            XGBoost's ``base_margin``: where each row's margin starts instead of the base
            score.

        Returns
        -------
        ndarray of float64, shape (n_samples,), or (n_samples, K) for multi:softprob
        """
        X = self._as_features(X, encoded)
        start = (np.broadcast_to(np.atleast_1d(self.base_score), (len(X), self.n_outputs))
                 if base_margin is None else
                 base_margin_rows(base_margin, len(X), self.n_outputs).reshape(len(X), -1))
        n = self._nodes
        columns = []
        for k in range(self.n_outputs):
            out = np.array(start[:, k], dtype=np.float64)
            roots = self._tree_roots[self._tree_class == k]
            predict_raw(X, n["feature"], n["threshold"], n["categorical"], n["category_set"],
                        n["missing_left"],
                        n["left"], n["right"], n["value"], np.ascontiguousarray(roots), out,
                        n_threads)
            columns.append(out)
        return columns[0] if self.n_classes is None else np.stack(columns, axis=1)

    def predict_leaf(self, X, n_threads=1, encoded=False):
        """The leaf each row reaches in each tree (XGBoost's ``pred_leaf``); X, n_threads and
        encoded as in :meth:`predict_margin`.

        Returns
        -------
        ndarray of int32, shape (n_samples, n_trees)
            Node ids local to each tree (root 0, breadth first: tree ``t``'s node ``j`` is
            row ``tree_roots[t] + j`` of :meth:`trees_to_dataframe`), the ids of the XGBoost
            export.
        """
        return explain.leaf_ids(self, self._as_features(X, encoded), n_threads)

    def predict_contributions(self, X, n_threads=1, encoded=False):
        """Each feature's contribution to each row's margin (XGBoost's ``pred_contribs``):
        TreeSHAP (Lundberg et al., 2018) of the released trees, weighted by the nodes'
        covers. It is post-processing of the model: it reads nothing but the model and X.
        X, n_threads and encoded as in :meth:`predict_margin`.

        Returns
        -------
        ndarray of float64, shape (n_samples, n_features + 1), or (n_samples, K,
        n_features + 1) for multi:softprob
            The last entry is the bias: the base score plus the trees' cover-weighted mean
            outputs. A row's entries sum to its margin.
        """
        return explain.contributions(self, self._as_features(X, encoded), n_threads)

    def predict(self, X, output_margin=False, *, n_threads=1, encoded=False, pred_leaf=False,
                pred_contribs=False, iteration_range=None, base_margin=None):
        """Predictions: regression values, probabilities of class 1 for binary:logistic, or
        of every class for multi:softprob.

        Parameters
        ----------
        X : array-like, dask array or dask dataframe of shape (n_samples, n_features)
            Dask inputs are scored lazily where their blocks are (the model travels with
            the tasks); anything else here, by the Cython kernel. An ``xgboost.DMatrix``
            gives its rows and base margins (:func:`~dpxgb_dask.model.xgboost_api.dmatrix_inputs`).
        output_margin : bool
            Return the raw margin instead of the transformed prediction (regression
            predictions are the margin clipped to ``label_bounds``).
        n_threads : int
        encoded : bool
            Categorical features already hold their codes (``categories.encode``).
        pred_leaf : bool
            Return the leaf each row reaches in each tree instead (:meth:`predict_leaf`).
        pred_contribs : bool
            Return each feature's contribution to the margin instead
            (:meth:`predict_contributions`).
        iteration_range : tuple of int (begin, end), optional
            Use the trees of boosting rounds ``begin`` to ``end - 1`` only (XGBoost's
            meaning; ``(0, 0)`` or None: every round).
        base_margin : array-like or dask collection, shape (n_samples,) or (n_samples, K)
            Each row's starting margin instead of the base score (XGBoost's; partitioned
            as X for dask inputs). Not with ``pred_leaf`` or ``pred_contribs``.

        Returns
        -------
        ndarray of float64, shape (n_samples,), or (n_samples, K) for multi:softprob; a dask
        array (or series) for dask inputs
        """
        X, base_margin = dmatrix_inputs(X, base_margin)
        if iteration_range is not None and tuple(iteration_range) != (0, 0):
            return self.rounds(iteration_range).predict(
                X, output_margin, n_threads=n_threads, encoded=encoded, pred_leaf=pred_leaf,
                pred_contribs=pred_contribs, base_margin=base_margin)
        if pred_leaf and pred_contribs:
            raise ValueError("pred_leaf and pred_contribs ask for different outputs: pass one")
        if base_margin is not None and (pred_leaf or pred_contribs):
            raise ValueError("base_margin applies to predictions and margins, not to "
                             "pred_leaf or pred_contribs")
        if pred_leaf or pred_contribs:
            if hasattr(X, "__dask_graph__") and X.__dask_graph__() is not None:
                return explain_dask(self, X, "leaf" if pred_leaf else "contribs")
            method = self.predict_leaf if pred_leaf else self.predict_contributions
            return method(X, n_threads=n_threads, encoded=encoded)
        if hasattr(X, "__dask_graph__") and X.__dask_graph__() is not None:
            return predict_dask(self, X, output_margin, base_margin)
        margin = self.predict_margin(X, n_threads=n_threads, encoded=encoded,
                                     base_margin=base_margin)
        return margin if output_margin else self.transform(margin)

    def transform(self, margin):
        """Predictions from margins (of any shape whose last axis is the class for
        multi:softprob): regression values clipped to ``label_bounds`` (the label is known
        to lie there: free post-processing that removes the overshoot of noisy leaves),
        probabilities of class 1, or of every class."""
        if self.objective == "reg:squarederror":
            return margin if self.label_bounds is None else np.clip(margin, *self.label_bounds)
        if self.n_classes is not None:
            return softmax(margin)
        return 1.0 / (1.0 + np.exp(-margin))

    # -- persistence ------------------------------------------------------------------

    def to_dict(self, arrays=False):
        """JSON-ready dict of every field (all public or DP releases); ``arrays=True`` keeps
        the node fields and the tree lists as ndarrays, a message between processes (the
        codec packs their bytes, not 0.5 M Python numbers; :meth:`from_dict` reads both)."""
        return {
            "format": MODEL_FORMAT_NAME,
            "version": MODEL_FORMAT_VERSION,
            "objective": self.objective,
            "base_score": (self.base_score if self.n_classes is None
                           else self.base_score.tolist()),
            "n_classes": self.n_classes,
            "categories": self.categories,
            "feature_names": self.feature_names,
            "feature_bounds": self.feature_bounds.tolist(),
            "label_bounds": list(self.label_bounds) if self.label_bounds is not None else None,
            "cuts": [c.tolist() for c in self.cuts],
            "tree_roots": self._tree_roots if arrays else self._tree_roots.tolist(),
            "tree_class": self._tree_class if arrays else self._tree_class.tolist(),
            "nodes": {name: a if arrays else a.tolist() for name, a in self._nodes.items()},
            "params": self.params,
            "ledger": self.ledger,
        }

    @classmethod
    def from_dict(cls, data):
        """Inverse of :meth:`to_dict`; refuses other formats and newer versions."""
        if data.get("format") != MODEL_FORMAT_NAME:
            raise ValueError(f"not a dpxgb_dask model (format {data.get('format')!r})")
        if data.get("version") not in _READABLE_VERSIONS:
            raise ValueError(f"model format version {data.get('version')!r} is not supported; "
                             f"this dpxgb_dask reads versions {list(_READABLE_VERSIONS)}")
        booster = cls(
            objective=data["objective"], base_score=data["base_score"], cuts=data["cuts"],
            feature_bounds=data["feature_bounds"], params=data["params"], ledger=data["ledger"],
            feature_names=data["feature_names"], label_bounds=data["label_bounds"],
            n_classes=data.get("n_classes"), categories=data.get("categories"),
        )
        n_nodes = len(data["nodes"]["feature"])
        # (files without categorical splits may leave "categorical" and "category_set" out)
        booster._node_arrays = {
            name: np.asarray(data["nodes"].get(name, [0] * n_nodes), dtype=dtype)
            for name, dtype in NODE_FIELDS.items() if name != "category_set"}
        words = np.zeros(n_nodes, dtype=CATEGORY_SET)
        if "category_set" in data["nodes"]:
            words[...] = np.asarray(data["nodes"]["category_set"], dtype=np.uint64).reshape(
                n_nodes, CATEGORY_SET_WORDS)
        elif data["version"] == 1:  # one category, its code in threshold, goes left
            one = np.flatnonzero(booster._nodes["categorical"] == 1)
            words[one] = category_sets([[int(booster._nodes["threshold"][j])] for j in one])
        elif np.any(booster._nodes["categorical"] == 1):
            raise ValueError("the model's categorical nodes have no category_set: a version "
                             f"{data['version']} file stores each one's left categories")
        booster._nodes["category_set"] = words
        if "cover" not in data["nodes"]:  # (before version 3) every leaf alike: public
            booster._nodes["cover"] = explain.node_covers(booster._nodes["left"], booster._nodes["right"],
                                                  np.ones(n_nodes))
        booster._node_arrays = {name: booster._nodes[name]
                                for name in NODE_FIELDS}  # (in the fields' order)
        booster._tree_roots = np.asarray(data["tree_roots"], dtype=np.int32)
        booster._tree_class = np.asarray(data.get("tree_class", [0] * len(data["tree_roots"])),
                                         dtype=np.int32)
        if booster._tree_class.shape != booster._tree_roots.shape or \
                np.any((booster._tree_class < 0) | (booster._tree_class >= booster.n_outputs)):
            raise ValueError("the model's tree_class must give each tree a class in "
                             f"[0, {booster.n_outputs})")
        return booster

    def save_model(self, path, key=None, format="dpxgb"):
        """Write the model as versioned JSON to ``path``.

        Parameters
        ----------
        path : str or path-like
        key : bytes or str, optional
            A secret: the file then carries an HMAC-SHA256 of its content under that key
            (``"signature"``), which :meth:`load_model` verifies when given the key.
        format : {"dpxgb", "xgboost"}
            "xgboost" writes XGBoost's JSON model, which ``xgboost.Booster(model_file=)``
            loads (:mod:`~dpxgb_dask.model.xgboost_json`: what differs, and where the
            ledger goes).
        """
        if format not in ("dpxgb", "xgboost"):
            raise ValueError(f"format must be 'dpxgb' or 'xgboost', got {format!r}")
        if format == "xgboost" and key is not None:
            raise ValueError("key= signs files of format='dpxgb' only; XGBoost's format "
                             "has no place for a signature")
        data = to_xgboost_json(self) if format == "xgboost" else self.to_dict()
        if key is not None:
            data["signature"] = signature(data, key)
        with open(os.fspath(path), "w", encoding="utf-8") as f:  # (names as UTF-8: XGBoost
            json.dump(data, f, ensure_ascii=format == "dpxgb")  # keeps a \u escape as text)

    @classmethod
    def load_model(cls, path, key=None):
        """Read a model written by :meth:`save_model`, checking its privacy claims.

        Every total the file states (ε under each accountant, δ, the number of releases)
        is recomputed from its ledger's events; a file whose claims disagree is refused
        (:class:`~dpxgb_dask.model.certificate.PrivacyClaimError`). With ``key``, the file
        must carry a valid signature under that key (``ValueError`` otherwise).
        """
        with open(os.fspath(path)) as f:
            try:
                data = json.load(f)
            except ValueError as exc:
                raise ValueError(f"{os.fspath(path)} is not a JSON model file: {exc}") from None
        if not isinstance(data, dict):
            raise ValueError(f"{os.fspath(path)} is not a dpxgb_dask model file (its JSON is "
                             f"a {type(data).__name__}, not an object)")
        stated = data.pop("signature", None)
        if key is not None:
            check_signature(data, stated, key, os.fspath(path))
        # deferred: workers unpickle Boosters (a continued fit's start) and never load files,
        # so the accountants the check needs stay out of their processes
        from .certificate import check_privacy_claims

        check_privacy_claims(data.get("ledger"), data.get("params"))
        return cls.from_dict(data)

    def privacy_report(self):
        """What the model's privacy certificate says, recomputed from its ledger's releases:
        ε under every accountant, the non-DP choices, the budget across fits, and one row
        per release (:func:`~dpxgb_dask.model.certificate.model_privacy_report`).

        Returns
        -------
        dict
        """
        # deferred: see load_model
        from .certificate import model_privacy_report

        return model_privacy_report(self.ledger, self.params)

    @property
    def n_rounds(self):
        """Boosting rounds: trees, or trees / K for multi:softprob (one tree per class)."""
        return self.n_trees // self.n_outputs

    def rounds(self, iteration_range=None):
        """The model of XGBoost's ``iteration_range`` (begin, end): rounds ``begin`` to
        ``end - 1``; None or (0, 0): this model."""
        if iteration_range is None or tuple(iteration_range) == (0, 0):
            return self
        begin, end = (int(i) for i in iteration_range)
        if not 0 <= begin <= end <= self.n_rounds:
            raise ValueError(f"iteration_range must be (begin, end) with 0 <= begin <= end <= "
                             f"{self.n_rounds} (the model's rounds), got "
                             f"{tuple(iteration_range)}")
        return self[begin:end]

    def __getitem__(self, rounds):
        """The model of boosting rounds ``begin:end`` only (``booster[:10]``, as XGBoost's
        ``Booster`` slices): same base score, cuts, parameters and ledger (a part of a
        released model is post-processing of it)."""
        if not isinstance(rounds, slice) or rounds.step not in (None, 1):
            raise TypeError("a Booster is sliced by boosting rounds: booster[begin:end]")
        begin, end, _ = rounds.indices(self.n_rounds)
        bounds = list(self._tree_roots) + [self._nodes["feature"].shape[0]]
        kept = range(begin * self.n_outputs, max(begin, end) * self.n_outputs)
        spans = [(bounds[t], bounds[t + 1]) for t in kept]
        offsets = np.cumsum([0] + [b - a for a, b in spans])
        model = Booster(self.objective, self.base_score, self.cuts, self.feature_bounds,
                        self.params, ledger=copy.deepcopy(self.ledger),
                        feature_names=self.feature_names, label_bounds=self.label_bounds,
                        n_classes=self.n_classes, categories=self.categories)
        for name, values in self._nodes.items():
            parts = [values[a:b] for a, b in spans]
            if name in ("left", "right"):  # tree-local indices, shifted to their new place
                parts = [np.where(v >= 0, v - a + o, -1).astype(np.int32)
                         for v, (a, _), o in zip(parts, spans, offsets)]
            model._nodes[name] = np.concatenate(parts) if parts else values[:0]
        model._tree_roots = offsets[:-1].astype(np.int32)
        model._tree_class = self._tree_class[list(kept)]
        return model

    def __eq__(self, other):
        return isinstance(other, Booster) and json.dumps(self.to_dict()) == json.dumps(other.to_dict())

    def __repr__(self):
        classes = f", n_classes={self.n_classes}" if self.n_classes is not None else ""
        return (f"Booster(objective={self.objective!r}, n_trees={self.n_trees}, "
                f"n_features={self.n_features}{classes})")


def load_model(path, key=None):
    """Load a :class:`Booster` saved with :meth:`Booster.save_model` (privacy claims
    checked; with ``key``, the signature too)."""
    return Booster.load_model(path, key=key)

