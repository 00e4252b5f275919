import numpy as np
import pytest

from benchmark.data import dsprites, shapes3d
from benchmark.data.ground_truth import as_factor_array


@pytest.fixture(scope="module")
def both():
    return [dsprites.DSprites(source="procedural"), shapes3d.Shapes3D(source="procedural")]


def test_official_grids_and_strides(both):
    dsp, s3d = both
    assert dsp.factor_names == ("shape", "scale", "orientation", "posX", "posY")
    assert dsp.factor_sizes == (3, 6, 40, 32, 32)
    assert dsp.num_images == 737280
    # Official strides [737280, 245760, 40960, 1024, 32, 1]; colour (size 1) is not exposed.
    np.testing.assert_array_equal(dsp.strides, [245760, 40960, 1024, 32, 1])
    assert s3d.factor_names == ("floor_hue", "wall_hue", "object_hue", "scale", "shape",
                                "orientation")
    assert s3d.factor_sizes == (10, 10, 10, 8, 4, 15)
    assert s3d.num_images == 480000
    np.testing.assert_array_equal(s3d.strides, [48000, 4800, 480, 60, 15, 1])


def test_official_value_vectors(both):
    dsp, s3d = both
    np.testing.assert_array_equal(dsprites.FULL_FACTOR_VALUES[0], [1.0])
    np.testing.assert_array_equal(dsp.factor_values[0], [1.0, 2.0, 3.0])
    np.testing.assert_allclose(dsp.factor_values[1], np.linspace(0.5, 1.0, 6))
    np.testing.assert_allclose(dsp.factor_values[2], np.linspace(0, 2 * np.pi, 40))
    assert dsp.factor_values[2][0] == 0.0 and dsp.factor_values[2][-1] == 2 * np.pi
    np.testing.assert_allclose(dsp.factor_values[3], np.linspace(0, 1, 32))
    np.testing.assert_allclose(dsp.factor_values[4], np.linspace(0, 1, 32))
    for j in range(3):
        np.testing.assert_allclose(s3d.factor_values[j], np.arange(10) / 10, atol=1e-12)
    np.testing.assert_allclose(s3d.factor_values[3], np.linspace(0.75, 1.25, 8))
    np.testing.assert_array_equal(s3d.factor_values[4], [0, 1, 2, 3])
    np.testing.assert_allclose(s3d.factor_values[5], np.linspace(-30, 30, 15))


@pytest.mark.parametrize("which", [0, 1])
def test_index_factor_round_trip_every_index(both, which):
    data = both[which]
    index = np.arange(data.num_images)
    factors = data.factors_of(index)
    np.testing.assert_array_equal(data.index_of(factors), index)
    # Last factor fastest = C order.
    expected = np.stack(np.unravel_index(index, data.factor_sizes), axis=1)
    np.testing.assert_array_equal(factors, expected)


def test_sample_factors_in_range_and_seeded(both):
    for data in both:
        a = data.sample_factors(1000, np.random.default_rng(3))
        b = data.sample_factors(1000, np.random.default_rng(3))
        np.testing.assert_array_equal(a, b)
        assert a.shape == (1000, data.num_factors) and a.dtype == np.int64
        assert (a >= 0).all() and (a < np.asarray(data.factor_sizes)).all()


def test_values_of(both):
    dsp = both[0]
    values = dsp.values_of([[2, 5, 39, 0, 31]])
    np.testing.assert_allclose(values, [[3.0, 1.0, 2 * np.pi, 0.0, 1.0]])


def test_bad_factors_are_clear_errors(both):
    dsp = both[0]
    with pytest.raises(ValueError, match=r"shape \(n, 5\)"):
        dsp.index_of(np.zeros((2, 6), int))
    with pytest.raises(ValueError, match="outside 0..2"):
        dsp.index_of([[3, 0, 0, 0, 0]])
    with pytest.raises(ValueError, match="non-integer"):
        as_factor_array([[0.5, 0, 0, 0, 0]], dsp.factor_sizes)
    with pytest.raises(ValueError, match="indices in 0..737279"):
        dsp.factors_of([737280])
