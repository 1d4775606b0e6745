"""Loaders of the shared real datasets, with PUBLIC bounds and encodings.

Categorical codes follow the category lists published with each dataset (adult.names,
the bank-marketing documentation), and numeric bounds are domain ranges (ages 0-100,
hours per week 0-100, the census top-code 99999 for capital gains, ...), so neither reads
the data: both are public in the sense of the privacy model. Rows outside the bounds are
clipped by the trainer.

The data lives in ../shared/data (never copied into the project); ``data_dir()`` finds it
or returns None.
"""
import os
from pathlib import Path

import numpy as np
import pandas as pd

ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
                 "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
                 "hours-per-week", "native-country", "income"]

#: Category lists as published in adult.names (the codes are the positions).
ADULT_CATEGORIES = {
    "workclass": ["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov",
                  "State-gov", "Without-pay", "Never-worked"],
    "education": ["Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm",
                  "Assoc-voc", "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th",
                  "Doctorate", "5th-6th", "Preschool"],
    "marital-status": ["Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
                       "Married-spouse-absent", "Married-AF-spouse"],
    "occupation": ["Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
                   "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
                   "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
                   "Armed-Forces"],
    "relationship": ["Wife", "Own-child", "Husband", "Not-in-family", "Other-relative",
                     "Unmarried"],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "sex": ["Female", "Male"],
    "native-country": ["United-States", "Cambodia", "England", "Puerto-Rico", "Canada",
                       "Germany", "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece",
                       "South", "China", "Cuba", "Iran", "Honduras", "Philippines", "Italy",
                       "Poland", "Jamaica", "Vietnam", "Mexico", "Portugal", "Ireland",
                       "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan", "Haiti",
                       "Columbia", "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand",
                       "Yugoslavia", "El-Salvador", "Trinadad&Tobago", "Peru", "Hong",
                       "Holand-Netherlands"],
}

#: Public domain ranges of the numeric columns.
ADULT_NUMERIC_BOUNDS = {
    "age": (0.0, 100.0),
    "fnlwgt": (0.0, 1.5e6),
    "education-num": (1.0, 16.0),
    "capital-gain": (0.0, 99999.0),   # the census top-code
    "capital-loss": (0.0, 5000.0),
    "hours-per-week": (0.0, 100.0),
}


def data_dir():
    """``../shared/data`` next to the checkout, or ``$DPXGB_DATA``; None when absent."""
    candidates = [os.environ.get("DPXGB_DATA"),
                  Path(__file__).resolve().parents[2] / "shared" / "data"]
    for c in candidates:
        if c and Path(c).is_dir():
            return Path(c)
    return None


def _encode_adult(frame):
    out = pd.DataFrame(index=frame.index)
    bounds = []
    for col in ADULT_COLUMNS[:-1]:
        if col in ADULT_CATEGORIES:
            cats = ADULT_CATEGORIES[col]
            out[col] = frame[col].map({c: float(i) for i, c in enumerate(cats)})
            bounds.append((0.0, float(len(cats) - 1)))
        else:
            out[col] = frame[col].astype(float)
            bounds.append(ADULT_NUMERIC_BOUNDS[col])
    y = frame["income"].str.startswith(">50K").astype(float).to_numpy()
    return out, y, np.array(bounds)


def load_adult(root=None):
    """UCI Adult: train = adult.data, test = adult.test, rows with '?' dropped.

    Returns
    -------
    X_train, y_train, X_test, y_test, feature_bounds
        X as DataFrames of float (categoricals as public codes), y as float arrays in {0, 1},
        feature_bounds of shape (14, 2).
    """
    root = Path(root or data_dir()) / "adult"
    read = dict(header=None, names=ADULT_COLUMNS, skipinitialspace=True, na_values="?")
    train = pd.read_csv(root / "adult.data", **read).dropna()
    test = pd.read_csv(root / "adult.test", skiprows=1, **read).dropna()
    X_train, y_train, bounds = _encode_adult(train)
    X_test, y_test, _ = _encode_adult(test)
    return X_train, y_train, X_test, y_test, bounds


def load_adult_raw(root=None):
    """UCI Adult as published: the categorical columns as their strings.

    Returns
    -------
    X_train, y_train, X_test, y_test, numeric_bounds, categories
        X as DataFrames (strings for the categorical columns), y as float arrays in {0, 1},
        the public bounds of the numerical columns by name, and the category lists of
        adult.names by name.
    """
    root = Path(root or data_dir()) / "adult"
    read = dict(header=None, names=ADULT_COLUMNS, skipinitialspace=True, na_values="?")
    frames = []
    for name, skip in (("adult.data", 0), ("adult.test", 1)):
        frame = pd.read_csv(root / name, skiprows=skip, **read).dropna()
        y = frame["income"].str.startswith(">50K").astype(float).to_numpy()
        frames += [frame[ADULT_COLUMNS[:-1]], y]
    return (*frames, dict(ADULT_NUMERIC_BOUNDS), dict(ADULT_CATEGORIES))


# -- Abalone ---------------------------------------------------------------------------------

