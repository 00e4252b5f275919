"""Dataset variants: x' = reflect(x + eps * delta(factors)), a GroundTruthData wrapping another.

- `AdditivePerturbation` takes any delta function (the learned manipulation m(w) of
  paper 002 sec. 4.4 plugs in here).
- `NoisyData` is paper 002 sec. 5.2: uniform pixel noise in [-eps, eps], eps 0.1 (dSprites)
  / 0.175 (Shapes3D), *fixed per image*: the noise of an image is a function of (seed,
  flat index), so repeated access returns the identical image.
- `ShadedData` (the suite's own control, not paper 002's): a fixed ramp of light (along
  posX, or the diagonal) whose brightness is drawn per image, fixed per image as the
  noise is. The sprite's contrast varies over the image and from image to image, which a
  code linear in the pixels reads, while the factors' local geometry stays on its axes.

Reflection is appendix B.1 of paper 002: x - 2 relu(x - 1) + 2 relu(-x), which is the
identity on [0, 1] and folds values in [-1, 2] back into [0, 1]; with eps <= 1 and x in
[0, 1] that covers every perturbed value.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from benchmark.core.errors import ConfigError, check_range
from benchmark.data.ground_truth import GroundTruthData, as_factor_array

#: Noise strength of paper 002 sec. 5.2 per dataset.
DEFAULT_EPS = {"dsprites": 0.1, "shapes3d": 0.175}

DeltaFn = Callable[[np.ndarray], np.ndarray]


def reflect(x: np.ndarray) -> np.ndarray:
    """Folds values in [-1, 2] into [0, 1] (paper 002 appendix B.1); identity on [0, 1].

    On [-1, 2], x - 2 relu(x - 1) + 2 relu(-x) is |x| where |x| <= 1 and 2 - |x| above,
    which is computed here in place on one copy, exactly (bit for bit x on [0, 1]).
    """
    out = np.abs(x)
    np.subtract(2.0, out, out=out, where=out > 1.0)
    return out


class AdditivePerturbation(GroundTruthData):
    """x' = reflect(x + eps * delta(factors)), delta float32 image-shaped in [-1, 1].

    Args:
      base: the wrapped dataset (its factors, sizes and indices are kept).
      delta_fn: factor classes int64 (n, k) -> float32 (n, *observation_shape) in [-1, 1];
        must be deterministic so an index always gives the same image.
      eps: perturbation strength in (0, 1].
      variant: name recorded in `describe()` ("modified", "noisy", ...).
    """

    def __init__(self, base: GroundTruthData, delta_fn: DeltaFn, eps: float,
                 variant: str = "perturbed", metadata: dict | None = None):
        check_range("perturbation eps (data.eps)", eps, 0.0, 1.0, low_open=True)
        self.base = base
        self.delta_fn = delta_fn
        self.eps = float(eps)
        self.variant = variant
        self.metadata = dict(metadata or {})
        self.adopt_grid(base)

    def delta(self, factors) -> np.ndarray:
        """The validated perturbation float32 (n, *observation_shape) in [-1, 1]."""
        factors = as_factor_array(factors, self.factor_sizes)
        delta = np.asarray(self.delta_fn(factors), dtype=np.float32)
        expected = (len(factors),) + tuple(self.observation_shape)
        if delta.shape != expected:
            raise ValueError(f"{self.variant} perturbation: expected delta of shape {expected}, "
                             f"found {delta.shape}")
        finite = np.isfinite(delta)
        if not finite.all():
            raise ValueError(f"{self.variant} perturbation: expected finite delta values, "
                             f"found {int((~finite).sum())} NaN/inf values")
        if np.abs(delta).max(initial=0.0) > 1.0 + 1e-6:
            raise ValueError(f"{self.variant} perturbation: expected delta values in [-1, 1], "
                             f"found range [{delta.min()}, {delta.max()}]")
        return delta

    def observations_from_factors(self, factors, rng=None) -> np.ndarray:
        factors = as_factor_array(factors, self.factor_sizes)
        perturbed = self.delta(factors)
        perturbed *= np.float32(self.eps)
        perturbed += self.base.observations_from_factors(factors, rng)
        return reflect(perturbed)

    def describe(self) -> dict:
        return {**self.base.describe(), "variant": self.variant, "eps": self.eps,
                **self.metadata}


_C1 = np.uint64(0x9E3779B97F4A7C15)
_C2 = np.uint64(0xBF58476D1CE4E5B9)
_C3 = np.uint64(0x94D049BB133111EB)


def _splitmix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser (Steele et al. 2014), elementwise on uint64."""
    z = z + _C1
    z = (z ^ (z >> np.uint64(30))) * _C2
    z = (z ^ (z >> np.uint64(27))) * _C3
    return z ^ (z >> np.uint64(31))


