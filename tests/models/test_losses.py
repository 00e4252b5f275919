
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp

from models import losses

tfd = tfp.distributions


def test_gaussian_kl_matches_tfp():
    rng = np.random.default_rng(0)
    mean = rng.normal(size=(4, 3)).astype(np.float32)
    logvar = rng.normal(size=(4, 3)).astype(np.float32)
    posterior = tfd.MultivariateNormalDiag(mean, tf.exp(0.5 * logvar))
    prior = tfd.MultivariateNormalDiag(tf.zeros(3), tf.ones(3))
    np.testing.assert_allclose(losses.gaussian_kl(mean, logvar),
                               tfd.kl_divergence(posterior, prior), rtol=1e-5)


def test_bernoulli_reconstruction_matches_direct_formula():
    rng = np.random.default_rng(1)
    x = rng.random((2, 4, 4, 1)).astype(np.float32)
    logits = rng.normal(size=x.shape).astype(np.float32)
    p = 1 / (1 + np.exp(-logits))
    direct = -(x * np.log(p) + (1 - x) * np.log(1 - p)).reshape(2, -1).sum(1)
    np.testing.assert_allclose(losses.bernoulli_reconstruction(x, logits), direct, rtol=1e-5)


def test_tc_estimator_matches_brute_force():
    rng = np.random.default_rng(2)
    n, d = 5, 3
    z = rng.normal(size=(n, d))
    mean = rng.normal(size=(n, d))
    logvar = rng.normal(size=(n, d)) * 0.3

    def log_normal(x, m, lv):
        return -0.5 * (np.log(2 * np.pi) + lv + (x - m) ** 2 / np.exp(lv))

    brute = []
    for i in range(n):
        joint = np.log(sum(np.exp(sum(log_normal(z[i, k], mean[j, k], logvar[j, k])
                                      for k in range(d))) for j in range(n)))
        product = sum(np.log(sum(np.exp(log_normal(z[i, k], mean[j, k], logvar[j, k]))
                                 for j in range(n))) for k in range(d))
        brute.append(joint - product)
    np.testing.assert_allclose(losses.total_correlation_mws(z, mean, logvar), np.mean(brute),
                               rtol=1e-6)


def test_dip_covariance_terms():
    mean = np.array([[1.0, 2.0], [3.0, 0.0], [2.0, 1.0]])
    logvar = np.log(np.array([[0.5, 1.0], [1.5, 1.0], [1.0, 1.0]]))
    cov = np.cov(mean, rowvar=False, bias=True)
    np.testing.assert_allclose(losses.dip_covariance(mean, logvar, "i"), cov)
    np.testing.assert_allclose(losses.dip_covariance(mean, logvar, "ii"),
                               cov + np.diag([1.0, 1.0]))
    reg = losses.dip_regularizer(tf.constant(cov), lambda_od=10.0, lambda_d=5.0)
    expected = 10.0 * 2 * cov[0, 1] ** 2 + 5.0 * ((cov[0, 0] - 1) ** 2 + (cov[1, 1] - 1) ** 2)
    assert float(reg) == pytest.approx(expected)
    with pytest.raises(ValueError, match="'i' or 'ii'"):
        losses.dip_covariance(mean, logvar, "iii")
