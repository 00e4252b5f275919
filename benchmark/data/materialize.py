"""A dataset variant computed once and served by index: `MaterializedData`.

A variant's images are a fixed function of their factors (every dataset of the suite is
deterministic given the factors), so a run need not render them again for every batch.
Rendering per batch is what made the data layer dearer than the model: on the 3-factor
ellipse (6,144 images) a batch of 64 of a manipulation artefact's 'modified' variant costs
23-65 ms (m(w) evaluated per batch), while all 6,144 images cost 1.6 s in chunks of 1,024
(AMD EPYC, 2 cores). `materialize` computes every image of the grid once, in chunks, and
serves a batch as an index lookup, on one of two stores:

- memory: the images when they fit `max_memory_bytes` (the ellipses: 4-101 MB);
- disk: a memory-mapped `.npy` under `cache_dir`, for grids too large for memory (full
  dSprites 2.9 GB, Shapes3D 5.9 GB as grey levels), built only when the run will read at
  least as many images as the grid holds and rendering would cost a step a share of its
  time (`choose_store`), or when asked. It is named and headed by `key`, the content
  identity of the data (the run's content-named `data.*` bindings: an artefact by the
  SHA-256 of its metadata, an official file by its own): a cache is used only when its
  header holds this key and shape, the array its recorded dtype, every chunk's SHA-256
  matches the header, and `SPOT_CHECK` images drawn at random re-render bit for bit equal
  (a renderer changed under the same key); otherwise it is rebuilt. It is written to a
  temporary name and renamed, its header last, under a file lock that a second process
  waits on.

Images are stored as grey levels (uint8, served as `level * float32(1/255)`) when every
image comes back bit for bit so (the originals, which the suite renders through uint8,
as the official files store them), else as float32 (the perturbed variants).

Chunked computation gives the same bits as per-batch rendering (every variant is
elementwise in numpy, and m(w)'s network gives each row the same value whatever the batch:
tests/data/test_materialize.py checks it on every variant), so a run's batches and
numbers do not change.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import pathlib
import time

import gin
import numpy as np
from absl import logging

from benchmark.core.atomic import atomic_path, write_json
from benchmark.core.errors import ConfigError
from benchmark.data.ground_truth import GroundTruthData

#: images computed at a time while materialising
CHUNK = 1024
#: images re-rendered from the source to check a disk cache against the code that made it
SPOT_CHECK = 64
MODES = ("auto", "memory", "disk", "off")
#: disk cache format; a cache of another format is rebuilt
FORMAT = 1


class MaterializedData(GroundTruthData):
    """`base` with every image computed once: float32 (num_images, h, w, c) in `images_array`
    (an ndarray or a read-only memmap), served by flat index.

    Every attribute a caller reads (factors, sizes, describe(), variant, eps...) is the
    base's; only `observations_from_factors` and `images` read the stored array.
    """

    def __init__(self, base: GroundTruthData, images_array: np.ndarray, store: str):
        expected = (base.num_images,) + tuple(base.observation_shape)
        if images_array.shape != expected:
            raise ValueError(f"materialised {base!r}: expected images of shape {expected}, "
                             f"found {images_array.shape}")
        self.base = base
        self.images_array = images_array
        self.store = store
        self.adopt_grid(base)

    def __getattr__(self, name):          # variant, eps, delta(), scalar()... of the base
        if name == "base":
            raise AttributeError(name)
        return getattr(self.base, name)

    def observations_from_factors(self, factors, rng=None) -> np.ndarray:
        return self.images(self.index_of(factors))         # index_of validates them

    def images(self, indices) -> np.ndarray:
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= self.num_images):
            raise ValueError(f"expected indices in 0..{self.num_images - 1}, found "
                             f"{idx.min()}..{idx.max()}")
        return decode(self.images_array[idx])

    def describe(self) -> dict:
        return self.base.describe()

    def __repr__(self) -> str:
        return f"Materialized({self.base!r}, {self.store})"


#: one grey level as the suite's images hold it (datasets render through uint8 this way)
LEVEL = np.float32(1.0 / 255.0)


def decode(stored: np.ndarray) -> np.ndarray:
    """Stored images as float32 in [0, 1]: grey levels times float32(1/255), else as they
    are."""
    if stored.dtype == np.uint8:
        return stored.astype(np.float32) * LEVEL
    return np.asarray(stored, dtype=np.float32)


def as_grey_levels(images: np.ndarray) -> np.ndarray | None:
    """`images` (float32) as uint8 grey levels when `decode` gives them back bit for bit,
    else None."""
    if images.size and (images.min() < 0.0 or images.max() > 1.0):
        return None
    levels = np.rint(images * np.float32(255.0)).astype(np.uint8)
    return levels if np.array_equal(decode(levels), images) else None


def storage_dtype(data: GroundTruthData) -> np.dtype:
    """uint8 when the first chunk of images is grey levels exactly, else float32 (the build
    checks every chunk and falls back to float32 where one is not)."""
    first = data.images(np.arange(min(CHUNK, data.num_images)))
    return np.dtype(np.uint8 if as_grey_levels(first) is not None else np.float32)


def image_bytes(data: GroundTruthData, dtype=np.float32) -> int:
    """Bytes of every image of `data` stored as `dtype`."""
    return (int(data.num_images) * int(np.prod(data.observation_shape))
            * np.dtype(dtype).itemsize)


class NotGreyLevels(Exception):
    """A chunk of images is not grey levels exactly: store them as float32."""


def compute_images(data: GroundTruthData, out: np.ndarray | None = None,
                   chunk: int = CHUNK) -> np.ndarray:
    """Every image of `data` in flat-index order, (n, h, w, c), computed `chunk` images at a
    time, into `out` when given (e.g. a memmap; uint8: grey levels, NotGreyLevels when an
    image is not one), else into a new float32 array."""
    n = data.num_images
    if out is None:
        out = np.empty((n,) + tuple(data.observation_shape), np.float32)
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        images = data.images(np.arange(start, stop))
        if out.dtype == np.uint8:
            images = as_grey_levels(images)
            if images is None:
                raise NotGreyLevels(f"images {start}..{stop - 1}")
        out[start:stop] = images
    return out


def build_images(data: GroundTruthData, allocate, dtype=None) -> np.ndarray:
    """Every image of `data`, stored in `allocate(dtype)` (an array of the grid's shape):
    grey levels where they are exactly, else float32 (`dtype`: `storage_dtype(data)`,
    computed when not given)."""
    dtype = storage_dtype(data) if dtype is None else np.dtype(dtype)
    if dtype == np.uint8:
        try:
            return compute_images(data, allocate(dtype))
        except NotGreyLevels as error:
            logging.info("%s are not grey levels: stored as float32", error)
    return compute_images(data, allocate(np.dtype(np.float32)))


def chunk_digests(images: np.ndarray, chunk: int = CHUNK) -> list[str]:
    """SHA-256 of each `chunk` rows of `images` (its bytes, C order)."""
    return [hashlib.sha256(np.ascontiguousarray(images[s:s + chunk]).data).hexdigest()
            for s in range(0, len(images), chunk)]


def cache_key(content: dict) -> str:
    """A cache file's name: SHA-256 (first 24 hex digits) of the content identity (JSON)."""
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:24]


