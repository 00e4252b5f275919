"""The β-VAE family: one VAE, one overridable regulariser (disentanglement_lib's design).

loss = reconstruction + regularizer(kl, mean, logvar, z, step), averaged over the batch,
with reconstruction and KL per example summed over pixels / latents. Regularisers:
- `beta_vae(beta)`: beta * KL (Higgins et al. 2017; beta = 1 is the plain VAE).
- `annealed_vae(gamma, c_max, iteration_threshold)`: gamma * |KL - C(step)| with capacity
  C rising linearly from 0 to c_max over iteration_threshold steps (Burgess et al. 2018).
- `beta_tcvae(beta)`: KL + (beta - 1) * TC, TC by minibatch-weighted sampling
  (Chen et al. 2018).
- `dip_vae(lambda_od, lambda_d_factor, kind)`: KL + DIP moment penalty on Cov[mean]
  (kind 'i') or Cov[z] (kind 'ii'), lambda_d = lambda_d_factor * lambda_od
  (Kumar et al. 2018).
- `bio_ae(lambda_activity, lambda_nonnegative)`: BioAE (Whittington et al. 2023, a
  baseline of paper 001): activity energy lambda_activity * ||z||^2 plus a penalty on
  negative activity lambda_nonnegative * ||relu(-z)||^2 on a deterministic code; trained
  with paper 001's AdamW (Table 9). lambda_nonnegative = 1 is this suite's choice (paper
  001 tunes only lambda_activity over [0.01, 100], Table 11).
- `ae()`: no regulariser; the AE is `VAE(..., sample_latents=False)` with a mean-only
  encoder (architectures.mean_only): it decodes the mean and has no KL term.
Each returns a dict of named terms so the training loop logs them all: 'regularizer' (what
is added to the loss) and the terms it is made of, 'kl' among them where it uses the KL, so
a run's log and results show only the terms its objective has. A regulariser
factory's arguments are its method's settings (gin: `beta_vae.beta = 8`, registered by
models/configurables.py from the registry entry; models/registry.py).
"""

from __future__ import annotations

from typing import Callable

import keras
import tensorflow as tf

from benchmark.core.errors import ConfigError, check_range
from models import losses
from models.base import TrainableModel

Regularizer = Callable[..., dict]


def beta_vae(beta: float = 1.0) -> Regularizer:
    check_range("beta_vae.beta", beta, 0.0)

    def regularizer(kl, mean, logvar, z, step):
        return {"regularizer": beta * kl, "kl": kl}
    return regularizer


def ae() -> Regularizer:
    """No regulariser: with `VAE(sample_latents=False)` this is a plain autoencoder."""
    def regularizer(kl, mean, logvar, z, step):
        return {"regularizer": tf.zeros_like(kl)}
    return regularizer


def bio_ae(lambda_activity: float = 1.0, lambda_nonnegative: float = 1.0) -> Regularizer:
    """BioAE as paper 001's code runs it: activity mean(z^2) and nonnegativity mean(relu(-z))
    over dims and batch, beside a BCE averaged over pixels (`VAE(per_pixel=True)`)."""
    check_range("bio_ae.lambda_activity", lambda_activity, 0.0)
    check_range("bio_ae.lambda_nonnegative", lambda_nonnegative, 0.0)

    def regularizer(kl, mean, logvar, z, step):
        activity = tf.reduce_mean(tf.square(z))
        negative = tf.reduce_mean(tf.nn.relu(-z))
        return {"regularizer": lambda_activity * activity + lambda_nonnegative * negative,
                "activity": activity, "negative_activity": negative}
    return regularizer


