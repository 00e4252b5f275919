"""PCL, permutation-contrastive learning (Hyvarinen & Morioka 2017) on images (paper 002
sec. 5.1): a non-variational encoder h trained by logistic regression to tell real
consecutive pairs (x_t, x_t-1) from pairs whose partner is a random frame.

Score: r(x, y) = sum_i -|w1_i h_i(x) + w2_i h_i(y) + b_i| + a_i h_i(x)^2 + c, loss =
sigmoid cross-entropy of r with label 1 for real and 0 for shuffled pairs. There is no
decoder; the representation is h(x).

Two choices follow Hyvarinen & Morioka's own code (the official PyTorch PCL, `pcl.py`:
`Net`):
- h is batch-normalised (BatchNorm on the encoder's output, without affine terms since the
  score's w, b and a carry scale and offset): without it the logistic regression can
  separate pairs by growing h's scale, which saturates the task within a few hundred steps
  and leaves the encoder little gradient (results/pcl_learns_cpu, results/pcl_length_cpu);
- (w1, w2, b) start at (1, -1, 0) for every dim, so r starts as -sum_i |h_i(x) - h_i(y)|:
  the temporal-difference score of a slowly varying source (the paper's eq. for a
  Laplacian innovation); a is one scalar for all dims, starting at 1, c at 0.
`official_init=False, batch_norm=False` gives the suite's earlier PCL (w1, w2 independent
N(0, 0.1) draws, a per dim at 0, no normalisation), kept for the ablation.
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

    def __init__(self, encoder, optimizer=None, batch_norm: bool = True,
                 official_init: bool = True, **kwargs):
        super().__init__(optimizer, **kwargs)
        self.encoder = mean_only(encoder, "pcl_encoder")   # PCL is not variational
        d = encoder.output["mean"].shape[-1]
        self.normalize = (keras.layers.BatchNormalization(center=False, scale=False,
                                                          epsilon=1e-5,   # PyTorch's
                                                          dtype="float32",   # as the code
                                                          name="pcl_batch_norm")
                          if batch_norm else None)
        if official_init:
            w1_init, w2_init = "ones", keras.initializers.Constant(-1.0)
            a_shape, a_init = (), "ones"
        else:
            # Unseeded initialisers draw from Keras' global generator, which the runner
            # seeds from the run's seed before the model is built.
            w1_init = keras.initializers.RandomNormal(stddev=0.1)
            w2_init = keras.initializers.RandomNormal(stddev=0.1)
            a_shape, a_init = (d,), "zeros"
        self.w1 = self.add_weight(shape=(d,), name="w1", initializer=w1_init)
        self.w2 = self.add_weight(shape=(d,), name="w2", initializer=w2_init)
        self.b = self.add_weight(shape=(d,), initializer="zeros", name="b")
        self.a = self.add_weight(shape=a_shape, initializer=a_init, name="a")
        self.c = self.add_weight(shape=(), initializer="zeros", name="c")
        if self.normalize is not None:
            self.normalize.build((None, d))

    def _h(self, images, training: bool):
        h = self.encoder(images, training=training)["mean"]
        return h if self.normalize is None else self.normalize(h, training=training)

    def encode(self, images, training: bool = False) -> dict:
        """{'mean': h(images)} (n, d): PCL's code has no variance."""
        return {"mean": self._h(images, training)}

    def representation(self, images):
        return self._h(images, False)

    def call(self, images, training: bool = False):
        return self._h(images, training)

    def loss_terms(self, batch, step, seed) -> dict:
        first, second, negative = batch
        n = tf.shape(first)[0]
        h = self._h(tf.concat([first, second, negative], axis=0), training=True)
        h_first, h_second, h_negative = h[:n], h[n:2 * n], h[2 * n:]
        real = pcl_logits(h_first, h_second, self.w1, self.w2, self.b, self.a, self.c)
        fake = pcl_logits(h_first, h_negative, self.w1, self.w2, self.b, self.a, self.c)
        logits = tf.concat([real, fake], axis=0)
        labels = tf.concat([tf.ones_like(real), tf.zeros_like(fake)], axis=0)
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels, logits))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.cast(logits > 0, tf.float32), labels),
                                          tf.float32))
        return {"loss": loss, "accuracy": accuracy}
