import numpy as np
import pytest

from benchmark.data import shapes3d
from benchmark.data.shapes3d_scene import hue_rgb


@pytest.fixture(scope="module")
def data():
    return shapes3d.Shapes3D(source="procedural")


def test_images_are_uint8_levels_in_unit_range_and_deterministic(data):
    factors = data.sample_factors(32, np.random.default_rng(0))
    a = data.observations_from_factors(factors)
    assert a.shape == (32, 64, 64, 3) and a.dtype == np.float32
    assert a.min() >= 0.0 and a.max() <= 1.0
    np.testing.assert_allclose(a * 255, np.rint(a * 255), atol=1e-3)
    np.testing.assert_array_equal(a, data.observations_from_factors(factors))
    # Batch composition (grouped by geometry) equals one-at-a-time rendering.
    single = np.concatenate([data.observations_from_factors(f[None]) for f in factors])
    np.testing.assert_array_equal(a, single)


def test_colours_follow_the_hue_factors(data):
    image = data.uint8_images([[2, 5, 8, 3, 2, 7]])[0].astype(float) / 255
    np.testing.assert_allclose(image[60, 2], hue_rgb(0.2), atol=1 / 255)   # floor
    np.testing.assert_allclose(image[30, 2], hue_rgb(0.5), atol=1 / 255)   # back wall


def test_every_factor_changes_the_image(data):
    base = np.array([[1, 4, 7, 3, 1, 5]])
    img = data.observations_from_factors(base)
    for j, size in enumerate(data.factor_sizes):
        for c in range(size):
            if c == base[0, j]:
                continue
            other = base.copy()
            other[0, j] = c
            assert np.abs(data.observations_from_factors(other) - img).max() > 0.05, (j, c)


def test_geometry_cache_is_saved_and_reused(tmp_path, monkeypatch):
    renderer = shapes3d.Shapes3DRenderer(supersample=1, cache_dir=tmp_path)
    renderer.precompute()
    cached = list(tmp_path.glob("shapes3d_geometry_*_ss1.npy"))
    assert len(cached) == 1
    again = shapes3d.Shapes3DRenderer(supersample=1, cache_dir=tmp_path)
    assert again._done.all()
    factors = np.array([[0, 1, 2, 7, 3, 14], [9, 9, 9, 0, 0, 0]])
    np.testing.assert_array_equal(again.render(factors), renderer.render(factors))
    cached[0].write_bytes(b"garbage")
    assert not shapes3d.Shapes3DRenderer(supersample=1, cache_dir=tmp_path)._done.any()


def test_missing_file_error_names_places(tmp_path):
    with pytest.raises(FileNotFoundError, match="3dshapes.h5") as err:
        shapes3d.Shapes3D(source="file", data_dir=str(tmp_path))
    assert str(tmp_path) in str(err.value) and shapes3d.URL in str(err.value)
