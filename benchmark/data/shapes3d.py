"""Shapes3D (Burgess & Kim 2018): procedural renderer and official-file source.

Factor grid (REFERENCE.md, Datasets): floor_hue (10: 0.0..0.9), wall_hue (10), object_hue
(10), scale (8: linspace(0.75, 1.25, 8)), shape (4: cube, cylinder, sphere, capsule),
orientation (15: linspace(-30, 30, 15) degrees); flat index last factor fastest.

The procedural source renders from a factorised cache: geometry (scale x shape x
orientation, 480 combinations) is ray-cast once into per-region coefficient maps
(`shapes3d_scene.render_geometry`), and an image is those maps times the three hue colours
plus the sky colour, one small matrix product per image.
"""

from __future__ import annotations

import gin
import numpy as np
from absl import logging

from benchmark.data import files, shapes3d_scene
from benchmark.data.ground_truth import GroundTruthData, as_factor_array

FILENAME = "3dshapes.h5"
URL = "https://github.com/deepmind/3dshapes-dataset"
SUBDIRS = ("3dshapes", "shapes3d")

FACTOR_NAMES = ("floor_hue", "wall_hue", "object_hue", "scale", "shape", "orientation")
FACTOR_SIZES = (10, 10, 10, 8, 4, 15)
FACTOR_VALUES = (np.linspace(0.0, 0.9, 10), np.linspace(0.0, 0.9, 10),
                 np.linspace(0.0, 0.9, 10), np.linspace(0.75, 1.25, 8),
                 np.arange(4, dtype=np.float64), np.linspace(-30.0, 30.0, 15))


class Shapes3DRenderer:
    """Renders Shapes3D images from factor classes (n, 6) via a lazily filled geometry cache.

    Each geometry's coefficient maps are ray-cast the first time an image needs them
    (`supersample`^2 rays per pixel); `precompute()` fills the whole cache.
    """

    def __init__(self, supersample: int = 4):
        self.supersample = int(supersample)
        self._coeffs = np.zeros((8, 4, 15, 64 * 64, 4), dtype=np.float32)
        self._done = np.zeros((8, 4, 15), dtype=bool)
        hues = np.asarray(FACTOR_VALUES[0], dtype=np.float32)
        self._hue_rgb = shapes3d_scene.hue_rgb(hues).astype(np.float32)     # (10, 3)
        self._sky = np.asarray(shapes3d_scene.SKY_RGB, dtype=np.float32)     # (3,)

    def _fill(self, geometry: np.ndarray) -> None:
        for sc, sh, ori in np.unique(geometry, axis=0):
            if not self._done[sc, sh, ori]:
                maps = shapes3d_scene.render_geometry(int(sc), int(sh), int(ori),
                                                      supersample=self.supersample)
                self._coeffs[sc, sh, ori] = maps.reshape(64 * 64, 4)
                self._done[sc, sh, ori] = True

    def precompute(self) -> None:
        """Ray-casts every geometry not yet cached (all 480 on a fresh renderer)."""
        grid = np.stack(np.meshgrid(np.arange(8), np.arange(4), np.arange(15),
                                    indexing="ij"), -1).reshape(-1, 3)
        self._fill(grid)

    def render(self, factors: np.ndarray) -> np.ndarray:
        """float32 (n, 64, 64, 3) in [0, 1] for factor classes int (n, 6)."""
        geometry = factors[:, 3:6]
        if not self._done[geometry[:, 0], geometry[:, 1], geometry[:, 2]].all():
            self._fill(geometry)
        colours = np.empty((len(factors), 4, 3), dtype=np.float32)
        colours[:, :3] = self._hue_rgb[factors[:, :3]]
        colours[:, 3] = self._sky
        coeffs = self._coeffs[geometry[:, 0], geometry[:, 1], geometry[:, 2]]
        images = np.matmul(coeffs, colours)
        np.clip(images, 0.0, 1.0, out=images)
        return images.reshape(len(factors), 64, 64, 3)


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
    observation_shape = (64, 64, 3)

    def __init__(self, source: str = "auto", data_dir: str | None = None,
                 in_memory: bool = False, supersample: int = 4,
                 factor_sizes=FACTOR_SIZES, label_values=None):
        if source not in ("auto", "procedural", "file"):
            raise ValueError(f"shapes3d source must be 'auto', 'procedural' or 'file', "
                             f"found {source!r}")
        path = None if source == "procedural" else files.find_file(FILENAME, SUBDIRS, data_dir)
        if source == "file" and path is None:
            raise FileNotFoundError(files.missing_file_message(
                FILENAME, files.data_dirs(data_dir), URL))
        if path is not None:
            self._file = files.Shapes3DFile(path, factor_sizes=factor_sizes,
                                            label_values=label_values, in_memory=in_memory)
            self.factor_sizes = tuple(int(s) for s in factor_sizes)
            self.factor_values = tuple(np.asarray(v, dtype=np.float64) for v in
                                       (label_values or FACTOR_VALUES))
            self.source = "file"
            logging.info("shapes3d: reading the official file %s (%s)", path,
                         "in memory" if in_memory else "lazily")
        else:
            if tuple(factor_sizes) != FACTOR_SIZES:
                raise ValueError("the procedural Shapes3D renders the official grid "
                                 f"{FACTOR_SIZES}; found factor_sizes={factor_sizes}")
            self._file = None
            self._renderer = Shapes3DRenderer(supersample)
            self.factor_sizes = FACTOR_SIZES
            self.factor_values = FACTOR_VALUES
            self.source = "procedural"
            logging.info("shapes3d: rendering procedurally (no official file%s)",
                         "" if source == "procedural" else " found")

    @property
    def renderer(self) -> Shapes3DRenderer | None:
        return self._renderer if self._file is None else None

    def uint8_images(self, factors) -> np.ndarray:
        """uint8 (n, 64, 64, 3) as stored in the official file."""
        factors = as_factor_array(factors, self.factor_sizes)
        if self._file is not None:
            return self._file.images_at(self.index_of(factors))
        return np.rint(self._renderer.render(factors) * 255.0).astype(np.uint8)

    def observations_from_factors(self, factors, rng=None) -> np.ndarray:
        # Both sources go through uint8, as the official file does, so a procedural image
        # and its exported copy are identical.
        return self.uint8_images(factors).astype(np.float32) * np.float32(1.0 / 255.0)

    def describe(self) -> dict:
        return {**super().describe(), "source": self.source}
