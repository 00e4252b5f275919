"""The 'rotated' variant: the same factors, the sprite drawn turned by K orientation
classes; it turns the local geometry of posX x posY and keeps every image's identity."""

import numpy as np
import pytest

from benchmark.core.errors import ConfigError
from benchmark.data import dsprites, load_data, make_variant
from benchmark.data.oracle import local_factor_gram
from benchmark.data.subset import FactorSubset

ELLIPSE = {"shape": 1, "scale": 5, "orientation": 0}


def _ellipse(**fixed):
    return FactorSubset(dsprites.DSprites(source="procedural"), {**ELLIPSE, **fixed})


def test_rotated_images_are_the_turned_sprite_at_the_same_factors():
    base = _ellipse()
    arm = make_variant(base, "rotated", eps=5.0)
    assert arm.factor_names == ("posX", "posY") and arm.factor_sizes == (32, 32)
    indices = np.arange(0, base.num_images, 37)
    np.testing.assert_array_equal(arm.images(indices), _ellipse(orientation=5).images(indices))
    assert not np.array_equal(arm.images(indices), base.images(indices))
    described = arm.describe()
    assert described["variant"] == "rotated" and described["eps"] == 5.0
    assert described["rendered_orientation"] == 5
    assert described["rotation_deg"] == pytest.approx(5 * 360 / 39)
    # from a fixed orientation other than 0 the turn is counted from it
    assert make_variant(_ellipse(orientation=3), "rotated", eps=2).rendered.fixed[
        "orientation"] == 5


def test_rotated_turns_the_local_geometry_to_the_diagonal_and_back_to_an_axis():
    """What the battery rests on, measured: the original's principal axis is posY
    (correlation 0), rotated@5 puts it near the diagonal, rotated@10 on posX again."""
    base = _ellipse()
    assert abs(local_factor_gram(base, ("posX", "posY"))["correlation"]) < 1e-6
    assert local_factor_gram(make_variant(base, "rotated", eps=5), ("posX", "posY"))[
        "correlation"] > 0.4
    assert abs(local_factor_gram(make_variant(base, "rotated", eps=10), ("posX", "posY"))[
        "correlation"]) < 0.06


@pytest.mark.parametrize("fixed, eps, message", [
    ({"shape": 1, "scale": 5}, 5, "orientation is fixed"),
    (ELLIPSE, None, "needs its turn"),
    (ELLIPSE, 2.5, "whole number"),
    (ELLIPSE, 0, "whole number"),
    (ELLIPSE, 40, "not a class"),
    (ELLIPSE, 39, "same sprite as orientation 0"),        # class 39 draws class 0's sprite
])
def test_rotated_refuses_what_is_not_a_rotation_in_one_line(fixed, eps, message):
    base = FactorSubset(dsprites.DSprites(source="procedural"), fixed)
    with pytest.raises(ConfigError, match=message):
        make_variant(base, "rotated", eps=eps)
    with pytest.raises(ConfigError, match="orientation is fixed"):
        load_data("dsprites", "rotated", source="procedural", eps=5)
    with pytest.raises(ConfigError, match="takes no artefact"):
        make_variant(_ellipse(), "rotated", eps=5, artefact="somewhere")


def test_rotated_refuses_shapes3d_whose_orientation_is_the_camera():
    from benchmark.data import shapes3d

    base = FactorSubset(shapes3d.Shapes3D(source="procedural"), {"orientation": 0})
    with pytest.raises(ConfigError, match="turns dSprites' sprite.*'shapes3d'"):
        make_variant(base, "rotated", eps=2)
