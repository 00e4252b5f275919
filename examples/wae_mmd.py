"""Template for a whole model of your own (not a VAE regulariser): a Wasserstein
autoencoder with an MMD penalty (WAE-MMD; Tolstikhin et al. 2018, Algorithm 2).

A deterministic encoder maps an image to a code z; the loss is the reconstruction error
plus lambda * MMD(q(z), p(z)) between the batch of codes and as many draws from the prior
p(z) = N(0, I), with the inverse multiquadratic kernel k(x, y) = C / (C + ||x - y||^2),
C = 2 d sigma^2 (their sec. 4, sigma^2 = 1 for the unit Gaussian prior).

What the suite needs from a model is in models/interface.py and is checked when the model
is built (before training): `train_step` (here from models.base.TrainableModel, which
minimises loss_terms(...)['loss']), `representation`, and optionally `encode`,
`decode_images`, `decode` + `reconstruction_loss` for the health section and figures.
Copy this file, change `loss_terms`, and point a gin file at it (examples/wae_mmd.gin):

    import examples.wae_mmd
    model.method = 'custom'
    model.factory = @WAEMMD          # called as WAEMMD(observation_shape, num_latents)
"""

import gin
import tensorflow as tf

from models import architectures, losses
from models.base import TrainableModel


def imq_mmd(codes, prior_samples):
    """Unbiased MMD^2 between codes (n, d) and prior samples (n, d), IMQ kernel, scalar."""
    n = tf.cast(tf.shape(codes)[0], codes.dtype)
    scale = 2.0 * tf.cast(tf.shape(codes)[1], codes.dtype)

    def kernel(a, b):
        distance = tf.reduce_sum(tf.square(a[:, None, :] - b[None, :, :]), axis=-1)
        return scale / (scale + distance)

    off_diagonal = 1.0 - tf.eye(tf.shape(codes)[0], dtype=codes.dtype)
    within = (tf.reduce_sum(kernel(codes, codes) * off_diagonal)
              + tf.reduce_sum(kernel(prior_samples, prior_samples) * off_diagonal))
    return within / (n * (n - 1.0)) - 2.0 * tf.reduce_mean(kernel(codes, prior_samples))


@gin.configurable("WAEMMD")
class WAEMMD(TrainableModel):
    """WAE-MMD on the suite's dlib conv encoder / decoder; the code is the encoder output."""

    def __init__(self, observation_shape, num_latents: int, mmd_weight: float = 100.0):
        super().__init__(name="wae_mmd")
        self.mmd_weight = mmd_weight
        self.encoder = architectures.mean_only(
            architectures.conv_encoder(tuple(observation_shape), num_latents), "wae_encoder")
        self.decoder = architectures.conv_decoder(num_latents, tuple(observation_shape))
        self.reconstruction_loss = losses.bernoulli_reconstruction

    def encode(self, images, training: bool = False) -> dict:
        return self.encoder(images, training=training)

    def decode(self, codes, training: bool = False):
        return self.decoder(codes, training=training)

    def representation(self, images):
        """(n, d) codes: what the metrics score."""
        return self.encode(images)["mean"]

    def decode_images(self, codes):
        """Images in [0, 1], (n, 64, 64, c)."""
        return tf.sigmoid(self.decode(codes))

    def loss_terms(self, images, step, seed) -> dict:
        codes = self.encode(images, training=True)["mean"]
        prior = tf.random.stateless_normal(tf.shape(codes), seed, dtype=codes.dtype)
        reconstruction = tf.reduce_mean(self.reconstruction_loss(images,
                                                                 self.decode(codes, True)))
        mmd = imq_mmd(codes, prior)
        return {"loss": reconstruction + self.mmd_weight * mmd,
                "reconstruction": reconstruction, "mmd": mmd}
