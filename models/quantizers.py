"""Latent quantisers: `quantizer(z_continuous) -> (z_quantised, {named aux losses})`, all with
the straight-through gradient estimator (forward: the quantised value; backward: identity).

- `ScalarCodebookQuantizer`: latent quantisation of QLAE (paper 001, Algorithm 1, eqs. 4-5):
  a learnable scalar codebook V_j of n_v values per latent dim, initialised
  linspace(-0.5, 0.5, n_v) (Table 8); each dim snaps to its nearest value; losses
  quantize = ||sg(z_c) - z||^2 (moves the codebook) and commit = ||z_c - sg(z)||^2,
  averaged over dims and batch as the paper's code does (the scale its weights 1e-2 were
  tuned at, with the reconstruction a mean per pixel: models/quantized.py).
  `shared=True` is the ablation with one global scalar codebook for all dims (paper 001
  Table 2).
- `VectorQuantizer`: VQ-VAE (van den Oord et al. 2017; paper 001's baseline, d 64, n_v 512):
  the continuous code of n_z * d values is split into n_z vectors, each snapped to the
  nearest of a global codebook; same two losses; `indices` are its categorical codes.
- `finite_scalar_quantize`: FSQ as Tripod uses it (paper 000 eq. 10): tanh into [-1, 1],
  rounded to the fixed grid {-1, -1 + 2/(n_q - 1), ..., 1}; no codebook, no losses.
"""

from __future__ import annotations

import keras
import tensorflow as tf


def straight_through(continuous, quantised):
    """quantised in the forward pass, gradient of the identity to `continuous` backward."""
    return continuous + tf.stop_gradient(quantised - continuous)


def codebook_losses(continuous, quantised) -> dict:
    """VQ losses per paper 001 eq. (5), averaged over dims and batch (the paper's code)."""
    return {"quantize": tf.reduce_mean(tf.square(tf.stop_gradient(continuous) - quantised)),
            "commit": tf.reduce_mean(tf.square(continuous - tf.stop_gradient(quantised)))}


class ScalarCodebookQuantizer(keras.layers.Layer):
    """z_c (n, n_z) -> z (n, n_z) with z_j in V_j (paper 001 Algorithm 1)."""

    def __init__(self, num_latents: int, num_values: int = 10, shared: bool = False,
                 **kwargs):
        super().__init__(**{"dtype": "float32", **kwargs})    # float32 under any policy
        if int(num_values) < 2:
            raise ValueError(f"a scalar codebook needs >= 2 values, found {num_values}")
        rows = 1 if shared else int(num_latents)
        init = tf.tile(tf.linspace(-0.5, 0.5, int(num_values))[None, :], [rows, 1])
        self.values = self.add_weight(shape=(rows, int(num_values)),
                                      initializer=keras.initializers.Constant(init.numpy()),
                                      name="codebook")
        self.num_latents = int(num_latents)

    def indices(self, continuous):
        """Index of the nearest codebook value per dim, int (n, n_z)."""
        values = tf.broadcast_to(self.values, [self.num_latents, tf.shape(self.values)[1]])
        distance = tf.abs(continuous[:, :, None] - tf.cast(values, continuous.dtype)[None])
        return tf.argmin(distance, axis=2, output_type=tf.int32)

    def call(self, continuous):
        """(straight-through quantised code (n, n_z), {'quantize', 'commit'})."""
        values = tf.broadcast_to(self.values, [self.num_latents, tf.shape(self.values)[1]])
        chosen = tf.one_hot(self.indices(continuous), tf.shape(values)[1], dtype=values.dtype)
        quantised = tf.reduce_sum(chosen * values[None], axis=2)
        return straight_through(continuous, quantised), codebook_losses(continuous, quantised)


class VectorQuantizer(keras.layers.Layer):
    """z_c (n, n_z * d) -> z (n, n_z * d): n_z vectors of size d from a global codebook."""

    def __init__(self, num_vectors: int, vector_size: int, codebook_size: int = 512,
                 **kwargs):
        super().__init__(**{"dtype": "float32", **kwargs})
        self.num_vectors, self.vector_size = int(num_vectors), int(vector_size)
        self.codebook = self.add_weight(
            shape=(int(codebook_size), self.vector_size), name="codebook",
            initializer=keras.initializers.RandomUniform(-1.0 / codebook_size,
                                                         1.0 / codebook_size))

    def indices(self, continuous):
        """Index of the nearest codebook vector for each of the n_z parts, int (n, n_z)."""
        parts = tf.reshape(continuous, [-1, self.vector_size])
        distance = (tf.reduce_sum(tf.square(parts), 1, keepdims=True)
                    - 2.0 * parts @ tf.transpose(self.codebook)
                    + tf.reduce_sum(tf.square(self.codebook), 1)[None, :])
        return tf.reshape(tf.argmin(distance, axis=1, output_type=tf.int32),
                          [-1, self.num_vectors])

    def call(self, continuous):
        quantised = tf.reshape(tf.gather(self.codebook, self.indices(continuous)),
                               tf.shape(continuous))
        return straight_through(continuous, quantised), codebook_losses(continuous, quantised)


def finite_scalar_quantize(pre_activation, num_levels: int = 12):
    """FSQ (paper 000 eq. 10): (straight-through z in the grid, continuous tanh value).

    z = 2 / (n_q - 1) * round((n_q - 1) / 2 * (tanh(x) + 1)) - 1, values in [-1, 1]."""
    if int(num_levels) < 2:
        raise ValueError(f"FSQ needs >= 2 levels, found {num_levels}")
    continuous = tf.tanh(pre_activation)
    half = (num_levels - 1) / 2.0
    quantised = tf.round(half * (continuous + 1.0)) / half - 1.0
    return straight_through(continuous, quantised), continuous
