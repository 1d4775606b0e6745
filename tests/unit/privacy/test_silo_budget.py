"""A silo's own cap on one fit's releases (:mod:`dpxgb_dask.privacy.silo_budget`): the zCDP
coefficients of Bun & Steinke 2016 and their conversion to (ε, δ)."""
import math

import pytest

from dpxgb_dask.privacy.mechanisms import GaussianMechanism, LaplaceMechanism
from dpxgb_dask.privacy.silo_budget import SiloBudget, release_rho, zcdp_cap


@pytest.mark.parametrize("epsilon, delta", [(0.1, 1e-6), (1.0, 1e-6), (4.0, 1e-9),
                                            (10.0, 0.01)])
def test_the_cap_is_the_rho_whose_guarantee_is_the_given_epsilon(epsilon, delta):
    rho = zcdp_cap(epsilon, delta)
    assert rho + 2 * math.sqrt(rho * math.log(1 / delta)) == pytest.approx(epsilon, rel=1e-12)
    below = rho * (1 - 1e-9)  # (ε grows with ρ: the cap is the largest ρ within ε)
    assert below + 2 * math.sqrt(below * math.log(1 / delta)) < epsilon


def test_each_release_counts_its_parts_rho():
    gaussian = GaussianMechanism(2.0, sigma=10.0, coords_per_row=1)   # z = 5
    laplace = LaplaceMechanism(1.0, 0.5, coords_per_row=1)
    assert release_rho([gaussian]) == pytest.approx(1 / 50)
    assert release_rho([laplace]) == pytest.approx(0.125)
    assert release_rho([gaussian, laplace]) == pytest.approx(1 / 50 + 0.125)
    with pytest.raises(TypeError, match="GaussianMechanism or LaplaceMechanism"):
        release_rho([object()])


def test_a_silo_budget_refuses_the_release_that_would_pass_its_cap():
    budget = SiloBudget(1.0, 1e-6)
    gaussian = GaussianMechanism(1.0, sigma=10.0, coords_per_row=1)   # ρ = 0.005
    n_fit = int(budget.max_rho // 0.005)
    for _ in range(n_fit):
        budget.charge([gaussian])
    with pytest.raises(PermissionError, match=r"epsilon=1, delta=1e-06 .*dpxgb.silo"):
        budget.charge([gaussian])
    assert budget.spent == pytest.approx(n_fit * 0.005)  # (the refused one is not counted)
    with pytest.raises(ValueError, match="delta must be > 0"):
        SiloBudget(1.0, 0.0)


def test_a_ledger_counts_every_fits_releases_of_the_same_rows(tmp_path):
    """With a ledger file the cap is a budget: each charge reads and writes the file under
    its lock, so two fits (two SiloBudget objects) on the same rows count each other's
    releases, from the first one on; other rows have their own account; a file of
    another format is refused."""
    import json

    ledger = str(tmp_path / "silo" / "ledger.json")
    gaussian = GaussianMechanism(1.0, sigma=10.0, coords_per_row=1)   # ρ = 0.005
    first, second = SiloBudget(1.0, 1e-6, ledger, "/rows"), SiloBudget(1.0, 1e-6, ledger,
                                                                        "/rows")
    other = SiloBudget(1.0, 1e-6, ledger, "/other")
    n_fit = int(first.max_rho // 0.005)
    for k in range(n_fit):
        (first if k % 2 else second).charge([gaussian])
    with pytest.raises(PermissionError, match="over every fit"):
        first.charge([gaussian])
    other.charge([gaussian])
    spent = json.loads(open(ledger).read())["spent"]
    assert spent == {"/rows": pytest.approx(n_fit * 0.005), "/other": pytest.approx(0.005)}
    assert SiloBudget(1.0, 1e-6, ledger, "/rows").spent == pytest.approx(n_fit * 0.005)
    with pytest.raises(ValueError, match="needs the key"):
        SiloBudget(1.0, 1e-6, ledger)
    (tmp_path / "not-a-ledger.json").write_text('{"budgets": []}')
    with pytest.raises(ValueError, match="not a dpxgb silo ledger"):
        SiloBudget(1.0, 1e-6, str(tmp_path / "not-a-ledger.json"), "/rows")
