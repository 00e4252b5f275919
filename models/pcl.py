"""PCL, permutation-contrastive learning (Hyvarinen & Morioka 2017) on images (paper 002
sec. 5.1): a non-variational encoder h trained by logistic regression to tell real
consecutive pairs (x_t, x_t-1) from pairs whose partner is a random frame.

Score (REFERENCE.md): r(x, y) = sum_i -|w1_i h_i(x) + w2_i h_i(y) + b_i| + a_i h_i(x)^2 + c,
loss = sigmoid cross-entropy of r with label 1 for real and 0 for shuffled pairs. There is
no decoder; the representation is h(x) (the encoder's mean head).
"""

from __future__ import annotations

import keras
import tensorflow as tf

from models.architectures import mean_only
from models.base import TrainableModel


def pcl_logits(h_first, h_second, w1, w2, b, a, c):
    """r(x, y) per pair, (n,), from encodings (n, d) and parameters (d,) / scalar c."""
    return (tf.reduce_sum(-tf.abs(w1 * h_first + w2 * h_second + b) + a * tf.square(h_first),
                          axis=1) + c)


class PCL(TrainableModel):
    """Batches are (x_t, x_t-1, x_random), each float32 (n, 64, 64, c)."""

    input_kind = "pairs_with_negatives"

    def __init__(self, encoder, optimizer=None, **kwargs):
        super().__init__(optimizer, **kwargs)
        self.encoder = mean_only(encoder, "pcl_encoder")   # PCL is not variational
        d = encoder.output["mean"].shape[-1]
        # w1, w2 independent draws (REFERENCE.md, PCL): with w1 = w2 the score sees
        # h(x) + h(y) instead of their difference and can stall at chance (loss log 2).
        # Unseeded initialisers draw from Keras' global generator, which the runner seeds
        # from the run's seed before the model is built.
        self.w1 = self.add_weight(shape=(d,), name="w1",
                                  initializer=keras.initializers.RandomNormal(stddev=0.1))
        self.w2 = self.add_weight(shape=(d,), name="w2",
                                  initializer=keras.initializers.RandomNormal(stddev=0.1))
        self.b = self.add_weight(shape=(d,), initializer="zeros", name="b")
        self.a = self.add_weight(shape=(d,), initializer="zeros", name="a")
        self.c = self.add_weight(shape=(), initializer="zeros", name="c")

    def encode(self, images, training: bool = False) -> dict:
        """{'mean': h(images)} (n, d): PCL's code has no variance."""
        return self.encoder(images, training=training)

    def representation(self, images):
        return self.encoder(images)["mean"]

    def call(self, images, training: bool = False):
        return self.encoder(images, training=training)["mean"]

    def loss_terms(self, batch, step, seed) -> dict:
        first, second, negative = batch
        n = tf.shape(first)[0]
        h = self.encoder(tf.concat([first, second, negative], axis=0), training=True)["mean"]
        h_first, h_second, h_negative = h[:n], h[n:2 * n], h[2 * n:]
        real = pcl_logits(h_first, h_second, self.w1, self.w2, self.b, self.a, self.c)
        fake = pcl_logits(h_first, h_negative, self.w1, self.w2, self.b, self.a, self.c)
        logits = tf.concat([real, fake], axis=0)
        labels = tf.concat([tf.ones_like(real), tf.zeros_like(fake)], axis=0)
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels, logits))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.cast(logits > 0, tf.float32), labels),
                                          tf.float32))
        return {"loss": loss, "accuracy": accuracy}
