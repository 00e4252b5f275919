import gin
import numpy as np
import pytest

from benchmark.data import dsprites, load_data
from benchmark.data.subset import FactorSubset

FIXED = {"shape": 0, "scale": 5, "orientation": 0}


@pytest.fixture(scope="module")
def base():
    return dsprites.DSprites(source="procedural")


@pytest.fixture(scope="module")
def reduced(base):
    return FactorSubset(base, FIXED)


def test_exposes_only_the_free_factors(base, reduced):
    assert reduced.factor_names == ("posX", "posY")
    assert reduced.factor_sizes == (32, 32) and reduced.num_images == 1024
    assert reduced.categorical_factors == ()
    assert reduced.observation_shape == base.observation_shape and reduced.name == "dsprites"
    np.testing.assert_array_equal(reduced.factor_values[0], base.factor_values[3])
    described = reduced.describe()
    assert described["fixed_factors"] == FIXED and described["factor_sizes"] == [32, 32]
    assert described["source"] == "procedural"
    keeps_shape = FactorSubset(base, {"scale": 0})
    assert keeps_shape.factor_names == ("shape", "orientation", "posX", "posY")
    assert keeps_shape.categorical_factors == ("shape",)


def test_index_round_trip_over_the_reduced_grid(reduced):
    index = np.arange(reduced.num_images)
    factors = reduced.factors_of(index)
    np.testing.assert_array_equal(reduced.index_of(factors), index)
    np.testing.assert_array_equal(factors[33], [1, 1])       # last factor fastest
    with pytest.raises(ValueError, match="0..1023"):
        reduced.factors_of([1024])


def test_images_are_the_base_images_at_the_fixed_classes(base, reduced):
    factors = reduced.sample_factors(40, np.random.default_rng(0))
    full = reduced.full_factors(factors)
    np.testing.assert_array_equal(full[:, :3], np.tile([0, 5, 0], (40, 1)))
    np.testing.assert_array_equal(full[:, 3:], factors)
    np.testing.assert_array_equal(reduced.observations_from_factors(factors),
                                  base.observations_from_factors(full))
    np.testing.assert_array_equal(reduced.images([0, 1023]),
                                  base.images(base.index_of([[0, 5, 0, 0, 0],
                                                             [0, 5, 0, 31, 31]])))


@pytest.mark.parametrize("fixed, message", [
    ({"colour": 0}, r"unknown factor 'colour' of dsprites; expected one of shape, scale"),
    ({"scale": 6}, r"scale = 6 is not a class of dsprites's scale; expected an integer in 0..5"),
    ({"shape": -1}, r"expected an integer in 0..2"),
    ({"shape": 0.5}, r"expected an integer in 0..2"),
    ({"shape": True}, r"expected an integer in 0..2"),
    ({"shape": 0, "scale": 0, "orientation": 0, "posX": 0, "posY": 0}, "leave at least one"),
    ([("shape", 0)], "expected a mapping"),
])
def test_bad_fixed_factors_are_clear_errors(base, fixed, message):
    with pytest.raises(ValueError, match=message):
        FactorSubset(base, fixed)


def test_gin_binding_on_load_data(base):
    gin.clear_config()
    try:
        gin.parse_config(["data.source = 'procedural'",
                          "data.fixed_factors = {'shape': 0, 'scale': 5, 'orientation': 0}",
                          "data.variant = 'noisy'", "data.eps = 0.1"])
        data = load_data()
    finally:
        gin.clear_config()
    assert data.variant == "noisy" and data.factor_sizes == (32, 32)
    assert isinstance(data.base, FactorSubset)
    assert data.describe()["fixed_factors"] == FIXED
    with pytest.raises(ValueError, match="unknown factor 'size'"):
        load_data(source="procedural", fixed_factors={"size": 1})
