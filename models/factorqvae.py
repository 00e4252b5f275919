"""FactorQVAE and its variants QVAE, dVAE, FactordVAE (paper 003), one model with switches.

Posterior (eqs. 3-4): a global codebook M of K scalars; per latent j a categorical over the
K values with logits -R_j, R_j = |z_e,j - M| (eq. 3: the absolute value, not the squared
distance) for QVAE/FactorQVAE, or
logits output by the encoder directly (d x K heads) for dVAE/FactordVAE. Training samples
a relaxed one-hot z (Gumbel-softmax, temperature tau) per latent; the decoder gets
z_q = z M (n, d). Loss (eq. 5, Algorithm 1):
    MSE reconstruction of images shifted to [-0.5, 0.5] (summed over pixels)
    + beta KL(q(z|x) || uniform over K) + gamma TC,
TC by a discriminator on the relaxed one-hots (5 x 1000 LeakyReLU),
dims permuted independently across the batch (eqs. 6-8; shared with FactorVAE:
models/factorvae.py). gamma = 0 is QVAE / dVAE (no discriminator).
Schedules, paper 003 appendix A.1 (the defaults): both learning rates (Adam) cosine-
annealed from 1e-3 to 1.25e-6 over the first 50k iterations (`lr_decay_steps`, `lr_end`)
and held there; Gumbel temperature tau = exp(-1e-5 t) (`tau_schedule = 'exponential'`);
100k iterations, batch 256, K = 64, codebook init N(0, 1); beta / gamma of Table 3.
`tau_schedule = 'cosine'` anneals tau from `tau_start` to `tau_end` over `total_steps`
instead: the CPU-scale configs (gin_configs/models/cpu_scale/) fit both schedules into
their 2,000 steps, where exp(-1e-5 t) would stay ~1 and every argmax code the same. The representation evaluated is the
deterministic code: M at each latent's most probable index.
"""

from __future__ import annotations

import math

import keras
import tensorflow as tf

from models.base import TrainableModel
from models.factorvae import discriminator, tc_and_discriminator_loss, train_with_discriminator
from models.optimizers import cosine_adam


def temperature(step, total_steps: int, start: float = 1.0, end: float = 0.1,
                schedule: str = "cosine"):
    """Gumbel-softmax temperature at `step`."""
    t = tf.cast(step, tf.float32)
    if schedule == "exponential":
        return tf.exp(-1e-5 * t)
    progress = tf.minimum(t / float(total_steps), 1.0)
    return end + 0.5 * (start - end) * (1.0 + tf.cos(math.pi * progress))


def categorical_kl_to_uniform(logits):
    """KL(softmax(logits) || uniform) summed over latents, mean over the batch; logits
    (n, d, K)."""
    log_q = tf.nn.log_softmax(logits, axis=-1)
    k = tf.cast(tf.shape(logits)[-1], logits.dtype)
    return tf.reduce_mean(tf.reduce_sum(tf.exp(log_q) * (log_q + tf.math.log(k)), [1, 2]))


def gumbel_softmax(logits, tau, seed):
    """Relaxed one-hot sample (n, d, K) of categorical `logits`, stateless."""
    uniform = tf.random.stateless_uniform(tf.shape(logits), seed, minval=1e-10, maxval=1.0)
    return tf.nn.softmax((logits - tf.math.log(-tf.math.log(uniform))) / tau, axis=-1)


