import numpy as np
import pytest

from benchmark.metrics import codes as codes_lib
from benchmark.metrics.beta_vae import beta_vae_score_from_codes
from benchmark.metrics.factor_vae import factor_vae_score_from_codes, score_from_votes
from benchmark.metrics.modularity import (modularity_explicitness_from_codes,
                                          modularity_from_mi)
from benchmark.metrics.unsupervised import unsupervised_from_codes


def _sample(n=4000, sizes=(3, 6, 8), seed=0):
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(0, s, n) for s in sizes], axis=1)


def test_factor_vae_score_perfect_noise_and_pruned_dims():
    f = _sample()
    rng = np.random.default_rng
    z = f + rng(1).normal(0, 0.05, f.shape)
    z = np.concatenate([z, np.full((len(f), 1), 2.0), 1e-4 * rng(2).normal(size=(len(f), 1))], 1)
    out = factor_vae_score_from_codes(f, z, rng(0), num_train=300, num_eval=200)
    assert out["factor_vae_score"] > 0.95 and out["factor_vae_active_dims"] == 3
    assert out == factor_vae_score_from_codes(f, z, rng(0), num_train=300, num_eval=200)
    noise = rng(3).normal(size=(len(f), 3))
    assert factor_vae_score_from_codes(f, noise, rng(0), num_train=300,
                                       num_eval=300)["factor_vae_score"] < 0.6


def test_majority_vote_hand_computed():
    train = np.array([[8, 2], [1, 9]])
    evaluation = np.array([[3, 1], [2, 4]])
    assert score_from_votes(train, evaluation) == (pytest.approx(17 / 20), pytest.approx(0.7))


def test_beta_vae_score_perfect_and_noise():
    f = _sample()
    rng = np.random.default_rng
    z = f + rng(1).normal(0, 0.05, f.shape)
    assert beta_vae_score_from_codes(f, z, rng(0), num_train=300,
                                     num_eval=200)["beta_vae_score"] > 0.95
    noise = rng(3).normal(size=(len(f), 3))
    assert beta_vae_score_from_codes(f, noise, rng(0), num_train=300,
                                     num_eval=300)["beta_vae_score"] < 0.6


def test_modularity_explicitness_with_a_constant_dim():
    f = _sample(3000)
    perfect = modularity_explicitness_from_codes(f[:2000], f[:2000] + 0.0, f[2000:],
                                                 f[2000:] + 0.0)
    assert perfect["modularity"] > 0.99 and perfect["modularity_informative_dims"] == 3
    z = np.concatenate([f + 0.0, np.zeros((3000, 1))], axis=1)
    out = modularity_explicitness_from_codes(f[:2000], z[:2000], f[2000:], z[2000:])
    # dlib: the constant dim scores 0 and counts in the mean (issue 15 item 5).
    assert out["modularity"] == pytest.approx(perfect["modularity"] * 3 / 4, abs=1e-12)
    assert out["modularity_informative_dims"] == 3 and out["explicitness_test"] > 0.8
    scaled = f / (np.array([3, 6, 8]) - 1.0)
    mixed = scaled @ np.array([[1.0, 1.0, 1.0], [1.0, -1.0, 1.0], [1.0, 1.0, -1.0]])
    assert modularity_explicitness_from_codes(
        f[:2000], mixed[:2000], f[2000:], mixed[2000:])["modularity"] < perfect["modularity"] - 0.2
    # dlib's formula by hand: one dim, MI (1.0, 0.5, 0.0) over K = 3 factors.
    value, dims = modularity_from_mi(np.array([[1.0, 0.5, 0.0]]))
    assert dims == 1 and value == pytest.approx(1 - 0.25 / 2)
    # Uninformative dims score 0 (dlib), so a code without information scores 0.
    assert modularity_from_mi(np.zeros((2, 3))) == (0.0, 0)
    assert modularity_from_mi(np.array([[1.0, 0.5, 0.0], [0.0, 0.0, 0.0]]))[0] == \
        pytest.approx((1 - 0.25 / 2) / 2)


def test_unsupervised_scores():
    rng = np.random.default_rng(0)
    independent = rng.normal(size=(5000, 3))
    out = unsupervised_from_codes(independent)
    assert abs(out["gaussian_total_correlation"]) < 0.01
    assert out["gaussian_wasserstein_correlation_norm"] < 0.01
    correlated = independent @ np.array([[1, 0.9, 0], [0, 1, 0], [0, 0, 1.0]])
    tc = unsupervised_from_codes(correlated)["gaussian_total_correlation"]
    rho = 0.9 / np.sqrt(1.81)
    assert tc == pytest.approx(-0.5 * np.log(1 - rho ** 2), abs=0.03)
    with pytest.raises(codes_lib.MetricInputError, match="2 non-constant"):
        unsupervised_from_codes(np.c_[independent[:, :1], np.ones((5000, 2))])


def test_pooled_and_fresh_dataset_level_scores_agree():
    from benchmark.data import dsprites
    from benchmark.metrics.beta_vae import beta_vae_score
    from benchmark.metrics.factor_vae import factor_vae_score
    data = dsprites.DSprites(source="procedural")
    projection = np.random.default_rng(0).normal(size=(64 * 64, 6)) / 64

    def representation(images):
        return images.reshape(len(images), -1) @ projection

    rng = np.random.default_rng
    for score, key in ((factor_vae_score, "factor_vae_score"), (beta_vae_score, "beta_vae_score")):
        pooled = score(data, representation, rng(0), num_train=200, num_eval=200,
                       pool_size=4000)[key]
        fresh = score(data, representation, rng(0), num_train=200, num_eval=200,
                      pool_size=None)[key]
        assert abs(pooled - fresh) < 0.15, (key, pooled, fresh)
