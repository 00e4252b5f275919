"""FactorVAE (Kim & Mnih 2018), disentanglement_lib's version.

The VAE minimises reconstruction + KL + gamma * TC, with the total correlation estimated
by a discriminator D on the sampled codes: TC ~ mean(logit_real - logit_permuted) of D's
two logits. D (6 dense layers of 1000 units, LeakyReLU 0.2) is trained with its own Adam
(lr 1e-4, beta1 0.5, beta2 0.9) to tell codes from codes whose every dim was permuted
independently across the batch (which keeps each dim's marginal and removes dependence).
gamma: 35 (dSprites) / 7 (Shapes3D), paper 002 Table 2.
"""

from __future__ import annotations

import gin
import keras
import tensorflow as tf

from models import losses
from models.vae import VAE


def permute_dims(z, seed):
    """Each column of z (n, d) permuted independently across the batch, stateless."""
    keys = tf.random.stateless_uniform(tf.shape(z), seed)
    order = tf.argsort(keys, axis=0)
    return tf.transpose(tf.gather(tf.transpose(z), tf.transpose(order), batch_dims=1))


def discriminator(num_latents: int, units: int = 1000, layers_count: int = 6) -> keras.Model:
    """MLP (n, d) -> 2 logits (real code, permuted code)."""
    codes = keras.Input(shape=(num_latents,))
    x = codes
    for _ in range(layers_count):
        x = keras.layers.LeakyReLU(negative_slope=0.2)(keras.layers.Dense(units)(x))
    return keras.Model(codes, keras.layers.Dense(2, dtype="float32")(x), name="discriminator")


@gin.configurable("factor_vae", allowlist=["gamma", "discriminator_units"])
class FactorVAE(VAE):
    """Batches are images (n, 64, 64, c)."""

    def __init__(self, encoder, decoder, gamma: float = 35.0, discriminator_units: int = 1000,
                 optimizer=None, discriminator_optimizer=None, **kwargs):
        super().__init__(encoder, decoder, regularizer=None, optimizer=optimizer, **kwargs)
        self.gamma = float(gamma)
        self.discriminator = discriminator(encoder.output["mean"].shape[-1],
                                           discriminator_units)
        self.discriminator_optimizer = discriminator_optimizer or keras.optimizers.Adam(
            1e-4, beta_1=0.5, beta_2=0.9)

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
        logits = self.discriminator(z, training=True)
        tc = tf.reduce_mean(logits[:, 0] - logits[:, 1])
        permuted_logits = self.discriminator(permute_dims(tf.stop_gradient(z), seeds[1]),
                                             training=True)
        real_logits = self.discriminator(tf.stop_gradient(z), training=True)
        discriminator_loss = 0.5 * (
            tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                tf.zeros(tf.shape(z)[0], tf.int32), real_logits))
            + tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                tf.ones(tf.shape(z)[0], tf.int32), permuted_logits)))
        return {"loss": reconstruction + kl + self.gamma * tc, "reconstruction": reconstruction,
                "kl": kl, "total_correlation": tc, "discriminator_loss": discriminator_loss}

    def train_step(self, images, step, seed) -> dict:
        with tf.GradientTape(persistent=True) as tape:
            terms = self.loss_terms(images, step, seed)
        vae_variables = self._vae_variables()
        disc_variables = self.discriminator.trainable_variables
        self.model_optimizer.apply_gradients(zip(tape.gradient(terms["loss"], vae_variables),
                                                 vae_variables))
        self.discriminator_optimizer.apply_gradients(
            zip(tape.gradient(terms["discriminator_loss"], disc_variables), disc_variables))
        del tape
        return terms
