"""Tripod's regularisers (paper 000 sec. 3.2-3.3, Algorithm 1) as plain functions.

- `kernel_latent_multiinformation(z, sigma)`: KLM, eqs. (11)-(14): Gaussian-kernel density
  estimates of the joint (diagonal Silverman smoothing, eq. 12) and of each marginal
  (bandwidth sigma_j, eq. 13) over the batch; KLM = mean_b [log q(z_b) - sum_j log q_j(z_bj)].
- `normalized_hessian_penalty(f, z, sigma, seed)`: NHP, eqs. (16)-(17) with the central
  differences of eq. (9): Var[v^T H_k v] / Var[w^T H_k w] with v_j ~ sigma_j Rademacher and
  w_j ~ sigma_j N(0, 1); per sample, numerators and denominators are summed over the
  regularised activations k before dividing, then averaged over the batch (Algorithm 1,
  line 24; sec. 3.4). Zero for a decoder additive in the
  latents, invariant to rescaling the output or any latent (Proposition 3.1).
`hessian_penalty` is the original, unnormalised Hutchinson estimate (eq. 8) for naive Tripod.
sigma is the batch standard deviation of the *continuous* latents (sec. 3.4).
"""

from __future__ import annotations

import math

import tensorflow as tf


def silverman_smoothing(sigma, num_samples: int):
    """Diagonal of S (eq. 12): (4 / ((n_z + 2) n_b))^(2 / (n_z + 4)) sigma_j^2, (n_z,)."""
    n_z = tf.cast(tf.shape(sigma)[0], sigma.dtype)
    factor = (4.0 / ((n_z + 2.0) * float(num_samples))) ** (2.0 / (n_z + 4.0))
    return factor * tf.square(sigma)


def kernel_latent_multiinformation(z, sigma, eps: float = 1e-8):
    """KLM of latents z (n_b, n_z) with per-dim scales sigma (n_z,) > 0; scalar."""
    n_b = tf.shape(z)[0]
    n_bf = tf.cast(n_b, z.dtype)
    diff = z[:, None, :] - z[None, :, :]                                # (b, a, j)
    smoothing = silverman_smoothing(sigma, z.shape[0] or 1) + eps
    joint = (tf.reduce_logsumexp(-0.5 * tf.reduce_sum(tf.square(diff) / smoothing, -1), 1)
             - tf.math.log(n_bf) - 0.5 * tf.cast(tf.shape(z)[1], z.dtype) * math.log(2 * math.pi)
             - 0.5 * tf.reduce_sum(tf.math.log(smoothing)))
    scale = sigma + eps
    marginals = (tf.reduce_logsumexp(-0.5 * tf.square(diff / scale), 1) - tf.math.log(n_bf)
                 - 0.5 * math.log(2 * math.pi) - tf.math.log(scale))    # (b, j)
    return tf.reduce_mean(joint - tf.reduce_sum(marginals, 1))


def _second_directional(f, z, directions, epsilon: float):
    """(f(z + e u) - 2 f(z) + f(z - e u)) / e^2 for every probe u: (p, n, K)."""
    p = tf.shape(directions)[0]
    centre = f(z)
    shifted = tf.concat([z[None] + epsilon * directions, z[None] - epsilon * directions], 0)
    outputs = f(tf.reshape(shifted, [-1, tf.shape(z)[1]]))
    outputs = tf.reshape(outputs, [2, p, tf.shape(z)[0], -1])
    centre = tf.reshape(centre, [1, tf.shape(z)[0], -1])
    return (outputs[0] - 2.0 * centre + outputs[1]) / epsilon ** 2


def normalized_hessian_penalty(f, z, sigma, seed, num_probes: int = 2,
                               epsilon: float = 0.1, eps: float = 1e-12):
    """NHP of f: (n, n_z) -> activations (n, ...) at latents z (n, n_z); scalar >= 0."""
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 2)
    shape = tf.stack([num_probes, tf.shape(z)[0], tf.shape(z)[1]])
    rademacher = 2.0 * tf.cast(tf.random.stateless_uniform(shape, seeds[0]) < 0.5,
                               z.dtype) - 1.0
    gaussian = tf.random.stateless_normal(shape, seeds[1], dtype=z.dtype)
    numer = tf.math.reduce_variance(_second_directional(f, z, rademacher * sigma, epsilon), 0)
    denom = tf.math.reduce_variance(_second_directional(f, z, gaussian * sigma, epsilon), 0)
    return tf.reduce_mean(tf.reduce_sum(numer, 1) / (tf.reduce_sum(denom, 1) + eps))


def hessian_penalty(f, z, seed, num_probes: int = 2, epsilon: float = 0.1):
    """Original Hessian penalty (Peebles et al.; paper 000 eq. 8): Var over Rademacher
    probes of v^T H_k v, averaged over the batch and activations (naive Tripod)."""
    shape = tf.stack([num_probes, tf.shape(z)[0], tf.shape(z)[1]])
    rademacher = 2.0 * tf.cast(tf.random.stateless_uniform(shape, tf.cast(seed, tf.int64))
                               < 0.5, z.dtype) - 1.0
    return tf.reduce_mean(tf.math.reduce_variance(
        _second_directional(f, z, rademacher, epsilon), 0))
