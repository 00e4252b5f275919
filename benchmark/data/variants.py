"""Dataset variants: x' = reflect(x + eps * delta(factors)), a GroundTruthData wrapping another.

- `AdditivePerturbation` takes any delta function (the learned manipulation m(w) of
  paper 002 sec. 4.4 plugs in here).
- `NoisyData` is paper 002 sec. 5.2: uniform pixel noise in [-eps, eps], eps 0.1 (dSprites)
  / 0.175 (Shapes3D), *fixed per image*: the noise of an image is a function of (seed,
  flat index), so repeated access returns the identical image.

Reflection is appendix B.1 of paper 002: x - 2 relu(x - 1) + 2 relu(-x), which is the
identity on [0, 1] and folds values in [-1, 2] back into [0, 1]; with eps <= 1 and x in
[0, 1] that covers every perturbed value.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from benchmark.core.errors import check_range
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
