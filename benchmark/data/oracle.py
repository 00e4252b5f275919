"""The positive control of the game: a hand-built, w-dependent m(w) and its controls.

Paper 002 (sec. 4.1-4.4) says a small perturbation x' = reflect(x + eps m(w)) whose m varies
with the factors along a *mixed* direction makes beta-VAEs lose disentanglement. Before a
learned m can be judged, the pipeline must be shown to see such an effect at all. The
oracle arms, all `AdditivePerturbation`s (x' = reflect(x + eps * delta)), share one fixed
smooth full-image pattern

    P[r, c] = cos(2 pi (r + c + 1) / (H + W))      float32 (H, W, C) in [-1, 1]

(one period along the image diagonal, -1 on the anti-diagonal r + c = 63 and +1 in the
top-left and bottom-right corners; mean -0.405, mean |P| = 0.636 on 64 x 64):

- 'oracle'  (`OracleData`): m(w) = P * s(w), s = (x~ + y~) / 2, x~ and y~ the posX / posY
  classes scaled to [0, 1] (class / (size - 1)): w-dependent variance along the mixed
  direction x + y, the same for both factors.
- 'texture' (`TextureData`): m = P * E[s] (E over the uniform factor grid, 0.5 for
  posX x posY), the same delta for every image: the fixed-texture control that adds no
  variance along the factors.
- matched noise: `NoisyData` (paper 002 sec. 5.2) with the eps at which its mean |x' - x|
  equals the oracle's (`matched_noise_eps`).

On binary images (dSprites) reflection folds the sign of P away: a background pixel
becomes eps s |P| and a sprite pixel 1 - eps s |P|, so mean |x' - x| = eps E[s] mean|P|
exactly, 0.318 eps for the oracle and the texture arm alike.

Default strength ORACLE_EPS = 0.157 (measured, `arm_magnitudes`): the oracle's mean |x' - x|
is 0.0500 on the reduced dSprites, equal to paper 002's dSprites noise arm (uniform noise,
eps 0.1: 0.0500) and below the published CPU-scale modified artefact (eps 0.1: 0.062 on
full dSprites, 0.055 on the reduced one); the matched noise eps is then 0.09997, i.e.
paper 002's own noise setting (0.1: mean |x' - x| 0.04998). `python -m benchmark.data.oracle`
prints these numbers.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from benchmark.core.errors import ConfigError, cli_main, run_command
from benchmark.data.ground_truth import GroundTruthData, as_factor_array
from benchmark.data.variants import AdditivePerturbation, NoisyData, reflect

#: the free factors whose mean is the oracle's scalar s
ORACLE_FACTORS = ("posX", "posY")
#: default strength of the oracle and texture arms (module docstring)
ORACLE_EPS = 0.157
#: the reduced dSprites of the oracle study: square (class 0; its orientation 0 and 10, 20,
#: 30 render alike), largest scale (class 5: side 20 px), orientation 0; posX x posY free
ORACLE_FIXED_FACTORS = {"shape": 0, "scale": 5, "orientation": 0}
#: periods of the 'wave' arm's phase over s in [0, 1] (WaveData)
WAVE_PERIODS = 8


def oracle_pattern(observation_shape: Sequence[int]) -> np.ndarray:
    """P[r, c, :] = cos(2 pi (r + c + 1) / (H + W)): float32 (H, W, C) in [-1, 1], smooth,
    deterministic, the same in every channel."""
    height, width, channels = (int(v) for v in observation_shape)
    phase = (np.arange(height)[:, None] + np.arange(width)[None, :] + 1.0) / (height + width)
    pattern = np.cos(2.0 * np.pi * phase).astype(np.float32)
    return np.repeat(pattern[:, :, None], channels, axis=2)


def factor_columns(data: GroundTruthData, names: Sequence[str]) -> list[int]:
    """Columns of the free factors `names` in `data`; ValueError when one is missing."""
    missing = [n for n in names if n not in data.factor_names]
    if missing:
        raise ConfigError(f"the oracle perturbation needs the free factors {list(names)}; "
                         f"{data.name} has {list(data.factor_names)} (missing {missing})")
    return [list(data.factor_names).index(n) for n in names]


def mixed_scalar(data: GroundTruthData, factors, names: Sequence[str] = ORACLE_FACTORS
                 ) -> np.ndarray:
    """s(w) = mean over `names` of class / (size - 1): float64 (n,) in [0, 1]."""
    factors = as_factor_array(factors, data.factor_sizes)
    cols = factor_columns(data, names)
    spans = np.array([max(data.factor_sizes[j] - 1, 1) for j in cols], dtype=np.float64)
    return (factors[:, cols] / spans).mean(axis=1)


def directed_scalar(data: GroundTruthData, factors, direction_deg: float,
                    names: Sequence[str] = ORACLE_FACTORS) -> np.ndarray:
    """s(w) along a direction of the plane of two factors: with a~, b~ their classes
    scaled to [0, 1] and u = cos(theta) a~ + sin(theta) b~, s = (u - min u) / (max u -
    min u) over the unit square: float64 (n,) in [0, 1]. 45 degrees is `mixed_scalar`'s
    (a~ + b~) / 2, 0 follows factor a alone, 90 factor b alone."""
    factors = as_factor_array(factors, data.factor_sizes)
    cols = factor_columns(data, names)
    if len(cols) != 2:
        raise ConfigError(f"a wave direction needs two factors, found {list(names)}")
    spans = np.array([max(data.factor_sizes[j] - 1, 1) for j in cols], dtype=np.float64)
    scaled = factors[:, cols] / spans
    theta = np.radians(float(direction_deg))
    weights = np.array([np.cos(theta), np.sin(theta)])
    low = np.minimum(weights, 0.0).sum()
    high = np.maximum(weights, 0.0).sum()
    return (scaled @ weights - low) / (high - low)


def mean_mixed_scalar(data: GroundTruthData, names: Sequence[str] = ORACLE_FACTORS) -> float:
    """E[s] over the uniform factor grid (the training distribution): 0.5 for factors of
    more than one class."""
    cols = factor_columns(data, names)
    return float(np.mean([np.arange(data.factor_sizes[j]).mean()
                          / max(data.factor_sizes[j] - 1, 1) for j in cols]))


def constant_mixed_scalar(data: GroundTruthData, factors, names: Sequence[str] = ORACLE_FACTORS
                          ) -> np.ndarray:
    """E[s] for every row of `factors`: float64 (n,), the texture controls' scalar."""
    factors = as_factor_array(factors, data.factor_sizes)
    return np.full(len(factors), mean_mixed_scalar(data, names))


