"""A new method written against the suite's interface: a beta-VAE whose regulariser adds an
L1 penalty on the posterior means (a sparsity prior on the code).

It is a regulariser of the shared VAE (models/vae.py), so encoder, decoder, sampling and
reconstruction loss come from the suite; only the new term is written here. Loaded by
examples/sparse_vae.gin through gin's `import` line.
"""

import gin
import tensorflow as tf


@gin.configurable("sparse_vae")
def sparse_vae(beta: float = 4.0, l1: float = 1.0):
    """regularizer(kl, mean, logvar, z, step) -> named terms; 'regularizer' is optimised."""
    def regularizer(kl, mean, logvar, z, step):
        sparsity = tf.reduce_mean(tf.reduce_sum(tf.abs(mean), axis=1))
        return {"regularizer": beta * kl + l1 * sparsity, "l1_means": sparsity}
    return regularizer
