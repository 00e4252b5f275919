import numpy as np
import pytest
from scipy import stats

from benchmark.data import dsprites, load_data, make_variant
from benchmark.data.variants import (DEFAULT_EPS, AdditivePerturbation, NoisyData, reflect,
                                     uniform_noise_by_index)


@pytest.fixture(scope="module")
def data():
    return dsprites.DSprites(source="procedural")


def test_reflect_is_identity_inside_and_lands_in_unit_interval():
    inside = np.linspace(0.0, 1.0, 1001)
    np.testing.assert_array_equal(reflect(inside), inside)
    wide = np.linspace(-1.0, 2.0, 3001)
    folded = reflect(wide)
    assert folded.min() >= 0.0 and folded.max() <= 1.0
    np.testing.assert_allclose(reflect(np.array([-0.25, 1.25, -1.0, 2.0])), [0.25, 0.75, 1.0, 0.0])


def test_noisy_images_within_eps_and_fixed_per_image(data):
    noisy = NoisyData(data, seed=7)
    assert noisy.eps == DEFAULT_EPS["dsprites"] == 0.1
    factors = data.sample_factors(128, np.random.default_rng(0))
    clean = data.observations_from_factors(factors)
    x1 = noisy.observations_from_factors(factors)
    x2 = noisy.observations_from_factors(factors[::-1])[::-1]
    np.testing.assert_array_equal(x1, x2)
    diff = np.abs(x1 - clean)
    assert diff.max() <= 0.1 + 1e-6 and diff.mean() > 0.03
    assert x1.min() >= 0.0 and x1.max() <= 1.0
    # Background pixels (0) are folded to |u|, sprite pixels (1) to 1 - |u|.
    assert x1[clean == 0].max() <= 0.1 + 1e-6 and x1[clean == 1].min() >= 0.9 - 1e-6
    assert x1[clean == 0].mean() == pytest.approx(0.05, abs=0.005)


def test_noise_depends_on_index_and_seed_only(data):
    shape = data.observation_shape
    a = uniform_noise_by_index([3, 4, 3], shape, seed=1)
    np.testing.assert_array_equal(a[0], a[2])
    assert not np.array_equal(a[0], a[1])
    b = uniform_noise_by_index([3], shape, seed=2)
    assert not np.array_equal(a[0], b[0])
    assert np.abs(a).max() < 1.0


def test_noise_is_uniform_and_uncorrelated():
    noise = uniform_noise_by_index(np.arange(2000), (16, 16, 3), seed=0).reshape(2000, -1)
    assert stats.kstest(noise.ravel()[:200000], stats.uniform(-1, 2).cdf).pvalue > 1e-3
    assert noise.mean() == pytest.approx(0.0, abs=0.01)
    assert noise.var() == pytest.approx(1 / 3, abs=0.01)
    corr = np.corrcoef(noise[:, :64].T)
    off_diagonal = corr[~np.eye(64, dtype=bool)]
    assert np.abs(off_diagonal).max() < 0.1           # 2000 samples: sd ~ 0.022
    assert np.abs(np.corrcoef(noise[:64])[~np.eye(64, dtype=bool)]).max() < 0.15


def test_shapes3d_default_eps_and_load_data():
    noisy = load_data(name="shapes3d", variant="noisy", source="procedural")
    assert noisy.eps == 0.175
    assert noisy.describe()["variant"] == "noisy"
    x = noisy.observations_from_factors([[0, 1, 2, 3, 1, 7]])
    assert x.shape == (1, 64, 64, 3) and 0 <= x.min() and x.max() <= 1


def test_additive_perturbation_validates_delta(data):
    factors = np.zeros((2, 5), int)
    good = AdditivePerturbation(data, lambda f: np.full((len(f), 64, 64, 1), -1.0), eps=0.5)
    np.testing.assert_allclose(good.observations_from_factors(factors).max(), 0.5)
    wrong_shape = AdditivePerturbation(data, lambda f: np.zeros((len(f), 64, 64, 3)), 0.1)
    with pytest.raises(ValueError, match=r"expected delta of shape \(2, 64, 64, 1\)"):
        wrong_shape.observations_from_factors(factors)
    too_big = AdditivePerturbation(data, lambda f: np.full((len(f), 64, 64, 1), 1.5), 0.1)
    with pytest.raises(ValueError, match=r"in \[-1, 1\]"):
        too_big.observations_from_factors(factors)
    nan = AdditivePerturbation(data, lambda f: np.full((len(f), 64, 64, 1), np.nan), 0.1)
    with pytest.raises(ValueError, match="finite"):
        nan.observations_from_factors(factors)
    with pytest.raises(ValueError, match=r"eps \(data.eps\) must be a number in \(0.0, 1.0\]"):
        AdditivePerturbation(data, lambda f: f, eps=0.0)


def test_unknown_variant_is_a_clear_error(data):
    with pytest.raises(ValueError, match="unknown dataset variant 'modifed'"):
        make_variant(data, "modifed")
