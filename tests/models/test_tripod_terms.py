import itertools
import math

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from models import architectures
from models.tripod_terms import (hessian_penalty, kernel_latent_multiinformation,
                                 normalized_hessian_penalty, silverman_smoothing)


def test_klm_matches_brute_force_kernel_sums():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(7, 3))
    z[:, 2] = z[:, 0] * 0.5 + 0.1 * z[:, 2]
    sigma = z.std(axis=0)
    s = (4 / ((3 + 2) * 7)) ** (2 / (3 + 4)) * sigma ** 2
    total = 0.0
    for b in range(7):
        joint = np.mean([stats.multivariate_normal(z[a], np.diag(s)).pdf(z[b]) for a in range(7)])
        marginals = [np.mean([stats.norm(z[a, j], sigma[j]).pdf(z[b, j]) for a in range(7)])
                     for j in range(3)]
        total += math.log(joint) - sum(math.log(m) for m in marginals)
    klm = kernel_latent_multiinformation(tf.constant(z), tf.constant(sigma))
    assert float(klm) == pytest.approx(total / 7, rel=1e-6)
    np.testing.assert_allclose(silverman_smoothing(tf.constant(sigma), 7).numpy(), s)


def test_klm_is_larger_for_dependent_latents():
    rng = np.random.default_rng(1)
    independent = rng.normal(size=(256, 2))
    dependent = np.stack([independent[:, 0], independent[:, 0] + 0.1 * independent[:, 1]], 1)
    def klm(z):
        return float(kernel_latent_multiinformation(tf.constant(z), tf.constant(z.std(0))))
    assert klm(dependent) > klm(independent) + 0.5


def _exact_nhp(hessian, sigma):
    scaled = hessian * np.outer(sigma, sigma)
    off = scaled - np.diag(np.diag(scaled))
    return (off ** 2).sum() / (scaled ** 2).sum()


def test_nhp_zero_for_additive_nonzero_for_interaction_and_matches_exact_hessian():
    z = tf.constant(np.random.default_rng(2).normal(size=(16, 3)))
    sigma = tf.constant([1.0, 2.0, 0.5], tf.float64)

    def additive(x):                                   # no mixed derivatives
        return tf.stack([tf.reduce_sum(x ** 2, 1), x[:, 0] ** 2 - 3 * x[:, 2] ** 2], 1)
    assert float(normalized_hessian_penalty(additive, z, sigma, [0, 1])) == pytest.approx(
        0.0, abs=1e-8)

    a = np.array([[1.0, 0.7, 0.0], [0.7, -0.5, 0.3], [0.0, 0.3, 2.0]])
    def quadratic(x):                                  # Hessian 2A everywhere
        return tf.einsum("ni,ij,nj->n", x, tf.constant(a), x)[:, None]
    estimate = normalized_hessian_penalty(quadratic, z, sigma, [3, 4], num_probes=4000)
    assert float(estimate) == pytest.approx(_exact_nhp(2 * a, sigma.numpy()), rel=0.1)
    assert float(hessian_penalty(quadratic, z, [5, 6], num_probes=4000)) == pytest.approx(
        2 * sum((2 * a[i, j]) ** 2 for i, j in itertools.permutations(range(3), 2)), rel=0.1)


def test_nhp_invariant_to_rescaling_output_and_a_latent():
    z = tf.constant(np.random.default_rng(3).normal(size=(8, 2)))
    sigma = tf.constant([1.0, 1.5], tf.float64)
    def f(x):
        return tf.stack([tf.sin(x[:, 0]) * x[:, 1], x[:, 0] * x[:, 1] ** 2], 1)
    base = float(normalized_hessian_penalty(f, z, sigma, [7, 7], epsilon=1e-3))
    c = tf.constant([4.0, 1.0], tf.float64)            # latent 0 scaled up by 4
    scaled = float(normalized_hessian_penalty(lambda x: 10.0 * f(x / c), z * c, sigma * c,
                                              [7, 7], epsilon=1e-3))
    assert scaled == pytest.approx(base, rel=1e-3)
    plain = float(hessian_penalty(f, z, [7, 7]))
    assert float(hessian_penalty(lambda x: 10.0 * f(x), z, [7, 7])) == pytest.approx(
        100 * plain, rel=1e-6)                           # the original penalty is not


@pytest.mark.parametrize("bindings", [{}, {"naive": True}, {"lambda_nhp": 0.0},
                                      {"lambda_klm": 0.0}, {"num_levels": 144}])
def test_tripod_and_its_ablations_train_with_finite_terms(bindings):
    from models import architectures
    from models.tripod import make_tripod
    encoder = architectures.mean_only(architectures.conv_encoder((64, 64, 1), 3), "e")
    model = make_tripod(encoder, architectures.conv_decoder(3, (64, 64, 1)), **bindings)
    images = tf.constant(np.random.default_rng(0).uniform(0, 1, (8, 64, 64, 1)), tf.float32)
    terms = model.train_step(images, tf.constant(0, tf.int64), tf.constant([0, 1]))
    assert all(np.isfinite(float(v)) for v in terms.values())
    assert ("klm" in terms) == (bindings.get("lambda_klm", 1) > 0)
    assert ("hessian_penalty" in terms) == (bindings.get("lambda_nhp", 1) > 0)
    assert ("commit" in terms) == bindings.get("naive", False)
    codes = model.representation(images).numpy()
    levels = bindings.get("num_levels", 12)
    if not bindings.get("naive"):                       # FSQ grid
        np.testing.assert_allclose((codes + 1) * (levels - 1) / 2,
                                   np.round((codes + 1) * (levels - 1) / 2), atol=1e-4)


def test_tripod_optimiser_is_paper_000_table_4_adamw():
    from models.tripod import make_tripod
    model = make_tripod(architectures.mean_only(architectures.conv_encoder((64, 64, 1), 3), "e"),
                        architectures.conv_decoder(3, (64, 64, 1)))
    optimizer = model.model_optimizer
    assert type(optimizer).__name__ == "AdamW"
    assert float(optimizer.learning_rate) == pytest.approx(1e-3)
    assert (optimizer.beta_1, optimizer.beta_2) == (0.9, 0.99)


def test_naive_tripod_hessian_penalty_ignores_activation_scale():
    """Naive Tripod: the vanilla Hessian penalty with activation normalisation (paper 000
    sec. 5): rescaling the regularised decoder activations leaves the term unchanged."""
    import keras
    from models.tripod import make_tripod
    images = tf.constant(np.random.default_rng(0).random((8, 64, 64, 1)), tf.float32)

    def penalty(scale):
        keras.utils.set_random_seed(1)
        model = make_tripod(
            architectures.mean_only(architectures.conv_encoder((64, 64, 1), 3), "e"),
            architectures.conv_decoder(3, (64, 64, 1)), naive=True, lambda_klm=0.0)
        layer = model.decoder.layers[2]                # the regularised dense layer
        kernel, bias = layer.get_weights()
        layer.set_weights([kernel * scale, bias * scale])
        return float(model.loss_terms(images, 0, [2, 3])["hessian_penalty"])

    base = penalty(1.0)
    assert base > 0
    assert penalty(10.0) == pytest.approx(base, rel=1e-2)     # was 100x before
