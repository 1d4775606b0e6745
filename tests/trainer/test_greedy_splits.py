"""Greedy splits on released histograms: the noise-aware gains (``gains.ReleasedNoise``)
against a per-candidate twin, and the failure they fix (the noise of near-empty children
picking every split)."""
import numpy as np

from dpxgb_dask.boosting import gains


def _twin_gains(g, h, cells, sigma, reg_lambda):
    """Every candidate of one node and feature, one by one: the left set's sums and noisy
    cells counted directly, each child's term max(G² − kσ², 0) / (max(H, cσ√k) + λ)."""
    def term(g_sum, h_sum, k):
        return max(g_sum**2 - k * sigma**2, 0.0) / (
            max(h_sum, gains.NOISE_FLOOR_SDS * sigma * np.sqrt(k)) + reg_lambda)

    n_bins = len(g)
    out = np.empty((n_bins - 1, 2))
    total = term(g.sum(), h.sum(), cells.sum())
    for t in range(n_bins - 1):
        for missing_left in (0, 1):
            left = np.zeros(n_bins, dtype=bool)
            left[:t + 1] = True
            left[-1] = bool(missing_left)
            out[t, missing_left] = (term(g[left].sum(), h[left].sum(), cells[left].sum())
                                    + term(g[~left].sum(), h[~left].sum(), cells[~left].sum())
                                    - total)
    return out


def test_released_gains_match_their_per_candidate_twin():
    rng = np.random.default_rng(0)
    n_nodes, n_features, n_bins, sigma, reg_lambda = 3, 4, 9, 2.5, 1.5
    g = rng.normal(0, 10, (n_nodes, n_features, n_bins))
    h = rng.normal(5, 10, (n_nodes, n_features, n_bins))
    cells = (rng.random((n_nodes, n_features, n_bins)) < 0.7).astype(float)
    fast = gains.split_gains(g, h, reg_lambda, noise=gains.ReleasedNoise(cells, sigma))
    for i in range(n_nodes):
        for f in range(n_features):
            np.testing.assert_allclose(fast[i, f], _twin_gains(g[i, f], h[i, f], cells[i, f],
                                                               sigma, reg_lambda),
                                       rtol=1e-12, atol=1e-9)


def test_reachable_bins_follow_the_ranges_and_the_categories():
    ranges = np.array([[[0, 4], [2, 3]], [[1, 1], [0, 4]]])
    reachable = gains.reachable_bins(ranges, np.array([4, 2]), 6, np.array([False, True]))
    assert reachable[0, 0].tolist() == [True] * 5 + [True]
    assert reachable[0, 1].tolist() == [True, True, True, False, False, True]  # 3 categories
    assert reachable[1, 0].tolist() == [False, True, False, False, False, True]


def _noisy_node(rng, sigma, n_features=20, n_bins=64):
    """One node's exact histograms: 20k rows of standard normal features over 64 equal-width
    bins of [-6, 6], feature 0 carrying the label (g = -0.2 left of 0, +0.2 right), h = 0.1
    per row; then Gaussian noise of σ per cell."""
    edges = np.linspace(-6, 6, n_bins)  # 63 cuts -> bins 0..62, bin 63 missing
    x = rng.standard_normal((20_000, n_features))
    bins = np.searchsorted(edges[1:-1], x)
    g_row = np.where(x[:, 0] < 0, -0.2, 0.2)
    g = np.zeros((n_features, n_bins))
    h = np.zeros((n_features, n_bins))
    for f in range(n_features):
        g[f, :n_bins - 1] = np.bincount(bins[:, f], weights=g_row, minlength=n_bins - 1)
        h[f, :n_bins - 1] = np.bincount(bins[:, f], minlength=n_bins - 1) * 0.1
    return (g + rng.normal(0, sigma, g.shape))[None], (h + rng.normal(0, sigma, h.shape))[None]


def test_noise_aware_gains_find_the_split_that_plain_gains_lose_to_empty_children():
    """The failure of issue 27: with noise of the order of a central bin's hessian sum
    (σ = 30 against about 60 per bin near 0), the plain gains G̃²/(max(H̃, 0) + λ) take a
    threshold in the tails, where a child holds a few rows and its released H is noise near
    zero; the noise-aware gains take feature 0 near 0 (bins 29-33 of 63) in nearly every draw.
    Both assertions are on the same draws: the test fails if either way of scoring changes
    its behaviour."""
    rng = np.random.default_rng(5)
    sigma, reg_lambda, draws = 30.0, 2.0, 40
    right, plain_right = 0, 0
    for _ in range(draws):
        g, h = _noisy_node(rng, sigma)
        cells = np.ones(g.shape)
        for noise, count in ((gains.ReleasedNoise(cells, sigma), "aware"), (None, "plain")):
            scores = gains.split_gains(g, h, reg_lambda, noise=noise)
            f, t, _ = np.unravel_index(np.argmax(scores[0]), scores[0].shape)
            hit = f == 0 and 29 <= t <= 33
            if count == "aware":
                right += hit
            else:
                plain_right += hit
    assert right >= 0.9 * draws
    assert plain_right <= 0.2 * draws


def test_the_maddock_preset_scores_partially_random_splits_as_its_paper(release_plan,
                                                                        fit_streams):
    """gain_estimate: the library's methods take the noise-aware gains, the maddock preset
    the plain noisy gains of Maddock et al.'s code; an unknown value names the choices."""
    import pytest

    from dpxgb_dask.boosting.splits import NoisyHistogramSplits, PartiallyRandomSplits
    from dpxgb_dask.params import resolve_params

    bounds = np.tile([0.0, 1.0], (3, 1))
    assert resolve_params("binary:logistic", preset="maddock", feature_bounds=bounds,
                          split_method="partially_random").gain_estimate == "plain"
    assert resolve_params("binary:logistic", feature_bounds=bounds,
                          split_method="partially_random").gain_estimate == "noise_aware"
    cells = np.ones((1, 3, 3))
    for cls, method in ((NoisyHistogramSplits, "noisy_histogram"),
                        (PartiallyRandomSplits, "partially_random")):
        aware = cls(release_plan(3, split_method=method), fit_streams(0))
        assert isinstance(aware.released_noise(cells), gains.ReleasedNoise)
        assert aware.released_noise(cells).sigma == aware.mechanism.sigma
        plain = cls(release_plan(3, split_method=method, gain_estimate="plain"),
                    fit_streams(0))
        assert plain.released_noise(cells) is None
    with pytest.raises(ValueError, match=r"gain_estimate must be one of \['noise_aware', "):
        resolve_params("binary:logistic", feature_bounds=bounds, gain_estimate="debiased")
