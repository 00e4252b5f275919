import numpy as np
import pytest
import tensorflow as tf

from models.factorqvae import (VARIANTS, categorical_kl_to_uniform, gumbel_softmax,
                               temperature)
from models.factorvae import permute_dims


def test_temperature_schedules():
    assert float(temperature(0, 100)) == pytest.approx(1.0)
    assert float(temperature(50, 100)) == pytest.approx(0.55)
    assert float(temperature(100, 100)) == pytest.approx(0.1)
    assert float(temperature(200, 100)) == pytest.approx(0.1)
    assert float(temperature(100000, 1, schedule="exponential")) == pytest.approx(np.exp(-1))


def test_gumbel_softmax_and_kl_to_uniform():
    logits = tf.constant(np.random.default_rng(0).normal(size=(4000, 1, 3)), tf.float32)
    soft = gumbel_softmax(logits, 0.01, [1, 2]).numpy()
    np.testing.assert_allclose(soft.sum(-1), 1.0, rtol=1e-5)
    assert np.mean(soft.max(-1) > 0.99) > 0.95                 # near one-hot at low tau
    # the argmax of a Gumbel sample is a draw from softmax(logits)
    fixed = tf.constant([[[np.log(0.7), np.log(0.2), np.log(0.1)]]] * 20000, tf.float32)
    draws = gumbel_softmax(fixed, 0.01, [3, 4]).numpy().argmax(-1).ravel()
    np.testing.assert_allclose(np.bincount(draws, minlength=3) / 20000, [0.7, 0.2, 0.1],
                               atol=0.015)
    q = np.array([0.7, 0.2, 0.1])
    assert float(categorical_kl_to_uniform(fixed[:1])) == pytest.approx(
        np.sum(q * np.log(q * 3)), rel=1e-5)
    assert float(categorical_kl_to_uniform(tf.zeros((2, 4, 5)))) == pytest.approx(0, abs=1e-6)


def test_permutation_of_one_hot_latents_keeps_each_latent_whole():
    z = tf.constant(np.eye(4)[np.random.default_rng(1).integers(0, 4, (50, 3))], tf.float32)
    permuted = permute_dims(z, [5, 6]).numpy()
    for j in range(3):        # each latent's one-hots are the same multiset, rows reordered
        assert sorted(map(tuple, permuted[:, j])) == sorted(map(tuple, z.numpy()[:, j]))
    np.testing.assert_allclose(permuted.sum(-1), 1.0)
    assert not np.array_equal(permuted, z.numpy())


@pytest.mark.parametrize("method", sorted(VARIANTS))
def test_variants_train_with_finite_terms(method):
    from models.registry import make_model
    model = make_model((64, 64, 1), method=method, num_latents=3)
    images = tf.constant(np.random.default_rng(0).uniform(0, 1, (8, 64, 64, 1)), tf.float32)
    before = model.codebook.numpy().copy()
    terms = model.train_step(images, tf.constant(0, tf.int64), tf.constant([0, 1]))
    assert all(np.isfinite(float(v)) for v in terms.values())
    assert ("total_correlation" in terms) == method.startswith("factor")
    codes = model.representation(images).numpy()
    assert codes.shape == (8, 3) and np.isin(codes, model.codebook.numpy()).all()
    assert not np.array_equal(before, model.codebook.numpy())   # the codebook learns
    assert model.decode_images(codes).shape == (8, 64, 64, 1)


def test_paper_003_schedules_are_the_defaults():
    """Appendix A.1: Adam 1e-3 cosine-annealed to 1.25e-6 over the first 50k iterations
    (then held), tau = exp(-1e-5 t)."""
    from models import architectures
    from models.factorqvae import make_discrete_vae
    model = make_discrete_vae(architectures.conv_encoder, architectures.conv_decoder,
                              (64, 64, 1), 3, "factor_qvae")
    for optimizer in model.optimizers_list():
        schedule = optimizer._learning_rate           # the schedule object itself
        assert float(schedule(0)) == pytest.approx(1e-3)
        assert float(schedule(25000)) == pytest.approx((1e-3 + 1.25e-6) / 2, rel=1e-3)
        assert float(schedule(50000)) == pytest.approx(1.25e-6, rel=1e-3)
        assert float(schedule(90000)) == pytest.approx(1.25e-6, rel=1e-3)
    assert model.tau_schedule == "exponential"
    assert float(temperature(50000, model.total_steps, schedule=model.tau_schedule)) == \
        pytest.approx(np.exp(-0.5))
