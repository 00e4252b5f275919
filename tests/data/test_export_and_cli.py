import json
import os
import subprocess
import sys

import numpy as np
import pytest

from benchmark.data import dsprites, export, files, make_variant, shapes3d

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL_DSPRITES = (1, 3, 2, 4, 3, 3)
SMALL_SHAPES3D = (2, 2, 3, 2, 4, 3)


def _small_dsprites(tmp_path):
    sizes = SMALL_DSPRITES
    values = np.stack(np.meshgrid(*[np.linspace(0, 1, s) + 1 for s in sizes],
                                  indexing="ij"), -1).reshape(-1, 6)
    stored = np.random.default_rng(0).integers(0, 2, (int(np.prod(sizes)), 64, 64), np.uint8)
    path = tmp_path / dsprites.FILENAME
    files.write_dsprites_npz(path, lambda idx: stored[idx], sizes, values, progress=False)
    return dsprites.DSprites(source="file", data_dir=str(tmp_path), factor_sizes=sizes)


def _small_shapes3d(tmp_path):
    sizes = SMALL_SHAPES3D
    label_values = [np.linspace(0, 0.9, s) for s in sizes]
    grid = files.grid_classes(sizes)
    labels = np.stack([label_values[j][grid[:, j]] for j in range(6)], 1)
    stored = np.random.default_rng(1).integers(0, 256, (len(grid), 64, 64, 3), np.uint8)
    path = tmp_path / shapes3d.FILENAME
    files.write_shapes3d_h5(path, lambda idx: stored[idx], sizes, labels, progress=False)
    return shapes3d.Shapes3D(source="file", data_dir=str(tmp_path), factor_sizes=sizes,
                             label_values=label_values), stored


def test_dsprites_export_reloads_identically(tmp_path):
    data = _small_dsprites(tmp_path / "in")
    out = export.export_official(data, tmp_path / "out" / dsprites.FILENAME, progress=False)
    again = dsprites.DSprites(source="file", data_dir=str(out.parent),
                              factor_sizes=SMALL_DSPRITES)
    every = np.arange(data.num_images)
    np.testing.assert_array_equal(again.images(every), data.images(every))
    np.testing.assert_array_equal(again.factor_values[1], data.factor_values[1])


def test_noisy_dsprites_export_keeps_grey_levels(tmp_path):
    noisy = make_variant(_small_dsprites(tmp_path / "in"), "noisy", seed=3)
    out = export.export_official(noisy, tmp_path / "out" / dsprites.FILENAME, progress=False)
    with np.load(out, allow_pickle=False) as npz:
        assert npz["imgs"].dtype == np.float16 and "imgs_max" not in npz.files
        assert 0.0 <= npz["imgs"].min() and npz["imgs"].max() <= 1.0
    again = dsprites.DSprites(source="file", data_dir=str(out.parent),
                              factor_sizes=SMALL_DSPRITES)
    every = np.arange(noisy.num_images)
    np.testing.assert_allclose(again.images(every), noisy.images(every), atol=0.5 / 255 + 1e-6)


def _load_like_disentanglement_lib(path):
    """The key accesses of disentanglement_lib's DSprites loader (its own test file, so
    pickle is allowed here, as dlib allows it for the official file's metadata)."""
    data = np.load(path, encoding="latin1", allow_pickle=True)
    images = np.array(data["imgs"])
    factor_sizes = np.array(data["metadata"][()]["latents_sizes"], dtype=np.int64)
    return np.expand_dims(images.astype(np.float32), axis=3), factor_sizes


@pytest.mark.parametrize("variant", ["original", "noisy"])
def test_dsprites_export_loads_as_disentanglement_lib_loads_it(tmp_path, variant):
    data = make_variant(_small_dsprites(tmp_path / "in"), variant, seed=3)
    out = export.export_official(data, tmp_path / "out" / dsprites.FILENAME, progress=False)
    images, factor_sizes = _load_like_disentanglement_lib(out)
    np.testing.assert_array_equal(factor_sizes, SMALL_DSPRITES)
    every = np.arange(data.num_images)
    np.testing.assert_allclose(images, data.images(every), atol=0.5 / 255 + 3e-4)
    with np.load(out, encoding="latin1", allow_pickle=True) as npz:
        metadata = npz["metadata"][()]
        assert metadata["latents_names"][1:] == ("shape", "scale", "orientation", "posX",
                                                 "posY")
        np.testing.assert_allclose(metadata["latents_possible_values"]["scale"],
                                   data.factor_values[1])


