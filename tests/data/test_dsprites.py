import numpy as np
import pytest

from benchmark.data import dsprites


@pytest.fixture(scope="module")
def data():
    return dsprites.DSprites(source="procedural")


def _box(mask):
    rows, cols = np.nonzero(mask)
    return rows.max() - rows.min() + 1, cols.max() - cols.min() + 1


def test_images_binary_float_and_deterministic(data):
    factors = data.sample_factors(256, np.random.default_rng(0))
    a = data.observations_from_factors(factors)
    b = data.observations_from_factors(factors)
    assert a.shape == (256, 64, 64, 1) and a.dtype == np.float32
    assert set(np.unique(a)) <= {0.0, 1.0}
    np.testing.assert_array_equal(a, b)
    assert (a.reshape(256, -1).sum(1) > 0).all()


def test_sprite_sizes_match_the_real_dataset():
    masks = dsprites.sprite_masks()
    # (height, width) at scale 1 and 0.5, orientation 0: measured on the real images.
    assert _box(masks[0, 5, 0]) == (20, 20)
    assert _box(masks[0, 0, 0]) == (10, 10)
    assert _box(masks[1, 5, 0]) == (14, 26)      # long axis horizontal
    assert _box(masks[1, 0, 0]) == (8, 12)
    assert _box(masks[2, 5, 0]) == (17, 20)
    h, w = _box(masks[2, 0, 0])
    assert abs(h - 9) <= 1 and w == 10
    # A 45 degree square of side 20 has a 26 x 26 box; rotation (nearly) keeps the area.
    angle45 = np.argmin(np.abs(dsprites.FULL_FACTOR_VALUES[3] - np.pi / 4))
    assert _box(masks[0, 5, angle45]) == (26, 26)
    assert abs(int(masks[0, 5, angle45].sum()) - 400) <= 20


def test_heart_upright_and_rotation_counter_clockwise():
    heart = dsprites.sprite_masks()[2, 5].astype(int)
    upright = heart[0]
    assert upright[:16].sum() > upright[16:].sum()           # lobes on top
    quarter = np.argmin(np.abs(dsprites.FULL_FACTOR_VALUES[3] - np.pi / 2))
    turned = heart[quarter]
    # Counter-clockwise by 90 degrees on screen: lobes go to the left, point to the right.
    assert turned[:, :16].sum() > turned[:, 16:].sum()


def test_first_and_last_orientation_render_the_same(data):
    base = data.sample_factors(50, np.random.default_rng(1))
    first, last = base.copy(), base.copy()
    first[:, 2], last[:, 2] = 0, 39
    np.testing.assert_array_equal(data.observations_from_factors(first),
                                  data.observations_from_factors(last))


def test_positions_span_the_central_region(data):
    factors = np.array([[0, 5, 0, 0, 0], [0, 5, 0, 31, 31], [0, 5, 0, 31, 0]])
    images = data.observations_from_factors(factors)[..., 0]
    for img, (cy, cx) in zip(images, [(15.5, 15.5), (47.5, 47.5), (15.5, 47.5)]):
        rows, cols = np.nonzero(img)
        assert rows.mean() == pytest.approx(cy, abs=0.01)   # posY = 0 is the top
        assert cols.mean() == pytest.approx(cx, abs=0.01)   # posX = 0 is the left


def test_no_sprite_pixel_outside_rows_and_columns_3_to_60(data):
    masks = dsprites.sprite_masks().reshape(-1, 32, 32)
    union = masks.max(axis=0)
    rows, cols = np.nonzero(union)
    offsets = dsprites.position_offsets()
    assert rows.min() + offsets[0] >= 3 and rows.max() + offsets[-1] <= 60
    assert cols.min() + offsets[0] >= 3 and cols.max() + offsets[-1] <= 60


def test_every_factor_changes_the_image(data):
    rng = np.random.default_rng(2)
    base = np.array([[2, 3, 7, 10, 20]])    # a heart: no rotation symmetry
    img = data.observations_from_factors(base)
    for j, size in enumerate(data.factor_sizes):
        for c in rng.choice(size, size=min(size, 5), replace=False):
            if c == base[0, j]:
                continue
            other = base.copy()
            other[0, j] = c
            assert not np.array_equal(img, data.observations_from_factors(other)), (j, c)


def test_distinct_shapes_differ_at_every_scale_and_orientation():
    masks = dsprites.sprite_masks()
    for a, b in [(0, 1), (0, 2), (1, 2)]:
        diff = (masks[a] != masks[b]).reshape(6, 40, -1).any(-1)
        assert diff.all()


def test_known_symmetries_are_faithful():
    masks = dsprites.sprite_masks()
    angles = dsprites.FULL_FACTOR_VALUES[3]
    # The square is symmetric under 90 degrees and the ellipse under 180 degrees; the grid
    # has no exact multiples except 0 and 2 pi, so compare masks at nearest angles.
    i0 = 0
    i_half = np.argmin(np.abs(angles - np.pi))
    assert np.mean(masks[1, 5, i0] != masks[1, 5, i_half]) < 0.03
    assert np.mean(masks[2, 5, i0] != masks[2, 5, i_half]) > 0.1


def test_file_source_and_auto_selection(tmp_path, monkeypatch):
    from benchmark.data import files
    sizes = (1, 3, 2, 4, 3, 3)
    values = np.stack(np.meshgrid(*[np.arange(s, dtype=float) for s in sizes],
                                  indexing="ij"), -1).reshape(-1, 6)
    rng = np.random.default_rng(0)
    stored = rng.integers(0, 2, size=(int(np.prod(sizes)), 64, 64)).astype(np.uint8)
    path = tmp_path / "dsprites" / dsprites.FILENAME
    path.parent.mkdir()
    files.write_dsprites_npz(path, lambda idx: stored[idx], sizes, values, progress=False)

    monkeypatch.setenv("DISENTANGLEMENT_LIB_DATA", str(tmp_path))
    data = dsprites.DSprites(source="auto", factor_sizes=sizes)
    assert data.source == "file" and data.factor_sizes == sizes[1:]
    idx = np.array([5, 0, 215, 5])
    np.testing.assert_array_equal(data.images(idx)[..., 0], stored[idx])
    np.testing.assert_array_equal(data.factor_values[2], np.arange(4.0))

    monkeypatch.delenv("DISENTANGLEMENT_LIB_DATA")
    assert dsprites.DSprites(source="auto").source == "procedural"
    with pytest.raises(FileNotFoundError) as err:
        dsprites.DSprites(source="file", data_dir=str(tmp_path / "nowhere"))
    message = str(err.value)
    assert "nowhere" in message and dsprites.URL in message
    assert "DISENTANGLEMENT_LIB_DATA" in message


def test_bad_source_is_a_clear_error():
    with pytest.raises(ValueError, match="'auto', 'procedural' or 'file'"):
        dsprites.DSprites(source="disk")
