import numpy as np
import pytest

from benchmark.metrics.codes import MetricInputError
from benchmark.metrics.perturbation_share import perturbation_share


def _images(seed=0, n=6):
    rng = np.random.default_rng(seed)
    clean = rng.uniform(0.2, 0.5, (n, 8, 8, 1))
    added = rng.uniform(-0.1, 0.1, (n, 8, 8, 1))
    return clean, clean + added, added


@pytest.mark.parametrize("fraction", [0.0, 0.4, 1.0])
def test_share_of_a_known_reconstruction(fraction):
    clean, perturbed, added = _images()
    out = perturbation_share(clean, perturbed, clean + fraction * added)
    assert out["share"] == pytest.approx(fraction, abs=1e-12)
    assert out["share_sd"] == pytest.approx(0.0, abs=1e-12)
    assert out["energy"] == pytest.approx(np.mean(np.sum(added ** 2, axis=(1, 2, 3))))
    assert out["images"] == 6


def test_noise_orthogonal_to_the_perturbation_does_not_count():
    clean, perturbed, added = _images()
    other = np.roll(added, 1, axis=0)             # another image's perturbation
    orth = other - (np.sum(other * added, axis=(1, 2, 3), keepdims=True)
                    / np.sum(added * added, axis=(1, 2, 3), keepdims=True)) * added
    out = perturbation_share(clean, perturbed, clean + 0.5 * added + orth)
    assert out["share"] == pytest.approx(0.5, abs=1e-12)
    assert out["error_to_clean"] == pytest.approx(out["error_to_perturbed"])  # halfway


def test_images_without_perturbation_are_left_out_and_none_is_refused():
    clean, perturbed, added = _images()
    perturbed[0] = clean[0]
    assert perturbation_share(clean, perturbed, perturbed)["images"] == 5
    with pytest.raises(MetricInputError, match="no perturbation to share"):
        perturbation_share(clean, clean, clean)


def test_mismatched_or_non_finite_images_are_refused():
    clean, perturbed, _ = _images()
    with pytest.raises(MetricInputError, match="of one shape"):
        perturbation_share(clean, perturbed, clean[:3])
    bad = perturbed.copy()
    bad[0, 0, 0, 0] = np.nan
    with pytest.raises(MetricInputError, match="finite"):
        perturbation_share(clean, bad, clean)
