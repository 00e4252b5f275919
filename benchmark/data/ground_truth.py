"""The one dataset interface of the suite: `GroundTruthData`.

A ground-truth dataset is a full grid of discrete generating factors, one image per
grid point. Factors are integer *classes* (0 .. size-1); `factor_values` maps classes
to the official value conventions (e.g. dSprites scale 0.5 .. 1.0). The flat index of
an image is the official one: row-major over the factor grid, *last factor fastest*.

Only factors that vary are exposed (disentanglement_lib convention): dSprites' constant
`color` factor is left out of `factor_sizes`, which leaves every flat index unchanged
(a factor of size 1 has no stride); file I/O re-adds it.

Every dataset variant (noisy, modified) is itself a `GroundTruthData` that wraps another,
so metrics and training never know which one they see.
"""

from __future__ import annotations

import abc
from typing import Sequence

import numpy as np


def as_factor_array(factors, factor_sizes: Sequence[int]) -> np.ndarray:
    """Validates `factors` as an int64 array (n, k) of classes inside the grid.

    Raises ValueError naming what was expected and what was found.
    """
    arr = np.asarray(factors)
    k = len(factor_sizes)
    if arr.ndim != 2 or arr.shape[1] != k:
        raise ValueError(
            f"expected factors of shape (n, {k}) (one integer class per factor), "
            f"found shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        if arr.size and not np.all(np.equal(np.mod(arr, 1), 0)):
            raise ValueError(f"expected integer factor classes, found dtype {arr.dtype} "
                             "with non-integer values")
    arr = arr.astype(np.int64, copy=False)
    sizes = np.asarray(factor_sizes, dtype=np.int64)
    bad = (arr < 0) | (arr >= sizes)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(
            f"factor {col} class {arr[row, col]} (row {row}) is outside 0..{sizes[col] - 1}")
    return arr


class GroundTruthData(abc.ABC):
    """A dataset of images generated from a full grid of discrete factors.

    Subclasses set `factor_names`, `factor_sizes`, `factor_values`, `observation_shape`
    and implement `observations_from_factors`.
    """

    #: names of the exposed (varying) factors, in official order
    factor_names: tuple[str, ...]
    #: number of classes of each factor, in official order
    factor_sizes: tuple[int, ...]
    #: official value of each class, one float64 array per factor
    factor_values: tuple[np.ndarray, ...]
    #: shape of one image, (64, 64, channels)
    observation_shape: tuple[int, int, int]
    #: short name used in configs, logs and results ("dsprites", "shapes3d")
    name: str
    #: factors whose classes are unordered labels (e.g. shape): time-contrastive pairs
    #: (benchmark/data/pairs.py) never change them
    categorical_factors: tuple[str, ...] = ()

    def adopt_grid(self, base: "GroundTruthData") -> None:
        """Takes `base`'s name, factors, sizes, values and image shape: for a dataset that
        wraps another and keeps its grid (a variant, a materialised copy)."""
        self.name = base.name
        self.factor_names = base.factor_names
        self.categorical_factors = base.categorical_factors
        self.factor_sizes = base.factor_sizes
        self.factor_values = base.factor_values
        self.observation_shape = base.observation_shape

    @property
    def num_factors(self) -> int:
        return len(self.factor_sizes)

    @property
    def num_images(self) -> int:
        return int(np.prod(self.factor_sizes, dtype=np.int64))

    @property
    def strides(self) -> np.ndarray:
        """Flat-index strides, last factor fastest; int64 (k,)."""
        sizes = np.asarray(self.factor_sizes, dtype=np.int64)
        return np.concatenate([np.cumprod(sizes[::-1])[::-1][1:], [1]]).astype(np.int64)

    def index_of(self, factors) -> np.ndarray:
        """Flat official indices (n,) int64 of factor classes (n, k)."""
        return as_factor_array(factors, self.factor_sizes) @ self.strides

    def factors_of(self, index) -> np.ndarray:
        """Factor classes (n, k) int64 of flat indices (n,)."""
        idx = np.asarray(index, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= self.num_images):
            raise ValueError(f"expected indices in 0..{self.num_images - 1}, found "
                             f"{idx.min()}..{idx.max()}")
        return (idx[:, None] // self.strides[None, :]) % np.asarray(self.factor_sizes)

    def values_of(self, factors) -> np.ndarray:
        """Official factor values (n, k) float64 of factor classes (n, k)."""
        arr = as_factor_array(factors, self.factor_sizes)
        return np.stack([self.factor_values[j][arr[:, j]] for j in range(self.num_factors)],
                        axis=1) if len(arr) else np.zeros((0, self.num_factors))

    def sample_factors(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n factor vectors drawn uniformly from the grid; int64 (n, k)."""
        return np.stack([rng.integers(0, s, size=n) for s in self.factor_sizes], axis=1)

    @abc.abstractmethod
    def observations_from_factors(self, factors, rng: np.random.Generator | None = None
                                  ) -> np.ndarray:
        """Images of factor classes (n, k): float32 (n, 64, 64, c) in [0, 1].

        `rng` is for datasets whose images are random given the factors; every dataset of
        this suite is deterministic given the factors (noise is fixed per image), so it
        may be None.
        """

    def images(self, indices) -> np.ndarray:
        """Images at flat indices (n,): float32 (n, 64, 64, c) in [0, 1]."""
        return self.observations_from_factors(self.factors_of(indices))

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(factors (n, k) int64, images float32 (n, 64, 64, c))."""
        factors = self.sample_factors(n, rng)
        return factors, self.observations_from_factors(factors, rng)

    def describe(self) -> dict:
        """JSON-ready description for logs and results files."""
        return {"name": self.name, "factor_names": list(self.factor_names),
                "factor_sizes": [int(s) for s in self.factor_sizes],
                "observation_shape": list(self.observation_shape)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}, sizes={list(self.factor_sizes)})"
