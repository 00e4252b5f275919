import colorsys

import numpy as np
import pytest

from benchmark.data import shapes3d_scene as scene

SS = 2   # supersampling in tests (the dataset uses 4)


@pytest.fixture(scope="module")
def frontal_sphere():
    return scene.render_geometry(3, 2, 7, supersample=SS)


def test_coefficient_maps_are_a_partition(frontal_sphere):
    for maps in (frontal_sphere, scene.render_geometry(7, 0, 0, supersample=SS)):
        assert maps.shape == (64, 64, 4) and maps.dtype == np.float32
        assert maps.min() >= 0.0 and maps.max() <= 1.0 + 1e-6
    coverage = scene.render_geometry(5, 3, 12, supersample=1)
    # With one ray per pixel every pixel is exactly one region: coverage = value > 0.
    assert ((coverage > 0).sum(-1) == 1).all()


@pytest.mark.parametrize("orientation", [0, 3, 7, 11, 14])
def test_rows_0_to_13_are_sky(orientation):
    # The largest capsules (45 px tall, base at row 52) reach into the sky band; every
    # other pixel of rows 0-13 is sky, as in the real images.
    maps = scene.render_geometry(7, 3, orientation, supersample=SS)
    coverage = maps[:14, :, 3] + (maps[:14, :, 2] > 0)
    np.testing.assert_allclose(np.minimum(coverage, 1.0), 1.0)
    np.testing.assert_allclose(scene.render_geometry(7, 0, orientation, supersample=SS)
                               [:14, :, 3], 1.0)


def test_frontal_edges(frontal_sphere):
    wall_rows = np.flatnonzero(frontal_sphere[:, 2, 1] > 0.5)
    floor_rows = np.flatnonzero(frontal_sphere[:, 2, 0] > 0.5)
    assert abs(wall_rows.min() - 17) <= 1
    assert abs(floor_rows.min() - 41) <= 1


def test_corner_moves_about_4_px_per_step():
    measured = {0: 44, 5: 63, 9: 1, 14: 20}
    for orientation, column in measured.items():
        wall = scene.render_geometry(0, 2, orientation, supersample=SS)[25, :, 1]
        side = (wall > 0.5) & (wall < 0.85)           # side wall value 0.7, back wall 1
        edges = np.flatnonzero(np.diff(side.astype(int))) + 0.5
        assert len(edges) == 1 and abs(edges[0] - column) <= 1.5, (orientation, edges)
    for orientation in (6, 7, 8):
        wall = scene.render_geometry(0, 2, orientation, supersample=SS)[25, :, 1]
        assert not ((wall > 0.5) & (wall < 0.85)).any()


def test_object_centred_on_the_floor_and_sizes_grow_with_scale():
    heights = []
    for scale_index in (0, 7):
        maps = scene.render_geometry(scale_index, 2, 7, supersample=SS)
        rows, cols = np.nonzero(maps[..., 2] > 0.5)
        assert cols.mean() == pytest.approx(31.5, abs=1.5)
        assert abs(rows.max() - 52) <= 2
        heights.append(rows.max() - rows.min() + 1)
    assert abs(heights[0] - 18) <= 2 and abs(heights[1] - 30) <= 2
    for shape in range(4):
        small = (scene.render_geometry(0, shape, 4, supersample=SS)[..., 2] > 0.5).sum()
        large = (scene.render_geometry(7, shape, 4, supersample=SS)[..., 2] > 0.5).sum()
        assert large > 1.8 * small


def test_every_geometry_factor_changes_the_maps():
    base = scene.render_geometry(4, 1, 5, supersample=SS)
    for other in [(5, 1, 5), (4, 0, 5), (4, 2, 5), (4, 3, 5), (4, 1, 6), (4, 1, 4)]:
        assert np.abs(scene.render_geometry(*other, supersample=SS) - base).max() > 0.1


def test_shadow_to_the_right_of_the_base(frontal_sphere):
    floor = frontal_sphere[..., 0]
    shadow = np.isclose(floor, scene.SHADOW_VALUE, atol=0.01)
    rows, cols = np.nonzero(shadow)
    assert len(rows) > 20 and cols.mean() > 33 and rows.min() > 41


def test_hues_are_pure_and_lit_object_pixels_reach_value_1():
    np.testing.assert_allclose(scene.hue_rgb([0.0, 1 / 3, 2 / 3]),
                               np.eye(3), atol=1e-6)
    image = scene.render_image(0.1, 0.5, 0.7, 4, 0, 7, supersample=SS)
    maps = scene.render_geometry(4, 0, 7, supersample=SS)
    pure = maps[..., 2] > 0.999
    assert pure.any()
    hsv = np.array([colorsys.rgb_to_hsv(*px) for px in image[pure]])
    np.testing.assert_allclose(hsv[:, 0], 0.7, atol=0.01)
    np.testing.assert_allclose(hsv[:, 1], 1.0, atol=0.01)
    assert hsv[:, 2].max() == pytest.approx(1.0, abs=1e-6)
    sky = image[0, 0]
    np.testing.assert_allclose(sky * 255, [153, 226, 249], atol=0.5)
