"""Shapes3D (Burgess & Kim 2018): procedural renderer and official-file source.

Factor grid (the official file's; docs/datasets.md): floor_hue (10: 0.0..0.9), wall_hue
(10), object_hue (10), scale (8: linspace(0.75, 1.25, 8)), shape (4: cube, cylinder,
sphere, capsule), orientation (15: linspace(-30, 30, 15) degrees); flat index last factor
fastest.

The procedural source renders from a factorised cache: geometry (scale x shape x
orientation, 480 combinations) is ray-cast once into per-region coefficient maps
(`shapes3d_scene.render_geometry`), and an image is those maps times the three hue colours
plus the sky colour, looked up in fixed-point tables (`Shapes3DRenderer`).
"""

from __future__ import annotations

import pathlib

import gin
import numpy as np
from absl import logging

from benchmark.core.atomic import atomic_path
from benchmark.data import files, shapes3d_scene
from benchmark.data.ground_truth import GroundTruthData, as_factor_array

#: bump when the scene changes, so stale geometry caches are not used
_SCENE_VERSION = "v2"

FILENAME = "3dshapes.h5"
URL = "https://github.com/deepmind/3dshapes-dataset"
SUBDIRS = ("3dshapes", "shapes3d")

FACTOR_NAMES = ("floor_hue", "wall_hue", "object_hue", "scale", "shape", "orientation")
FACTOR_SIZES = (10, 10, 10, 8, 4, 15)
FACTOR_VALUES = (np.linspace(0.0, 0.9, 10), np.linspace(0.0, 0.9, 10),
                 np.linspace(0.0, 0.9, 10), np.linspace(0.75, 1.25, 8),
                 np.arange(4, dtype=np.float64), np.linspace(-30.0, 30.0, 15))


default_cache_dir = files.default_cache_dir


class Shapes3DRenderer:
    """Renders Shapes3D images (uint8, as the official file stores them) from factor classes
    (n, 6) via a lazily filled geometry cache.

    Each geometry's coefficient maps (64 x 64 x 4 regions) are ray-cast the first time an
    image needs them (`supersample`^2 rays per pixel, ~0.06 s each); once all 480 are cast
    (or after `precompute()`), the maps (31 MB) are saved to `cache_dir` and later renderers
    load them instead of ray-casting again (cache_dir=None: memory only).

    Colour enters linearly, so each geometry's maps are expanded once into fixed-point
    tables: for region r and hue h, round(256 * 255 * c_r * rgb(h)) as uint16 (the four
    regions' coverages sum to 1, so the sum of four entries stays below 2^16). An image is
    then four table rows added and shifted back to uint8: gathers and integer adds only.
    The tables take 354 MB when all geometries are in use.
    """

    _FIXED_POINT = 256.0 * 255.0

    def __init__(self, supersample: int = 4, cache_dir: str | None = "default"):
        self.supersample = int(supersample)
        self._coeffs = np.zeros((8, 4, 15, 64 * 64, 4), dtype=np.float32)
        self._done = np.zeros((8, 4, 15), dtype=bool)
        self._hue_rgb = shapes3d_scene.hue_rgb(FACTOR_VALUES[0]).astype(np.float64)  # (10, 3)
        self._sky_rgb = np.asarray(shapes3d_scene.SKY_RGB, dtype=np.float64)         # (3,)
        self._hue_tables = np.zeros((3, 480, 10, 64 * 64 * 3), dtype=np.uint16)
        self._sky_table = np.zeros((480, 64 * 64 * 3), dtype=np.uint16)
        if cache_dir == "default":
            cache_dir = default_cache_dir()
        self._cache_file = None if cache_dir is None else (
            pathlib.Path(cache_dir) / f"shapes3d_geometry_{_SCENE_VERSION}_ss{supersample}.npy")
        self._load_cache()

    def _set_geometry(self, sc: int, sh: int, ori: int, maps: np.ndarray) -> None:
        """Stores coefficient maps (4096, 4) of one geometry and its colour tables."""
        self._coeffs[sc, sh, ori] = maps
        g = np.ravel_multi_index((sc, sh, ori), self._done.shape)
        maps = maps.astype(np.float64) * self._FIXED_POINT
        for region in range(3):
            table = maps[None, :, region, None] * self._hue_rgb[:, None, :]     # (10, 4096, 3)
            self._hue_tables[region, g] = np.rint(table).reshape(10, -1)
        self._sky_table[g] = np.rint(maps[:, 3, None] * self._sky_rgb).reshape(-1)
        self._done[sc, sh, ori] = True

    def _load_cache(self) -> None:
        if self._cache_file is None or not self._cache_file.is_file():
            return
        try:
            table = np.load(self._cache_file, allow_pickle=False, mmap_mode="r")
            if table.shape != self._coeffs.shape or table.dtype != np.float32:
                raise ValueError(f"shape {table.shape} dtype {table.dtype}")
            for sc, sh, ori in np.ndindex(*self._done.shape):
                self._set_geometry(sc, sh, ori, np.asarray(table[sc, sh, ori]))
        except (OSError, ValueError) as error:
            self._done[...] = False
            logging.warning("ignoring unreadable Shapes3D geometry cache %s (%s); it will "
                            "be rebuilt", self._cache_file, error)

    def _save_cache(self) -> None:
        if self._cache_file is None:
            return
        try:
            with atomic_path(self._cache_file, ".npy") as tmp, open(tmp, "wb") as handle:
                np.save(handle, self._coeffs)
        except OSError as error:
            logging.warning("could not write the Shapes3D geometry cache %s: %s",
                            self._cache_file, error)

    def _fill(self, geometry: np.ndarray) -> None:
        for sc, sh, ori in np.unique(geometry, axis=0):
            if not self._done[sc, sh, ori]:
                maps = shapes3d_scene.render_geometry(int(sc), int(sh), int(ori),
                                                      supersample=self.supersample)
                self._set_geometry(sc, sh, ori, maps.reshape(64 * 64, 4))
                if self._done.all():
                    self._save_cache()

    def precompute(self) -> None:
        """Ray-casts every geometry not yet cached (all 480 on a fresh renderer)."""
        self._fill(np.stack(np.unravel_index(np.arange(480), self._done.shape), axis=1))

    def render(self, factors: np.ndarray) -> np.ndarray:
        """uint8 (n, 64, 64, 3) for factor classes int (n, 6)."""
        geometry = factors[:, 3:6]
        if not self._done[geometry[:, 0], geometry[:, 1], geometry[:, 2]].all():
            self._fill(geometry)
        g = np.ravel_multi_index(geometry.T, self._done.shape)
        acc = self._sky_table[g]
        for region in range(3):
            acc += self._hue_tables[region, g, factors[:, region]]
        acc += np.uint16(128)
        return (acc >> np.uint16(8)).astype(np.uint8).reshape(len(factors), 64, 64, 3)


