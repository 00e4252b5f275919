"""Unsupervised scores of the code means (disentanglement_lib's "unsupervised" metrics).

- gaussian_total_correlation: KL between a Gaussian fitted to the codes and the product of
  its marginals, 0.5 (sum_i log Sigma_ii - log det Sigma).
- gaussian_wasserstein_correlation: 2-Wasserstein distance between that Gaussian and the
  product of its marginals, trace(Sigma) - 2 trace(sqrt(diag(Sigma)^1/2 Sigma diag^1/2)),
  normalised by the summed variances.
- mutual_info_score: mean discrete MI between pairs of histogram-discretised code dims.
Constant dims are dropped first (they have no distribution to correlate).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from benchmark.metrics import codes as codes_lib


def unsupervised_from_codes(codes, num_bins: int = 20) -> dict[str, float]:
    """Unsupervised scores of codes (n, d); needs >= 2 non-constant dims."""
    codes = codes_lib.check_code_array(codes, 3, "unsupervised")
    varying = codes.std(axis=0) > 0
    if varying.sum() < 2:
        raise codes_lib.MetricInputError(f"unsupervised: needs at least 2 non-constant code "
                                         f"dims, found {int(varying.sum())}")
    z = codes[:, varying]
    cov = np.cov(z, rowvar=False)
    _, logdet = np.linalg.slogdet(cov)
    tc = 0.5 * (np.sum(np.log(np.diag(cov))) - logdet)
    root = np.sqrt(np.diag(cov))
    cross = scipy.linalg.sqrtm(root[:, None] * cov * root[None, :])
    wasserstein = np.trace(cov) - 2 * np.trace(np.real(cross)) + np.trace(cov)
    discrete = codes_lib.histogram_discretize(z, num_bins)
    d = z.shape[1]
    pairs = [codes_lib.discrete_mutual_info(discrete[:, i], discrete[:, j])
             for i in range(d) for j in range(i + 1, d)]
    return {"gaussian_total_correlation": float(tc),
            "gaussian_wasserstein_correlation": float(wasserstein),
            "gaussian_wasserstein_correlation_norm": float(wasserstein / np.trace(cov)),
            "mutual_info_score": float(np.mean(pairs))}


def unsupervised(data, representation_fn, rng, num_train: int = 10000, batch_size: int = 16,
                 num_bins: int = 20) -> dict[str, float]:
    """Unsupervised scores on `num_train` samples (dlib defaults: 10000 points, 20 bins)."""
    _, codes = codes_lib.sample_codes(data, representation_fn, num_train, rng, batch_size)
    return unsupervised_from_codes(codes, num_bins)
