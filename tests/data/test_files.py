import h5py
import numpy as np
import pytest

from benchmark.data import files

DSP_SIZES = (1, 3, 2, 4, 3, 3)
S3D_SIZES = (2, 2, 3, 2, 4, 3)
S3D_VALUES = [np.linspace(0, 0.9, s) for s in S3D_SIZES]


def _dsp_arrays():
    n = int(np.prod(DSP_SIZES))
    imgs = np.random.default_rng(0).integers(0, 2, (n, 64, 64), np.uint8)
    classes = files.grid_classes(DSP_SIZES)
    return {"imgs": imgs, "latents_classes": classes,
            "latents_values": classes.astype(np.float64) / 2}


def _write_npz(path, **arrays):
    np.savez(path, **arrays)
    return path


def _write_h5(path, images=None, labels=None, sizes=S3D_SIZES):
    grid = files.grid_classes(sizes)
    if images is None:
        images = np.random.default_rng(1).integers(0, 256, (len(grid), 64, 64, 3), np.uint8)
    if labels is None:
        labels = np.stack([S3D_VALUES[j][grid[:, j]] for j in range(6)], 1)
    with h5py.File(path, "w") as h5:
        if images is not False:
            h5["images"] = images
        if labels is not False:
            h5["labels"] = labels
    return path, images


def test_grid_classes_last_factor_fastest():
    grid = files.grid_classes((2, 3))
    np.testing.assert_array_equal(grid, [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]])


