import numpy as np
import pytest
import tensorflow as tf

from models import architectures, vae


def _model(regularizer):
    return vae.VAE(architectures.conv_encoder((64, 64, 1), 4),
                   architectures.conv_decoder(4, (64, 64, 1)), regularizer)


@pytest.mark.parametrize("regularizer", [
    vae.beta_vae(8.0), vae.annealed_vae(iteration_threshold=10), vae.beta_tcvae(6.0),
    vae.dip_vae(kind="i"), vae.dip_vae(kind="ii")])
def test_terms_finite_and_gradients_reach_every_variable(regularizer):
    model = _model(regularizer)
    images = tf.constant(np.random.default_rng(0).random((8, 64, 64, 1)), tf.float32)
    with tf.GradientTape() as tape:
        terms = model.loss_terms(images, step=5, seed=[1, 2])
    grads = tape.gradient(terms["loss"], model.trainable_variables)
    assert all(np.isfinite(float(v)) for v in terms.values())
    assert len(grads) == len(model.trainable_variables) > 0
    assert all(g is not None and float(tf.reduce_sum(tf.abs(g))) > 0 for g in grads)
    assert model.representation(images).shape == (8, 4)


def test_beta_scales_the_kl_and_capacity_anneals():
    kl = tf.constant(3.0)
    assert float(vae.beta_vae(8.0)(kl, None, None, None, 0)["regularizer"]) == 24.0
    annealed = vae.annealed_vae(gamma=2.0, c_max=10.0, iteration_threshold=100)
    assert float(annealed(kl, None, None, None, 50)["capacity"]) == pytest.approx(5.0)
    assert float(annealed(kl, None, None, None, 500)["regularizer"]) == pytest.approx(14.0)
    with pytest.raises(ValueError, match="'i' or 'ii'"):
        vae.dip_vae(kind="iii")


def test_ae_has_no_variance_head_and_trains_every_weight():
    from models.registry import make_model
    model = make_model((64, 64, 1), method="ae", num_latents=3)
    images = tf.constant(np.random.default_rng(0).random((8, 64, 64, 1)), tf.float32)
    assert set(model.encode(images)) == {"mean"}
    with tf.GradientTape() as tape:
        terms = model.loss_terms(images, step=0, seed=[1, 2])
    assert "kl" not in terms and float(terms["loss"]) == float(terms["reconstruction"])
    grads = tape.gradient(terms["loss"], model.trainable_variables)
    assert all(g is not None for g in grads)


def test_bio_ae_penalises_activity_and_negative_codes():
    z = tf.constant([[1.0, -2.0], [0.0, 3.0]])
    terms = vae.bio_ae(lambda_activity=0.5, lambda_nonnegative=2.0)(None, z, None, z, 0)
    assert float(terms["activity"]) == pytest.approx((1 + 4 + 0 + 9) / 4)
    assert float(terms["negative_activity"]) == pytest.approx(2 / 4)
    assert float(terms["regularizer"]) == pytest.approx(0.5 * 3.5 + 2.0 * 0.5)


def test_paper001_methods_train_at_their_papers_loss_scale():
    """BioAE and Tripod weigh their terms against a BCE averaged over pixels (paper 001's
    code); the logged reconstruction stays the per-image sum every method reports."""
    from models.registry import make_model
    images = tf.constant(np.random.default_rng(4).uniform(0, 1, (4, 64, 64, 1)), tf.float32)
    bio = make_model((64, 64, 1), method="bio_ae", num_latents=3)
    terms = bio.loss_terms(images, tf.constant(0, tf.int64), tf.constant([0, 0]))
    assert float(terms["reconstruction"]) > 1000          # summed over 4096 pixels
    assert float(terms["loss"]) == pytest.approx(
        float(terms["reconstruction"]) / 4096 + float(terms["regularizer"]), rel=1e-5)
    tripod = make_model((64, 64, 1), method="tripod", num_latents=3)
    terms = tripod.loss_terms(images, tf.constant(0, tf.int64), tf.constant([0, 0]))
    expected = (float(terms["reconstruction"]) / 4096 + tripod.lambda_klm * float(terms["klm"])
                + tripod.lambda_nhp * float(terms["hessian_penalty"]))
    assert float(terms["loss"]) == pytest.approx(expected, rel=1e-4)


def test_a_run_shows_only_the_terms_its_objective_has():
    """Issue 30 item 7: the KL appears where the regulariser uses it, not for a plug-in
    whose objective has none (it used to log kl= for every VAE)."""
    from models.registry import make_model
    images = tf.constant(np.random.default_rng(0).random((8, 64, 64, 1)), tf.float32)
    beta = make_model((64, 64, 1), method="beta_vae", num_latents=3)
    assert {"loss", "reconstruction", "regularizer", "kl"} <= set(
        beta.loss_terms(images, step=0, seed=[1, 2]))

    def laplace_prior(kl, mean, logvar, z, step):
        l1 = tf.reduce_mean(tf.reduce_sum(tf.abs(z), axis=1))
        return {"regularizer": l1, "l1": l1}

    plugin = make_model((64, 64, 1), method="vae", num_latents=3, regularizer=laplace_prior)
    assert set(plugin.loss_terms(images, step=0, seed=[1, 2])) == {
        "loss", "reconstruction", "regularizer", "l1"}
