"""The 'rotated' variant: the same factors, the sprite drawn turned by K orientation classes.

A reduced dSprites with its orientation fixed (`data.fixed_factors = {'shape': 1, 'scale':
5, 'orientation': 0}`, the ellipse of the geometry battery) has one image per (posX, posY).
`rotated@K` renders every one of those images with the sprite turned by K classes of
dSprites' orientation (linspace(0, 2 pi, 40): 2 pi / 39 = 9.23 degrees a class), nothing
else changed: the factors, their number of classes and every image's identity (a rigid
sprite at the same position) are kept, so any code of the original factors is as
available as before; what changes is the local geometry of the images. The ellipse's
steps along posX and posY (benchmark.data.oracle.local_factor_gram) have their principal
axis on posY at orientation 0 (correlation 0.000, eigenvalue ratio 1.86); `rotated@5`
(46 degrees) turns it to 41.8 degrees (correlation 0.42, ratio 2.46), `rotated@10` (92
degrees) to 175.6 degrees, back on an axis (posX) at a larger change of the images
(energy 212 against 166 per image). A code that follows the local principal axes (paper
002 sec. 3.3; Rolinek et al. 2019) turns to the diagonal on `rotated@5` and stays on the
axes on `rotated@10`: a perturbation of the local structure that keeps the information,
the suite's own construction (paper 002 does not use it).

It needs a dataset whose 'orientation' is fixed (a `FactorSubset`) and a turned class that
exists (orientation + K <= 39): over a free orientation a shift of classes is not a
rotation of the dataset (classes 0 and 39 are the same image).
"""

from __future__ import annotations

import math

import numpy as np

from benchmark.core.errors import ConfigError
from benchmark.data.ground_truth import GroundTruthData
from benchmark.data.subset import FactorSubset

FACTOR = "orientation"


class RotatedSprites(GroundTruthData):
    """`data` (a FactorSubset with its orientation fixed) with every image's sprite turned
    by `classes` orientation classes. Same factors, sizes and indices as `data`; images
    float32 (n, 64, 64, c) in [0, 1] as the base renders them.

    Args:
      data: the reduced dataset the arm varies (its `fixed` holds 'orientation').
      classes: how many orientation classes to turn by, an integer >= 1 given as a number
        (data.eps: `rotated@5`).
    """

    variant = "rotated"

    def __init__(self, data: GroundTruthData, classes):
        if getattr(data, "name", None) != "dsprites":   # shapes3d's orientation: the camera
            raise ConfigError("the 'rotated' variant turns dSprites' sprite (its orientation "
                              f"classes in radians), found dataset "
                              f"{getattr(data, 'name', type(data).__name__)!r}")
        if not isinstance(data, FactorSubset) or FACTOR not in data.fixed:
            raise ConfigError(
                "the 'rotated' variant turns the sprite of a dataset whose orientation is "
                "fixed: expected data.fixed_factors to name 'orientation' (e.g. {'shape': 1, "
                f"'scale': 5, 'orientation': 0}}), found {getattr(data, 'fixed', 'none')}")
        if classes is None:
            raise ConfigError("the 'rotated' variant needs its turn as data.eps (orientation "
                              "classes, e.g. rotated@5), found none")
        value = float(classes)
        if not (math.isfinite(value) and value == round(value) and value >= 1):
            raise ConfigError(f"rotated: expected a whole number of orientation classes >= 1 "
                              f"as data.eps (rotated@5), found {classes!r}")
        names = list(data.base.factor_names)
        size = int(data.base.factor_sizes[names.index(FACTOR)])
        start = data.fixed[FACTOR]
        turned = start + int(value)
        if turned > size - 1:
            raise ConfigError(f"rotated@{int(value)}: orientation {start} + {int(value)} = "
                              f"{turned} is not a class of {data.name}'s orientation (0..{size - 1})")
        values = np.asarray(data.base.factor_values[names.index(FACTOR)], dtype=np.float64)
        turn = float(values[turned] - values[start]) % (2 * math.pi)
        if min(turn, 2 * math.pi - turn) < 1e-6:
            raise ConfigError(f"rotated@{int(value)}: orientation {start} + {int(value)} = "
                              f"{turned} draws the same sprite as orientation {start} (a "
                              "turn of 2 pi): it is the original under another name")
        self.base = data      # the unturned data (what a change is measured against)
        self.classes = int(value)
        self.eps = float(self.classes)
        self.rotation_deg = float(np.degrees(values[turned] - values[start]))
        self.rendered = data.with_fixed(FACTOR, turned)
        self.adopt_grid(data)

    def observations_from_factors(self, factors, rng=None) -> np.ndarray:
        return self.rendered.observations_from_factors(factors, rng)

    def describe(self) -> dict:
        return {**self.base.describe(), "variant": self.variant, "eps": self.eps,
                "rotation_deg": self.rotation_deg,
                "rendered_orientation": self.rendered.fixed[FACTOR]}
