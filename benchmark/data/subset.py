"""A ground-truth dataset with some factors fixed to one class: `FactorSubset`.

The positive-control ("oracle") experiment (benchmark/data/oracle.py) needs a dSprites
that a CPU disentangles quickly: one shape, one scale, one orientation, only posX x posY
free (32 x 32 = 1,024 images). `FactorSubset` wraps any `GroundTruthData`, fixes the named
factors to one class each and exposes only the free ones, as a full dataset of its own:
factor classes, flat indices (last factor fastest) and sampling are over the *reduced*
grid; images are the base's images at the full factors (reduced factors with the fixed
classes put back in their columns).

Gin: `data.fixed_factors = {'shape': 0, 'scale': 5, 'orientation': 0}`,
`data.factor_strides = {'posY': 2}` and `data.factor_ranges = {'posX': (10, 21)}` on
`benchmark.data.load_data` (applied before the variant, so a noisy / oracle variant perturbs
the reduced dataset).

A stride and a range change the plane differently for a code whose latent scales are free
(the prior sets each latent's spread to the factor's): a stride keeps the factor's span and
samples it coarser, so in units of the factor's spread its step changes the image by about
as much as before; a range narrows the span, so the same step is a larger share of the
spread it has. perturbations/geometry.py reports both (`anisotropy`, per class;
`whitened_anisotropy`, per factor spread).
"""

from __future__ import annotations

import ast
from typing import Mapping, Sequence

import numpy as np

from benchmark.core.errors import ConfigError
from benchmark.data.ground_truth import GroundTruthData, as_factor_array


