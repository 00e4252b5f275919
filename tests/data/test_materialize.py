"""A materialised variant serves the very bits per-batch rendering gives, and a disk cache
that is damaged, stale or of other data is rebuilt, never used."""

import json
import pathlib

import numpy as np
import pytest

from benchmark.core.errors import ConfigError
from benchmark.data import load_data, materialize
from perturbations.artefact import load_variant

ROOT = pathlib.Path(__file__).resolve().parents[2]
ELLIPSE3 = {"orientation": 0, "shape": 1}
ARTEFACT = str(ROOT / "results" / "perturbations" / "dsprites_ellipse3_diagonal")
#: every variant of the suite on the 3-factor ellipse (6,144 images)
VARIANTS = [("original", {}), ("noisy", {"eps": 0.07}), ("wave", {}),
            ("wave_texture", {}), ("texture", {}), ("oracle", {}),
            ("modified", {"artefact": ARTEFACT}),
            ("modified_texture", {"artefact": ARTEFACT})]


def _ellipse(variant="original", **extra):
    return load_data("dsprites", variant, "procedural", fixed_factors=ELLIPSE3,
                     artefact_loader=load_variant, **extra)


@pytest.mark.parametrize("variant,extra", VARIANTS, ids=[v for v, _ in VARIANTS])
def test_materialised_images_equal_per_batch_rendering_bit_for_bit(variant, extra):
    data = _ellipse(variant, **extra)
    served = materialize.materialize(data, {"v": variant}, images_read=0, mode="memory")
    assert isinstance(served, materialize.MaterializedData) and served.store == "memory"
    assert served.describe() == data.describe()
    assert served.num_images == data.num_images == 6144
    for b in range(3):                           # batches as the pipeline draws them
        rng = np.random.default_rng([5, b])
        factors = data.sample_factors(64, rng)
        np.testing.assert_array_equal(served.observations_from_factors(factors),
                                      data.observations_from_factors(factors))
    assert served.observations_from_factors(factors).dtype == np.float32
    if variant != "original":
        assert served.eps == data.eps            # the variant's attributes stay readable
    with pytest.raises(ValueError, match="outside"):
        served.observations_from_factors([[6, 0, 0]])


def test_the_store_is_chosen_by_size_run_length_render_cost_and_memory(monkeypatch):
    data = _ellipse("noisy", eps=0.07)                 # 6,144 x 4,096 float32: 100.7 MB
    assert materialize.image_bytes(data) == 6144 * 4096 * 4
    assert materialize.storage_dtype(data) == np.float32
    assert materialize.storage_dtype(_ellipse()) == np.uint8        # grey levels
    choose = materialize.choose_store
    assert choose(data, 10, "auto", 2**30) == "memory"
    assert choose(data, 0, "disk", 2**30) == "disk"
    assert choose(data, 10**9, "off", 2**30) == "off"
    assert materialize.materialize(data, {}, 0, mode="off") is data
    render_ms, memory = [1.0], [2**35]
    monkeypatch.setattr(materialize, "batch_render_ms", lambda d: render_ms[0])
    monkeypatch.setattr(materialize, "physical_memory_bytes", lambda: memory[0])
    assert choose(data, 6144, "auto", 2**20) == "off"        # cheap to render: no cache
    assert choose(data, 6144, "auto", 2**20, images_per_example=3) == "off"
    render_ms[0] = 4.0                                       # triplets: 12 ms a step
    assert choose(data, 6144, "auto", 2**20, images_per_example=3) == "disk"
    render_ms[0] = 25.0                                      # as dear as m(w)
    assert choose(data, 6144, "auto", 2**20) == "disk"       # reads the grid at least once
    assert choose(data, 6143, "auto", 2**20) == "off"        # less: rendering costs less
    assert choose(data, 6144, "auto", 2**26, np.uint8) == "memory"    # 25 MB as grey levels
    memory[0] = 2 * materialize.image_bytes(data) - 2        # would not stay in page cache
    assert choose(data, 6144, "auto", 2**20) == "off"
    assert choose(data, 6144, "auto", 2**20, np.uint8) == "disk"
    memory[0] = None
    assert choose(data, 6144, "auto", 2**20) == "off"


def test_grey_level_images_are_stored_as_uint8_and_served_bit_for_bit(tmp_path):
    from tests.data.test_export_and_cli import _small_shapes3d
    for data in (_ellipse(), _small_shapes3d(tmp_path / "in")[0]):
        for mode in ("memory", "disk"):
            served = materialize.materialize(data, {"data": repr(data)}, 0, mode,
                                             cache_dir=tmp_path / "cache")
            assert served.images_array.dtype == np.uint8
            every = np.arange(data.num_images)
            np.testing.assert_array_equal(served.images(every), data.images(every))
    header = json.loads(next((tmp_path / "cache").glob("*.json")).read_text())
    assert header["dtype"] == "uint8"