def uniform_noise_by_index(indices, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Noise float32 (n, *shape) uniform in (-1, 1), a fixed function of (seed, index).

    Counter-based: every image's noise is hashed from (seed, flat index, pixel), so it
    needs no state and any batch of indices is generated in one vectorised pass. Values
    have 16-bit resolution (2^-15 steps, finer than the 1/255 of uint8 images).
    """
    idx = np.asarray(indices, dtype=np.int64).reshape(-1).astype(np.uint64)
    size = int(np.prod(shape))
    words = -(-size // 4)
    with np.errstate(over="ignore"):
        keys = _splitmix64(np.uint64(seed) ^ _splitmix64(idx))
        counters = np.arange(words, dtype=np.uint64) * _C1
        bits = _splitmix64(keys[:, None] ^ counters[None, :])
    u16 = bits.view(np.uint16).reshape(len(idx), -1)[:, :size]
    noise = (u16.astype(np.float32) + np.float32(0.5)) * np.float32(2.0 / 65536) - np.float32(1.0)
    return noise.reshape((len(idx),) + tuple(shape))


class NoisyData(AdditivePerturbation):
    """Paper 002 sec. 5.2: x' = reflect(x + u), u ~ U[-eps, eps] per pixel, fixed per image.

    eps defaults to DEFAULT_EPS of the wrapped dataset (0.1 dSprites, 0.175 Shapes3D).
    """

    def __init__(self, base: GroundTruthData, eps: float | None = None, seed: int = 0):
        if eps is None:
            if base.name not in DEFAULT_EPS:
                raise ValueError(f"no default noise eps for dataset {base.name!r}; pass eps")
            eps = DEFAULT_EPS[base.name]
        self.seed = int(seed)
        super().__init__(base, self.delta, eps, variant="noisy",
                         metadata={"noise_seed": self.seed})

    def delta(self, factors) -> np.ndarray:
        """The noise float32 (n, *observation_shape), in (-1, 1) by construction."""
        factors = as_factor_array(factors, self.factor_sizes)
        return uniform_noise_by_index(self.base.index_of(factors), self.observation_shape,
                                      self.seed)


def ramp_pattern(observation_shape: tuple[int, ...], direction: str = "horizontal"
                 ) -> np.ndarray:
    """float32 `observation_shape` (h, w, c) in [0, 1], the same in every channel:
    'horizontal' column / (w - 1), 0 on the left edge and 1 on the right (along dSprites'
    posX); 'diagonal' (row + column) / (h + w - 2), 0 top-left and 1 bottom-right;
    'radial' the distance from the image's centre over the centre's distance to a corner,
    0 at the centre and 1 in the corners."""
    h, w = observation_shape[:2]
    rows = np.arange(h, dtype=np.float32)[:, None]
    cols = np.arange(w, dtype=np.float32)[None, :]
    if direction == "horizontal":
        ramp = np.broadcast_to(cols / np.float32(max(w - 1, 1)), (h, w))
    elif direction == "diagonal":
        ramp = (rows + cols) / np.float32(max(h + w - 2, 1))
    elif direction == "radial":
        u = rows / np.float32(max(h - 1, 1)) - np.float32(0.5)
        v = cols / np.float32(max(w - 1, 1)) - np.float32(0.5)
        ramp = np.sqrt(u * u + v * v) / np.float32(np.sqrt(0.5))
    else:
        raise ValueError(f"ramp_pattern: expected direction 'horizontal', 'diagonal' or 'radial', "
                         f"found {direction!r}")
    return np.broadcast_to(ramp[:, :, None], tuple(observation_shape)).astype(np.float32)


class ShadedData(AdditivePerturbation):
    """x' = reflect(x + eps * a * ramp): `ramp_pattern` times a brightness a ~ U(0, 1)
    drawn per image (a fixed function of (seed, flat index), as `NoisyData`'s noise).

    The ramp is independent of the factors, so every image's identity is kept. On a binary
    sprite the background becomes eps a ramp and the sprite 1 - eps a ramp (reflected), so
    its contrast, 1 - 2 eps a ramp, varies over the image and from image to image, which a
    code linear in the pixels reads. Central differences of the factors
    (benchmark.data.oracle.local_factor_gram) see each image's a independently: the local
    geometry's correlation stays near 0 (0.009 horizontal, 0.032 diagonal at eps 0.45 on
    the ellipse). The contrast itself changes along the ramp, so the ramp's direction is a
    direction of the factors' plane: 'horizontal' (variant 'shaded') lies on posX,
    'diagonal' (variant 'shaded_diagonal') on posX + posY. At eps 0.45 every form costs a
    beta-VAE's MIG as much as a pixel-linear code's (results/battery_pilot_shaded_cpu).
    Below eps 0.5 no pixel crosses 0.5, so a code of
    the pixels thresholded at 0.5 is unchanged on a binary sprite.

    Args:
      base: the wrapped dataset.
      eps: the ramp's peak brightness, in (0, 1].
      seed: the seed of the per-image brightness.
      direction: the ramp's, 'horizontal' or 'diagonal' (`ramp_pattern`).
      fixed: every image at full brightness (a = 1; variant 'shaded_fixed'): a fixed
        texture, the same in every image, so no nuisance to encode, only the contrast
        falling along the ramp.
    """

    def __init__(self, base: GroundTruthData, eps: float, seed: int = 0,
                 direction: str = "horizontal", fixed: bool = False):
        if eps is None:
            raise ValueError("the 'shaded' variant needs its peak brightness as data.eps "
                             "(e.g. shaded@0.45), found none")
        self.seed = int(seed)
        self.direction = direction
        self.fixed = bool(fixed)
        self.ramp = ramp_pattern(tuple(base.observation_shape), direction)
        variant = "shaded" if direction == "horizontal" else f"shaded_{direction}"
        variant += "_fixed" if self.fixed else ""
        super().__init__(base, self.delta, eps, variant=variant,
                         metadata={"noise_seed": self.seed, "ramp": direction,
                                   "fixed_brightness": self.fixed})

    def brightness(self, factors) -> np.ndarray:
        """The per-image brightness a, float32 (n,) in (0, 1) (1 for every image when
        `fixed`)."""
        factors = as_factor_array(factors, self.factor_sizes)
        if self.fixed:
            return np.ones(len(factors), dtype=np.float32)
        noise = uniform_noise_by_index(self.base.index_of(factors), (1,), self.seed)
        return (noise[:, 0] + np.float32(1.0)) * np.float32(0.5)

    def delta(self, factors) -> np.ndarray:
        """a * ramp, float32 (n, *observation_shape) in [0, 1)."""
        a = self.brightness(factors)
        return a.reshape((-1,) + (1,) * self.ramp.ndim) * self.ramp[None]


class VignettedData(GroundTruthData):
    """x' = x * (1 - eps * radial): every image darkened by the same fixed gain, 1 at the
    centre and 1 - eps in the corners (`ramp_pattern` 'radial'), as a camera's vignetting.

    A fixed invertible linear map of the pixels, the same for every image, with no
    randomness: every image keeps its identity, a black background stays black, and a
    binary sprite's pixels keep a contrast of at least 1 - eps. The gain is nearly constant
    over a small sprite's footprint, so the images' local geometry keeps its directions and
    changes only its scale (by the squared gain at the sprite). What it does change is the
    pixels' covariance, which a code linear in the pixels (a PCA) is fitted to. For eps <
    0.5 no sprite pixel falls below 0.5, so a code of the pixels thresholded at 0.5 is
    unchanged on a binary sprite.

    Args:
      base: the wrapped dataset.
      eps: the gain's fall from the centre to the corners, in (0, 1).
    """

    variant = "vignetted"

    def __init__(self, base: GroundTruthData, eps: float):
        if eps is None:
            raise ConfigError("the 'vignetted' variant needs the gain's fall to the corners "
                              "as data.eps (e.g. vignetted@0.25), found none")
        if check_range("vignette strength (data.eps)", eps, 0.0, 1.0, low_open=True) == 1.0:
            raise ConfigError("vignette strength (data.eps): expected a value in (0, 1), "
                              "found 1.0 (a gain of 0 in the corners erases those pixels)")
        self.base = base
        self.eps = float(eps)
        self.gain = (np.float32(1.0) - np.float32(self.eps)
                     * ramp_pattern(tuple(base.observation_shape), "radial"))
        self.adopt_grid(base)

    def observations_from_factors(self, factors, rng=None) -> np.ndarray:
        factors = as_factor_array(factors, self.factor_sizes)
        return self.base.observations_from_factors(factors, rng) * self.gain[None]

    def describe(self) -> dict:
        return {**self.base.describe(), "variant": self.variant, "eps": self.eps,
                "gain": "1 - eps * radial"}
