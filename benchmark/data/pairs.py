"""Pairs of ground-truth factors for SlowVAE and PCL (time-contrastive methods).

Klindt et al.'s own sampler (bethgelab/slow_disentanglement, scripts/dataset.py,
`truncated_laplace`), acting on factor *classes*: for each
factor j, x_{t+1}'s class is drawn from the Laplace pdf centred on the current class c_t
with scale log(size_j) / rate, *evaluated on the grid 0..size_j - 1 and renormalised* (so
edges reflect no mass outward, unlike rounding and clipping). Categorical factors (shape)
never change. If no factor changed, one non-categorical factor, chosen uniformly, is redrawn
from the same grid pdf with its current class excluded, so no pair is two identical images.
The rate is lambda = 6 in paper 002's Table 2 settings.
PCL (Hyvarinen & Morioka 2017; paper 002 sec. 5.1) contrasts real pairs with pairs whose
second element is an independent uniform draw (`negative_factors`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from benchmark.data.ground_truth import GroundTruthData, as_factor_array

DEFAULT_RATE = 6.0


def laplace_scales(factor_sizes, rate: float = DEFAULT_RATE) -> np.ndarray:
    """Laplace scale log(size) / rate of each factor's class transition; float64 (k,)."""
    if rate <= 0:
        raise ValueError(f"Laplace rate must be > 0, found {rate}")
    return np.log(np.asarray(factor_sizes, dtype=np.float64)) / rate


def grid_laplace(current: np.ndarray, size: int, scale: float,
                 exclude_current: bool = False) -> np.ndarray:
    """Rows P[i, x] proportional to the Laplace pdf(x; current[i], scale) on the grid
    0..size-1, renormalised; float64 (n, size). With `exclude_current` the current class
    has probability 0 (the no-change redraw). Densities are taken relative to the nearest
    allowed class, so tiny scales never underflow to an all-zero row."""
    distance = np.abs(np.arange(size)[None, :] - np.asarray(current)[:, None]).astype(float)
    if exclude_current:
        distance[distance == 0] = np.inf
    nearest = distance.min(axis=1, keepdims=True)
    density = np.exp(-(distance - nearest) / max(scale, 1e-300))   # 1/(2 scale) cancels
    return density / density.sum(axis=1, keepdims=True)


def _draw(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One class per row of probabilities (n, size) by inverse CDF; int64 (n,)."""
    cdf = np.cumsum(probabilities, axis=1)
    u = rng.random(len(probabilities)) * cdf[:, -1]
    return np.minimum((u[:, None] >= cdf).sum(axis=1), probabilities.shape[1] - 1)


def next_factors(factors, factor_sizes, rng: np.random.Generator,
                 rate: float = DEFAULT_RATE,
                 categorical: Sequence[bool] | None = None) -> np.ndarray:
    """Factor classes int64 (n, k) one transition after `factors` (n, k).

    `categorical` (k,) marks factors that never change (default: none). Every row differs
    from its start in at least one factor whenever some non-categorical factor has more
    than one class.
    """
    factors = as_factor_array(factors, factor_sizes)
    sizes = [int(s) for s in factor_sizes]
    fixed = np.zeros(len(sizes), bool) if categorical is None else np.asarray(categorical, bool)
    if fixed.shape != (len(sizes),):
        raise ValueError(f"expected {len(sizes)} categorical flags, found {fixed.shape}")
    scales = laplace_scales(sizes, rate)
    moved = factors.copy()
    for j in np.flatnonzero(~fixed & (np.asarray(sizes) > 1)):
        moved[:, j] = _draw(grid_laplace(factors[:, j], sizes[j], scales[j]), rng)
    movable = np.flatnonzero(~fixed & (np.asarray(sizes) > 1))
    unchanged = np.flatnonzero((moved == factors).all(axis=1))
    if len(unchanged) and len(movable):
        chosen = movable[rng.integers(0, len(movable), size=len(unchanged))]
        for j in np.unique(chosen):
            rows = unchanged[chosen == j]
            moved[rows, j] = _draw(grid_laplace(factors[rows, j], sizes[j], scales[j],
                                                exclude_current=True), rng)
    return moved


def categorical_mask(data: GroundTruthData) -> np.ndarray:
    """bool (k,): which of `data`'s factors are categorical (never changed in a pair)."""
    return np.isin(np.asarray(data.factor_names), list(data.categorical_factors))


def sample_pairs(data: GroundTruthData, n: int, rng: np.random.Generator,
                 rate: float = DEFAULT_RATE) -> tuple[np.ndarray, np.ndarray]:
    """(factors_t, factors_t+1), each int64 (n, k); factors_t uniform on the grid."""
    first = data.sample_factors(n, rng)
    return first, next_factors(first, data.factor_sizes, rng, rate, categorical_mask(data))


def negative_factors(data: GroundTruthData, n: int, rng: np.random.Generator) -> np.ndarray:
    """Independent uniform factor classes int64 (n, k): PCL's shuffled partner of x_t."""
    return data.sample_factors(n, rng)
