"""Mutual Information Gap (Chen et al. 2018), disentanglement_lib's estimator.

Each code dim is discretised into `num_bins` equal-width bins (20), the discrete mutual
information I(z_j; v_k) is computed for every (dim, factor), and
MIG = mean_k (I_(1),k - I_(2),k) / H(v_k): the gap between the two most informative dims,
normalised by the factor's entropy.
"""

from __future__ import annotations

import numpy as np

from benchmark.metrics import codes as codes_lib


def mutual_info_matrix(factors: np.ndarray, discrete_codes: np.ndarray) -> np.ndarray:
    """I(z_j; v_k) in nats, float64 (d, k), for discrete codes (n, d) and factors (n, k)."""
    return np.array([[codes_lib.discrete_mutual_info(discrete_codes[:, j], factors[:, k])
                      for k in range(factors.shape[1])]
                     for j in range(discrete_codes.shape[1])])


def mig_from_codes(factors, codes, num_bins: int = 20) -> dict[str, float]:
    """{'mig': float in [0, 1], 'mig_per_factor': list}; needs >= 2 code dims."""
    factors, codes = codes_lib.check_codes(factors, codes, metric="mig")
    if codes.shape[1] < 2:
        raise codes_lib.MetricInputError(f"mig: needs at least 2 code dims, found {codes.shape[1]}")
    mi = mutual_info_matrix(factors, codes_lib.histogram_discretize(codes, num_bins))
    entropy = np.array([codes_lib.discrete_entropy(factors[:, k])
                        for k in range(factors.shape[1])])
    top = np.sort(mi, axis=0)[::-1]
    per_factor = (top[0] - top[1]) / entropy
    return {"mig": float(per_factor.mean()), "mig_per_factor": per_factor.tolist()}


def mig(data, representation_fn, rng, num_train: int = 10000, batch_size: int = 16,
        num_bins: int = 20) -> dict[str, float]:
    """MIG on `num_train` uniform samples (dlib defaults: 10000 points, 20 bins)."""
    factors, codes = codes_lib.sample_codes(data, representation_fn, num_train, rng, batch_size)
    return mig_from_codes(factors, codes, num_bins)
