"""Known answers of the linear-readout informativeness (benchmark/metrics/dci.py): a
rotated linear code is read as well as an aligned one, where DCI-I is not; a code that
loses information loses it under both; a non-linear code loses nothing to the readout."""

import functools

import numpy as np
import pytest

from benchmark import metrics
from benchmark.metrics import codes as codes_lib
from benchmark.metrics.dci import dci_from_codes, linear_readout, readout_informativeness

N_TRAIN, N_TEST, CLASSES = 1500, 600, 16


def _plane_code(theta_deg: float, noise_sd: float, seed: int = 0):
    """(factors (n, 2) of CLASSES classes, codes (n, 2)): the factors scaled to [-1, 1],
    plus noise of `noise_sd` class steps, turned by theta_deg."""
    rng = np.random.default_rng(seed)
    factors = rng.integers(0, CLASSES, size=(N_TRAIN + N_TEST, 2))
    steps = 2.0 / (CLASSES - 1)
    plane = factors * steps - 1 + rng.normal(0, noise_sd * steps, size=factors.shape)
    t = np.radians(theta_deg)
    rotation = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    return factors, plane @ rotation.T


@functools.lru_cache(maxsize=None)
def _plane_scores(theta_deg: float, noise_sd: float) -> tuple[float, float]:
    """_scores of _plane_code (deterministic; several tests read the aligned plane's)."""
    return _scores(*_plane_code(theta_deg, noise_sd))


def _scores(factors, codes):
    split = (factors[:N_TRAIN], codes[:N_TRAIN], factors[N_TRAIN:], codes[N_TRAIN:])
    plain = dci_from_codes(*split, np.random.default_rng(1))["dci_informativeness_test"]
    read = readout_informativeness(*split, np.random.default_rng(1))
    return plain, read["dci_readout_informativeness_test"]


def test_a_rotated_code_costs_dci_i_but_not_the_readout():
    aligned_plain, aligned_read = _plane_scores(0, 0.3)
    turned_plain, turned_read = _plane_scores(45, 0.3)
    assert aligned_plain - turned_plain > 0.15             # the axis-aligned trees' cost
    assert abs(aligned_read - turned_read) < 0.04          # the same information, read alike
    assert aligned_read == pytest.approx(aligned_plain, abs=0.04)


def test_lost_information_is_lost_under_the_readout_too():
    _, kept = _plane_scores(0, 0.3)
    _, lost = _plane_scores(0, 2.0)
    assert kept - lost > 0.3


def test_a_non_linear_code_keeps_what_the_trees_read():
    factors, codes = _plane_code(0, 0.3)
    folded = np.abs(codes)                         # not monotone in either factor
    plain, read = _scores(factors, folded)
    assert read >= plain - 0.03


def test_readout_is_the_same_for_any_invertible_linear_map():
    factors, codes = _plane_code(20, 0.3)
    mixed = codes @ np.array([[2.0, 0.5], [-1.0, 3.0]]) + 7.0
    for a, b in zip(linear_readout(factors[:N_TRAIN], codes[:N_TRAIN], codes[N_TRAIN:]),
                    linear_readout(factors[:N_TRAIN], mixed[:N_TRAIN], mixed[N_TRAIN:])):
        np.testing.assert_allclose(a, b, atol=1e-8)


def test_registry_entry_shares_dci_settings_and_rejects_bad_codes():
    factors, codes = _plane_code(0, 0.3)
    scores = metrics.evaluate_codes(factors, codes, names=["dci_readout"])["dci_readout"]
    assert set(scores) == {"dci_readout_informativeness_train",
                           "dci_readout_informativeness_test"}
    assert 0.5 < scores["dci_readout_informativeness_test"] <= 1.0
    with pytest.raises(codes_lib.MetricInputError, match="dci_readout"):
        readout_informativeness(factors[:10], codes[:10, :1], factors[10:20], codes[10:20],
                                np.random.default_rng(0))
