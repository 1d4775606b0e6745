"""The Gaussian PLD built over its grid at once (``privacy/gaussian_pld.py``) is
``dp_accounting``'s ``from_gaussian_mechanism``, its slow twin, value for value: the same
PMFs (grid offset, every probability, the mass at infinity) for both adjacencies, hence the
same ε at every δ and δ at every ε."""
import numpy as np
import pytest
from dp_accounting import NeighboringRelation
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from dpxgb_dask.privacy.gaussian_pld import _GaussianLoss, gaussian_pld


def _pmf_parts(pmf):
    return pmf._lower_loss, pmf._probs, pmf._infinity_mass


def _twin(standard_deviation, h, q):
    return pld_lib.from_gaussian_mechanism(
        standard_deviation, value_discretization_interval=h, sampling_prob=q,
        neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE)


# noise multipliers and rates as fits plan them: a leaf release at large and small ε, the
# default's subsamples (0.1; Abalone at ε = 0.1: rates near 1e-3), the search's coarse grid
@pytest.mark.parametrize("standard_deviation, q, h", [
    (1.0, 1.0, 1e-4), (0.2, 1.0, 1e-4), (25.0, 1.0, 1e-4), (0.7, 0.1, 1e-4),
    (0.3, 0.01, 1e-4), (2.0, 1e-3, 1e-4), (0.8, 0.5, 1e-3), (4.0, 0.999, 1e-4),
    (0.2, 0.9, 1e-3)])
def test_the_pld_is_dp_accountings_value_for_value(standard_deviation, q, h):
    fast, slow = gaussian_pld(standard_deviation, h, q), _twin(standard_deviation, h, q)
    assert fast._symmetric == slow._symmetric == (q == 1.0)
    for mine, theirs in [(fast._pmf_remove, slow._pmf_remove), (fast._pmf_add, slow._pmf_add)]:
        lower, probs, infinity = _pmf_parts(mine)
        assert lower == _pmf_parts(theirs)[0] and infinity == _pmf_parts(theirs)[2]
        np.testing.assert_array_equal(probs, _pmf_parts(theirs)[1])
    for delta in (1e-3, 1e-6, 1e-9):
        assert fast.get_epsilon_for_delta(delta) == slow.get_epsilon_for_delta(delta)


@pytest.mark.parametrize("adjacency", ["ADD", "REMOVE"])
@pytest.mark.parametrize("q", [1.0, 0.3])
def test_the_divergence_of_each_epsilon_is_the_scalar_codes(adjacency, q):
    """Over an array that reaches the subsampling limits ±log(1 − q), zero, and values
    beyond the limits: the array path gives exactly what one scalar call per ε gives."""
    from dp_accounting.pld.privacy_loss_mechanism import AdjacencyType

    loss = _GaussianLoss(0.6, sampling_prob=q, adjacency_type=AdjacencyType[adjacency])
    limit = -np.log1p(-q) if q < 1 else 3.0
    epsilons = np.concatenate([np.linspace(-2 * limit, 2 * limit, 2001), [0.0, -0.0],
                               [limit, -limit, np.nextafter(limit, 0)]])
    scalar = np.array([loss.get_delta_for_epsilon(float(e)) for e in epsilons])
    np.testing.assert_array_equal(loss.get_delta_for_epsilon(epsilons), scalar)
