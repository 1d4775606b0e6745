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
