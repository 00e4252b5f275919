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


ELLIPSE = {"shape": 1, "scale": 5, "orientation": 0}


def test_a_stride_keeps_every_second_class_as_base_images(base):
    """posY at stride 2: 16 classes, reduced class c is base class 2c; the images are the
    base's; describe() records the stride."""
    strided = FactorSubset(base, ELLIPSE, {"posY": 2})
    assert strided.factor_sizes == (32, 16) and strided.num_images == 512
    np.testing.assert_array_equal(strided.factor_values[1], base.factor_values[4][::2])
    np.testing.assert_array_equal(strided.full_factors([[3, 15]]), [[1, 5, 0, 3, 30]])
    np.testing.assert_array_equal(strided.images([strided.index_of([[3, 15]])[0]]),
                                  base.images(base.index_of([[1, 5, 0, 3, 30]])))
    assert strided.describe()["factor_strides"] == {"posY": 2}
    assert "factor_strides" not in FactorSubset(base, ELLIPSE).describe()
    odd = FactorSubset(base, ELLIPSE, {"posX": 3})               # 0, 3, ..., 30: 11 classes
    assert odd.factor_sizes == (11, 32) and odd.full_factors([[10, 0]])[0, 3] == 30


def test_a_stride_doubles_the_strided_steps_energy(base):
    """The local geometry of the ellipse's plane (known answer: a rigid sprite's central
    difference over twice the displacement changes about twice the pixels): posY's
    E|d|^2 roughly doubles, posX's is unchanged, so the anisotropy rises from 0.300."""
    from benchmark.data.oracle import local_factor_gram
    from perturbations.geometry import anisotropy

    plain = np.asarray(local_factor_gram(FactorSubset(base, ELLIPSE), ("posX", "posY"))["gram"])
    strided = np.asarray(local_factor_gram(FactorSubset(base, ELLIPSE, {"posY": 2}),
                                           ("posX", "posY"))["gram"])
    assert strided[0, 0] == pytest.approx(plain[0, 0], rel=0.02)
    assert strided[1, 1] == pytest.approx(2 * plain[1, 1], rel=0.05)
    assert anisotropy(plain) == pytest.approx(0.300, abs=0.005)
    assert anisotropy(strided) == pytest.approx(0.576, abs=0.005)


@pytest.mark.parametrize("strides, message", [
    ({"shape": 2}, r"'shape' is not a free factor of dsprites; expected one of posX, posY"),
    ({"colour": 2}, r"'colour' is not a free factor"),
    ({"posY": 0}, r"posY = 0; expected an integer in 1..15"),
    ({"posY": 16}, r"expected an integer in 1..15"),
    ({"posY": 2.0}, r"expected an integer in 1..15"),
    ({"posY": True}, r"expected an integer in 1..15"),
    ([("posY", 2)], "expected a mapping"),
])
def test_bad_factor_strides_are_clear_errors(base, strides, message):
    with pytest.raises(ValueError, match=message):
        FactorSubset(base, ELLIPSE, strides)


def test_factor_strides_bind_on_load_data_and_reach_the_rotated_sprite(base):
    """data.factor_strides as a study binds it, alone or with fixed factors; the 'rotated'
    variant renders the turned sprite at the strided classes."""
    gin.clear_config()
    try:
        gin.parse_config(["data.source = 'procedural'",
                          "data.fixed_factors = {'shape': 1, 'scale': 5, 'orientation': 0}",
                          "data.factor_strides = {'posY': 2}",
                          "data.variant = 'rotated'", "data.eps = 5"])
        rotated = load_data()
    finally:
        gin.clear_config()
    assert rotated.factor_sizes == (32, 16)
    turned = base.images(base.index_of([[1, 5, 5, 3, 30]]))
    np.testing.assert_array_equal(rotated.images([rotated.index_of([[3, 15]])[0]]), turned)
    assert load_data("dsprites", source="procedural",
                     factor_strides={"posX": 2}).factor_sizes == (3, 6, 40, 16, 32)


def test_an_exported_strided_plane_keeps_its_kept_classes_true_values(base):
    """official_grid of posY at stride 2: 16 rows of posY, each with its true value (every
    second of dSprites' 32), so the file's columns keep their official meaning."""
    from benchmark.data.export import official_grid

    sizes, values, fixed = official_grid(FactorSubset(base, ELLIPSE, {"posY": 2}))
    assert sizes == (1, 1, 1, 32, 16) and fixed == ELLIPSE
    np.testing.assert_array_equal(np.unique(values[:, 4]), base.factor_values[4][::2])
