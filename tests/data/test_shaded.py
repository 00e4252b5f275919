"""The 'shaded' controls: a ramp of light (along posX, or the diagonal) whose brightness is
drawn per image. They keep every image's identity and the local geometry's correlation
near 0, take the factors out of the pixels' top principal components, and leave a binary
sprite thresholded at 0.5 unchanged below eps 0.5."""

import numpy as np
import pytest

from benchmark.core.errors import ConfigError
from benchmark.data import dsprites, make_variant
from benchmark.data.oracle import local_factor_gram
from benchmark.data.subset import FactorSubset
from benchmark.data.variants import ShadedData, ramp_pattern

ELLIPSE = {"shape": 1, "scale": 5, "orientation": 0}


@pytest.fixture(scope="module")
def ellipse():
    return FactorSubset(dsprites.DSprites(source="procedural"), ELLIPSE)


def test_ramps_run_along_posx_or_the_diagonal():
    ramp = ramp_pattern((64, 64, 1))
    assert ramp.shape == (64, 64, 1) and ramp.dtype == np.float32
    assert ramp[0, 0, 0] == ramp[63, 0, 0] == 0.0 and ramp[0, 63, 0] == 1.0
    assert ramp[10, 21, 0] == ramp[50, 21, 0] == pytest.approx(21 / 63)
    diagonal = ramp_pattern((64, 64, 1), "diagonal")
    assert diagonal[0, 0, 0] == 0.0 and diagonal[-1, -1, 0] == 1.0
    assert diagonal[10, 20, 0] == diagonal[20, 10, 0] == pytest.approx(30 / 126)
    with pytest.raises(ValueError, match="horizontal"):
        ramp_pattern((64, 64, 1), "vertical")


def test_the_horizontal_ramp_brightens_along_posx(ellipse):
    """dSprites' posX moves the sprite along the image's columns, so the 'shaded' ramp
    changes the sprite's contrast along posX and not along posY."""
    left, right = ellipse.observations_from_factors(np.array([[0, 16], [31, 16]]))[..., 0]
    assert np.nonzero(left.sum(0))[0].mean() < np.nonzero(right.sum(0))[0].mean()


@pytest.mark.parametrize("variant, direction", [("shaded", "horizontal"),
                                                ("shaded_diagonal", "diagonal")])
def test_shaded_images_are_the_sprite_plus_its_own_brightness_fixed_per_image(
        ellipse, variant, direction):
    arm = make_variant(ellipse, variant, eps=0.45, seed=3)
    assert isinstance(arm, ShadedData) and arm.factor_sizes == ellipse.factor_sizes
    indices = np.arange(0, ellipse.num_images, 7)
    factors = np.stack(np.unravel_index(indices, ellipse.factor_sizes), axis=1)
    clean = ellipse.observations_from_factors(factors)
    shaded = arm.observations_from_factors(factors)
    np.testing.assert_array_equal(shaded, arm.observations_from_factors(factors[::-1])[::-1])
    a = arm.brightness(factors)
    assert a.min() > 0.0 and a.max() < 1.0 and a.std() > 0.2     # U(0, 1): sd 0.29
    assert arm.direction == direction
    ramp = ramp_pattern(ellipse.observation_shape, direction)[None]
    expected = np.where(clean == 1, 1 - 0.45 * a[:, None, None, None] * ramp,
                        0.45 * a[:, None, None, None] * ramp)
    np.testing.assert_allclose(shaded, expected, atol=1e-6)
    # below eps 0.5 no pixel crosses 0.5: thresholding gives back the sprite
    np.testing.assert_array_equal(shaded >= 0.5, clean >= 0.5)
    other = make_variant(ellipse, variant, eps=0.45, seed=4)
    assert not np.allclose(other.brightness(factors), a)
    assert arm.describe()["variant"] == variant and arm.describe()["eps"] == 0.45
    assert arm.describe()["ramp"] == direction


@pytest.mark.parametrize("variant", ["shaded", "shaded_diagonal"])
def test_shading_keeps_the_local_correlation_near_zero(ellipse, variant):
    """The turned sprite moves the correlation of the factor steps to 0.42
    (test_rotated.py); the shadings leave it near 0 (measured 0.009 horizontal, 0.032
    diagonal at 0.45)."""
    arm = make_variant(ellipse, variant, eps=0.45)
    assert abs(local_factor_gram(arm, ("posX", "posY"))["correlation"]) < 0.06


def test_shading_takes_the_factors_out_of_the_top_principal_components(ellipse):
    """What a pixel-linear code sees: the factors' linear fit (R^2) on the pixels' top two
    principal components falls from 0.85 (the turned sprite: 0.82; noise of its energy:
    0.85) at 0.45, as the sprite's contrast, 1 - 2 eps a ramp, varies over the image and
    from image to image."""
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LinearRegression

    factors = np.stack(np.unravel_index(np.arange(ellipse.num_images), ellipse.factor_sizes),
                       axis=1)

    def fit(data):
        flat = data.observations_from_factors(factors).reshape(len(factors), -1)
        top = PCA(2, random_state=0).fit_transform(flat.astype(np.float64))
        return LinearRegression().fit(top, factors).score(top, factors)

    assert fit(ellipse) > 0.8
    assert fit(make_variant(ellipse, "shaded_diagonal", eps=0.45)) < 0.7     # 0.61
    assert fit(make_variant(ellipse, "shaded", eps=0.45)) < 0.75


@pytest.mark.parametrize("eps, message", [(None, "peak brightness"), (0.0, "eps"),
                                          (1.5, "eps")])
def test_shaded_refuses_a_missing_or_out_of_range_strength(ellipse, eps, message):
    with pytest.raises((ConfigError, ValueError), match=message):
        make_variant(ellipse, "shaded", eps=eps)
    with pytest.raises(ConfigError, match="takes no artefact"):
        make_variant(ellipse, "shaded", eps=0.45, artefact="somewhere")


def test_the_fixed_shading_is_the_same_ramp_in_every_image(ellipse):
    """'shaded_fixed': a = 1 everywhere, a texture with no nuisance to encode; the sprite
    still keeps its side of 0.5."""
    arm = make_variant(ellipse, "shaded_fixed", eps=0.45)
    factors = np.stack(np.unravel_index(np.arange(0, ellipse.num_images, 11),
                                        ellipse.factor_sizes), axis=1)
    clean = ellipse.observations_from_factors(factors)
    shaded = arm.observations_from_factors(factors)
    np.testing.assert_array_equal(arm.brightness(factors), 1.0)
    ramp = ramp_pattern(ellipse.observation_shape)[None]
    np.testing.assert_allclose(shaded, np.where(clean == 1, 1 - 0.45 * ramp, 0.45 * ramp),
                               atol=1e-6)
    np.testing.assert_array_equal(shaded >= 0.5, clean >= 0.5)
    assert arm.describe()["variant"] == "shaded_fixed"
    assert arm.describe()["fixed_brightness"] is True
