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


def _chi2_p(observed_classes, probabilities):
    counts = np.bincount(observed_classes, minlength=len(probabilities))
    expected = probabilities * counts.sum()
    keep = expected > 5
    chi2 = ((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    return stats.chi2(keep.sum() - 1).sf(chi2)


@pytest.mark.parametrize("start", [(0, 5), (16, 30)])
def test_transitions_follow_the_renormalised_grid_laplace(start):
    """Klindt et al.'s sampler on two factors of 32 classes, exactly: the grid pdf
    renormalised (at an edge too), then the no-change redraw of one factor chosen
    uniformly, without its current class."""
    rng = np.random.default_rng(1)
    rate, size, n = 6.0, 32, 80000
    moved = pairs.next_factors(np.tile([start], (n, 1)), (size, size), rng, rate)
    scale = np.log(size) / rate
    p_a, p_b = (stats.laplace(c, scale).pdf(np.arange(size)) for c in start)
    p_a, p_b = p_a / p_a.sum(), p_b / p_b.sum()
    a, b = start
    both_stay = p_a[a] * p_b[b]
    expected = p_a + both_stay / 2 * p_a / (1 - p_a[a])
    expected[a] = p_a[a] * (1 - p_b[b]) + both_stay / 2
    assert _chi2_p(moved[:, 0], expected) > 1e-3
    if a == 0:
        # rounding + clipping would keep P(0 | 0) = laplace.cdf(0.5) = 0.90 before redraws
        assert np.mean(moved[:, 0] == 0) == pytest.approx(expected[0], abs=0.01)
        assert expected[0] < 0.85


def test_no_pair_is_identical_and_categorical_factors_never_change(data):
    rng = np.random.default_rng(2)
    first, second = pairs.sample_pairs(data, 50000, rng)
    shape = data.factor_names.index("shape")
    assert (first[:, shape] == second[:, shape]).all()
    assert (first != second).any(axis=1).all()
    sizes = np.asarray(data.factor_sizes)
    assert (second >= 0).all() and (second < sizes).all()


def test_no_change_redraw_excludes_the_current_class():
    # one movable factor of size 3 at a huge rate: the first draw almost never moves, so
    # nearly every row is redrawn; the redraw is the grid pdf without the current class
    rng = np.random.default_rng(3)
    start = np.tile([[0, 1]], (20000, 1))
    moved = pairs.next_factors(start, (2, 3), rng, rate=1e6, categorical=[True, False])
    assert (moved[:, 0] == 0).all()
    assert (moved[:, 1] != 1).all()
    # classes 0 and 2 are equally far from 1: a fair split
    assert np.mean(moved[:, 1] == 0) == pytest.approx(0.5, abs=0.02)


def test_batch_depends_only_on_seed_and_index(data):
    from benchmark.data import pipeline
    a = pipeline.pair_batch(data, 8, seed=4, batch_index=7, negatives=True)
    b = pipeline.pair_batch(data, 8, seed=4, batch_index=7, negatives=True)
    c = pipeline.pair_batch(data, 8, seed=4, batch_index=8, negatives=True)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], c[0])


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
