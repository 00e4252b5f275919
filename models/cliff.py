"""Cliff (paper 004) and HFS (Roth et al. 2023, Cliff's main baseline) as regularisers of
the shared VAE (models/vae.py) and as plain functions of a batch of latents.

Cliff criterion (sec. 2, appendix B) on the batch z (n, d), each dim standardised, with a
Gaussian Parzen estimate of fixed bandwidth sigma (eqs. 10-14), one-dimensional integrals
by a K-point rule on [low, high] (eq. 15):
- univariate l_uni = sum_i H(s_i), s_i = |dp(z_i)/dz_i| normalised (eqs. 1-2);
- bivariate l_biv = sum_{i != j} JSD over M conditioning values zeta of z_j (picked from the
  batch) of the normalised |d p(z_i | z_j = zeta) / dz_i| (eqs. 3-6);
- anti-collapse l_KL-uni = sum_i KL(U(-sqrt 3, sqrt 3) || p(z_i)) (eq. 7; the paper prints
  "-2 sqrt 3" for the uniform's negative entropy, which is -log(2 sqrt 3));
L_Cliff = lambda_uni l_uni + lambda_biv l_biv + lambda_KL-uni l_KL-uni (eq. 8), added to a
beta-VAE as beta KL + lambda_a L_Cliff (eq. 9), on the posterior means.
Choices where the paper is silent: the integration grid is [-4, 4] with K = 64 points
(standardised dims), the uniform's expectation uses K equally spaced points instead of K
random draws, and the M conditioning values are the first M batch entries (the batch is
already a random sample).

HFS: for every pair of dims (i, j), the (one-sided, hard) Hausdorff distance from the
product of the pair's marginal supports {(z_i^a, z_j^b)} to their joint support
{(z_i^c, z_j^c)} in the batch, max_(a, b) min_c ||(z_i^a, z_j^b) - (z_i^c, z_j^c)||^2
(squared, as Roth et al.'s code), summed over pairs; zero when the joint support
factorises. Added to a beta-VAE as beta KL + gamma HFS + delta S, where S is Roth et al.'s
"minimal support" scale term, sum over the batch of relu(1 - max_d mu_d) + relu(min_d mu_d):
without it the cheapest factorised support is a single point, and the code collapses
(it did, KL 4e-4 after 2000 steps on dSprites).
"""

from __future__ import annotations

import math

import tensorflow as tf


def _standardise(z, eps: float = 1e-6):
    mean, var = tf.nn.moments(z, axes=[0])
    return (z - mean) / tf.sqrt(var + eps)


def _gauss(x, sigma: float):
    return tf.exp(-0.5 * tf.square(x / sigma)) / (math.sqrt(2 * math.pi) * sigma)


def _entropy(density, step: float, eps: float = 1e-12):
    """-integral of p log p over the grid (last axis), p already normalised on the grid."""
    return -tf.reduce_sum(density * tf.math.log(density + eps), axis=-1) * step


def _normalise(values, step: float, eps: float = 1e-12):
    return values / (tf.reduce_sum(values, axis=-1, keepdims=True) * step + eps)


