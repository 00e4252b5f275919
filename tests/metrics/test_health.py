import numpy as np
import pytest

from benchmark.metrics import codes as codes_lib
from benchmark.metrics.health import active_units, bernoulli_reconstruction_loss, psnr


def test_active_units_and_overpruning():
    variances = np.array([[0.1, 0.9, 1.0, 0.5]] * 10)
    out = active_units(variances, num_factors=3)
    assert out["active_units"] == 2 and out["overpruned"]
    assert not active_units(variances, num_factors=2)["overpruned"]
    with pytest.raises(codes_lib.MetricInputError, match=">= 0"):
        active_units(-variances, 3)


def test_psnr_on_floats():
    x = np.full((2, 4, 4, 1), 0.5)
    assert psnr(x, x + 0.1) == pytest.approx(20.0)
    assert psnr(x, x) == 100.0
    with pytest.raises(codes_lib.MetricInputError, match=r"in \[0, 1\]"):
        psnr(x * 255, x * 255)
    with pytest.raises(codes_lib.MetricInputError, match="same shape"):
        psnr(x, x[:1])


def test_bernoulli_loss_matches_direct_formula():
    rng = np.random.default_rng(0)
    x = rng.random((3, 5, 5, 1))
    logits = rng.normal(size=x.shape) * 3
    p = 1 / (1 + np.exp(-logits))
    direct = -(x * np.log(p) + (1 - x) * np.log(1 - p)).reshape(3, -1).sum(1).mean()
    assert bernoulli_reconstruction_loss(x, logits) == pytest.approx(direct)
