import numpy as np
import pytest

from benchmark.metrics import codes as codes_lib
from benchmark.metrics.dci import completeness, dci_from_codes, disentanglement
from benchmark.metrics.mig import mig_from_codes


def _factors(n=3000, sizes=(4, 6, 10), seed=0):
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(0, s, n) for s in sizes], axis=1)


def test_mig_perfect_monotone_code_is_one_and_permutation_invariant():
    f = _factors()
    # Monotone transforms that keep the classes in distinct histogram bins (dlib's
    # 20-bin estimator merges classes a strongly compressive transform squeezes together).
    codes = np.stack([f[:, 0] * 2.0 - 3, np.log1p(f[:, 1]), -np.sqrt(f[:, 2])], axis=1)
    # Finite-sample MI between independent variables is slightly positive.
    assert mig_from_codes(f, codes)["mig"] == pytest.approx(1.0, abs=0.01)
    assert mig_from_codes(f, codes[:, [2, 0, 1]]) == mig_from_codes(f, codes)


def test_mig_of_noise_is_near_zero_and_duplicates_kill_the_gap():
    f = _factors()
    noise = np.random.default_rng(1).normal(size=(3000, 3))
    assert mig_from_codes(f, noise)["mig"] < 0.03
    dup = np.stack([f[:, 0], f[:, 0], f[:, 1], f[:, 2]], 1).astype(float)
    per_factor = mig_from_codes(f, dup)["mig_per_factor"]
    assert per_factor[0] == pytest.approx(0.0, abs=1e-9)
    assert per_factor[1] == pytest.approx(1.0, abs=0.01)
    assert per_factor[2] == pytest.approx(1.0, abs=0.01)


def test_mig_hand_computed():
    # Two factors with 2 classes; dim 0 copies factor 0; dim 1 agrees with factor 1 on 3 of 4.
    f = np.array([[0, 0], [0, 1], [1, 0], [1, 1]] * 25)
    z = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]] * 25)
    out = mig_from_codes(f, z, num_bins=2)
    h = np.log(2)
    # I(z1; v1): joint over (z1, v1) = {(0,0): 1/2, (1,1): 1/4, (0,1): 1/4}.
    i11 = 0.5 * np.log(0.5 / (0.75 * 0.5)) + 0.25 * np.log(0.25 / (0.25 * 0.5)) \
        + 0.25 * np.log(0.25 / (0.75 * 0.5))
    # By symmetry I(z1; v0) = I(z1; v1) and I(z0; v1) = 0.
    assert out["mig_per_factor"][0] == pytest.approx((h - i11) / h)
    assert out["mig_per_factor"][1] == pytest.approx(i11 / h)


def test_dci_entropies_hand_computed():
    perfect = np.eye(3)
    assert disentanglement(perfect) == pytest.approx(1.0)
    assert completeness(perfect) == pytest.approx(1.0)
    uniform = np.ones((3, 3))
    assert disentanglement(uniform) == pytest.approx(0.0)
    assert completeness(uniform) == pytest.approx(0.0)
    # One dim split evenly over two of three factors, the other dims perfect.
    r = np.array([[0.5, 0.5, 0.0], [0.5, 0.0, 0.0], [0.0, 0.5, 1.0]])
    row_h = [np.log(2) / np.log(3), 0.0, -(1 / 3 * np.log(1 / 3) + 2 / 3 * np.log(2 / 3)) / np.log(3)]
    rho = r.sum(1) / r.sum()
    assert disentanglement(r) == pytest.approx(np.sum(rho * (1 - np.array(row_h))))


@pytest.mark.slow
def test_dci_perfect_duplicate_and_seeded():
    f = _factors(1200)
    rng = np.random.default_rng
    z = f.astype(float) + np.random.default_rng(2).normal(0, 0.05, f.shape)
    out = dci_from_codes(f[:800], z[:800], f[800:], z[800:], rng(0))
    assert out["dci_disentanglement"] > 0.9 and out["dci_completeness"] > 0.9
    assert out["dci_informativeness_test"] > 0.95
    again = dci_from_codes(f[:800], z[:800], f[800:], z[800:], rng(0))
    assert again == out
    dup = np.concatenate([z, z[:, :1] + 0.01], axis=1)
    out_dup = dci_from_codes(f[:800], dup[:800], f[800:], dup[800:], rng(0))
    assert out_dup["dci_completeness"] < out["dci_completeness"] - 0.05
    assert out_dup["dci_disentanglement"] > 0.85
    noise = np.random.default_rng(3).normal(size=(1200, 3))
    assert dci_from_codes(f[:800], noise[:800], f[800:], noise[800:],
                          rng(0))["dci_disentanglement"] < 0.2


def test_bad_inputs_are_clear_errors():
    f = _factors(100)
    z = np.random.default_rng(0).normal(size=(100, 3))
    with pytest.raises(codes_lib.MetricInputError, match="NaN/inf"):
        mig_from_codes(f, np.where(z > 2, np.nan, z))
    with pytest.raises(codes_lib.MetricInputError, match=r"shape \(n, d\), d >= 1"):
        mig_from_codes(f, z[:, 0])
    with pytest.raises(codes_lib.MetricInputError, match="as many factor rows"):
        mig_from_codes(f, z[:50])
    with pytest.raises(codes_lib.MetricInputError, match="single value"):
        mig_from_codes(np.zeros((100, 2), int), z)
    with pytest.raises(codes_lib.MetricInputError, match="at least 2 samples"):
        mig_from_codes(f[:1], z[:1])
    constant = z.copy()
    constant[:, 1] = 4.0
    assert np.isfinite(mig_from_codes(f, constant)["mig"])


def test_dci_hist_gbt_agrees_with_exact_gbt_on_structure():
    f = _factors(1200)
    z = f.astype(float) + np.random.default_rng(2).normal(0, 0.05, f.shape)
    dup = np.concatenate([z, z[:, :1] + 0.01], axis=1)
    fast = dci_from_codes(f[:800], dup[:800], f[800:], dup[800:], np.random.default_rng(0),
                          classifier="hist_gbt")
    exact = dci_from_codes(f[:800], dup[:800], f[800:], dup[800:], np.random.default_rng(0),
                           classifier="gbt")
    assert abs(fast["dci_disentanglement"] - exact["dci_disentanglement"]) < 0.1
    assert abs(fast["dci_completeness"] - exact["dci_completeness"]) < 0.1
    assert fast["dci_informativeness_test"] > 0.95
    importance = np.array(fast["dci_importance_matrix"])
    np.testing.assert_allclose(importance.sum(axis=0), 1.0)
    with pytest.raises(ValueError, match="'gbt', 'hist_gbt' or 'random_forest'"):
        dci_from_codes(f[:800], z[:800], f[800:], z[800:], np.random.default_rng(0), "svm")