def cliff_terms(z, sigma: float = 0.1, num_grid: int = 64, num_conditioning: int = 8,
                low: float = -4.0, high: float = 4.0) -> dict:
    """{'uni', 'biv', 'kl_uni'} of latents z (n, d), d >= 2 for 'biv'."""
    zs = _standardise(z)
    grid = tf.linspace(tf.constant(low, z.dtype), tf.constant(high, z.dtype), num_grid)
    step = (high - low) / num_grid
    diff = grid[None, :, None] - zs[:, None, :]                          # (n, K, d)
    kernel = _gauss(diff, sigma)
    # eq. 13: d/dt N(t; z_k, sigma^2) = -(t - z_k) / sigma^2 N(...)
    slope = tf.reduce_mean(-diff / sigma ** 2 * kernel, axis=0)         # (K, d)
    uni = tf.reduce_sum(_entropy(_normalise(tf.abs(tf.transpose(slope)), step), step))
    # eq. 14 at z_j = zeta_m: the marginal factor p(zeta) cancels in the normalisation (5).
    m = min(int(num_conditioning), int(z.shape[0] or num_conditioning))
    zeta = zs[:m]                                                        # (M, d)
    weight = _gauss(zeta[:, None, :] - zs[None, :, :], sigma)            # (M, n, d_j)
    partial = tf.einsum("nki,mnj->ijmk", -diff / sigma ** 2 * kernel, weight) / tf.cast(
        tf.shape(z)[0], z.dtype)                                         # (d_i, d_j, M, K)
    conditional = _normalise(tf.abs(partial), step)
    mixture = tf.reduce_mean(conditional, axis=2)                        # (d_i, d_j, K)
    jsd = _entropy(mixture, step) - tf.reduce_mean(_entropy(conditional, step), axis=2)
    d = tf.shape(z)[1]
    off_diagonal = 1.0 - tf.eye(d, dtype=z.dtype)
    biv = tf.reduce_sum(jsd * off_diagonal)
    half_width = math.sqrt(3.0)
    points = tf.linspace(tf.constant(-half_width, z.dtype), tf.constant(half_width, z.dtype),
                         num_grid + 2)[1:-1]
    density = tf.reduce_mean(_gauss(points[None, :, None] - zs[:, None, :], sigma), axis=0)
    kl_uni = tf.reduce_sum(-math.log(2 * half_width)
                           - tf.reduce_mean(tf.math.log(density + 1e-12), axis=0))
    return {"uni": uni, "biv": biv, "kl_uni": kl_uni}


def hausdorff_factorized_support(z):
    """Sum over pairs i < j of the squared Hausdorff distance of the product support to the
    joint support of (z_i, z_j) in the batch z (n, d)."""
    n, d = tf.shape(z)[0], z.shape[1]
    total = tf.zeros((), z.dtype)
    for i in range(d):
        for j in range(i + 1, d):
            joint = tf.stack([z[:, i], z[:, j]], axis=1)                          # (n, 2)
            product = tf.reshape(tf.stack(tf.meshgrid(z[:, i], z[:, j], indexing="ij"), -1),
                                 [n * n, 2])                                    # (n^2, 2)
            distance = tf.reduce_sum(tf.square(product[:, None, :] - joint[None]), -1)
            total += tf.reduce_max(tf.reduce_min(distance, axis=1))
    return total


def minimal_support_scale(z, low: float = 0.0, high: float = 1.0):
    """Roth et al.'s anti-collapse term: per example, relu(high - max_d z) + relu(min_d z -
    low), summed over the batch z (n, d)."""
    return tf.reduce_sum(tf.nn.relu(high - tf.reduce_max(z, axis=1))
                         + tf.nn.relu(tf.reduce_min(z, axis=1) - low))


def cliff_vae(beta: float = 10.0, lambda_a: float = 1.0, lambda_uni: float = 0.5,
              lambda_biv: float = 1.0, lambda_kl_uni: float = 0.7, sigma: float = 0.1):
    """beta-VAE + lambda_a L_Cliff (eq. 9); defaults: Shapes3D optimum of appendix F.4."""
    def regularizer(kl, mean, logvar, z, step):
        terms = cliff_terms(mean, sigma)
        cliff = (lambda_uni * terms["uni"] + lambda_biv * terms["biv"]
                 + lambda_kl_uni * terms["kl_uni"])
        return {"regularizer": beta * kl + lambda_a * cliff, "cliff": cliff, "kl": kl,
                **{f"cliff_{k}": v for k, v in terms.items()}}
    return regularizer


def cliff_ae(lambda_a: float = 1.0, lambda_uni: float = 0.5, lambda_biv: float = 1.0,
             lambda_kl_uni: float = 0.7, sigma: float = 0.1):
    """Autoencoder + lambda_a L_Cliff (paper 004 eq. 17): `cliff_vae` without the KL."""
    return cliff_vae(0.0, lambda_a, lambda_uni, lambda_biv, lambda_kl_uni, sigma)


def hfs_vae(beta: float = 1.0, gamma: float = 100.0, delta: float = 1.0):
    """beta-VAE + gamma HFS + delta minimal-support scale (Roth et al. 2023); beta, gamma:
    paper 004's tuned Shapes3D values (appendix F.4); delta: Roth et al.'s default."""
    def regularizer(kl, mean, logvar, z, step):
        hfs = hausdorff_factorized_support(mean)
        scale = minimal_support_scale(mean)
        return {"regularizer": beta * kl + gamma * hfs + delta * scale, "hfs": hfs, "kl": kl,
                "support_scale": scale}
    return regularizer