ABALONE_COLUMNS = ["sex", "length", "diameter", "height", "whole-weight", "shucked-weight",
                   "viscera-weight", "shell-weight", "rings"]

#: The nominal values of ``sex`` as listed in abalone.names (the codes are the positions).
ABALONE_CATEGORIES = {"sex": ["M", "F", "I"]}

#: Ranges of the measurements as documented in abalone.names ("Statistics for numeric
#: domains", values already divided by 200 by the donors), rounded outward to 0.1 with the
#: physical lower bound 0: Length max 0.815, Diameter 0.650, Height 1.130, Whole 2.826,
#: Shucked 1.488, Viscera 0.760, Shell 1.005.
ABALONE_NUMERIC_BOUNDS = {
    "length": (0.0, 0.9),
    "diameter": (0.0, 0.7),
    "height": (0.0, 1.2),
    "whole-weight": (0.0, 2.9),
    "shucked-weight": (0.0, 1.5),
    "viscera-weight": (0.0, 0.8),
    "shell-weight": (0.0, 1.1),
}

#: Public range of the label (rings), as documented in abalone.names and used by S-BDT.
ABALONE_LABEL_BOUNDS = (1.0, 29.0)


def load_abalone(root=None):
    """UCI Abalone (4,177 rows): predict the number of rings from 8 measurements.

    Parameters
    ----------
    root : path-like, optional
        Directory holding ``abalone/abalone.data``; default :func:`data_dir`.

    Returns
    -------
    X, y, feature_bounds, label_bounds
        X as a DataFrame of float (``sex`` as the public codes M=0, F=1, I=2), y the rings
        as floats, feature_bounds of shape (8, 2) and label_bounds (1, 29), all public.
    """
    root = Path(root or data_dir()) / "abalone"
    frame = pd.read_csv(root / "abalone.data", header=None, names=ABALONE_COLUMNS)
    X, bounds = _encode_columns(frame, ABALONE_COLUMNS[:-1], ABALONE_CATEGORIES,
                                ABALONE_NUMERIC_BOUNDS)
    return X, frame["rings"].astype(float).to_numpy(), bounds, ABALONE_LABEL_BOUNDS


# -- Bank marketing --------------------------------------------------------------------------

BANK_COLUMNS = ["age", "job", "marital", "education", "default", "balance", "housing", "loan",
                "contact", "day", "month", "duration", "campaign", "pdays", "previous",
                "poutcome"]

#: Category lists as published in the dataset documentation (bank-names.txt of the UCI
#: Bank Marketing data, Moro et al. 2014); the codes are the positions.
BANK_CATEGORIES = {
    "job": ["admin.", "unknown", "unemployed", "management", "housemaid", "entrepreneur",
            "student", "blue-collar", "self-employed", "retired", "technician", "services"],
    "marital": ["married", "divorced", "single"],
    "education": ["unknown", "secondary", "primary", "tertiary"],
    "default": ["no", "yes"],
    "housing": ["no", "yes"],
    "loan": ["no", "yes"],
    "contact": ["unknown", "telephone", "cellular"],
    "month": ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
              "dec"],
    "poutcome": ["unknown", "other", "failure", "success"],
}

#: Domain ranges of the numeric columns, from their meaning, not from the data: age in
#: years; balance = average yearly balance in euros, a wide public range (overdrafts to a
#: large deposit); day of the month; duration of the last call in seconds (a call of up to
#: 5000 s, about 83 min); campaign / previous = numbers of contacts (up to 100); pdays = days
#: since the previous campaign's contact, -1 for "not contacted", up to 3 years (the data
#: span May 2008 - Nov 2010).
BANK_NUMERIC_BOUNDS = {
    "age": (0.0, 100.0),
    "balance": (-10000.0, 110000.0),
    "day": (1.0, 31.0),
    "duration": (0.0, 5000.0),
    "campaign": (0.0, 100.0),
    "pdays": (-1.0, 1100.0),
    "previous": (0.0, 100.0),
}


def load_bank(root=None):
    """UCI Bank Marketing (bank-full.csv, 45,211 rows): did the client subscribe a deposit?

    Parameters
    ----------
    root : path-like, optional
        Directory holding ``bank/bank-full.csv``; default :func:`data_dir`.

    Returns
    -------
    X, y, feature_bounds
        X as a DataFrame of float (categoricals as the public codes of
        :data:`BANK_CATEGORIES`), y in {0, 1} ("yes" = 1), feature_bounds of shape (16, 2).
    """
    root = Path(root or data_dir()) / "bank"
    path = root / "bank-full.csv"
    with open(path) as handle:
        header = handle.readline()
    # UCI ships the file ';'-separated; some mirrors re-save it with ','.
    frame = pd.read_csv(path, sep=";" if header.count(";") > header.count(",") else ",")
    frame.columns = [c.strip('"') for c in frame.columns]
    X, bounds = _encode_columns(frame, BANK_COLUMNS, BANK_CATEGORIES, BANK_NUMERIC_BOUNDS)
    y = (frame["y"] == "yes").astype(float).to_numpy()
    return X, y, bounds


# -- DP-XGBoost's synthetic sets -------------------------------------------------------------

