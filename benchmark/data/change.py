"""How much a variant changes the images, in the three sizes a comparison of arms needs:
L∞ (what paper 002 matched its noise control in), the mean |x' - x|
and the energy per image, Σ (x' - x)² over an image's pixels (what a squared-error
objective sees). At equal L∞ a saturated manipulation carries about twice the mean |Δx|
and three times the energy of uniform noise, so a report that names only one of them can
hide a difference in size behind a difference in kind.

Every image of the dataset is measured when it has at most SAMPLE_ABOVE images (the
1,024-image ellipse, Shapes3D's 480,000 are not), else a seeded uniform sample of SAMPLE
(seed 0, the same for every arm of a dataset)."""

from __future__ import annotations

import pathlib

import numpy as np

from benchmark.data.ground_truth import GroundTruthData

#: datasets with more images than this are measured on a seeded sample of SAMPLE images
SAMPLE_ABOVE, SAMPLE = 65536, 4096


def measured_factors(data: GroundTruthData, seed: int = 0) -> np.ndarray:
    """int64 (n, k): every factor vector of the grid when data has at most SAMPLE_ABOVE
    images, else SAMPLE uniform draws from np.random.default_rng(seed)."""
    if data.num_images <= SAMPLE_ABOVE:
        return data.factors_of(np.arange(data.num_images))
    return data.sample_factors(SAMPLE, np.random.default_rng(seed))


def arm_change(original: GroundTruthData, variant: GroundTruthData, batch_size: int = 512
               ) -> dict:
    """{'energy_per_image' (float >= 0, Σ over an image's pixels of (x' - x)², mean over
    images), 'mean_abs' (mean |x' - x| over images and pixels, in [0, 1]), 'linf' (the
    largest |x' - x|, in [0, 1]), 'images' (how many were measured)} of `variant` against
    `original` on `measured_factors(original)`; both must have the same factors and
    image shape."""
    if (tuple(variant.factor_sizes) != tuple(original.factor_sizes)
            or tuple(variant.observation_shape) != tuple(original.observation_shape)):
        raise ValueError(f"arm_change: expected a variant of the original dataset (factor "
                         f"sizes {list(original.factor_sizes)}, images "
                         f"{tuple(original.observation_shape)}), found "
                         f"{list(variant.factor_sizes)}, {tuple(variant.observation_shape)}")
    factors = measured_factors(original)
    energy, absolute, largest = 0.0, 0.0, 0.0
    for start in range(0, len(factors), batch_size):
        chunk = factors[start:start + batch_size]
        diff = (variant.observations_from_factors(chunk)
                - original.observations_from_factors(chunk)).astype(np.float64)
        energy += float((diff ** 2).sum())
        absolute += float(np.abs(diff).sum())
        largest = max(largest, float(np.abs(diff).max(initial=0.0)))
    pixels = float(np.prod(original.observation_shape))
    return {"energy_per_image": energy / len(factors),
            "mean_abs": absolute / (len(factors) * pixels), "linf": largest,
            "images": int(len(factors))}


def change_path(preview_png) -> pathlib.Path:
    """Where `python -m benchmark.data preview --out=X.png` writes a variant's arm_change:
    X.change.json beside the sheet."""
    return pathlib.Path(preview_png).with_suffix(".change.json")