def spot_check(data: GroundTruthData, images: np.ndarray, key: str,
               count: int = SPOT_CHECK) -> bool:
    """True when `count` images at indices drawn from `key` re-render bit for bit equal."""
    seed = int(key[:8], 16)
    idx = np.sort(np.random.default_rng(seed).choice(
        data.num_images, min(count, data.num_images), replace=False))
    return bool(np.array_equal(data.images(idx), decode(images[idx])))


@contextlib.contextmanager
def _waiting_lock(path: pathlib.Path):
    """An exclusive flock on `path`, waiting (with one log line) while another process
    builds the same cache."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            logging.info("waiting for another process building %s", path.with_suffix(""))
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _header_problem(header_path: pathlib.Path, array_path: pathlib.Path, key: str,
                    content: dict, shape: tuple) -> str | None:
    """Why the cache at these paths cannot be used as it is (None: header and file agree
    with key and shape; the chunks are checked after)."""
    if not header_path.is_file() or not array_path.is_file():
        return "no cache yet"
    try:
        header = json.loads(header_path.read_text())
    except (OSError, ValueError) as error:
        return f"unreadable header ({error})"
    if not isinstance(header, dict):
        return "header is not a JSON object"
    expected = {"format": FORMAT, "key": key, "content": content, "shape": list(shape)}
    for name, value in expected.items():
        if header.get(name) != value:
            return f"header {name} is {header.get(name)!r}, expected {value!r}"
    if header.get("dtype") not in ("uint8", "float32"):
        return f"header dtype is {header.get('dtype')!r}, expected 'uint8' or 'float32'"
    digests = header.get("chunk_sha256")
    if (not isinstance(digests, list) or len(digests) != -(-shape[0] // CHUNK)
            or not all(isinstance(d, str) for d in digests)):
        return "header has no valid chunk_sha256 list"
    return None


def open_disk_cache(data: GroundTruthData, cache_dir, content: dict, dtype=None
                    ) -> np.ndarray:
    """The read-only memmap of `data`'s images under `cache_dir`, built (or rebuilt) unless
    a valid one is there (module docstring: header, chunk digests, spot check)."""
    key = cache_key(content)
    cache_dir = pathlib.Path(cache_dir)
    array_path, header_path = cache_dir / f"{key}.npy", cache_dir / f"{key}.json"
    shape = (data.num_images,) + tuple(data.observation_shape)
    with _waiting_lock(cache_dir / f".{key}.lock"):
        problem = _header_problem(header_path, array_path, key, content, shape)
        if problem is None:
            start = time.perf_counter()
            try:
                images = np.load(array_path, mmap_mode="r", allow_pickle=False)
            except (OSError, ValueError) as error:
                images, problem = None, f"unreadable array ({error})"
            if images is not None:
                recorded = json.loads(header_path.read_text())
                if images.shape != shape or images.dtype != np.dtype(recorded["dtype"]):
                    problem = (f"array is {images.dtype} {images.shape}, expected "
                               f"{recorded['dtype']} {shape}")
                elif chunk_digests(images) != recorded["chunk_sha256"]:
                    problem = "a chunk's SHA-256 does not match its header (damaged)"
                elif not spot_check(data, images, key):
                    problem = "images re-rendered now differ from the cached ones (stale)"
            if problem is None:
                logging.info("data cache %s: checked in %.1f s", array_path,
                             time.perf_counter() - start)
                return images
        if problem != "no cache yet":
            logging.warning("data cache %s is not used (%s): rebuilding it", array_path,
                            problem)
        header_path.unlink(missing_ok=True)        # the header marks a finished cache
        start = time.perf_counter()
        with atomic_path(array_path, ".npy") as tmp:
            out = build_images(data, lambda chosen: np.lib.format.open_memmap(
                tmp, mode="w+", dtype=chosen, shape=shape), dtype)
            out.flush()
            digests, dtype = chunk_digests(out), out.dtype.name
            del out
        write_json(header_path, {"format": FORMAT, "key": key, "content": content,
                                 "shape": list(shape), "dtype": dtype,
                                 "chunk_sha256": digests, "written":
                                 time.strftime("%Y-%m-%d %H:%M:%S %Z")})
        logging.info("data cache %s: %d images built in %.1f s", array_path, shape[0],
                     time.perf_counter() - start)
        return np.load(array_path, mmap_mode="r", allow_pickle=False)


@gin.configurable("materialize", allowlist=["mode", "max_memory_bytes", "cache_dir"])
def materialize_settings(mode: str = "auto", max_memory_bytes: int = 2**30,
                         cache_dir: str = "runs/.data_cache") -> dict:
    """How a run serves its images (none of it changes a number: not in the fingerprint).

    mode: 'auto' (memory when the grid fits max_memory_bytes, else the disk cache when the
      run reads the grid at least once and rendering is dear: `choose_store`), 'memory',
      'disk' (always that store), 'off' (render every batch, as runs did before).
    max_memory_bytes: the most image bytes 'auto' holds in memory (default 1 GiB).
    cache_dir: where disk caches live (shared by every run of the same data).
    """
    if mode not in MODES:
        raise ConfigError(f"materialize.mode must be one of {', '.join(MODES)}, found "
                          f"{mode!r}")
    if (isinstance(max_memory_bytes, bool) or not isinstance(max_memory_bytes, int)
            or max_memory_bytes < 0):
        raise ConfigError(f"materialize.max_memory_bytes must be an integer >= 0, found "
                          f"{max_memory_bytes!r}")
    if not isinstance(cache_dir, str) or not cache_dir:
        raise ConfigError(f"materialize.cache_dir must be a directory (text), found "
                          f"{cache_dir!r}")
    return {"mode": mode, "max_memory_bytes": max_memory_bytes, "cache_dir": cache_dir}


#: rendering is left to per-batch rendering (the prefetch thread hides it) when a step's
#: images render in less than this (ms), ~20 % of a 45-60 ms step on the 2-core AMD EPYC.
#: `python -m benchmark.speed e2e` measured loop / step 1.00-1.14 for procedural Shapes3D
#: rendered per batch (~2-3 ms a batch of 64; PCL's triplets) and 1.09 from its disk
#: cache, but 1.53-1.95 for a manipulation artefact's m(w) at 23 ms a batch
#: (docs/training.md)
DEAR_STEP_MS = 10.0


def physical_memory_bytes() -> int | None:
    """This machine's memory (None where the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def batch_render_ms(data: GroundTruthData, batch_size: int = 64) -> float:
    """Milliseconds to render one random batch (the second of two: the first may warm up)."""
    rng = np.random.default_rng(0)
    seconds = []
    for _ in range(2):
        factors = data.sample_factors(batch_size, rng)
        start = time.perf_counter()
        data.observations_from_factors(factors)
        seconds.append(time.perf_counter() - start)
    return 1000 * seconds[-1]


