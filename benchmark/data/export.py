"""Writes any dataset variant in its official file format, for other libraries to load.

dSprites -> `dsprites_ndarray_...npz` layout (imgs, latents_classes, latents_values with
the constant color factor re-added); Shapes3D -> `3dshapes.h5` layout (images, labels).
Binary dSprites images are stored as 0/1 like the official file; a variant that is no
longer binary (noisy, modified) stores float16 images in [0, 1], which disentanglement_lib
reads unchanged (`grey_levels=True` stores every arm so: one dtype and scale for all). A
reduced dSprites (fixed factors) keeps the official six columns, each fixed factor of size
1 (`official_grid`), and names what is fixed in its metadata. The dSprites npz carries the official `metadata` dict (`latents_sizes`).
Both formats are written chunk by chunk: memory stays well under 1 GB for the full data.
"""

from __future__ import annotations

import pathlib

import numpy as np
from absl import logging

from benchmark.core.atomic import temporaries_of
from benchmark.core.lock import directory_lock
from benchmark.data import files
from benchmark.data.ground_truth import GroundTruthData


def _dsprites_images_fn(data: GroundTruthData, binary: bool):
    def images_fn(indices: np.ndarray) -> np.ndarray:
        images = data.images(indices)[..., 0]
        if binary:
            return (images >= 0.5).astype(np.uint8)
        return np.rint(images * 255.0).astype(np.uint8)
    return images_fn


def _uint8_images_fn(data: GroundTruthData):
    def images_fn(indices: np.ndarray) -> np.ndarray:
        return np.rint(data.images(indices) * 255.0).astype(np.uint8)
    return images_fn


def _is_binary(data: GroundTruthData) -> bool:
    return data.describe().get("variant", "original") == "original"


def subset_of(data: GroundTruthData):
    """The FactorSubset under `data` (a variant wraps its base as `.base`), or None when
    `data` is a whole dataset."""
    while data is not None:
        if hasattr(data, "full_factors") and hasattr(data, "fixed"):
            return data
        data = getattr(data, "base", None)
    return None


def official_grid(data: GroundTruthData) -> tuple[tuple, np.ndarray, dict]:
    """(sizes, values, fixed) of the file's factor columns, every factor of the whole
    dataset in its official order: for a whole dataset its sizes and the values of its
    grid; for a reduced one (a FactorSubset: the ellipse's posX x posY) size 1 for each
    fixed factor (its class in this file is 0), its kept classes for a strided or ranged one,
    and the true values of its rows, so the columns keep their official names and meaning
    and a loader that indexes the images by the sizes' strides finds each row. fixed:
    {factor name: official class}."""
    subset = subset_of(data)
    if subset is None:
        return tuple(data.factor_sizes), data.values_of(files.grid_classes(data.factor_sizes)), {}
    base = subset.base
    free = dict(zip(subset.factor_names, subset.factor_sizes))   # a strided factor: fewer
    sizes = tuple(1 if name in subset.fixed else int(free[name]) for name in base.factor_names)
    full = subset.full_factors(files.grid_classes(subset.factor_sizes))
    return sizes, base.values_of(full), dict(subset.fixed)


def export_official(data: GroundTruthData, out: str, progress: bool = True,
                    grey_levels: bool = False) -> pathlib.Path:
    """Writes every image of `data` to `out` in the official format of `data.name`.

    Written chunk by chunk to a temporary name in the target directory and renamed at
    the end, so `out` never holds a partial file; one export writes `out` at a time (the
    lock `.<out's name>.lock` beside it), and the temporary file of an interrupted export to
    the same path is removed first.
    """
    out_path = pathlib.Path(out)
    with directory_lock(out_path.parent, "benchmark.data export", f".{out_path.name}.lock"):
        # a killed export's temporary file (up to 5.9 GB for Shapes3D): no writer uses it
        # while this one holds the lock
        for stale in temporaries_of(out_path):
            stale.unlink(missing_ok=True)
            logging.info("removed %s, the temporary file of an interrupted export", stale)
        return _export(data, out_path, progress, grey_levels)


def _export(data: GroundTruthData, out_path: pathlib.Path, progress: bool,
            grey_levels: bool) -> pathlib.Path:
    sizes, values, fixed = official_grid(data)
    if data.name == "dsprites":
        binary = _is_binary(data) and not grey_levels
        files.write_dsprites_npz(
            out_path, _dsprites_images_fn(data, binary), (1,) + sizes,
            np.concatenate([np.ones((len(values), 1)), values], axis=1),
            grey_levels=not binary, progress=progress, fixed=fixed)
    elif data.name == "shapes3d":
        files.write_shapes3d_h5(out_path, _uint8_images_fn(data), sizes, values,
                                progress=progress)
    else:
        raise ValueError(f"no official file format known for dataset {data.name!r}")
    return out_path
