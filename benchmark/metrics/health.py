"""Representation health: active units, overpruning (paper 002 sec. 5.3), reconstruction.

- A latent dim is *active* when its mean posterior variance E[sigma^2] is below
  `variance_threshold` (0.8): it carries information instead of matching the unit-variance
  prior. A run is *over-pruned* when fewer dims are active than there are ground-truth
  factors; Zietlow-style tables exclude such runs (paper 002 sec. 5.3, Figs. 7-9).
- PSNR is computed on float images in [0, 1] (never on wrapped uint8 differences), per
  image as 10 log10(1 / MSE), then averaged; a perfect reconstruction is capped at
  `max_psnr` dB so the mean stays finite.
- Mean reconstruction loss: Bernoulli cross-entropy of decoder logits, summed over pixels
  and averaged over images (disentanglement_lib's reconstruction loss).
"""

from __future__ import annotations

import numpy as np

from benchmark.metrics import codes as codes_lib


def active_units(posterior_variances, num_factors: int, variance_threshold: float = 0.8
                 ) -> dict:
    """Health of a variational code from posterior variances sigma^2 (n, d) >= 0."""
    variances = codes_lib.check_code_array(posterior_variances, 1, "active_units")
    if (variances < 0).any():
        raise codes_lib.MetricInputError("active_units: posterior variances must be >= 0, "
                                         f"found minimum {variances.min()}")
    mean_variance = variances.mean(axis=0)
    active = int(np.sum(mean_variance < variance_threshold))
    return {"active_units": active, "mean_posterior_variance": mean_variance.tolist(),
            "overpruned": bool(active < num_factors)}


def _check_images(images, reconstructions, name: str) -> tuple[np.ndarray, np.ndarray]:
    images = np.asarray(images, dtype=np.float64)
    reconstructions = np.asarray(reconstructions, dtype=np.float64)
    if images.shape != reconstructions.shape or images.ndim < 2:
        raise codes_lib.MetricInputError(f"{name}: expected images and reconstructions of the "
                                         f"same shape (n, ...), found {images.shape} and "
                                         f"{reconstructions.shape}")
    for array, what in ((images, "images"), (reconstructions, "reconstructions")):
        if not np.all(np.isfinite(array)):
            raise codes_lib.MetricInputError(f"{name}: {what} contain NaN/inf values")
    return images, reconstructions


def psnr(images, reconstructions, max_psnr: float = 100.0) -> float:
    """Mean per-image PSNR in dB of float images in [0, 1]."""
    images, reconstructions = _check_images(images, reconstructions, "psnr")
    for array, what in ((images, "images"), (reconstructions, "reconstructions")):
        if array.min() < 0.0 or array.max() > 1.0:
            raise codes_lib.MetricInputError(f"psnr: expected {what} as floats in [0, 1], "
                                             f"found range [{array.min()}, {array.max()}]")
    mse = ((images - reconstructions) ** 2).reshape(len(images), -1).mean(axis=1)
    per_image = np.minimum(10.0 * np.log10(1.0 / np.maximum(mse, 1e-300)), max_psnr)
    return float(per_image.mean())


def bernoulli_reconstruction_loss(images, logits) -> float:
    """Mean over images of the summed sigmoid cross-entropy of decoder logits."""
    images, logits = _check_images(images, logits, "reconstruction_loss")
    per_pixel = np.maximum(logits, 0) - logits * images + np.log1p(np.exp(-np.abs(logits)))
    return float(per_pixel.reshape(len(images), -1).sum(axis=1).mean())
