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


def test_a_range_keeps_a_window_of_classes_as_base_images(base):
    """posX (10, 21): 11 classes, reduced class c is base class 10 + c; with a stride the
    kept classes are range(start, stop, stride); describe() records the window."""
    windowed = FactorSubset(base, ELLIPSE, ranges={"posX": (10, 21)})
    assert windowed.factor_sizes == (11, 32) and windowed.num_images == 352
    np.testing.assert_array_equal(windowed.factor_values[0], base.factor_values[3][10:21])
    np.testing.assert_array_equal(windowed.full_factors([[0, 7], [10, 31]]),
                                  [[1, 5, 0, 10, 7], [1, 5, 0, 20, 31]])
    np.testing.assert_array_equal(windowed.images([windowed.index_of([[4, 9]])[0]]),
                                  base.images(base.index_of([[1, 5, 0, 14, 9]])))
    assert windowed.describe()["factor_ranges"] == {"posX": [10, 21]}
    both = FactorSubset(base, ELLIPSE, {"posY": 3}, {"posY": (2, 30)})   # 2, 5, ..., 29
    assert both.factor_sizes == (32, 10) and both.full_factors([[0, 9]])[0, 4] == 29


@pytest.mark.parametrize("ranges, strides, message", [
    ({"shape": (0, 2)}, None, r"'shape' is not a free factor of dsprites"),
    ({"posX": (0, 33)}, None, r"posX = \(0, 33\); expected \(start, stop\) with 0 <= start, "
                               r"stop <= 32 and at least 3 classes"),
    ({"posX": (5, 7)}, None, "at least 3 classes"),
    ({"posX": (7, 5)}, None, "at least 3 classes"),
    ({"posX": 10}, None, "expected"),
    ({"posX": (1.0, 9)}, None, "expected"),
    ({"posX": (0, 5)}, {"posX": 3}, "factor_strides with factor_ranges: posX keeps 2"),
    ([("posX", (0, 5))], None, "expected a mapping"),
])
def test_bad_factor_ranges_are_clear_errors(base, ranges, strides, message):
    with pytest.raises(ValueError, match=message):
        FactorSubset(base, ELLIPSE, strides, ranges)


def test_factor_ranges_bind_on_load_data_reach_the_rotated_sprite_and_the_export(base):
    """data.factor_ranges as a study binds it (a gin tuple); the 'rotated' variant renders
    the turned sprite in the window; official_grid keeps the window's true values."""
    from benchmark.data.export import official_grid

    gin.clear_config()
    try:
        gin.parse_config(["data.source = 'procedural'",
                          "data.fixed_factors = {'shape': 1, 'scale': 5, 'orientation': 0}",
                          "data.factor_ranges = {'posX': (10, 21)}",
                          "data.variant = 'rotated'", "data.eps = 5"])
        rotated = load_data()
    finally:
        gin.clear_config()
    assert rotated.factor_sizes == (11, 32)
    turned = base.images(base.index_of([[1, 5, 5, 13, 30]]))
    np.testing.assert_array_equal(rotated.images([rotated.index_of([[3, 30]])[0]]), turned)
    sizes, values, fixed = official_grid(FactorSubset(base, ELLIPSE, ranges={"posX": (10, 21)}))
    assert sizes == (1, 1, 1, 11, 32) and fixed == ELLIPSE
    np.testing.assert_array_equal(np.unique(values[:, 3]), base.factor_values[3][10:21])


def test_a_range_makes_the_plane_anisotropic_in_spread_units_where_a_stride_does_not(base):
    """Known answers of the ellipse: per class step a stride raises the anisotropy (0.300
    to 0.689 at posY stride 3) and a window of posX barely moves it; in units of the
    factors' spreads (what a code's free latent scales see) the stride leaves it low
    (0.222) and the window raises it (0.873)."""
    from perturbations.geometry import geometry_row

    plain = geometry_row(FactorSubset(base, ELLIPSE))
    strided = geometry_row(FactorSubset(base, ELLIPSE, {"posY": 3}))
    windowed = geometry_row(FactorSubset(base, ELLIPSE, ranges={"posX": (10, 21)}))
    assert plain["whitened_anisotropy"] == pytest.approx(plain["anisotropy"], abs=1e-9)
    assert strided["anisotropy"] == pytest.approx(0.689, abs=0.005)
    assert strided["whitened_anisotropy"] == pytest.approx(0.222, abs=0.005)
    assert windowed["anisotropy"] == pytest.approx(0.267, abs=0.005)
    assert windowed["whitened_anisotropy"] == pytest.approx(0.873, abs=0.005)
    assert windowed["whitened_axis_deg"] == pytest.approx(90.0, abs=0.5)