def test_dsprites_export_streams_in_chunks(tmp_path):
    import tracemalloc
    sizes = (1, 3, 6, 4, 8, 8)
    n = int(np.prod(sizes))
    values = np.zeros((n, 6))
    block = np.ones((64, 64, 64), np.uint8)
    tracemalloc.start()
    files.write_dsprites_npz(tmp_path / "d.npz", lambda idx: block[:len(idx)], sizes, values,
                             chunk=64, progress=False)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 0.25 * n * 64 * 64, f"peak {peak} bytes for {n * 64 * 64} bytes of images"
    with np.load(tmp_path / "d.npz", allow_pickle=False) as npz:
        assert npz["imgs"].shape == (n, 64, 64) and npz["imgs"].min() == 1


def test_shapes3d_export_reloads_identically(tmp_path):
    data, stored = _small_shapes3d(tmp_path / "in")
    idx = np.array([7, 3, 3, 0, len(stored) - 1])
    np.testing.assert_array_equal(data.uint8_images(data.factors_of(idx)), stored[idx])
    out = export.export_official(data, tmp_path / "out" / shapes3d.FILENAME, progress=False)
    again = shapes3d.Shapes3D(source="file", data_dir=str(out.parent),
                              factor_sizes=SMALL_SHAPES3D, label_values=data.factor_values)
    every = np.arange(data.num_images)
    np.testing.assert_array_equal(again.images(every), data.images(every))


def _cli(*args):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run([sys.executable, "-m", "benchmark.data", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)


def test_preview_command_writes_a_png(tmp_path):
    out = tmp_path / "sheets" / "dsprites-noisy.png"
    result = _cli("preview", "--dataset=dsprites", "--variant=noisy", "--source=procedural",
                  f"--out={out}")
    assert result.returncode == 0, result.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert str(out) in result.stdout
    # beside it, the arm's size: on binary images reflected uniform noise of eps 0.1
    # changes every pixel by |delta|, so mean |dx| = eps / 2 and the energy per image
    # eps^2 / 3 times its 4,096 pixels (a known answer)
    change = json.loads(out.with_suffix(".change.json").read_text())
    assert change["variant"] == "noisy" and change["eps"] == 0.1 and change["images"] == 4096
    assert change["mean_abs"] == pytest.approx(0.05, rel=0.01)
    assert change["energy_per_image"] == pytest.approx(0.01 / 3 * 4096, rel=0.01)
    assert 0.099 < change["linf"] <= 0.1
    assert sorted(p.name for p in out.parent.iterdir()) == [   # no temp files
        "dsprites-noisy.change.json", out.name]


def test_export_command_on_a_file_source(tmp_path):
    _small_dsprites(tmp_path / "in")
    out = tmp_path / "exported.npz"
    result = _cli("export", "--dataset=dsprites", "--source=file",
                  f"--data_dir={tmp_path / 'in'}", f"--out={out}")
    # The CLI uses the official grid: a shrunken test file is rejected with a clear error.
    assert result.returncode != 0
    assert "737280" in result.stderr or "rows" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("args, message", [
    (["preview", "--dataset=mnist", "--out=x.png"], "dataset"),
    (["render", "--out=x.png"], "one of preview, export"),
    (["preview"], "--out is required"),
    (["preview", "--dataset=dsprites", "--source=file", "--data_dir=/nonexistent",
      "--out=x.png"], "DISENTANGLEMENT_LIB_DATA"),
])
def test_cli_errors_are_clear(args, message):
    result = _cli(*args)
    assert result.returncode != 0
    assert message in result.stderr


def test_preview_sheet_leaves_the_callers_matplotlib_backend_alone(tmp_path):
    import matplotlib

    from benchmark.data import preview
    matplotlib.use("svg")
    out = preview.save_sheet(np.zeros((66, 132, 3), np.float32), ["row"], "t", tmp_path / "p.png")
    assert matplotlib.get_backend() == "svg"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_preview_of_a_reduced_dataset_measures_its_own_images(tmp_path):
    """--fixed_factors, as a study's data.fixed_factors: the arm's size is measured on the
    reduction's images (every one of the ellipse's 1,024), and a value that is not a dict
    literal is one line."""
    out = tmp_path / "ellipse_noisy.png"
    result = _cli("preview", "--dataset=dsprites", "--variant=noisy", "--source=procedural",
                  "--fixed_factors={'shape': 1, 'scale': 5, 'orientation': 0}", f"--out={out}")
    assert result.returncode == 0, result.stderr
    assert json.loads(out.with_suffix(".change.json").read_text())["images"] == 1024
    bad = _cli("preview", "--dataset=dsprites", "--fixed_factors=shape=1", f"--out={out}")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].startswith("error: --fixed_factors: expected")
    strided = _cli("preview", "--dataset=dsprites", "--variant=noisy", "--source=procedural",
                   "--fixed_factors={'shape': 1, 'scale': 5, 'orientation': 0}",
                   "--factor_strides={'posY': 2}", f"--out={out}")
    assert strided.returncode == 0, strided.stderr
    assert json.loads(out.with_suffix(".change.json").read_text())["images"] == 512
    windowed = _cli("preview", "--dataset=dsprites", "--variant=noisy", "--source=procedural",
                    "--fixed_factors={'shape': 1, 'scale': 5, 'orientation': 0}",
                    "--factor_ranges={'posX': (10, 21)}", f"--out={out}")
    assert windowed.returncode == 0, windowed.stderr
    assert json.loads(out.with_suffix(".change.json").read_text())["images"] == 352
    refused = _cli("preview", "--dataset=dsprites", "--source=procedural",
                   "--factor_ranges={'posX': (0, 99)}", f"--out={out}")
    assert refused.returncode == 2 and "stop <= 32" in refused.stderr.strip().splitlines()[-1]
    for value, expected in (("posY", "--factor_strides: expected a dict literal"),
                            ("{'posY': 0}", "posY = 0; expected an integer in 1..15")):
        refused = _cli("preview", "--dataset=dsprites", "--source=procedural",
                       f"--factor_strides={value}", f"--out={out}")
        assert refused.returncode == 2, refused.stderr
        assert expected in refused.stderr.strip().splitlines()[-1]


