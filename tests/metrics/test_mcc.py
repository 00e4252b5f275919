import numpy as np
import pytest
from scipy import stats

from benchmark.metrics import MetricInputError, evaluate_codes
from benchmark.metrics.mcc import correlation_matrix, mcc_from_codes


def test_mcc_perfect_monotone_permuted_and_noise():
    rng = np.random.default_rng(0)
    sources = rng.uniform(-1, 1, (2000, 3))
    codes = np.exp(2 * sources[:, [2, 0, 1]])           # permuted, monotone, nonlinear
    spearman = mcc_from_codes(sources, codes, "spearman")
    assert spearman["mcc_spearman"] == pytest.approx(1.0)
    assert sorted(spearman["mcc_spearman_matching"]) == [[0, 2], [1, 0], [2, 1]]
    assert 0.8 < mcc_from_codes(sources, codes, "pearson")["mcc_pearson"] < 0.99
    noise = rng.normal(size=(2000, 3))
    assert mcc_from_codes(sources, noise)["mcc_spearman"] < 0.1


def test_mcc_hand_computed_matching_and_constant_dim():
    rng = np.random.default_rng(1)
    s = rng.normal(size=(500, 2))
    z = np.stack([s[:, 1] + 0.5 * s[:, 0], s[:, 0], np.full(500, 3.0)], axis=1)
    corr = correlation_matrix(z, s, "pearson")
    expected = np.abs([[stats.pearsonr(z[:, i], s[:, j])[0] for j in range(2)]
                       for i in range(2)])
    np.testing.assert_allclose(corr[:2], expected, atol=1e-12)
    assert np.all(corr[2] == 0.0)                        # a constant dim correlates 0
    out = mcc_from_codes(s, z, "pearson")
    # The best one-to-one matching: dim 1 <-> source 0 (|r| = 1), dim 0 <-> source 1.
    assert sorted(out["mcc_pearson_matching"]) == [[0, 1], [1, 0]]
    assert out["mcc_pearson"] == pytest.approx((1.0 + expected[0, 1]) / 2)


def test_mcc_bad_input_and_registry():
    with pytest.raises(MetricInputError, match="as many source rows"):
        mcc_from_codes(np.zeros((10, 2)), np.zeros((9, 2)))
    with pytest.raises(MetricInputError, match="NaN"):
        mcc_from_codes(np.ones((10, 2)), np.full((10, 2), np.nan))
    with pytest.raises(ValueError, match="'pearson' or 'spearman'"):
        mcc_from_codes(np.ones((10, 2)), np.ones((10, 2)), "kendall")
    f = np.random.default_rng(2).integers(0, 5, (300, 2))
    scores = evaluate_codes(f, f + 0.1, names=["mcc"])["mcc"]
    assert scores["mcc_spearman"] == pytest.approx(1.0) and scores["mcc_pearson"] > 0.99


@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1e150, 1e300])
def test_mcc_is_scale_invariant(scale):
    rng = np.random.default_rng(3)
    sources = rng.integers(0, 6, (400, 3))
    codes = sources[:, [1, 2, 0]] * 0.3 + rng.normal(size=(400, 3))  # partly informative
    plain = {m: mcc_from_codes(sources, codes, m) for m in ("pearson", "spearman")}
    assert 0.05 < plain["pearson"]["mcc_pearson"] < 0.9          # neither 0 nor 1
    for method, expected in plain.items():
        scaled = mcc_from_codes(sources, codes * scale, method)
        assert scaled[f"mcc_{method}"] == pytest.approx(expected[f"mcc_{method}"], rel=1e-9)
        assert scaled[f"mcc_{method}_matching"] == expected[f"mcc_{method}_matching"]
    shifted = mcc_from_codes(sources, codes * scale + 5 * scale, "pearson")["mcc_pearson"]
    assert shifted == pytest.approx(plain["pearson"]["mcc_pearson"], rel=1e-9)
