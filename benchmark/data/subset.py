"""A ground-truth dataset with some factors fixed to one class: `FactorSubset`.

The positive-control ("oracle") experiment (benchmark/data/oracle.py) needs a dSprites
that a CPU disentangles quickly: one shape, one scale, one orientation, only posX x posY
free (32 x 32 = 1,024 images). `FactorSubset` wraps any `GroundTruthData`, fixes the named
factors to one class each and exposes only the free ones, as a full dataset of its own:
factor classes, flat indices (last factor fastest) and sampling are over the *reduced*
grid; images are the base's images at the full factors (reduced factors with the fixed
classes put back in their columns).

Gin: `data.fixed_factors = {'shape': 0, 'scale': 5, 'orientation': 0}` on
`benchmark.data.load_data` (applied before the variant, so a noisy / oracle variant
perturbs the reduced dataset).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from benchmark.core.errors import ConfigError
from benchmark.data.ground_truth import GroundTruthData, as_factor_array


def check_fixed_factors(base: GroundTruthData, fixed: Mapping[str, int]) -> dict[str, int]:
    """`fixed` as {factor name: class}, validated against `base`; raises ValueError naming
    the factor and what was expected (known names, classes 0..size-1, a free factor left)."""
    if not isinstance(fixed, Mapping):
        raise ConfigError(f"fixed_factors: expected a mapping {{factor name: class}}, found "
                         f"{fixed!r}")
    names = list(base.factor_names)
    checked = {}
    for name, cls in fixed.items():
        if name not in names:
            raise ConfigError(f"fixed_factors: unknown factor {name!r} of {base.name}; expected "
                             f"one of {', '.join(names)}")
        size = int(base.factor_sizes[names.index(name)])
        if (isinstance(cls, bool) or not isinstance(cls, (int, np.integer))
                or not 0 <= cls < size):
            raise ConfigError(f"fixed_factors: {name} = {cls!r} is not a class of {base.name}'s "
                             f"{name}; expected an integer in 0..{size - 1}")
        checked[name] = int(cls)
    if len(checked) == len(names):
        raise ConfigError(f"fixed_factors fixes every factor of {base.name} "
                         f"({', '.join(names)}); leave at least one free")
    return checked


class FactorSubset(GroundTruthData):
    """`base` with the factors of `fixed` held at one class; the other factors are free.

    Args:
      base: the dataset to reduce (any GroundTruthData, k factors).
      fixed: {factor name: class} (validated by `check_fixed_factors`).

    Attributes: factor_names / factor_sizes / factor_values / categorical_factors of the
    free factors (base order); observation_shape and name of `base` (images are base
    images); `free` the base columns of the free factors, int64 (k_free,).
    """

    def __init__(self, base: GroundTruthData, fixed: Mapping[str, int]):
        self.base = base
        self.fixed = check_fixed_factors(base, fixed)
        names = list(base.factor_names)
        self.free = np.array([j for j, n in enumerate(names) if n not in self.fixed],
                             dtype=np.int64)
        self.factor_names = tuple(names[j] for j in self.free)
        self.factor_sizes = tuple(int(base.factor_sizes[j]) for j in self.free)
        self.factor_values = tuple(base.factor_values[j] for j in self.free)
        self.categorical_factors = tuple(n for n in base.categorical_factors
                                         if n in self.factor_names)
        self.observation_shape = base.observation_shape
        self.name = base.name
        self._template = np.array([self.fixed.get(n, 0) for n in names], dtype=np.int64)

    def full_factors(self, factors) -> np.ndarray:
        """Base factor classes int64 (n, k) of reduced classes (n, k_free): the fixed
        classes in their columns, the free ones copied."""
        factors = as_factor_array(factors, self.factor_sizes)
        full = np.repeat(self._template[None, :], len(factors), axis=0)
        full[:, self.free] = factors
        return full

    def observations_from_factors(self, factors, rng=None) -> np.ndarray:
        """Base images float32 (n, *observation_shape) in [0, 1] of reduced classes (n, k_free)."""
        return self.base.observations_from_factors(self.full_factors(factors), rng)

    def describe(self) -> dict:
        return {**self.base.describe(), **super().describe(), "fixed_factors": dict(self.fixed)}

    def __repr__(self) -> str:
        return (f"FactorSubset({self.base.name}, fixed={self.fixed}, "
                f"sizes={list(self.factor_sizes)})")