def test_match_command_finds_the_energy_matched_eps(tmp_path):
    """`match`: noise matched in energy to noise of eps 0.1 is eps 0.1 (a known answer);
    a wave arm matched to it carries the same energy per image, as measured by
    benchmark/data/change.py on every one of the ellipse's 1,024 images."""
    out = tmp_path / "match.json"
    result = _cli("match", "--dataset=dsprites", "--variant=noisy", "--eps=0.1",
                  "--source=procedural", "--match_arms=noisy,wave",
                  "--fixed_factors={'shape': 1, 'scale': 5, 'orientation': 0}", f"--out={out}")
    assert result.returncode == 0, result.stderr
    found = json.loads(out.read_text())
    target = found["reference"]["change"]["energy_per_image"]
    assert found["power"] == 2 and found["reference"]["change"]["images"] == 1024
    assert found["matched"]["noisy"]["eps"] == pytest.approx(0.1, rel=1e-3)
    for arm in ("noisy", "wave"):
        assert found["matched"][arm]["change"]["energy_per_image"] == pytest.approx(
            target, rel=1e-3)
    assert json.loads(result.stdout.strip().splitlines()[-2]).keys() == {"noisy", "wave"}
    assert result.stdout.strip().splitlines()[-1] == str(out)
    by_mean_abs = _cli("match", "--dataset=dsprites", "--variant=noisy", "--eps=0.1",
                       "--source=procedural", "--match_arms=wave", "--match_power=1",
                       "--fixed_factors={'shape': 1, 'scale': 5, 'orientation': 0}",
                       f"--out={out}")
    assert by_mean_abs.returncode == 0, by_mean_abs.stderr
    wave = json.loads(out.read_text())["matched"]["wave"]
    assert wave["change"]["mean_abs"] == pytest.approx(
        found["reference"]["change"]["mean_abs"], rel=1e-3)
    assert wave["eps"] != pytest.approx(found["matched"]["wave"]["eps"], rel=1e-3)
    refused = _cli("match", "--dataset=dsprites", "--variant=original", f"--out={out}")
    assert refused.returncode != 0
    assert "expected --variant to be a perturbed variant" in refused.stderr
