"""Losses shared by every method (TensorFlow ops; all return per-example values (n,)).

- Bernoulli reconstruction: sigmoid cross-entropy of logits, summed over pixels (dlib).
- Gaussian reconstruction: squared error of sigmoid(logits), summed over pixels (dlib's
  "l2" loss).
- Gaussian KL(N(mean, exp(logvar)) || N(0, I)), summed over latents.
- The β-VAE family's regularisers (dlib's `regularizer` hook): each maps
  (kl, mean, logvar, z_sample, step) to a scalar added to the reconstruction loss.
"""

from __future__ import annotations

import math

import tensorflow as tf


def bernoulli_reconstruction(images, logits):
    """Summed sigmoid cross-entropy per image, (n,)."""
    loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=images, logits=logits)
    return tf.reduce_sum(tf.reshape(loss, [tf.shape(loss)[0], -1]), axis=1)


def gaussian_reconstruction(images, logits):
    """Summed squared error of sigmoid(logits) per image, (n,)."""
    error = tf.square(images - tf.sigmoid(logits))
    return tf.reduce_sum(tf.reshape(error, [tf.shape(error)[0], -1]), axis=1)


def per_pixel(reconstruction, images):
    """A per-image summed reconstruction loss as a mean per pixel value: paper 001's and
    Tripod's scale (their code averages the BCE over pixels), against which their loss
    weights were tuned."""
    size = tf.cast(tf.reduce_prod(tf.shape(images)[1:]), reconstruction.dtype)
    return reconstruction / size


def gaussian_kl(mean, logvar):
    """KL(N(mean, exp(logvar)) || N(0, I)) per example, (n,)."""
    return 0.5 * tf.reduce_sum(tf.square(mean) + tf.exp(logvar) - logvar - 1.0, axis=1)


def gaussian_log_density(samples, mean, logvar):
    """log N(samples | mean, exp(logvar)) elementwise, broadcasting."""
    inv_var = tf.exp(-logvar)
    return -0.5 * (math.log(2.0 * math.pi) + logvar + tf.square(samples - mean) * inv_var)


def total_correlation_mws(z, mean, logvar):
    """Minibatch-weighted-sampling estimate of TC(z) (Chen et al. 2018, eq. 9 / dlib).

    log q(z_i) and log prod_j q(z_ij) are estimated over the batch without the log(N M)
    normalisers, as disentanglement_lib does: they only shift the estimate by a constant
    ((d - 1) log(N M)), so gradients are unchanged.
    """
    log_qz_prob = gaussian_log_density(z[:, None, :], mean[None, :, :], logvar[None, :, :])
    log_qz_product = tf.reduce_sum(tf.reduce_logsumexp(log_qz_prob, axis=1), axis=1)
    log_qz = tf.reduce_logsumexp(tf.reduce_sum(log_qz_prob, axis=2), axis=1)
    return tf.reduce_mean(log_qz - log_qz_product)


def covariance_of_means(mean):
    """Cov[mean] over the batch, (d, d)."""
    centred = mean - tf.reduce_mean(mean, axis=0, keepdims=True)
    return tf.matmul(centred, centred, transpose_a=True) / tf.cast(tf.shape(mean)[0], mean.dtype)


def dip_regularizer(covariance, lambda_od: float, lambda_d: float):
    """lambda_od * sum off-diag^2 + lambda_d * sum (diag - 1)^2 (Kumar et al. 2018)."""
    diagonal = tf.linalg.diag_part(covariance)
    off_diagonal = covariance - tf.linalg.diag(diagonal)
    return (lambda_od * tf.reduce_sum(tf.square(off_diagonal))
            + lambda_d * tf.reduce_sum(tf.square(diagonal - 1.0)))


def dip_covariance(mean, logvar, kind: str):
    """DIP-VAE-I: Cov[mean]; DIP-VAE-II: Cov[mean] + E[diag(exp(logvar))]."""
    covariance = covariance_of_means(mean)
    if kind == "i":
        return covariance
    if kind == "ii":
        return covariance + tf.linalg.diag(tf.reduce_mean(tf.exp(logvar), axis=0))
    raise ValueError(f"DIP-VAE kind must be 'i' or 'ii', found {kind!r}")
