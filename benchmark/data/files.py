"""Official dataset files: locating, validated reading, and writing in the official layout.

- dSprites `dsprites_ndarray_co1sh3sc6or40x32y32_64x64.npz`: `imgs` (n, 64, 64) uint8 0/1,
  `latents_classes` (n, 6) int, `latents_values` (n, 6) float64. The real file's
  `metadata` entry is a pickle and is never loaded (`allow_pickle=False`).
- Shapes3D `3dshapes.h5`: `images` (n, 64, 64, 3) uint8, `labels` (n, 6) float64; read
  lazily in batches with h5py (5.9 GB: never all into memory unless asked).
- MPI3D `mpi3d_{toy,realistic,real}.npz`: `images` (1036800, 64, 64, 3) uint8; the labels
  are implied by the row order.

Rows are in flat-index order, last factor fastest. Every reader takes the expected factor
sizes (tests use shrunken grids) and checks the file against them; anything wrong raises
one `DataFileError` naming the file, what was expected and what was found.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import tokenize
import zipfile
import zlib
from typing import Callable, Sequence

import h5py
import numpy as np
from absl import logging
from tqdm import tqdm

from benchmark.core.atomic import atomic_path, write_json
from benchmark.core.errors import ConfigError, UserError

DATA_DIR_ENV = "DISENTANGLEMENT_LIB_DATA"


class DataFileError(UserError, ValueError):
    """A dataset file is malformed or truncated; the message names the file."""


def default_cache_dir() -> pathlib.Path:
    """$DISENTANGLE_BENCH_CACHE, else $XDG_CACHE_HOME/disentangle-bench (~/.cache/...)."""
    if os.environ.get("DISENTANGLE_BENCH_CACHE"):
        return pathlib.Path(os.environ["DISENTANGLE_BENCH_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "disentangle-bench"


def file_sha256(path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


#: the content-hash cache's file in default_cache_dir()
HASH_CACHE = "file_sha256.json"


def cached_file_sha256(path) -> str:
    """`file_sha256` of a data file, remembered in the cache directory under the file's
    (real path, size, modification time in ns, inode): hashing the 5.9 GB Shapes3D file
    takes tens of seconds, and a study asks for it once per run. A file rewritten in place
    changes its modification time, so it is hashed again. The cache is a convenience: an
    unreadable or unwritable cache only costs the hashing."""
    path = pathlib.Path(path).resolve()
    stat = path.stat()
    key = f"{path}|{stat.st_size}|{stat.st_mtime_ns}|{stat.st_ino}"
    cache = default_cache_dir() / HASH_CACHE
    try:
        known = json.loads(cache.read_text())
        if isinstance(known, dict) and isinstance(known.get(key), str):
            return known[key]
    except (OSError, ValueError):
        known = {}
    digest = file_sha256(path)
    if not isinstance(known, dict):
        known = {}
    try:
        write_json(cache, {**known, key: digest}, indent=None)
    except OSError:
        pass
    return digest


def data_dirs(data_dir: str | None = None) -> list[pathlib.Path]:
    """Directories searched for data files, in order: `data_dir`, then $DISENTANGLEMENT_LIB_DATA."""
    dirs = []
    if data_dir:
        dirs.append(pathlib.Path(data_dir).expanduser())
    if os.environ.get(DATA_DIR_ENV):
        dirs.append(pathlib.Path(os.environ[DATA_DIR_ENV]).expanduser())
    return dirs


def find_file(filename: str, subdirs: Sequence[str] = (), data_dir: str | None = None
              ) -> pathlib.Path | None:
    """First existing `<dir>/filename` or `<dir>/<subdir>/filename` over `data_dirs`."""
    for directory in data_dirs(data_dir):
        for candidate in [directory / filename] + [directory / s / filename for s in subdirs]:
            if candidate.is_file():
                return candidate
    return None


def missing_file_message(filename: str, searched: list[pathlib.Path], url: str) -> str:
    """The error text for a missing official file: where it looked, where to get it."""
    where = ", ".join(str(d) for d in searched) or "nowhere (no data directory given)"
    return (f"official file {filename} not found; searched: {where} (and their dataset "
            f"subfolders). Set ${DATA_DIR_ENV} or pass data_dir / --data_dir to the directory "
            f"holding it, download it from {url}, or use source='procedural'.")


def resolve_source(dataset: str, source: str, filename: str, subdirs: Sequence[str],
                   data_dir: str | None, url: str) -> pathlib.Path | None:
    """The official file to read for `source`, or None to render procedurally.

    source: 'auto' (the file when found), 'procedural', or 'file' (FileNotFoundError
    saying where it looked and where to get the file when it is missing).
    """
    if source not in ("auto", "procedural", "file"):
        raise ConfigError(f"{dataset} source must be 'auto', 'procedural' or 'file', "
                         f"found {source!r}")
    path = None if source == "procedural" else find_file(filename, subdirs, data_dir)
    if source == "file" and path is None:
        raise FileNotFoundError(missing_file_message(filename, data_dirs(data_dir), url))
    if path is None:
        logging.info("%s: rendering procedurally (%s)", dataset,
                     "as asked" if source == "procedural" else "no official file found")
    else:
        logging.info("%s: reading the official file %s", dataset, path)
    return path


def grid_classes(factor_sizes: Sequence[int]) -> np.ndarray:
    """All factor class vectors of the grid in flat-index order: int64 (prod(sizes), k)."""
    sizes = tuple(int(s) for s in factor_sizes)
    return np.stack(np.unravel_index(np.arange(int(np.prod(sizes))), sizes), axis=1
                    ).astype(np.int64)


def _check(condition: bool, path, expected: str, found) -> None:
    if not condition:
        raise DataFileError(f"{path}: expected {expected}, found {found}")


# What np.load raises on truncated or corrupt npz files (found by cutting and flipping
# bytes of real archives): zip structure, deflate stream, .npy header, array body.
NPZ_READ_ERRORS = (ValueError, OSError, EOFError, KeyError, SyntaxError, MemoryError,
                   zipfile.BadZipFile, zlib.error, tokenize.TokenError)

# Rows of images checked at a time (64 MB of uint8): every pixel is checked, memory stays
# bounded.
CHECK_CHUNK = 16384


def _max_by_chunks(images: np.ndarray) -> tuple[int, int]:
    """(largest value, first row holding it) over every pixel of uint8 images (n, ...)."""
    largest, row, chunk = 0, 0, CHECK_CHUNK
    for begin in range(0, len(images), chunk):
        block = images[begin:begin + chunk].reshape(min(chunk, len(images) - begin), -1)
        top = int(block.max(initial=0))
        if top > largest:
            largest, row = top, begin + int(np.argmax(block.max(axis=1)))
    return largest, row


def _load_npz(path, keys: Sequence[str], optional: Sequence[str] = ()
              ) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as npz:
            missing = [k for k in keys if k not in npz.files]
            _check(not missing, path, f"arrays {list(keys)}", f"keys {npz.files}")
            return {k: npz[k] for k in list(keys) + list(optional) if k in npz.files}
    except DataFileError:
        raise
    except NPZ_READ_ERRORS as error:
        raise DataFileError(f"{path}: expected an npz archive of plain arrays "
                            f"{list(keys)}, could not read it (truncated or corrupt?): "
                            f"{type(error).__name__}: {error}") from error


def _index_array(indices, num_rows: int) -> np.ndarray:
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    if idx.size and (idx.min() < 0 or idx.max() >= num_rows):
        raise IndexError(f"image indices must be in 0..{num_rows - 1}, found "
                         f"{idx.min()}..{idx.max()}")
    return idx


def _float_to_grey_levels(imgs: np.ndarray, path, chunk: int = 16384) -> np.ndarray:
    """uint8 0..255 from float images in [0, 1] (the suite's grey-level export), checked and
    converted chunk by chunk."""
    out = np.empty(imgs.shape, np.uint8)
    for begin in range(0, len(imgs), chunk):
        block = imgs[begin:begin + chunk].astype(np.float32)
        ok = np.isfinite(block).all() and block.min(initial=0) >= 0 and block.max(initial=0) <= 1
        _check(bool(ok), path, "float imgs in [0, 1]",
               f"values {block.min(initial=0)}..{block.max(initial=0)} in rows "
               f"{begin}..{begin + len(block) - 1}")
        out[begin:begin + chunk] = np.rint(block * 255.0)
    return out


class DSpritesFile:
    """The official dSprites npz, validated and held in memory bit-packed (~377 MB).

    Images are 0/1 as in the official file, or grey levels: float imgs in [0, 1] (the
    suite's export of non-binary variants) or, in files of earlier versions, uint8 0..255
    with the scalar `imgs_max` (= 255).
    """

    def __init__(self, path, factor_sizes: Sequence[int] = (1, 3, 6, 40, 32, 32)):
        self.path = pathlib.Path(path)
        arrays = _load_npz(self.path, ("imgs", "latents_classes", "latents_values"),
                           optional=("imgs_max",))
        imgs, classes = arrays["imgs"], arrays["latents_classes"]
        values = arrays["latents_values"]
        n = int(np.prod(factor_sizes))
        k = len(factor_sizes)
        _check(imgs.ndim == 3 and imgs.shape[1:] == (64, 64), self.path,
               "imgs of shape (n, 64, 64)", f"shape {imgs.shape}")
        _check(imgs.dtype == np.uint8 or imgs.dtype.kind == "f", self.path,
               "imgs of dtype uint8 (or float in [0, 1])", imgs.dtype)
        _check(len(imgs) == n, self.path, f"{n} rows (factor sizes {tuple(factor_sizes)})",
               f"{len(imgs)} rows")
        _check(classes.shape == (n, k) and classes.dtype.kind in "iu", self.path,
               f"integer latents_classes of shape {(n, k)}",
               f"{classes.dtype} {classes.shape}")
        _check(values.shape == (n, k) and values.dtype.kind == "f", self.path,
               f"float latents_values of shape {(n, k)}", f"{values.dtype} {values.shape}")
        finite = np.isfinite(values).all(axis=1)
        _check(bool(finite.all()), self.path, "finite latents_values",
               f"NaN/inf in {int((~finite).sum())} rows (first row "
               f"{int(np.argmin(finite))})")
        grid = grid_classes(factor_sizes)
        bad = np.flatnonzero((classes != grid).any(axis=1))
        _check(bad.size == 0, self.path,
               "latents_classes in official order (last factor fastest)",
               f"row {bad[0] if bad.size else 0} = {classes[bad[0]] if bad.size else ''}")
        self.grey_levels = "imgs_max" in arrays or imgs.dtype.kind == "f"
        if imgs.dtype.kind == "f":
            _check("imgs_max" not in arrays, self.path, "float imgs without imgs_max",
                   "both")
            self._images = _float_to_grey_levels(imgs, self.path)
        elif self.grey_levels:
            largest, row = _max_by_chunks(imgs)
            stored_max = arrays["imgs_max"]
            _check(stored_max.shape == () and stored_max.dtype.kind in "iu"
                   and int(stored_max) == 255, self.path,
                   "imgs_max, a scalar integer 255 (grey-level file)",
                   f"{stored_max.dtype} {stored_max.shape} {stored_max.tolist()}")
            _check(largest > 1, self.path, "grey levels 0..255 (the file has imgs_max = 255)",
                   "only 0/1 pixels: a binary file, which would load nearly black; drop "
                   "imgs_max")
            self._images = imgs
        else:
            largest, row = _max_by_chunks(imgs)
            _check(largest <= 1, self.path, "binary imgs (0/1) (grey levels are stored as "
                   "float imgs in [0, 1])", f"value {largest} in image {row}")
            self._images = np.packbits(imgs, axis=-1)
        self.num_images = n
        self.latents_values = values.astype(np.float64)
        logging.info("dsprites file %s: %d images", self.path, n)

    def images_at(self, indices) -> np.ndarray:
        """uint8 (n, 64, 64): 0/1 (binary file) or 0..255 (grey-level file)."""
        idx = _index_array(indices, self.num_images)
        if self.grey_levels:
            return self._images[idx]
        return np.unpackbits(self._images[idx], axis=-1)


SHAPES3D_LABEL_VALUES = (np.linspace(0, 0.9, 10), np.linspace(0, 0.9, 10),
                         np.linspace(0, 0.9, 10), np.linspace(0.75, 1.25, 8),
                         np.arange(4, dtype=np.float64), np.linspace(-30, 30, 15))


class Shapes3DFile:
    """The official 3dshapes.h5, read lazily: memory-mapped when the images are stored
    contiguously (as in the official file), else by h5py reads; in_memory loads all."""

    def __init__(self, path, factor_sizes: Sequence[int] = (10, 10, 10, 8, 4, 15),
                 label_values=None, in_memory: bool = False):
        self.path = pathlib.Path(path)
        label_values = [np.asarray(v, dtype=np.float64)
                        for v in (label_values or SHAPES3D_LABEL_VALUES)]
        n = int(np.prod(factor_sizes))
        k = len(factor_sizes)
        try:
            self._h5 = h5py.File(self.path, "r")
        except OSError as error:
            raise DataFileError(f"{self.path}: expected an HDF5 file with datasets 'images' "
                                f"and 'labels', could not open it: {error}") from error
        try:
            missing = [key for key in ("images", "labels") if key not in self._h5]
            _check(not missing, self.path, "HDF5 datasets 'images' and 'labels'",
                   f"datasets {list(self._h5.keys())}")
            images, labels = self._h5["images"], self._h5["labels"]
            _check(images.shape == (n, 64, 64, 3), self.path,
                   f"images of shape {(n, 64, 64, 3)} (factor sizes {tuple(factor_sizes)})",
                   f"shape {images.shape}")
            _check(images.dtype == np.uint8, self.path, "images of dtype uint8", images.dtype)
            _check(labels.shape == (n, k) and labels.dtype.kind == "f", self.path,
                   f"float labels of shape {(n, k)}", f"{labels.dtype} {labels.shape}")
            rows = np.unique(np.concatenate([[0, n - 1], np.linspace(0, n - 1, 300)
                                             ]).astype(np.int64))
            stored = labels[rows]
            grid = grid_classes(factor_sizes)[rows]
            expected = np.stack([label_values[j][grid[:, j]] for j in range(k)], axis=1)
            bad = np.flatnonzero(~np.isclose(stored, expected, atol=1e-6).all(axis=1))
            _check(bad.size == 0, self.path,
                   "labels on the official grid in official order (last factor fastest)",
                   f"row {rows[bad[0]] if bad.size else 0} = "
                   f"{stored[bad[0]] if bad.size else ''}")
            images[n - 1]                       # a truncated file fails here
            if in_memory:
                self._memory = images[...]
            else:
                self._memory = _memory_map(self.path, images)
        except DataFileError:
            self._h5.close()
            raise
        except (OSError, KeyError, ValueError) as error:
            self._h5.close()
            raise DataFileError(f"{self.path}: could not read the file (truncated or "
                                f"corrupt?): {error}") from error
        self._images = images
        self.num_images = n
        logging.info("shapes3d file %s: %d images (%s)", self.path, n,
                     "in memory" if in_memory else "memory-mapped" if self._memory is not None
                     else "lazy h5 reads")

    def images_at(self, indices) -> np.ndarray:
        """uint8 (n, 64, 64, 3) in the requested order (duplicates allowed)."""
        idx = _index_array(indices, self.num_images)
        if self._memory is not None:
            return self._memory[idx]
        unique, inverse = np.unique(idx, return_inverse=True)
        # One slice read per run of consecutive indices: h5py's fancy indexing is several
        # times slower than plain reads for random batches.
        breaks = np.flatnonzero(np.diff(unique) != 1) + 1
        block = np.empty((len(unique), 64, 64, 3), dtype=np.uint8)
        try:
            for run in np.split(np.arange(len(unique)), breaks) if unique.size else []:
                block[run[0]:run[-1] + 1] = self._images[unique[run[0]]:unique[run[-1]] + 1]
        except OSError as error:
            raise DataFileError(f"{self.path}: reading images failed (truncated or corrupt "
                                f"file?): {error}") from error
        return block[inverse.reshape(-1)]

    def close(self) -> None:
        self._h5.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _memory_map(path: pathlib.Path, dataset) -> np.ndarray | None:
    """A read-only np.memmap of a contiguous, uncompressed h5 dataset, else None.

    The official 3dshapes.h5 stores its images this way: the OS then pages images in on
    demand (nothing is loaded up front) and reads need neither h5py's global lock nor the
    GIL, so threaded pipelines read in parallel.
    """
    offset = dataset.id.get_offset()
    if dataset.chunks is not None or dataset.compression is not None or offset is None:
        return None
    size = int(np.prod(dataset.shape)) * dataset.dtype.itemsize
    if offset + size > path.stat().st_size:
        raise DataFileError(f"{path}: expected {size} bytes of images at offset {offset}, the "
                            f"file has {path.stat().st_size} bytes (truncated?)")
    return np.memmap(path, dtype=dataset.dtype, mode="r", offset=offset, shape=dataset.shape)


MPI3D_FACTOR_SIZES = (6, 6, 2, 3, 3, 40, 40)


class MPI3DFile:
    """An MPI3D npz (`images` (1036800, 64, 64, 3) uint8), loaded into memory."""

    def __init__(self, path, factor_sizes: Sequence[int] = MPI3D_FACTOR_SIZES):
        self.path = pathlib.Path(path)
        images = _load_npz(self.path, ("images",))["images"]
        n = int(np.prod(factor_sizes))
        _check(images.shape == (n, 64, 64, 3), self.path,
               f"images of shape {(n, 64, 64, 3)} (factor sizes {tuple(factor_sizes)})",
               f"shape {images.shape}")
        _check(images.dtype == np.uint8, self.path, "images of dtype uint8", images.dtype)
        self._images = images
        self.num_images = n

    def images_at(self, indices) -> np.ndarray:
        """uint8 (n, 64, 64, 3)."""
        return self._images[_index_array(indices, self.num_images)]


def _chunks(n: int, chunk: int, progress: bool, desc: str):
    return tqdm(range(0, n, chunk), desc=desc, unit="chunk", disable=not progress)


DSPRITES_LATENT_NAMES = ("color", "shape", "scale", "orientation", "posX", "posY")


def dsprites_metadata(factor_sizes: Sequence[int], latents_values: np.ndarray,
                      fixed: dict | None = None) -> dict:
    """The official file's `metadata` dict (the keys disentanglement_lib and most dSprites
    loaders read, e.g. `data["metadata"][()]["latents_sizes"]`), plus 'varying_factors'
    (the names of the factors with more than one value) and 'fixed_factors' ({name:
    official class} of a reduced dataset's fixed factors; {} for the whole one)."""
    sizes = np.asarray(factor_sizes, dtype=np.int64)
    names = DSPRITES_LATENT_NAMES[:len(sizes)]
    per_factor = _values_per_factor(np.asarray(latents_values, np.float64), sizes)
    return {"title": "dSprites dataset (written by disentangle-bench)",
            "description": "Rows in the official order (last factor fastest); imgs are 0/1 "
                           "uint8 (binary) or float16 in [0, 1] (grey-level variants).",
            "version": 1, "author": "disentangle-bench export",
            "latents_names": names, "latents_sizes": sizes,
            "latents_possible_values": dict(zip(DSPRITES_LATENT_NAMES, per_factor)),
            "varying_factors": [n for n, size in zip(names, sizes) if size > 1],
            "fixed_factors": dict(fixed or {})}


def _values_per_factor(values: np.ndarray, sizes: np.ndarray) -> list[np.ndarray]:
    strides = np.concatenate([np.cumprod(sizes[::-1])[::-1][1:], [1]])
    return [values[np.arange(size) * stride, j] for j, (size, stride) in
            enumerate(zip(sizes, strides))]


def _write_npy_member(archive: zipfile.ZipFile, name: str, shape: tuple, dtype,
                      blocks) -> None:
    """Streams `blocks` (arrays in C order that together fill `shape`) into the member
    `name`.npy of an open zip, in the .npy format np.load reads."""
    with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
        np.lib.format.write_array_header_2_0(member, {
            "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False,
            "shape": tuple(int(d) for d in shape)})
        for block in blocks:
            member.write(np.ascontiguousarray(block, dtype=dtype).tobytes())


def write_dsprites_npz(path, images_fn: Callable[[np.ndarray], np.ndarray],
                      factor_sizes: Sequence[int], latents_values: np.ndarray,
                      grey_levels: bool = False, chunk: int = 4096,
                      progress: bool = True, fixed: dict | None = None) -> None:
    """Writes the official dSprites layout (compressed npz) to `path`, atomically.

    images_fn(indices int64 (m,)) -> uint8 (m, 64, 64): 0/1, or 0..255 with `grey_levels`.
    Binary images are stored as the official uint8 0/1; grey levels as float16 in [0, 1]
    (k / 255 to within 2.5e-4), which disentanglement_lib's loader reads unchanged (it casts
    `imgs` to float32 and uses it as is). Keys: imgs, latents_classes, latents_values, and
    `metadata` (a pickled dict, as in the official file, with `latents_sizes`). The images
    are rendered and compressed chunk by chunk: memory stays at a few chunks, not the
    3 GB of the full image array. Deflate level 1: 10x faster than numpy's default level
    on grey levels, for a file ~10 % larger.
    """
    path = pathlib.Path(path)
    n = int(np.prod(factor_sizes))

    def image_blocks():
        for begin in _chunks(n, chunk, progress, f"writing {path.name}"):
            block = images_fn(np.arange(begin, min(begin + chunk, n)))
            yield block.astype(np.float16) / np.float16(255) if grey_levels else block

    with atomic_path(path, ".npz") as tmp, zipfile.ZipFile(
            tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1,
            allowZip64=True) as archive:
        _write_npy_member(archive, "imgs", (n, 64, 64),
                          np.float16 if grey_levels else np.uint8, image_blocks())
        for name, array in (("latents_classes", grid_classes(factor_sizes)),
                            ("latents_values", np.asarray(latents_values, np.float64))):
            _write_npy_member(archive, name, array.shape, array.dtype, [array])
        with archive.open("metadata.npy", "w") as member:
            np.lib.format.write_array(member, np.array(
                dsprites_metadata(factor_sizes, latents_values, fixed), dtype=object),
                allow_pickle=True)


def write_shapes3d_h5(path, images_fn: Callable[[np.ndarray], np.ndarray],
                      factor_sizes: Sequence[int], labels: np.ndarray, chunk: int = 4096,
                      progress: bool = True) -> None:
    """Writes the official Shapes3D layout (h5: images, labels) to `path`, atomically.

    Contiguous and uncompressed like the official file, so random batches read fast.

    images_fn(indices int64 (m,)) -> uint8 (m, 64, 64, 3); labels float64 (n, 6).
    """
    path = pathlib.Path(path)
    n = int(np.prod(factor_sizes))
    with atomic_path(path, ".h5") as tmp, h5py.File(tmp, "w") as h5:
        images = h5.create_dataset("images", shape=(n, 64, 64, 3), dtype=np.uint8)
        h5.create_dataset("labels", data=np.asarray(labels, dtype=np.float64))
        for begin in _chunks(n, chunk, progress, f"writing {path.name}"):
            end = min(begin + chunk, n)
            images[begin:end] = images_fn(np.arange(begin, end))
