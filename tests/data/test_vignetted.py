"""The 'vignetted' control: every image times the same radial gain, 1 at the centre and
1 - eps in the corners. It keeps every image's identity, the black background and the
local geometry's directions, leaves a binary sprite thresholded at 0.5 unchanged below
eps 0.5, and re-weights the pixels' covariance that a pixel-linear code is fitted to."""

import numpy as np
import pytest

from benchmark.core.errors import ConfigError
from benchmark.data import dsprites, make_variant
from benchmark.data.oracle import local_factor_gram
from benchmark.data.subset import FactorSubset
from benchmark.data.variants import VignettedData, ramp_pattern

ELLIPSE = {"shape": 1, "scale": 5, "orientation": 0}


@pytest.fixture(scope="module")
def ellipse():
    return FactorSubset(dsprites.DSprites(source="procedural"), ELLIPSE)


def _grid(data, every=1):
    return np.stack(np.unravel_index(np.arange(0, data.num_images, every), data.factor_sizes),
                    axis=1)


def test_the_radial_pattern_is_0_at_the_centre_and_1_in_the_corners():
    radial = ramp_pattern((64, 64, 1), "radial")
    assert radial.shape == (64, 64, 1) and radial.dtype == np.float32
    assert radial[0, 0, 0] == radial[63, 63, 0] == radial[0, 63, 0] == pytest.approx(1.0)
    assert radial.min() == pytest.approx(np.sqrt(2 * (0.5 / 63) ** 2) / np.sqrt(0.5))
    assert radial[10, 20, 0] == pytest.approx(radial[20, 10, 0])            # symmetric
    assert radial[10, 20, 0] == pytest.approx(radial[53, 43, 0])


def test_vignetted_images_are_the_sprite_times_the_gain(ellipse):
    arm = make_variant(ellipse, "vignetted", eps=0.25)
    assert isinstance(arm, VignettedData) and arm.factor_sizes == ellipse.factor_sizes
    factors = _grid(ellipse, 5)
    clean = ellipse.observations_from_factors(factors)
    dark = arm.observations_from_factors(factors)
    gain = 1 - 0.25 * ramp_pattern(ellipse.observation_shape, "radial")
    np.testing.assert_allclose(dark, clean * gain[None], atol=1e-7)
    np.testing.assert_array_equal(dark, arm.observations_from_factors(factors[::-1])[::-1])
    assert (dark[clean == 0] == 0).all()                        # the background stays black
    assert dark[clean == 1].min() >= 0.75 and dark[clean == 1].max() <= 1.0
    # below eps 0.5 no sprite pixel falls below 0.5: thresholding gives back the sprite
    np.testing.assert_array_equal(dark >= 0.5, clean >= 0.5)
    assert arm.describe()["variant"] == "vignetted" and arm.describe()["eps"] == 0.25


def test_the_vignette_keeps_the_local_geometry(ellipse):
    """The turned sprite moves the correlation of the factor steps to 0.42 and its
    anisotropy to 0.42 (test_rotated.py); the vignette keeps both where the original has
    them (0.000, 0.300; measured 0.306 at eps 0.25)."""
    from perturbations.geometry import anisotropy

    original = local_factor_gram(ellipse, ("posX", "posY"))
    arm = local_factor_gram(make_variant(ellipse, "vignetted", eps=0.25), ("posX", "posY"))
    assert abs(arm["correlation"]) < 0.01
    assert abs(anisotropy(arm["gram"]) - anisotropy(original["gram"])) < 0.02


def test_the_vignette_takes_the_factors_out_of_the_top_principal_components(ellipse):
    """What a pixel-linear code sees: the sprite's brightness becomes a function of its
    distance from the centre, which the pixels' top principal component reads, so the
    factors' linear fit on the top two components falls."""
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LinearRegression

    factors = _grid(ellipse)

    def fit(data):
        flat = data.observations_from_factors(factors).reshape(len(factors), -1)
        top = PCA(2, random_state=0).fit_transform(flat.astype(np.float64))
        return LinearRegression().fit(top, factors).score(top, factors)

    assert fit(ellipse) > 0.8
    assert fit(make_variant(ellipse, "vignetted", eps=0.25)) < 0.5


@pytest.mark.parametrize("eps, message", [(None, "gain's fall"), (0.0, "eps"),
                                          (1.0, "erases"), (1.5, "eps")])
def test_vignetted_refuses_a_missing_or_out_of_range_strength(ellipse, eps, message):
    with pytest.raises(ConfigError, match=message):
        make_variant(ellipse, "vignetted", eps=eps)
    with pytest.raises(ConfigError, match="takes no artefact"):
        make_variant(ellipse, "vignetted", eps=0.25, artefact="somewhere")