def choose_store(data: GroundTruthData, images_read: int, mode: str, max_memory_bytes: int,
                 dtype=np.float32, images_per_example: int = 1) -> str:
    """'memory', 'disk' or 'off' for a run that reads `images_read` images of `data`, stored
    as `dtype`, `images_per_example` a training example (pairs 2, triplets 3).

    'auto': memory when every image fits `max_memory_bytes`; else the disk cache when the
    run reads at least as many images as the grid holds (building it costs no more than
    rendering them per batch, and the next run of the same data finds it), a step's images
    are dear to render (`DEAR_STEP_MS`, for batches of 64) and the cache fits in half the
    machine's memory (its random reads then come from the page cache: a 24 GB float32
    Shapes3D cache on a 24 GB machine made PCL's loop 1.27x its step); else per-batch
    rendering."""
    if mode != "auto":
        return mode
    stored = image_bytes(data, dtype)
    if stored <= max_memory_bytes:
        return "memory"
    memory = physical_memory_bytes()
    if images_read < data.num_images or memory is None or stored > memory // 2:
        return "off"
    dear = batch_render_ms(data) * images_per_example >= DEAR_STEP_MS
    return "disk" if dear else "off"


def materialize(data: GroundTruthData, content: dict, images_read: int, mode: str = "auto",
                max_memory_bytes: int = 2**30, cache_dir="runs/.data_cache",
                images_per_example: int = 1) -> GroundTruthData:
    """`data` served from the store `choose_store` picks (itself for 'off').

    content: the data's content identity (JSON-ready; names the disk cache).
    images_read: how many images the run will read (steps x batch x images per example).
    """
    if mode == "off":
        return data
    dtype = storage_dtype(data)               # renders the first chunk once, for both uses
    store = choose_store(data, images_read, mode, max_memory_bytes, dtype, images_per_example)
    if store == "off":
        return data
    start = time.perf_counter()
    if store == "memory":
        shape = (data.num_images,) + tuple(data.observation_shape)
        images = build_images(data, lambda chosen: np.empty(shape, chosen), dtype)
    else:
        images = open_disk_cache(data, cache_dir, content, dtype)
    logging.info("materialised %d images of %s in %s (%.0f MB, %s): %.1f s",
                 data.num_images, data.describe().get("variant", "original"), store,
                 images.nbytes / 1e6, images.dtype.name, time.perf_counter() - start)
    return MaterializedData(data, images, store)
