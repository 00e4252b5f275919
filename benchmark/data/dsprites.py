"""dSprites (Matthey et al. 2017): procedural renderer and official-file source.

Factor grid and conventions (the official file's; docs/datasets.md): color (1, constant,
not exposed), shape (3: square, ellipse, heart; values 1, 2, 3), scale (6: linspace(0.5,
1, 6)), orientation (40: linspace(0, 2pi, 40), so classes 0 and 39 render the same image),
posX (32) and posY (32) (each linspace(0, 1, 32)); flat index last factor fastest.

The renderer matches the measured look of the real images: binary, white sprite on black,
no anti-aliasing; square side 20 px x scale, ellipse 26 x 14 px and heart 20 x 17 px at
scale 1; rotation about the sprite position, counter-clockwise on screen for positive
orientation; the sprite centre runs from pixel 15.5 (position 0) to 47.5 (position 1) on
both axes, posX = 0 left, posY = 0 top. It renders from a factorised cache: the
3 x 6 x 40 = 720 sprite masks are rasterised once (32 x 32, 4 x 4 supersampled, a pixel is
on when at least half of it is covered) and each image is one mask shifted to its position.
"""

from __future__ import annotations

import functools

import gin
import numpy as np

from benchmark.data import files
from benchmark.data.ground_truth import GroundTruthData, as_factor_array

FILENAME = "dsprites_ndarray_co1sh3sc6or40x32y32_64x64.npz"
URL = "https://github.com/deepmind/dsprites-dataset"
SUBDIRS = ("dsprites",)

#: the official grid including the constant color factor (file layout)
FULL_FACTOR_SIZES = (1, 3, 6, 40, 32, 32)
FULL_FACTOR_NAMES = ("color", "shape", "scale", "orientation", "posX", "posY")
FULL_FACTOR_VALUES = (np.array([1.0]), np.array([1.0, 2.0, 3.0]), np.linspace(0.5, 1.0, 6),
                      np.linspace(0.0, 2 * np.pi, 40), np.linspace(0.0, 1.0, 32),
                      np.linspace(0.0, 1.0, 32))

_CANVAS = 32
_CANVAS_CENTRE = 15.5
_SUPERSAMPLE = 4
_CLIP_HALF_WIDTH = 13.0


def _inside_square(x, y, scale):
    half = 10.0 * scale
    return (np.abs(x) <= half) & (np.abs(y) <= half)


def _inside_ellipse(x, y, scale):
    return (x / (13.0 * scale)) ** 2 + (y / (7.0 * scale)) ** 2 <= 1.0


def _inside_heart(x, y, scale):
    # Implicit heart (x^2 + y^2 - 1)^3 - x^2 y^3 <= 0: bbox x in [-1.139, 1.139],
    # y in [-1, 1.236]; mapped to 20 x 17 px at scale 1, bbox centred on the position.
    u = x / (10.0 * scale) * 1.139
    v = y / (8.5 * scale) * 1.118 + 0.118
    return (u * u + v * v - 1.0) ** 3 - u * u * v ** 3 <= 0.0


_SHAPES = (_inside_square, _inside_ellipse, _inside_heart)


def render_sprite_mask(shape: int, scale: float, orientation: float) -> np.ndarray:
    """Binary mask uint8 (32, 32) of one sprite centred at canvas pixel (15.5, 15.5).

    shape: 0 square, 1 ellipse, 2 heart; scale in [0.5, 1]; orientation in radians,
    counter-clockwise on screen.
    """
    offsets = (np.arange(_SUPERSAMPLE) + 0.5) / _SUPERSAMPLE - 0.5
    coords = (np.arange(_CANVAS)[:, None] + offsets[None, :]).reshape(-1) - _CANVAS_CENTRE
    u, v = np.meshgrid(coords, coords)          # u right, v down (screen)
    x, y = u, -v                                # y up
    c, s = np.cos(orientation), np.sin(orientation)
    xr, yr = c * x + s * y, -s * x + c * y      # rotate the sample points by -orientation
    # The real sprites are clipped to a 26 x 26 px box (x scale) about the position: a
    # 45 degree square of side 20 spans 26 px, not 28, and loses only its corner tips.
    in_box = (np.abs(u) <= _CLIP_HALF_WIDTH * scale) & (np.abs(v) <= _CLIP_HALF_WIDTH * scale)
    inside = (_SHAPES[shape](xr, yr, scale) & in_box).astype(np.float32)
    coverage = inside.reshape(_CANVAS, _SUPERSAMPLE, _CANVAS, _SUPERSAMPLE).mean(axis=(1, 3))
    return (coverage >= 0.5).astype(np.uint8)