class OracleData(AdditivePerturbation):
    """Variant 'oracle': x' = reflect(x + eps P s(w)), delta = P s(w) float32
    (n, *observation_shape) in [-1, 1].

    Args:
      base: dataset with the free factors `factors` (posX, posY of dSprites or of its
        reduced version).
      eps: strength in (0, 1] (default ORACLE_EPS).
      factors: the factors averaged into s.
    """

    variant_name = "oracle"
    #: recorded in the dataset's metadata (the amplitude arms keep the text of their
    #: published runs, where s or E[s] scales P)
    pattern_description = "cos(2 pi (r + c + 1) / (H + W))"

    def __init__(self, base: GroundTruthData, eps: float | None = None,
                 factors: Sequence[str] = ORACLE_FACTORS):
        self.oracle_factors = tuple(factors)
        factor_columns(base, self.oracle_factors)
        self.pattern = oracle_pattern(base.observation_shape)
        super().__init__(base, self.oracle_delta, ORACLE_EPS if eps is None else eps,
                         variant=self.variant_name,
                         metadata={"oracle_factors": list(self.oracle_factors),
                                   "pattern": self.pattern_description})

    def scalar(self, factors) -> np.ndarray:
        """The pattern's amplitude per image, float64 (n,) in [0, 1]: s(w)."""
        return mixed_scalar(self.base, factors, self.oracle_factors)

    def oracle_delta(self, factors) -> np.ndarray:
        """P * amplitude: float32 (n, *observation_shape) in [-1, 1]."""
        amplitude = self.scalar(factors).astype(np.float32)
        return self.pattern[None] * amplitude[:, None, None, None]


class TextureData(OracleData):
    """Variant 'texture': the fixed-texture control, delta = P E[s] for every image
    (float32 (n, *observation_shape) in [-0.5, 0.5] for posX x posY)."""

    variant_name = "texture"

    def scalar(self, factors) -> np.ndarray:
        return constant_mixed_scalar(self.base, factors, self.oracle_factors)


def wave_delta(observation_shape: Sequence[int], phase: np.ndarray) -> np.ndarray:
    """cos(2 pi ((r + c + 1) / (H + W) + phase_i)): float32 (n, H, W, C) in [-1, 1], one
    image per phase (n,) (in periods): the pattern P shifted along the image diagonal."""
    height, width, channels = (int(v) for v in observation_shape)
    diagonal = (np.arange(height)[:, None] + np.arange(width)[None, :] + 1.0) / (height + width)
    waves = np.cos(2.0 * np.pi * (diagonal[None] + np.asarray(phase, np.float64)[:, None, None]))
    return np.repeat(waves.astype(np.float32)[..., None], channels, axis=3)


