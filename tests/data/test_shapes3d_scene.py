import colorsys

import numpy as np
import pytest

from benchmark.data import shapes3d_scene as scene

SS = 2      # rays per pixel along each axis in tests (the dataset cache uses 4)
FRONTAL = 7


def _value(maps, coverage, region):
    """Mean shading value of `region` where it covers the whole pixel, else nan."""
    full = coverage[..., region] == 1.0
    return np.where(full, maps[..., region], np.nan)


@pytest.fixture(scope="module")
def frontal_sphere():
    return (scene.render_geometry(3, 2, FRONTAL, supersample=SS),
            scene.render_coverage(3, 2, FRONTAL, supersample=SS))


@pytest.mark.parametrize("geometry", [(0, 0, 0), (7, 1, 14), (3, 2, 7), (5, 3, 10)])
def test_maps_shape_range_and_partition(geometry):
    maps = scene.render_geometry(*geometry, supersample=SS)
    coverage = scene.render_coverage(*geometry, supersample=SS)
    for array in (maps, coverage):
        assert array.shape == (64, 64, 4) and array.dtype == np.float32
        assert array.min() >= 0.0 and array.max() <= 1.0
    np.testing.assert_allclose(coverage.sum(-1), 1.0, atol=1e-5)
    assert (maps <= coverage + 1e-6).all()
    np.testing.assert_array_equal(maps[..., 3], coverage[..., 3])
    assert (coverage[..., :3].reshape(-1, 3).max(0) > 0.99).all()


def test_one_ray_per_pixel_gives_one_region_per_pixel():
    coverage = scene.render_coverage(5, 3, 12, supersample=1)
    assert set(np.unique(coverage)) == {0.0, 1.0}


@pytest.mark.parametrize("orientation", [0, 3, 5, 7, 9, 12, 14])
def test_rows_0_to_13_are_sky(orientation):
    for shape in (0, 1, 2):
        maps = scene.render_geometry(7, shape, orientation, supersample=SS)
        np.testing.assert_array_equal(maps[:14, :, 3], 1.0)
    # The tallest capsule (45 px from row 52) reaches into the band; nothing else does.
    coverage = scene.render_coverage(7, 3, orientation, supersample=SS)
    np.testing.assert_allclose(coverage[:14, :, 3] + coverage[:14, :, 2], 1.0, atol=1e-6)
    assert coverage[:14, :, 2].any()


def test_frontal_edge_rows(frontal_sphere):
    _, coverage = frontal_sphere
    for column in (2, 10, 53, 61):
        wall_rows = np.flatnonzero(coverage[:, column, 1] > 0.5)
        floor_rows = np.flatnonzero(coverage[:, column, 0] > 0.5)
        assert abs(wall_rows.min() - 17) <= 1
        assert abs(floor_rows.min() - 41) <= 1
        np.testing.assert_array_equal(coverage[19:40, column, 1], 1.0)


def test_corner_columns_and_darker_side_wall():
    measured = {0: 44, 3: 55, 5: 63, 9: 1, 11: 9, 14: 20}
    for orientation in range(15):
        maps = scene.render_geometry(0, 2, orientation, supersample=SS)
        coverage = scene.render_coverage(0, 2, orientation, supersample=SS)
        value = _value(maps, coverage, 1)[25]
        side = value < 0.95
        if orientation in (6, 7, 8):
            assert not side.any()
            continue
        columns = np.flatnonzero(side)
        corner = columns.min() if orientation < 7 else columns.max()
        beyond = value[corner + 1:] if orientation < 7 else value[:corner]
        beyond = beyond[np.isfinite(beyond)]
        assert (beyond >= 0.5).all() and (beyond <= 0.8).all()
        assert len(beyond) or orientation in (5, 9)
        if orientation in measured:
            assert abs(corner - measured[orientation]) <= 1.5, (orientation, corner)


