import numpy as np
import pytest
from scipy import stats

from benchmark.data import dsprites, pairs


@pytest.fixture(scope="module")
def data():
    return dsprites.DSprites(source="procedural")


def test_transitions_stay_in_range(data):
    rng = np.random.default_rng(0)
    first, second = pairs.sample_pairs(data, 20000, rng, rate=1.0)
    sizes = np.asarray(data.factor_sizes)
    assert second.shape == first.shape and second.dtype == np.int64
    assert (second >= 0).all() and (second < sizes).all()
    # Clipping: starts at the edge with large steps outward stay on the edge.
    edge = np.zeros((1000, 5), np.int64)
    moved = pairs.next_factors(edge, data.factor_sizes, rng, rate=0.5)
    assert moved.min() == 0


def test_transitions_are_discretised_laplace(data):
    rng = np.random.default_rng(1)
    rate = 6.0
    start = np.tile([[1, 3, 20, 16, 16]], (50000, 1))     # interior: no clipping effects
    steps = pairs.next_factors(start, data.factor_sizes, rng, rate) - start
    for j, size in [(2, 40), (3, 32)]:
        scale = np.log(size) / rate
        values, counts = np.unique(steps[:, j], return_counts=True)
        laplace = stats.laplace(0, scale)
        expected = laplace.cdf(values + 0.5) - laplace.cdf(values - 0.5)
        expected = expected / expected.sum() * counts.sum()
        keep = expected > 5
        chi2 = ((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum()
        assert stats.chi2(keep.sum() - 1).sf(chi2) > 1e-3
        assert np.mean(steps[:, j] == 0) == pytest.approx(
            laplace.cdf(0.5) - laplace.cdf(-0.5), abs=0.01)


def test_pairs_are_seeded_and_negatives_independent(data):
    a = pairs.sample_pairs(data, 100, np.random.default_rng(5))
    b = pairs.sample_pairs(data, 100, np.random.default_rng(5))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    neg = pairs.negative_factors(data, 100, np.random.default_rng(6))
    assert (neg != a[0]).any(axis=1).mean() > 0.95


def test_bad_rate():
    with pytest.raises(ValueError, match="rate must be > 0"):
        pairs.laplace_scales((3, 4), rate=0.0)