class WaveData(OracleData):
    """Variant 'wave' (the follow-up positive control, results/oracle_wave_cpu): the phase
    of P, not its amplitude, moves with s: delta = wave_delta(phase = WAVE_PERIODS s(w)),
    float32 (n, *observation_shape) in [-1, 1], mean |delta| 0.636 for every image.

    The amplitude oracle adds variance along x + y that is global and slow: between
    neighbouring images (one posX or posY class) its delta changes by eps P / 62, which adds
    almost nothing to the local pixel-space geometry a beta-VAE's axes follow (measured by
    `local_factor_gram`: the correlation of the posX and posY image differences is 0.031
    with the amplitude oracle, 0.026 on the reduced dSprites). A phase that turns
    WAVE_PERIODS times over s makes neighbouring images along x + y differ by a whole
    pattern shift, and the correlation 0.45 (eps 0.157, 8 periods): the local geometry
    then prefers the axes x + y and x - y."""

    variant_name = "wave"
    pattern_description = f"cos(2 pi ((r + c + 1) / (H + W) + {WAVE_PERIODS} s(w)))"

    def __init__(self, base: GroundTruthData, eps: float | None = None,
                 factors: Sequence[str] = ORACLE_FACTORS, direction_deg: float | None = None,
                 periods: float | None = None):
        """factors: the plane the phase moves in (two factor names; posX x posY by
        default). direction_deg: the phase moves along this direction of that plane, from
        its first factor (`directed_scalar`; e.g. an entangled reference's code direction); None: the
        diagonal, s = mean of the two scaled factors (the published arms). periods: turns of
        the phase over s in [0, 1] (None: WAVE_PERIODS, the published arms); fewer periods
        wrap the images' path along x + y fewer times, so the same local geometry needs a
        larger eps (2 periods at 0.3 turn it as far as 8 at 0.15)."""
        if periods is not None:
            if (isinstance(periods, bool) or not isinstance(periods, (int, float))
                    or not 0 < periods <= 64):
                raise ConfigError(f"data.wave_periods must be a number in (0, 64], found "
                                  f"{periods!r}")
            periods = float(periods)
        self.periods = WAVE_PERIODS if periods is None else periods
        if direction_deg is not None:
            if (isinstance(direction_deg, bool) or not isinstance(direction_deg, (int, float))
                    or not np.isfinite(direction_deg)):
                raise ConfigError(f"data.wave_direction must be a number of degrees, found "
                                  f"{direction_deg!r}")
            direction_deg = float(direction_deg) % 180.0
        self.direction_deg = direction_deg
        super().__init__(base, eps, factors)
        if direction_deg is not None:
            self.metadata = {**self.metadata, "wave_direction_deg": direction_deg}
        if periods is not None:       # named: a cache keyed on the metadata tells them apart
            self.metadata = {**self.metadata, "wave_periods": periods}
            self.pattern_description = self.pattern_description.replace(
                f"+ {WAVE_PERIODS} ", f"+ {periods:g} ")

    def scalar(self, factors) -> np.ndarray:
        if self.direction_deg is None:
            return super().scalar(factors)
        return directed_scalar(self.base, factors, self.direction_deg, self.oracle_factors)

    def phase(self, factors) -> np.ndarray:
        """Periods of the shift, float64 (n,) in [0, self.periods]."""
        return self.periods * self.scalar(factors)

    def oracle_delta(self, factors) -> np.ndarray:
        return wave_delta(self.observation_shape, self.phase(factors))


class WaveTextureData(WaveData):
    """Variant 'wave_texture': the wave's fixed-texture control, the phase WAVE_PERIODS
    E[s] for every image (the same |delta| as 'wave', no w-dependence)."""

    variant_name = "wave_texture"
    pattern_description = f"cos(2 pi ((r + c + 1) / (H + W) + {WAVE_PERIODS} E[s]))"

    def scalar(self, factors) -> np.ndarray:
        return constant_mixed_scalar(self.base, factors, self.oracle_factors)

ORACLE_VARIANTS = {"oracle": OracleData, "texture": TextureData, "wave": WaveData,
                   "wave_texture": WaveTextureData}


