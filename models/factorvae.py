"""FactorVAE (Kim & Mnih 2018), disentanglement_lib's version.

The VAE minimises reconstruction + KL + gamma * TC, with the total correlation estimated
by a discriminator D on the sampled codes: TC ~ mean(logit_real - logit_permuted) of D's
two logits. D (6 dense layers of 1000 units, LeakyReLU 0.2) is trained with its own Adam
(lr 1e-4, beta1 0.5, beta2 0.9) to tell codes from codes whose every dim was permuted
independently across the batch (which keeps each dim's marginal and removes dependence).
gamma: 35 (dSprites) / 7 (Shapes3D), paper 002 Table 2. D's optimiser is
`models.optimizers.factor_vae_discriminator_adam` (gin `factor_vae_discriminator_adam.*`).
"""

from __future__ import annotations

import keras
import tensorflow as tf

from models import losses
from models.optimizers import factor_vae_discriminator_adam
from models.vae import VAE


def permute_dims(z, seed):
    """Each latent of z (n, d) or (n, d, K) permuted independently across the batch (a
    latent's trailing K values move together), stateless."""
    keys = tf.random.stateless_uniform(tf.shape(z)[:2], seed)
    order = tf.argsort(keys, axis=0)
    axes = [1, 0] + list(range(2, len(z.shape)))
    return tf.transpose(tf.gather(tf.transpose(z, axes), tf.transpose(order), batch_dims=1),
                        axes)


def tc_and_discriminator_loss(discriminator, codes, seed):
    """(TC estimate mean(logit_real - logit_permuted) of `codes` (gradients reach the codes),
    the discriminator's cross-entropy on real vs dim-permuted codes (reaches only it))."""
    logits = discriminator(codes, training=True)
    tc = tf.reduce_mean(logits[:, 0] - logits[:, 1])
    fixed = tf.stop_gradient(codes)
    real_logits = discriminator(fixed, training=True)
    permuted_logits = discriminator(permute_dims(fixed, seed), training=True)
    n = tf.shape(codes)[0]
    loss = 0.5 * (
        tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            tf.zeros(n, tf.int32), real_logits))
        + tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            tf.ones(n, tf.int32), permuted_logits)))
    return tc, loss


def train_with_discriminator(model, batch, step, seed, model_variables) -> dict:
    """One update of `model_variables` on terms['loss'] and one of model.discriminator on
    terms['discriminator_loss'], each with its own optimiser."""
    with tf.GradientTape(persistent=True) as tape:
        terms = model.loss_terms(batch, step, seed)
    disc_variables = model.discriminator.trainable_variables
    model.model_optimizer.apply_gradients(zip(tape.gradient(terms["loss"], model_variables),
                                              model_variables))
    model.discriminator_optimizer.apply_gradients(
        zip(tape.gradient(terms["discriminator_loss"], disc_variables), disc_variables))
    del tape
    return terms


def discriminator(input_shape, units: int = 1000, layers_count: int = 6) -> keras.Model:
    """MLP (n, *input_shape) -> 2 logits (real code, permuted code)."""
    codes = keras.Input(shape=tuple(input_shape) if isinstance(input_shape, (tuple, list))
                        else (int(input_shape),))
    x = keras.layers.Flatten()(codes)
    for _ in range(layers_count):
        x = keras.layers.LeakyReLU(negative_slope=0.2)(keras.layers.Dense(units)(x))
    return keras.Model(codes, keras.layers.Dense(2, dtype="float32")(x), name="discriminator")


class FactorVAE(VAE):
    """Batches are images (n, 64, 64, c).

    optimizer / discriminator_optimizer: of the VAE and of D (None: `dlib_adam()` /
    `factor_vae_discriminator_adam()`, their defaults)."""

    def __init__(self, encoder, decoder, gamma: float = 35.0, discriminator_units: int = 1000,
                 optimizer=None, discriminator_optimizer=None, **kwargs):
        super().__init__(encoder, decoder, regularizer=None, optimizer=optimizer, **kwargs)
        self.gamma = float(gamma)
        self.discriminator = discriminator(encoder.output["mean"].shape[-1],
                                           discriminator_units)
        self.discriminator_optimizer = (discriminator_optimizer
                                        or factor_vae_discriminator_adam())

    def _vae_variables(self):
        return self.encoder.trainable_variables + self.decoder.trainable_variables

    def optimizers_list(self) -> list:
        return [self.model_optimizer, self.discriminator_optimizer]

    def optimizer_variables(self) -> list:
        return [(self.model_optimizer, self._vae_variables()),
                (self.discriminator_optimizer, self.discriminator.trainable_variables)]

    def loss_terms(self, images, step, seed) -> dict:
        seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 2)
        codes = self.encode(images, training=True)
        mean, logvar = codes["mean"], codes["logvar"]
        z = mean + tf.exp(0.5 * logvar) * tf.random.stateless_normal(tf.shape(mean), seeds[0])
        reconstruction = tf.reduce_mean(self.reconstruction_loss(images, self.decode(z, True)))
        kl = tf.reduce_mean(losses.gaussian_kl(mean, logvar))
        tc, discriminator_loss = tc_and_discriminator_loss(self.discriminator, z, seeds[1])
        return {"loss": reconstruction + kl + self.gamma * tc, "reconstruction": reconstruction,
                "kl": kl, "total_correlation": tc, "discriminator_loss": discriminator_loss}

    def train_step(self, images, step, seed) -> dict:
        return train_with_discriminator(self, images, step, seed, self._vae_variables())