def test_a_grid_that_is_not_all_grey_levels_is_stored_as_float32():
    data = _ellipse()

    class LastChunkPerturbed(type(data)):
        def observations_from_factors(self, factors, rng=None):
            images = super().observations_from_factors(factors, rng)
            images[self.index_of(factors) >= 6000] += np.float32(1e-3)
            return images

    odd = object.__new__(LastChunkPerturbed)
    odd.__dict__.update(data.__dict__)
    assert materialize.storage_dtype(odd) == np.uint8       # the first chunk is
    served = materialize.materialize(odd, {}, 0, "memory")
    assert served.images_array.dtype == np.float32
    np.testing.assert_array_equal(served.images(np.arange(5990, 6144)),
                                  odd.images(np.arange(5990, 6144)))


def test_render_cost_is_measured_on_the_variant():
    cheap, dear = _ellipse(), _ellipse("modified", artefact=ARTEFACT)
    assert 0 < materialize.batch_render_ms(cheap) < materialize.batch_render_ms(dear)


@pytest.mark.parametrize("binding,value,message", [
    ("mode", "fast", "materialize.mode must be one of auto, memory, disk, off, found 'fast'"),
    ("max_memory_bytes", -1, "max_memory_bytes must be an integer >= 0, found -1"),
    ("max_memory_bytes", 1.5, "integer >= 0, found 1.5"),
    ("cache_dir", "", "materialize.cache_dir must be a directory")])
def test_bad_settings_are_one_clear_error(binding, value, message):
    with pytest.raises(ConfigError, match=message):
        materialize.materialize_settings(**{binding: value})


def _paths(cache_dir, content):
    key = materialize.cache_key(content)
    return cache_dir / f"{key}.npy", cache_dir / f"{key}.json"


def test_disk_cache_is_built_once_reused_and_rebuilt_when_damaged_or_stale(tmp_path, caplog):
    data = _ellipse("noisy", eps=0.07)
    expected = materialize.compute_images(data)
    content = {"data": "ellipse3 noisy 0.07"}
    array_path, header_path = _paths(tmp_path, content)

    def served():
        caplog.clear()
        with caplog.at_level("INFO"):
            images = materialize.materialize(data, content, 0, "disk", cache_dir=tmp_path)
        np.testing.assert_array_equal(images.images(np.arange(data.num_images)), expected)
        assert images.store == "disk"
        text = "\n".join(r.getMessage() for r in caplog.records)
        return ("images built in" in text, "rebuilding" in text, text)

    assert served()[:2] == (True, False)                # first use: built
    header = json.loads(header_path.read_text())
    assert header["content"] == content and header["shape"] == [6144, 64, 64, 1]
    assert len(header["chunk_sha256"]) == 6
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == sorted(
        [array_path.name, header_path.name])
    assert not [p for p in tmp_path.iterdir() if ".npy." in p.name]   # no temporary left
    assert served()[:2] == (False, False)               # second use: read, not built

    blob = bytearray(array_path.read_bytes())           # one flipped byte in the images
    blob[-5000] ^= 0xFF
    array_path.write_bytes(bytes(blob))
    built, rebuilt, text = served()
    assert built and rebuilt and "does not match its header (damaged)" in text

    array_path.write_bytes(array_path.read_bytes()[:100000])           # truncated
    built, rebuilt, text = served()
    assert built and rebuilt and "unreadable array" in text

    header_path.write_text("{")                                         # damaged header
    assert served()[:2] == (True, True)

    # Stale: another renderer's images under this key (the spot check re-renders some).
    other = _ellipse("noisy", eps=0.08)
    np.save(array_path, materialize.compute_images(other), allow_pickle=False)
    header = json.loads(header_path.read_text())
    header["chunk_sha256"] = materialize.chunk_digests(np.load(array_path))
    header_path.write_text(json.dumps(header))
    built, rebuilt, text = served()
    assert built and rebuilt and "(stale)" in text

    header["content"] = {"data": "something else"}      # a header of other data
    header_path.write_text(json.dumps(header))
    built, rebuilt, text = served()
    assert built and rebuilt and "header content is" in text


def test_another_content_is_another_cache_file(tmp_path):
    data = _ellipse()
    materialize.materialize(data, {"a": 1}, 0, "disk", cache_dir=tmp_path)
    materialize.materialize(data, {"a": 2}, 0, "disk", cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.npy"))) == 2
