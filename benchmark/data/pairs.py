"""Pairs of ground-truth factors for SlowVAE and PCL (time-contrastive methods).

Transitions act on factor *classes*: x_{t+1}'s class of factor j is
clip(round(c_t + d_j), 0, size_j - 1) with d_j ~ Laplace(0, log(size_j) / rate)
(REFERENCE.md, SlowVAE pairs; Klindt et al. 2021, the natural-sparse-transition sampler of
their dSprites/Shapes3D experiments; rate lambda = 6 in paper 002 Table 2 settings).
PCL (Hyvarinen & Morioka 2017; paper 002 sec. 5.1) contrasts real pairs with pairs whose
second element is an independent uniform draw (`negative_factors`).
"""

from __future__ import annotations

import numpy as np

from benchmark.data.ground_truth import GroundTruthData, as_factor_array

DEFAULT_RATE = 6.0


def laplace_scales(factor_sizes, rate: float = DEFAULT_RATE) -> np.ndarray:
    """Laplace scale log(size) / rate of each factor's class transition; float64 (k,)."""
    if rate <= 0:
        raise ValueError(f"Laplace rate must be > 0, found {rate}")
    return np.log(np.asarray(factor_sizes, dtype=np.float64)) / rate


def next_factors(factors, factor_sizes, rng: np.random.Generator,
                 rate: float = DEFAULT_RATE) -> np.ndarray:
    """Factor classes int64 (n, k) one Laplace transition after `factors` (n, k)."""
    factors = as_factor_array(factors, factor_sizes)
    steps = rng.laplace(0.0, laplace_scales(factor_sizes, rate), size=factors.shape)
    moved = factors + np.rint(steps).astype(np.int64)
    return np.clip(moved, 0, np.asarray(factor_sizes, dtype=np.int64) - 1)


def sample_pairs(data: GroundTruthData, n: int, rng: np.random.Generator,
                 rate: float = DEFAULT_RATE) -> tuple[np.ndarray, np.ndarray]:
    """(factors_t, factors_t+1), each int64 (n, k); factors_t uniform on the grid."""
    first = data.sample_factors(n, rng)
    return first, next_factors(first, data.factor_sizes, rng, rate)


def negative_factors(data: GroundTruthData, n: int, rng: np.random.Generator) -> np.ndarray:
    """Independent uniform factor classes int64 (n, k): PCL's shuffled partner of x_t."""
    return data.sample_factors(n, rng)