def test_find_file_search_order(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b" / "dsprites"
    b.mkdir(parents=True)
    a.mkdir()
    (b / "x.npz").write_bytes(b"")
    assert files.find_file("x.npz", ("dsprites",), data_dir=str(a)) is None
    monkeypatch.setenv(files.DATA_DIR_ENV, str(tmp_path / "b"))
    assert files.find_file("x.npz", ("dsprites",), data_dir=str(a)) == b / "x.npz"
    (a / "x.npz").write_bytes(b"")
    assert files.find_file("x.npz", ("dsprites",), data_dir=str(a)) == a / "x.npz"
    message = files.missing_file_message("x.npz", files.data_dirs(str(a)), "https://u")
    assert str(a) in message and "https://u" in message and files.DATA_DIR_ENV in message


def test_dsprites_round_trip_and_bit_packing(tmp_path):
    arrays = _dsp_arrays()
    path = tmp_path / "d.npz"
    files.write_dsprites_npz(path, lambda idx: arrays["imgs"][idx], DSP_SIZES,
                             arrays["latents_values"], progress=False)
    reader = files.DSpritesFile(path, DSP_SIZES)
    idx = np.array([215, 0, 5, 5])
    np.testing.assert_array_equal(reader.images_at(idx), arrays["imgs"][idx])
    np.testing.assert_array_equal(reader.latents_values, arrays["latents_values"])
    assert reader._images.nbytes == arrays["imgs"].nbytes // 8
    assert [p.name for p in tmp_path.iterdir()] == ["d.npz"]


@pytest.mark.parametrize("change, message", [
    (lambda a: a.pop("latents_classes"), "arrays"),
    (lambda a: a.update(imgs=a["imgs"][:, :32]), r"shape \(n, 64, 64\)"),
    (lambda a: a.update(imgs=a["imgs"].astype(np.int16)), "dtype uint8"),
    (lambda a: a.update(imgs=a["imgs"].astype(np.float32) * 2), r"float imgs in \[0, 1\]"),
    (lambda a: a.update(imgs=np.where(a["imgs"], np.nan, 0).astype(np.float16)),
     r"float imgs in \[0, 1\]"),
    (lambda a: a.update(imgs=a["imgs"][:-1], latents_classes=a["latents_classes"][:-1],
                        latents_values=a["latents_values"][:-1]), "expected 216 rows"),
    (lambda a: a.update(latents_classes=a["latents_classes"][::-1].copy()), "official order"),
    (lambda a: a.update(imgs=a["imgs"] * 255), "binary"),
    (lambda a: a.update(latents_values=a["latents_values"][:, :5]), "latents_values"),
])
def test_dsprites_bad_files(tmp_path, change, message):
    arrays = _dsp_arrays()
    change(arrays)
    path = _write_npz(tmp_path / "d.npz", **arrays)
    with pytest.raises(files.DataFileError, match=message) as err:
        files.DSpritesFile(path, DSP_SIZES)
    assert "d.npz" in str(err.value)


def test_not_an_npz_and_pickled_arrays_are_rejected(tmp_path):
    garbage = tmp_path / "g.npz"
    garbage.write_bytes(b"this is not a zip archive")
    with pytest.raises(files.DataFileError, match="g.npz"):
        files.DSpritesFile(garbage, DSP_SIZES)
    arrays = _dsp_arrays()
    arrays["imgs"] = np.array([object()] * 3, dtype=object)
    pickled = _write_npz(tmp_path / "p.npz", **arrays)
    with pytest.raises(files.DataFileError, match="p.npz"):
        files.DSpritesFile(pickled, DSP_SIZES)


def test_shapes3d_round_trip_lazy_and_in_memory(tmp_path):
    grid = files.grid_classes(S3D_SIZES)
    images = np.random.default_rng(2).integers(0, 256, (len(grid), 64, 64, 3), np.uint8)
    labels = np.stack([S3D_VALUES[j][grid[:, j]] for j in range(6)], 1)
    path = tmp_path / "s.h5"
    files.write_shapes3d_h5(path, lambda idx: images[idx], S3D_SIZES, labels, progress=False)
    idx = np.array([200, 3, 3, 0, len(grid) - 1, 17])
    with files.Shapes3DFile(path, S3D_SIZES, S3D_VALUES) as lazy:
        np.testing.assert_array_equal(lazy.images_at(idx), images[idx])
    memory = files.Shapes3DFile(path, S3D_SIZES, S3D_VALUES, in_memory=True)
    np.testing.assert_array_equal(memory.images_at(idx), images[idx])
    memory.close()
    with pytest.raises(IndexError, match="0..287"):
        files.Shapes3DFile(path, S3D_SIZES, S3D_VALUES).images_at([288])


def test_shapes3d_bad_files(tmp_path):
    path, images = _write_h5(tmp_path / "nolabels.h5", labels=False)
    with pytest.raises(files.DataFileError, match="'labels'"):
        files.Shapes3DFile(path, S3D_SIZES, S3D_VALUES)
    path, _ = _write_h5(tmp_path / "shape.h5", images=images[:, :32])
    with pytest.raises(files.DataFileError, match="images of shape"):
        files.Shapes3DFile(path, S3D_SIZES, S3D_VALUES)
    path, _ = _write_h5(tmp_path / "rows.h5")
    with pytest.raises(files.DataFileError, match=r"factor sizes \(10, 10, 10, 8, 4, 15\)"):
        files.Shapes3DFile(path)        # the official grid against a small file
    grid = files.grid_classes(S3D_SIZES)
    wrong = np.stack([S3D_VALUES[j][grid[:, j]] for j in range(6)], 1)[::-1].copy()
    path, _ = _write_h5(tmp_path / "order.h5", labels=wrong)
    with pytest.raises(files.DataFileError, match="official order"):
        files.Shapes3DFile(path, S3D_SIZES, S3D_VALUES)


def test_truncated_h5_is_a_clear_error(tmp_path):
    path, _ = _write_h5(tmp_path / "t.h5")
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * 0.6)])
    with pytest.raises(files.DataFileError, match="t.h5"):
        reader = files.Shapes3DFile(path, S3D_SIZES, S3D_VALUES)
        reader.images_at(np.arange(288))