@functools.lru_cache(maxsize=1)
def sprite_masks() -> np.ndarray:
    """All 3 x 6 x 40 sprite masks, uint8 (3, 6, 40, 32, 32) in {0, 1}; built once."""
    _, shapes, scales, orientations, _, _ = FULL_FACTOR_VALUES
    return np.stack([np.stack([np.stack([render_sprite_mask(i, sc, o) for o in orientations])
                               for sc in scales]) for i in range(len(shapes))])


def position_offsets() -> np.ndarray:
    """Top-left canvas offset (pixels) of each of the 32 positions: int64 (32,) in 0..32."""
    return np.round(np.arange(32) * 32.0 / 31.0).astype(np.int64)


class DSpritesRenderer:
    """Renders dSprites images from factor classes (n, 5): shape, scale, orient., posX, posY."""

    def __init__(self):
        masks = sprite_masks()
        self._masks = masks.reshape(-1, _CANVAS, _CANVAS)
        self._mask_strides = np.array([masks.shape[1] * masks.shape[2], masks.shape[2], 1])
        self._offsets = position_offsets()
        self._span = np.arange(_CANVAS)

    def render(self, factors: np.ndarray) -> np.ndarray:
        """uint8 (n, 64, 64) in {0, 1} for factor classes int (n, 5)."""
        n = len(factors)
        out = np.zeros((n, 64, 64), dtype=np.uint8)
        masks = self._masks[factors[:, :3] @ self._mask_strides]
        rows = self._offsets[factors[:, 4]][:, None] + self._span
        cols = self._offsets[factors[:, 3]][:, None] + self._span
        out[np.arange(n)[:, None, None], rows[:, :, None], cols[:, None, :]] = masks
        return out


@gin.configurable("dsprites", denylist=["factor_sizes"])
class DSprites(GroundTruthData):
    """dSprites, 737,280 binary 64 x 64 images; observations float32 (n, 64, 64, 1).

    Args:
      source: 'procedural' (the suite's renderer), 'file' (the official npz, an error if
        it is not found) or 'auto' (the file when present, the renderer otherwise).
      data_dir: directory holding the official file (else $DISENTANGLEMENT_LIB_DATA).
      factor_sizes: the full official grid (tests pass a shrunken one for small files;
        the procedural source always uses the official grid).
    """

    name = "dsprites"
    factor_names = FULL_FACTOR_NAMES[1:]
    categorical_factors = ("shape",)
    observation_shape = (64, 64, 1)

    def __init__(self, source: str = "auto", data_dir: str | None = None,
                 factor_sizes=FULL_FACTOR_SIZES):
        path = files.resolve_source(self.name, source, FILENAME, SUBDIRS, data_dir, URL)
        if path is not None:
            self._file = files.DSpritesFile(path, factor_sizes=factor_sizes)
            full_sizes = tuple(factor_sizes)
            self.factor_values = tuple(_values_from_file(self._file.latents_values, full_sizes))[1:]
            self.source = "file"
        else:
            if tuple(factor_sizes) != FULL_FACTOR_SIZES:
                raise ValueError("the procedural dSprites renders the official grid "
                                 f"{FULL_FACTOR_SIZES}; found factor_sizes={factor_sizes}")
            self._file = None
            self._renderer = DSpritesRenderer()
            full_sizes = FULL_FACTOR_SIZES
            self.factor_values = FULL_FACTOR_VALUES[1:]
            self.source = "procedural"
        if full_sizes[0] != 1:
            raise ValueError(f"dSprites' color factor has one value, found {full_sizes[0]}")
        self.factor_sizes = tuple(int(s) for s in full_sizes[1:])

    def observations_from_factors(self, factors, rng=None) -> np.ndarray:
        factors = as_factor_array(factors, self.factor_sizes)
        if self._file is None:
            return self._renderer.render(factors)[..., None].astype(np.float32)
        images = self._file.images_at(self.index_of(factors))[..., None].astype(np.float32)
        # A grey-level file is the suite's export of a non-binary variant (0..255).
        return images * np.float32(1.0 / 255.0) if self._file.grey_levels else images

    def describe(self) -> dict:
        return {**super().describe(), "source": self.source}


def _values_from_file(latents_values: np.ndarray, full_sizes) -> list[np.ndarray]:
    """Per-factor class values read off the file's latents_values (rows in grid order)."""
    strides = np.concatenate([np.cumprod(np.asarray(full_sizes)[::-1])[::-1][1:], [1]])
    return [latents_values[np.arange(size) * stride, j]
            for j, (size, stride) in enumerate(zip(full_sizes, strides))]