def annealed_vae(gamma: float = 1000.0, c_max: float = 25.0,
                 iteration_threshold: int = 100000) -> Regularizer:
    check_range("annealed_vae.gamma", gamma, 0.0)
    check_range("annealed_vae.c_max", c_max, 0.0)
    check_range("annealed_vae.iteration_threshold", iteration_threshold, 0.0, low_open=True)

    def regularizer(kl, mean, logvar, z, step):
        fraction = tf.minimum(tf.cast(step, tf.float32) / float(iteration_threshold), 1.0)
        capacity = c_max * fraction
        return {"regularizer": gamma * tf.abs(kl - capacity), "capacity": capacity, "kl": kl}
    return regularizer


def beta_tcvae(beta: float = 6.0) -> Regularizer:
    check_range("beta_tcvae.beta", beta, 0.0)

    def regularizer(kl, mean, logvar, z, step):
        tc = losses.total_correlation_mws(z, mean, logvar)
        return {"regularizer": kl + (beta - 1.0) * tc, "total_correlation": tc, "kl": kl}
    return regularizer


def dip_vae(lambda_od: float = 10.0, lambda_d_factor: float = 10.0, kind: str = "i"
            ) -> Regularizer:
    if kind not in ("i", "ii"):
        raise ConfigError(f"dip_vae.kind must be 'i' or 'ii', found {kind!r}")
    check_range("dip_vae.lambda_od", lambda_od, 0.0)
    check_range("dip_vae.lambda_d_factor", lambda_d_factor, 0.0)

    def regularizer(kl, mean, logvar, z, step):
        penalty = losses.dip_regularizer(losses.dip_covariance(mean, logvar, kind),
                                         lambda_od, lambda_d_factor * lambda_od)
        return {"regularizer": kl + penalty, "dip_penalty": penalty, "kl": kl}
    return regularizer


class VAE(TrainableModel):
    """Encoder (images -> mean, logvar), reparameterised sample, decoder (z -> logits)."""

    def __init__(self, encoder: keras.Model, decoder: keras.Model, regularizer: Regularizer,
                 reconstruction_loss=losses.bernoulli_reconstruction,
                 optimizer: keras.optimizers.Optimizer | None = None,
                 sample_latents: bool = True, per_pixel: bool = False, **kwargs):
        super().__init__(optimizer, **kwargs)
        self.sample_latents = sample_latents
        self.per_pixel = per_pixel
        self.encoder = encoder
        self.decoder = decoder
        self.regularizer = regularizer
        self.reconstruction_loss = reconstruction_loss

    def encode(self, images, training: bool = False) -> dict:
        return self.encoder(images, training=training)

    def decode(self, z, training: bool = False):
        return self.decoder(z, training=training)

    def representation(self, images):
        """The code metrics evaluate: the posterior mean, (n, d)."""
        return self.encode(images)["mean"]

    def decode_images(self, codes):
        """Images in [0, 1] (n, 64, 64, c) decoded from representation codes (n, d)."""
        return tf.sigmoid(self.decode(codes))

    def call(self, images, training: bool = False):
        return self.decode(self.encode(images, training)["mean"], training)

    def loss_terms(self, images, step, seed) -> dict:
        """Named scalar loss terms of one batch; 'loss' is what the optimiser minimises."""
        codes = self.encode(images, training=True)
        mean = codes["mean"]
        if self.sample_latents:
            logvar = codes["logvar"]
            z = mean + tf.exp(0.5 * logvar) * tf.random.stateless_normal(tf.shape(mean), seed)
            kl = tf.reduce_mean(losses.gaussian_kl(mean, logvar))
        else:                      # deterministic code (AE): no variance, no KL
            logvar, z, kl = None, mean, tf.zeros(())
        reconstruction = tf.reduce_mean(self.reconstruction_loss(images, self.decode(z, True)))
        terms = self.regularizer(kl, mean, logvar, z, step)
        objective = losses.per_pixel(reconstruction, images) if self.per_pixel else reconstruction
        # the terms the objective has: a regulariser that uses the KL returns it ("kl"), one
        # that does not (a plug-in's own prior, say) shows none
        return {"loss": objective + terms["regularizer"], "reconstruction": reconstruction,
                **terms}
