"""The known-answer invariant encoder (examples/centroid_codes.py): on the geometry
battery's arms its codes are those of the original images, row for row (checked on the
rendered arms, not assumed), and it scores the factors it is built to read."""

import importlib.util

import numpy as np
import pytest

from benchmark.data import dsprites, make_variant
from benchmark.data.subset import FactorSubset
from tests.cli import ROOT


def _centroid():
    spec = importlib.util.spec_from_file_location("centroid_codes",
                                                  ROOT / "examples" / "centroid_codes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("variant, eps", [("wave", 0.3), ("wave_texture", 0.3),
                                          ("noisy", 0.3675), ("wave", 0.1)])
def test_every_battery_arm_thresholds_back_to_the_same_sprite(variant, eps):
    centroid = _centroid()
    base = FactorSubset(dsprites.DSprites(source="procedural"),
                        {"shape": 1, "scale": 5, "orientation": 0})
    arm = make_variant(base, variant, eps=eps)
    indices = np.arange(0, base.num_images, 7)
    original = centroid.codes_of(base.images(indices)[..., 0])
    perturbed = centroid.codes_of(arm.images(indices)[..., 0])
    np.testing.assert_array_equal(perturbed, original)
    factors = base.factors_of(indices)                       # (posX, posY) classes
    assert np.corrcoef(original[:, 1], factors[:, 0])[0, 1] > 0.99   # column follows posX
    assert np.corrcoef(original[:, 0], factors[:, 1])[0, 1] > 0.99   # row follows posY
