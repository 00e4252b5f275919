"""SlowVAE (Klindt et al. 2021; paper 002's "Slow-VAE", Table 2): a VAE on pairs of
consecutive frames with a sparse (Laplace) transition prior.

For a pair (x_t, x_t+1) both frames are encoded; the first latent gets the usual
N(0, I) prior, the second a Laplace prior centred on the first frame's sample with rate
lambda (scale 1 / lambda). The KL of the second posterior to that prior is estimated as
(Laplace cross-entropy of a sample) - (Gaussian posterior entropy):
  loss = [rec(x_t) + rec(x_t+1)] + beta * KL(q(z_t) || N(0, I))
         + gamma * (-log Laplace(z_t+1; z_t, 1/lambda) - H[q(z_t+1)]),
with beta 1, gamma 10, lambda 6 (paper 002 Table 2).
"""

from __future__ import annotations

import math

import tensorflow as tf

from models import losses
from models.vae import VAE


class SlowVAE(VAE):
    """Pair VAE; batches are (x_t, x_t+1), each float32 (n, 64, 64, c)."""

    input_kind = "pairs"

    def __init__(self, encoder, decoder, beta: float = 1.0, gamma: float = 10.0,
                 rate: float = 6.0, optimizer=None, **kwargs):
        super().__init__(encoder, decoder, regularizer=None, optimizer=optimizer, **kwargs)
        self.beta, self.gamma, self.rate = float(beta), float(gamma), float(rate)

    def loss_terms(self, batch, step, seed) -> dict:
        first, second = batch
        codes = self.encode(tf.concat([first, second], axis=0), training=True)
        n = tf.shape(first)[0]
        mean, logvar = codes["mean"], codes["logvar"]
        z = mean + tf.exp(0.5 * logvar) * tf.random.stateless_normal(tf.shape(mean), seed)
        reconstruction = losses.bernoulli_reconstruction(
            tf.concat([first, second], axis=0), self.decode(z, training=True))
        reconstruction = tf.reduce_mean(reconstruction[:n] + reconstruction[n:])
        kl_normal = tf.reduce_mean(losses.gaussian_kl(mean[:n], logvar[:n]))
        scale = 1.0 / self.rate
        laplace_ce = tf.reduce_mean(tf.reduce_sum(
            math.log(2.0 * scale) + tf.abs(z[n:] - z[:n]) / scale, axis=1))
        entropy = tf.reduce_mean(tf.reduce_sum(
            0.5 * (math.log(2.0 * math.pi * math.e) + logvar[n:]), axis=1))
        kl_laplace = laplace_ce - entropy
        loss = reconstruction + self.beta * kl_normal + self.gamma * kl_laplace
        return {"loss": loss, "reconstruction": reconstruction, "kl": kl_normal,
                "kl_laplace": kl_laplace}
