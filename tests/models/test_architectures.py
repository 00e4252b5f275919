import numpy as np
import pytest

from models import architectures


def test_conv_encoder_decoder_shapes_and_parameter_count():
    encoder = architectures.conv_encoder((64, 64, 3), num_latents=6)
    decoder = architectures.conv_decoder(6, (64, 64, 3))
    out = encoder(np.zeros((2, 64, 64, 3), np.float32))
    assert out["mean"].shape == (2, 6) and out["logvar"].shape == (2, 6)
    assert decoder(out["mean"]).shape == (2, 64, 64, 3)
    conv_shapes = [w.shape for w in encoder.weights if len(w.shape) == 4]
    assert conv_shapes == [(4, 4, 3, 32), (4, 4, 32, 32), (2, 2, 32, 64), (2, 2, 64, 64)]


def test_mlp_variant_shapes():
    encoder = architectures.mlp_encoder((64, 64, 1), num_latents=4, hidden=(32,))
    decoder = architectures.mlp_decoder(4, (64, 64, 1), hidden=(32,))
    out = encoder(np.zeros((3, 64, 64, 1), np.float32))
    assert decoder(out["mean"]).shape == (3, 64, 64, 1)


@pytest.mark.slow
def test_every_method_trains_under_mixed_bfloat16_with_float32_outputs():
    import keras
    import tensorflow as tf

    from models.registry import METHODS, make_model
    rng = np.random.default_rng(0)
    images = tf.constant(rng.uniform(0, 1, (3, 4, 64, 64, 1)).astype(np.float32))
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        for method in METHODS:
            model = make_model((64, 64, 1), method=method, num_latents=3)
            kind = model.input_kind
            batch = images[0] if kind == "images" else (
                (images[0], images[1]) if kind == "pairs" else (images[0], images[1], images[2]))
            terms = model.train_step(batch, tf.constant(0, tf.int64),
                                     tf.constant([0, 0], tf.int64))
            assert all(np.isfinite(float(v)) for v in terms.values()), (method, terms)
            assert model.representation(images[0]).dtype == tf.float32
            assert all(v.dtype == tf.float32 for v in model.trainable_variables)
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_stylegan_architecture_of_paper001_c3():
    import tensorflow as tf

    from models.registry import make_model
    encoder = architectures.stylegan_encoder((64, 64, 3), num_latents=6)
    decoder = architectures.stylegan_decoder(6, (64, 64, 3))
    out = encoder(np.zeros((2, 64, 64, 3), np.float32))
    assert out["mean"].shape == (2, 6) and out["logvar"].shape == (2, 6)
    kernels = [w.shape for w in encoder.weights if len(w.shape) == 4]
    assert [k[:2] for k in kernels] == [(3, 3), (3, 3), (4, 4)] * 4
    assert [k[-1] for k in kernels] == [32] * 3 + [64] * 3 + [128] * 3 + [256] * 3
    logits = decoder(np.random.default_rng(0).normal(size=(2, 6)).astype(np.float32))
    assert logits.shape == (2, 64, 64, 3)
    constant = [w for w in decoder.weights if w.shape == (4, 4, 256)]
    assert len(constant) == 1 and np.allclose(constant[0].numpy(), 0.1)
    # AdaIN: per image and channel, mean = shift(style) and std = scale(style)
    adain = architectures.AdaptiveInstanceNorm()
    features = tf.constant(np.random.default_rng(1).normal(3, 2, (2, 8, 8, 4)), tf.float32)
    style = tf.constant(np.random.default_rng(2).normal(size=(2, 5)), tf.float32)
    normalised = adain([features, style]).numpy()
    np.testing.assert_allclose(normalised.mean(axis=(1, 2)), adain.shift(style), atol=1e-4)
    np.testing.assert_allclose(normalised.std(axis=(1, 2)), np.abs(adain.scale(style)),
                               rtol=1e-3)
    qlae = make_model((64, 64, 1), method="qlae", num_latents=3, architecture="stylegan")
    images = tf.constant(np.random.default_rng(3).uniform(0, 1, (2, 64, 64, 1)), tf.float32)
    terms = qlae.train_step(images, tf.constant(0, tf.int64), tf.constant([0, 0], tf.int64))
    assert all(np.isfinite(float(v)) for v in terms.values())
