"""How much of a perturbation a decoder renders: does the model encode what was added to
the images, or treat it as noise?

For an additive perturbation (benchmark/data/variants.py, x' = reflect(x + eps delta)) the
added part of image i is d_i = x'_i - x_i (the clean image x_i of the same factors). With
the model's reconstruction r_i of x'_i (decoded from the posterior mean), its share of d_i
is the least-squares coefficient of r_i - x_i on d_i:

    share_i = <r_i - x_i, d_i> / <d_i, d_i>          (1: the decoder renders the added part;
                                                      0: it renders the clean image, the
                                                      added part treated as noise)

The command that reads it from trained runs is `python -m benchmark.posterior_reach`
(benchmark/studies/posterior_reach.py), beside the posterior's reach: a code can only turn
with a perturbation its decoder renders. The measure is the suite's, not paper 002's.
"""

from __future__ import annotations

import numpy as np

from benchmark.metrics import codes as codes_lib


def perturbation_share(clean, perturbed, reconstructed) -> dict:
    """{'share': mean share_i over the images whose perturbation is not zero,
    'share_sd': their sd, 'energy': mean <d_i, d_i>, 'error_to_perturbed': mean
    ||r_i - x'_i||^2, 'error_to_clean': mean ||r_i - x_i||^2, 'images': images used} for
    images (n, h, w, c) in [0, 1] (clean, perturbed, reconstructed). MetricInputError for
    mismatched shapes, non-finite values or no image with a perturbation."""
    arrays = [np.asarray(a, np.float64) for a in (clean, perturbed, reconstructed)]
    if len({a.shape for a in arrays}) != 1 or arrays[0].ndim < 2:
        raise codes_lib.MetricInputError(
            "perturbation_share: expected clean, perturbed and reconstructed images of one "
            f"shape (n, ...), found {[a.shape for a in arrays]}")
    if not all(np.isfinite(a).all() for a in arrays):
        raise codes_lib.MetricInputError("perturbation_share: expected finite images, "
                                         "found NaN or inf")
    clean, perturbed, reconstructed = (a.reshape(len(a), -1) for a in arrays)
    added = perturbed - clean
    energy = np.sum(added * added, axis=1)
    moved = energy > 1e-12
    if not moved.any():
        raise codes_lib.MetricInputError("perturbation_share: every perturbed image equals "
                                         "its clean image; there is no perturbation to share")
    share = np.sum((reconstructed - clean) * added, axis=1)[moved] / energy[moved]
    return {"share": float(share.mean()), "share_sd": float(share.std()),
            "energy": float(energy.mean()),
            "error_to_perturbed": float(np.mean(np.sum((reconstructed - perturbed) ** 2, 1))),
            "error_to_clean": float(np.mean(np.sum((reconstructed - clean) ** 2, 1))),
            "images": int(moved.sum())}