def test_mpi3d_reader(tmp_path):
    sizes = (2, 1, 1, 1, 1, 2, 3)
    images = np.random.default_rng(3).integers(0, 256, (12, 64, 64, 3), np.uint8)
    path = _write_npz(tmp_path / "mpi3d_toy.npz", images=images)
    np.testing.assert_array_equal(files.MPI3DFile(path, sizes).images_at([11, 0]),
                                  images[[11, 0]])
    with pytest.raises(files.DataFileError, match="images of shape"):
        files.MPI3DFile(path)


def test_failed_write_leaves_nothing_behind(tmp_path):
    def failing(idx):
        if idx[0] >= 64:
            raise RuntimeError("renderer failed")
        return np.zeros((len(idx), 64, 64, 3), np.uint8)

    sizes = S3D_SIZES
    with pytest.raises(RuntimeError, match="renderer failed"):
        files.write_shapes3d_h5(tmp_path / "s.h5", failing, sizes,
                                np.zeros((288, 6)), chunk=64, progress=False)
    with pytest.raises(RuntimeError, match="renderer failed"):
        files.write_dsprites_npz(tmp_path / "d.npz", lambda idx: failing(idx)[..., 0],
                                 DSP_SIZES, np.zeros((216, 6)), chunk=64, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_written_files_get_normal_permissions(tmp_path):
    import os
    arrays = _dsp_arrays()
    path = tmp_path / "d.npz"
    files.write_dsprites_npz(path, lambda idx: arrays["imgs"][idx], DSP_SIZES,
                             arrays["latents_values"], progress=False)
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_contiguous_h5_is_memory_mapped_and_chunked_h5_falls_back(tmp_path):
    grid = files.grid_classes(S3D_SIZES)
    images = np.random.default_rng(4).integers(0, 256, (len(grid), 64, 64, 3), np.uint8)
    labels = np.stack([S3D_VALUES[j][grid[:, j]] for j in range(6)], 1)
    contiguous = tmp_path / "c.h5"
    files.write_shapes3d_h5(contiguous, lambda idx: images[idx], S3D_SIZES, labels,
                            progress=False)
    chunked = tmp_path / "k.h5"
    with h5py.File(chunked, "w") as h5:
        h5.create_dataset("images", data=images, chunks=(8, 64, 64, 3), compression="gzip")
        h5["labels"] = labels
    idx = np.array([5, 287, 5, 0, 100])
    mapped = files.Shapes3DFile(contiguous, S3D_SIZES, S3D_VALUES)
    fallback = files.Shapes3DFile(chunked, S3D_SIZES, S3D_VALUES)
    assert isinstance(mapped._memory, np.memmap) and fallback._memory is None
    np.testing.assert_array_equal(mapped.images_at(idx), images[idx])
    np.testing.assert_array_equal(fallback.images_at(idx), images[idx])


def test_every_dsprites_image_is_checked_not_a_sample(tmp_path, monkeypatch):
    sizes = (1, 3, 6, 40, 2, 2)                     # 2,880 rows: more than any 2,000 sample
    n = int(np.prod(sizes))
    classes = files.grid_classes(sizes)
    imgs = np.random.default_rng(0).integers(0, 2, (n, 64, 64), np.uint8)
    sampled = set(np.linspace(0, n - 1, 2000).astype(np.int64).tolist())
    row = max(set(range(n)) - sampled)             # a row a 2,000-row sample skips
    imgs[row, 40, 7] = 128                          # one grey pixel
    path = _write_npz(tmp_path / "d.npz", imgs=imgs, latents_classes=classes,
                      latents_values=classes.astype(np.float64))
    monkeypatch.setattr(files, "CHECK_CHUNK", 1000)   # several chunks; the row is in the last
    with pytest.raises(files.DataFileError, match=rf"d.npz: expected binary imgs .* found "
                                                   rf"value 128 in image {row}"):
        files.DSpritesFile(path, sizes)


def test_grey_level_marker_on_a_binary_file_and_bad_markers_are_refused(tmp_path):
    arrays = _dsp_arrays()
    path = _write_npz(tmp_path / "d.npz", **arrays, imgs_max=np.array(255))
    with pytest.raises(files.DataFileError, match="only 0/1 pixels: a binary file"):
        files.DSpritesFile(path, DSP_SIZES)
    grey = {**arrays, "imgs": arrays["imgs"] * 200}
    for marker in (np.array([255, 255]), np.array(255.0), np.array(254)):
        path = _write_npz(tmp_path / "g.npz", **grey, imgs_max=marker)
        with pytest.raises(files.DataFileError, match="imgs_max, a scalar integer 255"):
            files.DSpritesFile(path, DSP_SIZES)
    path = _write_npz(tmp_path / "ok.npz", **grey, imgs_max=np.array(255))
    assert files.DSpritesFile(path, DSP_SIZES).images_at([3]).max() == 200


def test_nan_latents_values_are_refused(tmp_path):
    arrays = _dsp_arrays()
    arrays["latents_values"][7, 2] = np.nan
    path = _write_npz(tmp_path / "d.npz", **arrays)
    with pytest.raises(files.DataFileError, match=r"finite latents_values.*first row 7"):
        files.DSpritesFile(path, DSP_SIZES)


def test_truncated_or_corrupt_npz_is_one_clear_error(tmp_path):
    arrays = _dsp_arrays()
    whole = (_write_npz(tmp_path / "w.npz", **arrays)).read_bytes()
    rng = np.random.default_rng(0)
    for i, cut in enumerate(rng.integers(1, len(whole), 12)):
        path = tmp_path / f"t{i}.npz"
        path.write_bytes(whole[:cut])
        with pytest.raises(files.DataFileError, match=rf"t{i}.npz"):
            files.DSpritesFile(path, DSP_SIZES)
    np.savez_compressed(tmp_path / "c.npz", **arrays)
    packed = bytearray((tmp_path / "c.npz").read_bytes())
    for i in range(12):
        corrupt = bytearray(packed)
        for position in rng.integers(0, len(corrupt), 4):
            corrupt[position] ^= 0xFF
        path = tmp_path / f"x{i}.npz"
        path.write_bytes(bytes(corrupt))
        try:
            files.DSpritesFile(path, DSP_SIZES)     # flips in padding may leave it valid
        except files.DataFileError as error:
            assert f"x{i}.npz" in str(error)


def test_disk_full_and_other_write_errors_name_the_file(tmp_path, monkeypatch):
    import errno
    import os

    from benchmark.core.atomic import atomic_path

    def disk_full(*args, **kwargs):          # what a write raises on a full disk
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files, "_write_npy_member", disk_full)
    arrays = _dsp_arrays()
    target = tmp_path / "out" / "d.npz"
    with pytest.raises(OSError, match=rf"writing {target} failed: No space left") as error:
        files.write_dsprites_npz(target, lambda idx: arrays["imgs"][idx], DSP_SIZES,
                                 arrays["latents_values"], progress=False)
    assert error.value.errno == errno.ENOSPC
    assert list((tmp_path / "out").iterdir()) == []
    with open("/dev/full", "wb") as full, pytest.raises(OSError, match="x.json failed"):
        with atomic_path(tmp_path / "x.json") as tmp:            # a real ENOSPC
            tmp.write_text("{}")
            full.write(b"0" * 65536)
            full.flush()
    (tmp_path / "dir.json").mkdir()                              # rename onto a directory
    with pytest.raises(IsADirectoryError, match=r"dir.json failed"):
        with atomic_path(tmp_path / "dir.json") as tmp:
            tmp.write_text("{}")
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OSError, match=rf"writing {blocker / 'y.json'} failed"):
        with atomic_path(blocker / "y.json") as tmp:             # parent is a file
            pass
