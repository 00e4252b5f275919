import numpy as np
import pytest
import tensorflow as tf

from models.quantizers import (ScalarCodebookQuantizer, VectorQuantizer,
                               finite_scalar_quantize)


def test_scalar_codebook_snaps_per_dim_and_passes_gradients_straight_through():
    quantizer = ScalarCodebookQuantizer(num_latents=3, num_values=5)
    grid = np.linspace(-0.5, 0.5, 5)
    z_c = tf.Variable([[0.26, -0.9, 0.0], [0.1, 0.49, -0.13]])
    with tf.GradientTape(persistent=True) as tape:
        z, losses = quantizer(z_c)
        downstream = tf.reduce_sum(3.0 * z)
    expected = grid[np.abs(z_c.numpy()[..., None] - grid).argmin(-1)]
    np.testing.assert_allclose(z.numpy(), expected, atol=1e-6)
    np.testing.assert_allclose(tape.gradient(downstream, z_c).numpy(), 3.0)   # identity
    sq = ((z_c.numpy() - expected) ** 2).mean()
    assert float(losses["quantize"]) == pytest.approx(sq, rel=1e-5)
    assert float(losses["commit"]) == pytest.approx(sq, rel=1e-5)
    # quantize moves only the codebook, commit only the encoder output
    assert tape.gradient(losses["quantize"], z_c) is None
    assert tape.gradient(losses["commit"], quantizer.values) is None
    assert tape.gradient(losses["quantize"], quantizer.values) is not None
    shared = ScalarCodebookQuantizer(num_latents=3, num_values=5, shared=True)
    assert shared.values.shape == (1, 5)
    np.testing.assert_allclose(shared(z_c)[0].numpy(), expected, atol=1e-6)


def test_vector_quantizer_picks_nearest_codebook_vector():
    quantizer = VectorQuantizer(num_vectors=2, vector_size=2, codebook_size=3)
    quantizer.codebook.assign([[0.0, 0.0], [1.0, 1.0], [-1.0, 2.0]])
    z_c = tf.constant([[0.9, 1.2, -0.8, 1.7], [0.1, -0.1, 0.3, 0.4]])
    z, _ = quantizer(z_c)
    np.testing.assert_array_equal(quantizer.indices(z_c).numpy(), [[1, 2], [0, 0]])
    np.testing.assert_allclose(z.numpy(), [[1, 1, -1, 2], [0, 0, 0, 0]])


def test_fsq_grid_and_straight_through():
    x = tf.Variable(np.linspace(-4, 4, 101, dtype=np.float32)[:, None])
    with tf.GradientTape() as tape:
        z, continuous = finite_scalar_quantize(x, num_levels=5)
        total = tf.reduce_sum(z)
    assert set(np.round(z.numpy().ravel(), 6)) <= {-1.0, -0.5, 0.0, 0.5, 1.0}
    assert np.abs(z.numpy() - continuous.numpy()).max() <= 0.25 + 1e-6
    np.testing.assert_allclose(tape.gradient(total, x).numpy(),
                               1 - np.tanh(x.numpy()) ** 2, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="levels"):
        finite_scalar_quantize(x, 1)


def test_qlae_and_vq_vae_train_and_represent_on_their_codebooks():
    from models.registry import make_model
    images = tf.constant(np.random.default_rng(0).uniform(0, 1, (8, 64, 64, 1)), tf.float32)
    qlae = make_model((64, 64, 1), method="qlae", num_latents=4)
    for step in range(2):
        terms = qlae.train_step(images, tf.constant(step, tf.int64), tf.constant([0, step]))
    assert {"loss", "reconstruction", "quantize", "commit"} <= set(terms)
    assert all(np.isfinite(float(v)) for v in terms.values())
    codes = qlae.representation(images).numpy()
    values = qlae.quantizer.values.numpy()
    assert all(np.isin(np.round(codes[:, j], 5), np.round(values[j], 5)).all()
               for j in range(4))
    assert qlae.decode_images(codes).shape == (8, 64, 64, 1)
    vq = make_model((64, 64, 1), method="vq_vae", num_latents=3)
    vq.train_step(images, tf.constant(0, tf.int64), tf.constant([0, 0]))
    indices = vq.representation(images).numpy()
    assert indices.shape == (8, 3) and np.all(indices == np.round(indices))
    assert indices.min() >= 0 and indices.max() < 512
    np.testing.assert_allclose(vq.decode_images(indices).numpy(),
                               tf.sigmoid(vq.decode(vq.encode(images)["codes"])).numpy(),
                               atol=1e-5)


def test_qlvae_samples_the_posterior_pays_kl_and_represents_the_quantised_mean():
    from models import losses
    from models.registry import make_model
    images = tf.constant(np.random.default_rng(1).uniform(0, 1, (8, 64, 64, 1)), tf.float32)
    qlvae = make_model((64, 64, 1), method="qlvae", num_latents=4)
    terms = qlvae.loss_terms(images, tf.constant(0, tf.int64), tf.constant([0, 0]))
    posterior = qlvae.encoder(images, training=True)
    expected_kl = float(tf.reduce_mean(losses.gaussian_kl(posterior["mean"],
                                                          posterior["logvar"])))
    assert float(terms["kl"]) == pytest.approx(expected_kl, rel=1e-4)
    expected = (float(terms["reconstruction"]) / 4096 + 0.01 * float(terms["quantize"])
                + 0.01 * float(terms["commit"]) + expected_kl / 4096)
    assert float(terms["loss"]) == pytest.approx(expected, rel=1e-4)
    other = qlvae.loss_terms(images, tf.constant(0, tf.int64), tf.constant([0, 1]))
    assert float(other["commit"]) != float(terms["commit"])  # a new posterior sample
    trained = qlvae.train_step(images, tf.constant(0, tf.int64), tf.constant([0, 0]))
    assert all(np.isfinite(float(v)) for v in trained.values())
    codes = qlvae.representation(images).numpy()
    np.testing.assert_allclose(codes, qlvae.quantizer(qlvae.encoder(images)["mean"])[0],
                               atol=1e-6)
    with pytest.raises(ValueError, match="lambda_kl"):
        from models.quantized import make_qlvae
        make_qlvae(None, None, 4, lambda_kl=0.0)