def make_oracle_variant(data: GroundTruthData, variant: str, eps: float | None = None,
                        wave_direction: float | None = None,
                        wave_periods: float | None = None,
                        wave_factors: Sequence[str] | None = None) -> OracleData:
    """`data` as an oracle arm at strength eps (default ORACLE_EPS); wave_direction,
    wave_periods and wave_factors: the 'wave' arms' direction, periods and plane (WaveData;
    None: posX x posY)."""
    if variant not in ORACLE_VARIANTS:
        raise ConfigError(f"unknown oracle variant {variant!r}; expected one of "
                         f"{', '.join(ORACLE_VARIANTS)}")
    if variant in ("wave", "wave_texture"):
        return ORACLE_VARIANTS[variant](data, eps, direction_deg=wave_direction,
                                        periods=wave_periods,
                                        factors=check_plane(wave_factors, "data.wave_factors"))
    return ORACLE_VARIANTS[variant](data, eps)


def check_plane(names, what: str) -> tuple[str, str]:
    """`names` as a plane of two distinct factor names (None: ORACLE_FACTORS); ConfigError
    naming `what` otherwise. Whether the dataset has them is checked where they are used
    (`factor_columns`)."""
    if names is None:
        return ORACLE_FACTORS
    if (isinstance(names, str) or not isinstance(names, Sequence) or len(names) != 2
            or not all(isinstance(n, str) for n in names) or names[0] == names[1]):
        raise ConfigError(f"{what}: expected two distinct factor names such as "
                          f"['posX', 'scale'], found {names!r}")
    return tuple(names)


def _grid_or_sample(data: GroundTruthData, num_images: int | None, seed: int) -> np.ndarray:
    """Every factor vector of the grid when num_images is None, else a uniform sample."""
    if num_images is None:
        return data.factors_of(np.arange(data.num_images))
    return data.sample_factors(int(num_images), np.random.default_rng(seed))


def mean_change(perturbed: AdditivePerturbation, num_images: int | None = None,
                seed: int = 0, batch_size: int = 512, power: int = 1) -> float:
    """mean |x' - x|^power over images and pixels (float in [0, 1]): power 1 the mean
    absolute change, power 2 the energy per pixel (what a squared-error objective sees;
    times the pixels of an image, the energy per image). Every image of the grid when
    num_images is None (fine for the 1,024-image reduced dSprites), else a seeded sample."""
    factors = _grid_or_sample(perturbed, num_images, seed)
    total = 0.0
    for start in range(0, len(factors), batch_size):
        chunk = factors[start:start + batch_size]
        diff = perturbed.observations_from_factors(chunk) - \
            perturbed.base.observations_from_factors(chunk)
        total += float((np.abs(diff, dtype=np.float64) ** power).sum())
    return total / (len(factors) * float(np.prod(perturbed.observation_shape)))


def mean_abs_change(perturbed: AdditivePerturbation, num_images: int | None = None,
                    seed: int = 0, batch_size: int = 512) -> float:
    """mean |x' - x| over images and pixels (`mean_change` with power 1)."""
    return mean_change(perturbed, num_images, seed, batch_size)


def matched_noise_eps(perturbed: AdditivePerturbation, noise_seed: int = 0,
                      num_images: int | None = None, seed: int = 0, rtol: float = 1e-5,
                      power: int = 1) -> float:
    """The eps of `NoisyData(perturbed.base, eps, noise_seed)` whose mean |x' - x|^power
    (power 1: mean absolute change; 2: energy) equals `perturbed`'s (same images: the
    grid, or the same seeded sample), by bisection on (0, 1] (the noise arm's change grows
    with eps). ValueError when even eps = 1 changes the images less than `perturbed`
    does."""
    target = mean_change(perturbed, num_images, seed, power=power)
    factors = _grid_or_sample(perturbed, num_images, seed)
    images = perturbed.base.observations_from_factors(factors)
    unit = NoisyData(perturbed.base, eps=1.0, seed=noise_seed).delta(factors)

    def change(eps: float) -> float:          # NoisyData's arithmetic, in float32
        noisy = unit * np.float32(eps)
        noisy += images
        return float((np.abs(reflect(noisy) - images, dtype=np.float64) ** power).mean())

    return bisect_eps(change, target, f"no noise eps in (0, 1] matches mean |x' - x|^{power}",
                      rtol)