@gin.configurable("shapes3d", denylist=["factor_sizes", "label_values"])
class Shapes3D(GroundTruthData):
    """Shapes3D, 480,000 RGB 64 x 64 images; observations float32 (n, 64, 64, 3).

    Args:
      source: 'procedural', 'file' (the official h5; an error if it is not found) or
        'auto' (the file when present, the renderer otherwise).
      data_dir: directory holding `3dshapes.h5` (else $DISENTANGLEMENT_LIB_DATA).
      in_memory: load all file images into memory (5.9 GB) instead of lazy h5 reads.
      supersample: rays per pixel side of the procedural renderer (anti-aliasing).
      factor_sizes, label_values: the grid of the file (tests pass shrunken ones).
    """

    name = "shapes3d"
    factor_names = FACTOR_NAMES
    categorical_factors = ("shape",)
    observation_shape = (64, 64, 3)

    def __init__(self, source: str = "auto", data_dir: str | None = None,
                 in_memory: bool = False, supersample: int = 4,
                 factor_sizes=FACTOR_SIZES, label_values=None):
        path = files.resolve_source(self.name, source, FILENAME, SUBDIRS, data_dir, URL)
        if path is not None:
            self._file = files.Shapes3DFile(path, factor_sizes=factor_sizes,
                                            label_values=label_values, in_memory=in_memory)
            self.factor_sizes = tuple(int(s) for s in factor_sizes)
            self.factor_values = tuple(np.asarray(v, dtype=np.float64) for v in
                                       (label_values or FACTOR_VALUES))
            self.source = "file"
        else:
            if tuple(factor_sizes) != FACTOR_SIZES:
                raise ValueError("the procedural Shapes3D renders the official grid "
                                 f"{FACTOR_SIZES}; found factor_sizes={factor_sizes}")
            self._file = None
            self._renderer = Shapes3DRenderer(supersample)
            self.factor_sizes = FACTOR_SIZES
            self.factor_values = FACTOR_VALUES
            self.source = "procedural"

    @property
    def renderer(self) -> Shapes3DRenderer | None:
        return self._renderer if self._file is None else None

    def uint8_images(self, factors) -> np.ndarray:
        """uint8 (n, 64, 64, 3) as stored in the official file."""
        factors = as_factor_array(factors, self.factor_sizes)
        if self._file is not None:
            return self._file.images_at(self.index_of(factors))
        return self._renderer.render(factors)

    def observations_from_factors(self, factors, rng=None) -> np.ndarray:
        # Both sources go through uint8, as the official file does, so a procedural image
        # and its exported copy are identical.
        return self.uint8_images(factors).astype(np.float32) * np.float32(1.0 / 255.0)

    def describe(self) -> dict:
        return {**super().describe(), "source": self.source}