class DiscreteLatentVAE(TrainableModel):
    """Batches are images (n, 64, 64, c) in [0, 1].

    optimizer / discriminator_optimizer (the latter used when gamma > 0): None is
    `cosine_adam()`, paper 003's schedule; `make_discrete_vae` builds both from its
    learning-rate settings."""

    #: the representation is one codebook value per latent: discrete estimators apply
    #: (InfoMEC, paper 001 sec. 4.1)
    code_is_discrete = True

    def __init__(self, encoder, decoder, num_latents: int, codebook_size: int = 64,
                 logits_from: str = "distance", beta: float = 1e-3, gamma: float = 1e-4,
                 total_steps: int = 100000, tau_start: float = 1.0, tau_end: float = 0.1,
                 tau_schedule: str = "exponential", optimizer=None,
                 discriminator_optimizer=None, **kwargs):
        if logits_from not in ("distance", "encoder"):
            raise ValueError(f"logits_from must be 'distance' (QVAE) or 'encoder' (dVAE), "
                             f"found {logits_from!r}")
        if tau_schedule not in ("cosine", "exponential"):
            raise ValueError(f"tau_schedule must be 'cosine' or 'exponential', found "
                             f"{tau_schedule!r}")
        super().__init__(optimizer or cosine_adam(), **kwargs)
        self.encoder, self.decoder = encoder, decoder
        self.num_latents, self.codebook_size = int(num_latents), int(codebook_size)
        self.logits_from = logits_from
        self.beta, self.gamma = float(beta), float(gamma)
        self.total_steps, self.tau_schedule = int(total_steps), tau_schedule
        self.tau_start, self.tau_end = float(tau_start), float(tau_end)
        self.codebook = self.add_weight(shape=(self.codebook_size,), name="codebook",
                                        initializer=keras.initializers.RandomNormal())
        self.discriminator = None
        if self.gamma > 0:
            self.discriminator = discriminator((self.num_latents, self.codebook_size), 1000, 5)
            self.discriminator_optimizer = discriminator_optimizer or cosine_adam()

    def logits(self, images, training: bool = False):
        """Categorical logits (n, d, K)."""
        out = self.encoder(images, training=training)["mean"]
        if self.logits_from == "encoder":
            return tf.reshape(out, [-1, self.num_latents, self.codebook_size])
        return -tf.abs(out[:, :, None] - self.codebook[None, None, :])

    def encode(self, images, training: bool = False) -> dict:
        logits = self.logits(images, training)
        codes = tf.gather(self.codebook, tf.argmax(logits, axis=-1))
        return {"mean": codes, "codes": codes, "logits": logits}

    def representation(self, images):
        return self.encode(images)["codes"]

    def decode(self, codes, training: bool = False):
        return self.decoder(codes, training=training)

    def decode_images(self, codes):
        return tf.clip_by_value(self.decode(codes) + 0.5, 0.0, 1.0)

    def reconstruction_loss(self, images, outputs):
        """Squared error of images shifted to [-0.5, 0.5], summed over pixels, (n,)."""
        return tf.reduce_sum(tf.square(outputs - (images - 0.5)), axis=[1, 2, 3])

    def _model_variables(self) -> list:
        return (self.encoder.trainable_variables + self.decoder.trainable_variables
                + [self.codebook])

    def optimizers_list(self) -> list:
        return [self.model_optimizer] + ([self.discriminator_optimizer]
                                         if self.discriminator is not None else [])

    def optimizer_variables(self) -> list:
        pairs = [(self.model_optimizer, self._model_variables())]
        if self.discriminator is not None:
            pairs.append((self.discriminator_optimizer,
                          self.discriminator.trainable_variables))
        return pairs

    def loss_terms(self, images, step, seed) -> dict:
        seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 2)
        logits = self.logits(images, training=True)
        tau = temperature(step, self.total_steps, self.tau_start, self.tau_end,
                          self.tau_schedule)
        soft = gumbel_softmax(logits, tau, seeds[0])
        quantised = tf.reduce_sum(soft * self.codebook[None, None, :], axis=-1)
        reconstruction = tf.reduce_mean(self.reconstruction_loss(images,
                                                                 self.decode(quantised, True)))
        kl = categorical_kl_to_uniform(logits)
        terms = {"reconstruction": reconstruction, "kl": kl, "temperature": tau}
        loss = reconstruction + self.beta * kl
        if self.discriminator is not None:
            tc, terms["discriminator_loss"] = tc_and_discriminator_loss(self.discriminator,
                                                                        soft, seeds[1])
            terms["total_correlation"] = tc
            loss += self.gamma * tc
        return {"loss": loss, **terms}

    def train_step(self, images, step, seed) -> dict:
        if self.discriminator is None:
            return super().train_step(images, step, seed)
        return train_with_discriminator(self, images, step, seed, self._model_variables())


VARIANTS = {"factor_qvae": ("distance", True), "qvae": ("distance", False),
            "factor_dvae": ("encoder", True), "dvae": ("encoder", False)}


def make_discrete_vae(make_encoder, make_decoder, observation_shape, num_latents: int,
                      variant: str, codebook_size: int = 64, beta: float = 1e-3,
                      gamma: float = 1e-4, total_steps: int = 100000,
                      tau_start: float = 1.0, tau_end: float = 0.1,
                      tau_schedule: str = "exponential", learning_rate: float = 1e-3,
                      lr_decay_steps: int = 50000, lr_end: float = 1.25e-6
                      ) -> DiscreteLatentVAE:
    """One of VARIANTS; defaults: paper 003's FactorQVAE on Shapes3D (Table 3). Both
    optimisers: Adam with the learning rate cosine-annealed from `learning_rate` to `lr_end`
    over `lr_decay_steps` (`models.optimizers.cosine_adam`)."""
    from models.architectures import mean_only
    if not 0 <= lr_end <= learning_rate:
        raise ValueError(f"discrete_vae.lr_end must be in [0, learning_rate = "
                         f"{learning_rate}], found {lr_end}")
    logits_from, factorised = VARIANTS[variant]
    width = num_latents * codebook_size if logits_from == "encoder" else num_latents
    encoder = mean_only(make_encoder(tuple(observation_shape), num_latents=width),
                        f"{variant}_encoder")
    gamma = gamma if factorised else 0.0

    def optimizer():
        return cosine_adam(learning_rate, lr_decay_steps, lr_end)
    return DiscreteLatentVAE(encoder, make_decoder(num_latents, tuple(observation_shape)),
                             num_latents, codebook_size, logits_from, beta, gamma, total_steps,
                             tau_start, tau_end, tau_schedule, optimizer(),
                             optimizer() if gamma > 0 else None, name=variant)