def bisect_eps(change, target: float, what: str, rtol: float = 1e-5) -> float:
    """The eps in (0, 1] at which change(eps), growing with eps, equals `target`, by
    bisection to a relative width rtol; ValueError '<what> = target (eps 1 gives ...)' when
    even eps = 1 changes less."""
    low, high = 0.0, 1.0
    if change(high) < target:
        raise ValueError(f"{what} = {target:.5f} (eps 1 gives {change(high):.5f})")
    while high - low > rtol * high:
        middle = 0.5 * (low + high)
        low, high = (middle, high) if change(middle) < target else (low, middle)
    return 0.5 * (low + high)


def local_factor_gram(data: GroundTruthData, names: Sequence[str] = ORACLE_FACTORS,
                      num_images: int | None = None, seed: int = 0, batch_size: int = 256,
                      step: int = 1) -> dict:
    """The local pixel-space geometry of two factors: with the central differences
    d_a = x(w + `step` classes of factor a) - x(w - `step` classes) and d_b likewise (w
    where both can step both ways; every such w of the grid when num_images is None, else a
    seeded sample; central, so that a per-image term such as noise, shared by x(w) in
    forward differences, does not correlate them; step > 1 reads the geometry at the scale
    a posterior reaches, benchmark.metrics.posterior_reach),

        gram = [[E|d_a|^2, E<d_a, d_b>], [E<d_a, d_b>, E|d_b|^2]]   (float, pixel units)
        correlation = E<d_a, d_b> / sqrt(E|d_a|^2 E|d_b|^2)           in [-1, 1]

    A beta-VAE's axes follow the directions in which images change (Rolinek et al. 2019):
    a near-zero correlation leaves the factor axes as good as any rotation (posX and posY
    of a square: 0.026), a large one makes the axes a + b and a - b the principal ones.
    Returns {'factors', 'gram' (2 x 2 list), 'correlation', 'num_images'}."""
    if len(names) != 2:
        raise ValueError(f"local_factor_gram needs two factor names, found {list(names)}")
    if not isinstance(step, (int, np.integer)) or step < 1:
        raise ValueError(f"local_factor_gram: expected a step of 1 or more classes, found "
                         f"{step!r}")
    cols = factor_columns(data, names)
    factors = _grid_or_sample(data, num_images, seed)
    inner = factors[:, cols]
    factors = factors[np.all((inner >= step)
                             & (inner < np.asarray(data.factor_sizes)[cols] - step), axis=1)]
    if not len(factors):
        raise ValueError(f"local_factor_gram: no image of {list(names)} can step {step} "
                         "classes both ways; expected a smaller step")
    sums = np.zeros((2, 2))
    for start in range(0, len(factors), batch_size):
        chunk = factors[start:start + batch_size]
        steps = []
        for col in cols:
            ahead, behind = chunk.copy(), chunk.copy()
            ahead[:, col] += step
            behind[:, col] -= step
            steps.append(data.observations_from_factors(ahead).reshape(len(chunk), -1)
                         .astype(np.float64)
                         - data.observations_from_factors(behind).reshape(len(chunk), -1))
        for i in range(2):
            for j in range(2):
                sums[i, j] += float(np.einsum("np,np->", steps[i], steps[j]))
    gram = sums / max(len(factors), 1)
    scale = math.sqrt(gram[0, 0] * gram[1, 1])
    return {"factors": list(names), "gram": gram.tolist(),
            "correlation": float(gram[0, 1] / scale) if scale > 0 else 0.0,
            "num_images": int(len(factors))}


def arm_magnitudes(data: GroundTruthData, eps: float | None = None, noise_seed: int = 0,
                   num_images: int | None = None) -> dict:
    """{'eps', 'oracle', 'texture', 'noise_eps', 'noise'}: mean |x' - x| of each arm on
    `data` (oracle / texture at eps, noise at its matched eps)."""
    oracle = OracleData(data, eps)
    noise_eps = matched_noise_eps(oracle, noise_seed, num_images)
    return {"eps": oracle.eps, "oracle": mean_abs_change(oracle, num_images),
            "texture": mean_abs_change(TextureData(data, eps), num_images),
            "noise_eps": noise_eps,
            "noise": mean_abs_change(NoisyData(data, noise_eps, noise_seed), num_images)}


@cli_main
def main(argv) -> None:
    """Prints `arm_magnitudes` of the oracle study's reduced dSprites as JSON."""
    import json

    from benchmark.data import get_dataset
    from benchmark.data.subset import FactorSubset

    from absl import app

    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    reduced = FactorSubset(get_dataset("dsprites", "procedural"), ORACLE_FIXED_FACTORS)
    print(json.dumps(arm_magnitudes(reduced), indent=2))


if __name__ == "__main__":
    run_command(main)          # no flags of its own: absl's --helpfull and logging flags
