"""How far a VAE's posterior reaches, in the factors' class steps: the mechanism behind
the rate reading.

Paper 002 (sec. 3.3, after eq. 8) locates the pressure that aligns a β-VAE's axes in the
stochastic reconstruction term: the encoder's noise reaches "a certain radius of the
relevant local structure", so the decoder is asked about an image's neighbours only as far
as the posterior spreads. A posterior narrower than one class step reaches no neighbour.
This module measures that reach on a trained run. Per latent j, over images with factors
(n, k) in class steps, posterior means mu (n, d) and standard deviations sigma (n, d):

    mu_j - mean ~ g_j . (factors - mean)          (least squares; g_j in units per class step)
    sd_j        = mean over images of sigma_j
    reach_j     = sd_j / |g_j|                    (the posterior's sd in class steps along
                                                   the direction the latent moves in)
    factor_j    = the factor with the largest |g_j| component

A reach below 1 means neighbouring images (one class step apart) sit more than one
posterior sd apart on that latent. Reading reach as "the radius of the relevant local
structure" is the suite's reading of paper 002, not the paper's own measure. The gradient
is a linear fit: for a latent that is not linear in the factors (alignment.py's R^2 < 0.5)
|g_j| understates how fast the mean moves, and the reach overstates; `r2` is kept beside it.

The command that reads it from trained runs is `python -m benchmark.posterior_reach`
(benchmark/studies/posterior_reach.py).
"""

from __future__ import annotations

import numpy as np

from benchmark.metrics import codes as codes_lib
from benchmark.metrics.alignment import linear_fit


def reach_in_class_steps(factors, means, sds) -> dict:
    """{'sd', 'gradient', 'reach', 'factor', 'r2'}: per latent (lists of d) the mean
    posterior sd, the least-squares gradient of the mean per class step (a list of k floats
    per latent), sd / |gradient|, the index of the factor with the largest |gradient|
    component and the fit's R^2, for factors (n, k) in class steps, means (n, d) and
    sds (n, d) > 0. MetricInputError for mismatched shapes, non-finite values, sds <= 0, a
    constant factor or a latent whose mean does not move (|gradient| 0: no reach exists)."""
    factors, means = codes_lib.check_codes(factors, means, 3, "posterior_reach")
    sds = np.asarray(sds, dtype=np.float64)
    if sds.shape != means.shape or not np.all(np.isfinite(sds)) or np.any(sds <= 0):
        raise codes_lib.MetricInputError(
            f"posterior_reach: expected posterior sds of the means' shape {means.shape}, "
            f"finite and > 0; found shape {sds.shape} with "
            f"{int(np.sum(~np.isfinite(sds)))} non-finite and {int(np.sum(sds <= 0))} <= 0")
    if np.any(factors.std(axis=0) == 0):
        raise codes_lib.MetricInputError("posterior_reach: a factor is constant over the "
                                         "images; expected every column of factors to vary")
    gradients, r2 = linear_fit(factors, means)                           # (k, d), (d,)
    norms = np.linalg.norm(gradients, axis=0)
    if np.any(norms == 0):
        raise codes_lib.MetricInputError(
            f"posterior_reach: latent(s) {np.flatnonzero(norms == 0).tolist()} do not move "
            "with the factors (gradient 0); a reach is not defined for them")
    sd = sds.mean(axis=0)
    return {"sd": sd.tolist(), "gradient": gradients.T.tolist(),
            "reach": (sd / norms).tolist(),
            "factor": np.argmax(np.abs(gradients), axis=0).tolist(), "r2": r2.tolist()}