def test_object_centred_standing_on_floor_and_growing_with_scale():
    for shape in range(4):
        areas = []
        for scale_index in range(8):
            coverage = scene.render_coverage(scale_index, shape, FRONTAL, supersample=SS)
            obj = coverage[..., 2]
            areas.append(obj.sum())
            centroid = (obj.sum(0) * np.arange(64)).sum() / obj.sum()
            assert centroid == pytest.approx(31.5, abs=1.5)
        assert np.all(np.diff(areas) > 0), (shape, areas)
    for orientation in (0, 14):
        obj = scene.render_coverage(4, 0, orientation, supersample=SS)[..., 2]
        centroid = (obj.sum(0) * np.arange(64)).sum() / obj.sum()
        assert centroid == pytest.approx(31.5, abs=1.5)
    diameters = []
    for scale_index in (0, 7):
        obj = scene.render_coverage(scale_index, 2, FRONTAL, supersample=SS)[..., 2] > 0.5
        rows = np.flatnonzero(obj.any(1))
        assert abs(rows.max() - 52) <= 1
        diameters.append(rows.max() - rows.min() + 1)
    assert abs(diameters[0] - 18) <= 1 and abs(diameters[1] - 30) <= 1


def test_every_geometry_factor_changes_the_maps():
    base = scene.render_geometry(4, 1, 5, supersample=SS)
    for other in [(5, 1, 5), (0, 1, 5), (4, 0, 5), (4, 2, 5), (4, 3, 5), (4, 1, 6),
                  (4, 1, 4), (4, 1, 12)]:
        assert np.abs(scene.render_geometry(*other, supersample=SS) - base).max() > 0.1
    shapes = [scene.render_geometry(4, s, FRONTAL, supersample=SS) for s in range(4)]
    for i in range(4):
        for j in range(i):
            assert np.abs(shapes[i] - shapes[j]).max() > 0.1


def test_shadow_on_the_floor_right_of_the_base(frontal_sphere):
    maps, coverage = frontal_sphere
    assert scene.SHADOW_VALUE == pytest.approx(0.34)
    floor = _value(maps, coverage, 0)
    rows, cols = np.nonzero(np.abs(floor - scene.SHADOW_VALUE) < 0.01)
    obj_cols = np.flatnonzero(coverage[..., 2].sum(0) > 0)
    assert len(rows) > 20
    assert rows.min() >= 41 and cols.mean() > 31.5 + 3
    assert cols.max() > obj_cols.max()
    lit = floor[41:, :8]
    np.testing.assert_array_equal(lit[np.isfinite(lit)], 1.0)


def test_hues_and_lit_object_pixels():
    np.testing.assert_allclose(scene.hue_rgb([0.0, 0.1, 1 / 3, 2 / 3]),
                               [[1, 0, 0], [1, 0.6, 0], [0, 1, 0], [0, 0, 1]], atol=1e-6)
    for hue in np.linspace(0.0, 0.9, 10):
        rgb = scene.hue_rgb(hue)
        assert rgb.max() == 1.0 and rgb.min() == 0.0
        assert colorsys.rgb_to_hsv(*rgb)[0] == pytest.approx(hue, abs=1e-6)
    image = scene.render_image(0.1, 0.5, 0.7, 4, 2, FRONTAL, supersample=SS)
    assert image.shape == (64, 64, 3) and image.dtype == np.float32
    assert image.min() >= 0.0 and image.max() <= 1.0
    maps = scene.render_geometry(4, 2, FRONTAL, supersample=SS)
    coverage = scene.render_coverage(4, 2, FRONTAL, supersample=SS)
    lit = (coverage[..., 2] == 1.0) & (maps[..., 2] == 1.0)
    assert lit.any()
    hsv = np.array([colorsys.rgb_to_hsv(*px) for px in image[lit]])
    np.testing.assert_allclose(hsv[:, 0], 0.7, atol=1e-5)
    np.testing.assert_allclose(hsv[:, 1], 1.0, atol=1e-6)
    np.testing.assert_allclose(hsv[:, 2], 1.0, atol=1e-6)
    shaded = (coverage[..., 2] == 1.0) & (maps[..., 2] < 0.95)
    assert shaded.any()
    np.testing.assert_allclose(image[0, 0], scene.SKY_RGB, atol=1e-6)
    np.testing.assert_allclose(scene.SKY_RGB * 255, [153, 226, 249], atol=1e-4)


def test_invalid_arguments():
    with pytest.raises(ValueError):
        scene.render_geometry(8, 0, 0)
    with pytest.raises(ValueError):
        scene.render_geometry(0, 0, 0, supersample=0)