#: Size and seed of the synthetic sets of DP-XGBoost's code (sarus/python/test_dp.py).
SYNTHETIC_ROWS = 100_000
SYNTHETIC_RANDOM_STATE = 100

#: make_classification's features are standard normals plus cluster centres at ±class_sep
#: (=1) and redundant linear combinations of them (coefficients in [-1, 1]): ±10 holds a
#: priori except with negligible probability.
SYNTHETIC_CLASSIFICATION_BOUND = 10.0

#: make_regression's features are standard normals: ±5 holds a priori except with
#: probability ~6e-7 per value.
SYNTHETIC_REGRESSION_FEATURE_BOUND = 5.0

#: make_regression's label is X @ w with 10 informative weights drawn from 100·U(0, 1) and no
#: noise, so y ~ N(0, |w|²) with E|w|² = 10·100²/3, a standard deviation of about 183:
#: ±800 is about ±4.4 of those, fixed a priori.
SYNTHETIC_REGRESSION_LABEL_BOUNDS = (-800.0, 800.0)


def load_synthetic_classification(n_rows=SYNTHETIC_ROWS):
    """DP-XGBoost's ``make_classification(100000, 80, random_state=100)``.

    Parameters
    ----------
    n_rows : int
        Keep the first ``n_rows`` rows of the 100,000 (a random subset: the generator
        shuffles), for quick runs.

    Returns
    -------
    X, y, feature_bounds
        X of shape (n_rows, 80), y in {0, 1}, feature_bounds ±10 for every feature.
    """
    from sklearn.datasets import make_classification

    _check_row_count(n_rows)
    X, y = make_classification(SYNTHETIC_ROWS, 80, random_state=SYNTHETIC_RANDOM_STATE)
    bounds = np.tile([-SYNTHETIC_CLASSIFICATION_BOUND, SYNTHETIC_CLASSIFICATION_BOUND], (80, 1))
    return X[:n_rows], y[:n_rows].astype(float), bounds


def load_synthetic_regression(n_rows=SYNTHETIC_ROWS):
    """DP-XGBoost's ``make_regression(100000, 70, random_state=100)``.

    Parameters
    ----------
    n_rows : int
        Keep the first ``n_rows`` rows of the 100,000 (a random subset), for quick runs.

    Returns
    -------
    X, y, feature_bounds, label_bounds
        X of shape (n_rows, 70), y real, feature_bounds ±5, label_bounds (-800, 800).
    """
    from sklearn.datasets import make_regression

    _check_row_count(n_rows)
    X, y = make_regression(SYNTHETIC_ROWS, 70, random_state=SYNTHETIC_RANDOM_STATE)
    bounds = np.tile([-SYNTHETIC_REGRESSION_FEATURE_BOUND, SYNTHETIC_REGRESSION_FEATURE_BOUND],
                     (70, 1))
    return X[:n_rows], y[:n_rows], bounds, SYNTHETIC_REGRESSION_LABEL_BOUNDS


def _check_row_count(n_rows):
    if not isinstance(n_rows, (int, np.integer)) or not 1 <= n_rows <= SYNTHETIC_ROWS:
        raise ValueError(f"n_rows must be an integer in [1, {SYNTHETIC_ROWS}], got {n_rows!r}")


def _encode_columns(frame, columns, categories, numeric_bounds):
    """Code categoricals by their public lists, keep numerics; bounds from the public tables.

    A category missing from its public list becomes NaN (a missing value), never a new code.
    """
    out = pd.DataFrame(index=frame.index)
    bounds = []
    for col in columns:
        if col in categories:
            cats = categories[col]
            out[col] = frame[col].map({c: float(i) for i, c in enumerate(cats)})
            bounds.append((0.0, float(len(cats) - 1)))
        else:
            out[col] = frame[col].astype(float)
            bounds.append(numeric_bounds[col])
    return out, np.array(bounds)


def clipped_fractions(X, feature_bounds, y=None, label_bounds=None):
    """Share of rows that the public bounds clip: a sanity check, never used to set them.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_features)
    feature_bounds : array-like of shape (n_features, 2)
    y : array-like of shape (n_rows,), optional
    label_bounds : (lo, hi), optional

    Returns
    -------
    dict
        ``any_feature``: share of rows with at least one feature outside its bounds;
        ``per_feature``: share per feature (array); ``label``: share of labels outside
        ``label_bounds`` (None without them); ``unknown_category``: share of rows with a
        missing value (e.g. a category not in the public list).
    """
    values = np.asarray(X, dtype=float)
    bounds = np.asarray(feature_bounds, dtype=float)
    outside = (values < bounds[:, 0]) | (values > bounds[:, 1])
    label_share = None
    if y is not None and label_bounds is not None:
        labels = np.asarray(y, dtype=float)
        label_share = float(((labels < label_bounds[0]) | (labels > label_bounds[1])).mean())
    return {"any_feature": float(outside.any(axis=1).mean()),
            "per_feature": outside.mean(axis=0),
            "label": label_share,
            "unknown_category": float(np.isnan(values).any(axis=1).mean())}
