"""The trained model and what travels with it.

:mod:`~dpxgb_dask.model.booster` holds the forest (:class:`~dpxgb_dask.model.booster.Booster`)
and its JSON format, :mod:`~dpxgb_dask.model.certificate` its privacy certificate,
:mod:`~dpxgb_dask.model.xgboost_json` the export to XGBoost,
:mod:`~dpxgb_dask.model.explain` what the model says about its features and predictions
(importance, leaves, TreeSHAP), :mod:`~dpxgb_dask.model.dask_predict` its lazy predictions
of dask collections and :mod:`~dpxgb_dask.model.plotting` the plots. Everything here is
public or a DP release.
"""
# The package's face: the names of the module ``dpxgb_dask.model`` was before it became a
# package (Boosters pickled then are found under it).
from .booster import Booster, load_model

__all__ = ["Booster", "load_model"]