def parse_factor_dict(text: str, flag: str = "--fixed_factors",
                      example: str = "{'shape': 1}") -> dict:
    """A command line's dict literal of factor name to class or stride (data, never code:
    ast.literal_eval); ConfigError naming the flag for anything else."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = None
    if not isinstance(value, dict):
        raise ConfigError(f"{flag}: expected a dict literal such as \"{example}\", "
                          f"found {text!r}")
    return value


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


def _free_factor_items(base: GroundTruthData, given, fixed: Mapping[str, int], binding: str,
                       form: str):
    """(name, value, size) for each item of `given`, a {free factor name: value} mapping of
    the binding `binding` (values of the form `form`); ConfigError for anything else."""
    if not isinstance(given, Mapping):
        raise ConfigError(f"{binding}: expected a mapping {{factor name: {form}}}, "
                          f"found {given!r}")
    names = list(base.factor_names)
    for name, value in given.items():
        if name not in names or name in fixed:
            raise ConfigError(f"{binding}: {name!r} is not a free factor of {base.name}; "
                              f"expected one of {', '.join(n for n in names if n not in fixed)}")
        yield name, value, int(base.factor_sizes[names.index(name)])


def _is_whole(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_factor_strides(base: GroundTruthData, strides: Mapping[str, int] | None,
                         fixed: Mapping[str, int]) -> dict[str, int]:
    """`strides` as {free factor name: stride >= 1}, validated against `base` and the fixed
    factors; ConfigError naming the factor and what was expected."""
    checked = {}
    for name, stride, size in _free_factor_items(base, strides or {}, fixed, "factor_strides",
                                                 "stride"):
        if not _is_whole(stride) or not 1 <= stride <= (size - 1) // 2:
            raise ConfigError(f"factor_strides: {name} = {stride!r}; expected an integer in "
                              f"1..{(size - 1) // 2} (keeping at least 3 of its {size} classes)")
        checked[name] = int(stride)
    return checked


def check_factor_ranges(base: GroundTruthData, ranges: Mapping[str, Sequence[int]] | None,
                        fixed: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """`ranges` as {free factor name: (start, stop)} (base classes start..stop - 1, as
    Python's range), validated against `base` and the fixed factors; ConfigError naming the
    factor and what was expected."""
    checked = {}
    for name, bounds, size in _free_factor_items(base, ranges or {}, fixed, "factor_ranges",
                                                 "(start, stop)"):
        pair = (isinstance(bounds, (tuple, list)) and len(bounds) == 2
                and all(_is_whole(b) for b in bounds))
        if not pair or not 0 <= bounds[0] < bounds[1] <= size or bounds[1] - bounds[0] < 3:
            raise ConfigError(f"factor_ranges: {name} = {bounds!r}; expected (start, stop) "
                              f"with 0 <= start, stop <= {size} and at least 3 classes "
                              f"(classes start..stop - 1 of its {size})")
        checked[name] = (int(bounds[0]), int(bounds[1]))
    return checked


class FactorSubset(GroundTruthData):
    """`base` with the factors of `fixed` held at one class and, optionally, some free
    factors kept at every `stride`-th class only; the other factors are free.

    A stride makes one step of that factor a larger change of the image (posY at stride 2:
    classes 0, 2, ..., 30 of 32); a range keeps a window of it (posX (10, 21): classes
    10..20). Every kept image is a base image (the suite's constructions, for a reference
    model whose code should align with the factor axes; paper 002 uses neither).

    Args:
      base: the dataset to reduce (any GroundTruthData, k factors).
      fixed: {factor name: class} (validated by `check_fixed_factors`).
      strides: {free factor name: stride} (`check_factor_strides`).
      ranges: {free factor name: (start, stop)} (`check_factor_ranges`); reduced class c of
        a factor is base class start + c * stride (start 0, stride 1 where not given), the
        kept classes being range(start, stop, stride), at least 3.

    Attributes: factor_names / factor_sizes / factor_values / categorical_factors of the
    free factors (base order; a strided or ranged factor's sizes and values are its kept
    classes'); observation_shape and name of `base` (images are base images); `free` the
    base columns of the free factors, int64 (k_free,); `class_strides` {name: stride} and
    `class_ranges` {name: (start, stop)} as given.
    """

    def __init__(self, base: GroundTruthData, fixed: Mapping[str, int],
                 strides: Mapping[str, int] | None = None,
                 ranges: Mapping[str, Sequence[int]] | None = None):
        self.base = base
        self.fixed = check_fixed_factors(base, fixed)
        self.class_strides = check_factor_strides(base, strides, self.fixed)
        self.class_ranges = check_factor_ranges(base, ranges, self.fixed)
        names = list(base.factor_names)
        self.free = np.array([j for j, n in enumerate(names) if n not in self.fixed],
                             dtype=np.int64)
        self.factor_names = tuple(names[j] for j in self.free)
        kept = [range(*self.class_ranges.get(names[j], (0, int(base.factor_sizes[j]))),
                      self.class_strides.get(names[j], 1)) for j in self.free]
        short = [f"{names[j]} keeps {len(r)}" for j, r in zip(self.free, kept) if len(r) < 3]
        if short:
            raise ConfigError(f"factor_strides with factor_ranges: {', '.join(short)} "
                              "class(es); expected at least 3 of each free factor")
        self._starts = np.array([r.start for r in kept], np.int64)
        self._steps = np.array([r.step for r in kept], np.int64)
        self.factor_sizes = tuple(len(r) for r in kept)
        self.factor_values = tuple(np.asarray(base.factor_values[j])[r.start:r.stop:r.step]
                                   for j, r in zip(self.free, kept))
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
        full[:, self.free] = self._starts + factors * self._steps
        return full

    def observations_from_factors(self, factors, rng=None) -> np.ndarray:
        """Base images float32 (n, *observation_shape) in [0, 1] of reduced classes (n, k_free)."""
        return self.base.observations_from_factors(self.full_factors(factors), rng)

    def describe(self) -> dict:
        return {**self.base.describe(), **super().describe(), "fixed_factors": dict(self.fixed),
                **({"factor_strides": dict(self.class_strides)} if self.class_strides else {}),
                **({"factor_ranges": {n: list(r) for n, r in self.class_ranges.items()}}
                   if self.class_ranges else {})}

    def with_fixed(self, name: str, cls: int) -> "FactorSubset":
        """The same reduction of `base` (strides, ranges) with fixed factor `name` at `cls`."""
        return FactorSubset(self.base, {**self.fixed, name: cls}, self.class_strides,
                            self.class_ranges)

    def __repr__(self) -> str:
        strides = f", strides={self.class_strides}" if self.class_strides else ""
        ranges = f", ranges={self.class_ranges}" if self.class_ranges else ""
        return (f"FactorSubset({self.base.name}, fixed={self.fixed}{strides}{ranges}, "
                f"sizes={list(self.factor_sizes)})")
