"""Writes any dataset variant in its official file format, for other libraries to load.

dSprites -> `dsprites_ndarray_...npz` layout (imgs, latents_classes, latents_values with
the constant color factor re-added); Shapes3D -> `3dshapes.h5` layout (images, labels).
Binary dSprites images are stored as 0/1 like the official file; a variant that is no
longer binary (noisy, modified) stores float16 images in [0, 1], which disentanglement_lib
reads unchanged. The dSprites npz carries the official `metadata` dict (`latents_sizes`).
Both formats are written chunk by chunk: memory stays well under 1 GB for the full data.
"""

from __future__ import annotations

import pathlib

import numpy as np

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


def export_official(data: GroundTruthData, out: str, progress: bool = True) -> pathlib.Path:
    """Writes every image of `data` to `out` in the official format of `data.name`.

    Written chunk by chunk to a temporary name in the target directory and renamed at
    the end, so `out` never holds a partial file.
    """
    out_path = pathlib.Path(out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    all_factors = files.grid_classes(data.factor_sizes)
    values = data.values_of(all_factors)
    if data.name == "dsprites":
        binary = _is_binary(data)
        files.write_dsprites_npz(
            out_path, _dsprites_images_fn(data, binary), (1,) + tuple(data.factor_sizes),
            np.concatenate([np.ones((len(values), 1)), values], axis=1),
            grey_levels=not binary, progress=progress)
    elif data.name == "shapes3d":
        files.write_shapes3d_h5(out_path, _uint8_images_fn(data), data.factor_sizes, values,
                                progress=progress)
    else:
        raise ValueError(f"no official file format known for dataset {data.name!r}")
    return out_path
