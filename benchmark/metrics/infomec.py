"""InfoMEC: InfoM, InfoE, InfoC (Hsu et al. 2023, paper 001 sec. 4, eqs. 6-14).

- Codes are standardised; NMI_ij = I(s_i; z_j) / H(s_i) (eq. 7) with I estimated by
  sklearn's kNN `mutual_info_classif` (k neighbours: 3 in the paper's code, 10 in the
  standalone release; `n_neighbors`) and H(s_i) from the discrete labels.
- Inactive dims are pruned: range below `prune_fraction` of the largest range (1/8 in
  the paper's code, 1/20 standalone).
- InfoM (eq. 8) = (mean over active dims of max_i NMI_ij / sum_i NMI_ij - 1/n_s) /
  (1 - 1/n_s); InfoC (eq. 9) the same over factors (rows), normalised by the number of
  active dims. (REFERENCE.md words InfoM as a max-minus-second gap; the paper's eq. 8 is
  the ratio, which is what is implemented.)
- InfoE (eqs. 10-14) = mean over factors of 1 - CE / H(s_i | empty): CE is the held-out
  cross-entropy of an unpenalised multinomial logistic regression with balanced class
  weights on all active dims; H(s_i | empty) = log K for the balanced problem.
A random continuous code does not score InfoM = 0: kNN estimates of independent pairs are
small non-negative numbers (many exactly 0), so their max/sum ratio stays far above 1/n_s.
Measured on 10,000 samples of independent Gaussian codes: InfoM 0.76 (k=3) / 0.65 (k=10)
for 10 dims on the dSprites grid, 0.58 / 0.63 for 12 dims on the Shapes3D grid, while InfoE
is 0.00. Read InfoM beside InfoE and DCI.
"""

from __future__ import annotations

import gin
import numpy as np
from sklearn.feature_selection import mutual_info_classif
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

from benchmark.metrics import codes as codes_lib


def active_dims(codes: np.ndarray, prune_fraction: float = 1 / 8) -> np.ndarray:
    """Boolean (d,): dims whose range is at least `prune_fraction` x the largest range."""
    ranges = codes.max(axis=0) - codes.min(axis=0)
    if ranges.max() <= 0:
        return np.zeros(codes.shape[1], dtype=bool)
    return ranges >= prune_fraction * ranges.max()


def nmi_matrix(factors: np.ndarray, codes: np.ndarray, n_neighbors: int = 3, seed: int = 0
               ) -> np.ndarray:
    """NMI (k, d) in [0, 1] (clipped) between each factor and each standardised code dim."""
    std = codes.std(axis=0)
    z = (codes - codes.mean(axis=0)) / np.where(std > 0, std, 1.0)
    nmi = np.zeros((factors.shape[1], codes.shape[1]))
    for i in range(factors.shape[1]):
        mi = mutual_info_classif(z, factors[:, i], discrete_features=False,
                                 n_neighbors=n_neighbors, random_state=seed)
        nmi[i] = mi / codes_lib.discrete_entropy(factors[:, i])
    return np.clip(nmi, 0.0, 1.0)


def _ratio_score(matrix: np.ndarray) -> float:
    """(mean over columns of max / sum - 1/n) / (1 - 1/n), n = rows (eqs. 8-9)."""
    n = matrix.shape[0]
    if n < 2:
        return 1.0
    sums = matrix.sum(axis=0)
    ratios = np.divide(matrix.max(axis=0), sums, out=np.full(matrix.shape[1], 1.0 / n),
                       where=sums > 0)
    return float((ratios.mean() - 1.0 / n) / (1.0 - 1.0 / n))


def info_e(factors_train, codes_train, factors_test, codes_test) -> float:
    """Mean over factors of the normalised predictive V-information (eqs. 10-14)."""
    scores = []
    for i in range(factors_train.shape[1]):
        classes = np.unique(factors_train[:, i])
        model = LogisticRegression(C=np.inf, class_weight="balanced", max_iter=1000)
        model.fit(codes_train, factors_train[:, i])
        weights = len(factors_test) / (len(classes) * np.bincount(
            np.searchsorted(classes, factors_test[:, i]), minlength=len(classes)))
        sample_weight = weights[np.searchsorted(classes, factors_test[:, i])]
        ce = log_loss(factors_test[:, i], model.predict_proba(codes_test), labels=classes,
                      sample_weight=sample_weight)
        scores.append(max(0.0, 1.0 - ce / np.log(len(classes))))
    return float(np.mean(scores))


def infomec_from_codes(factors, codes, n_neighbors: int = 3, prune_fraction: float = 1 / 8,
                       test_fraction: float = 0.2, seed: int = 0) -> dict:
    """{'infom', 'infoe', 'infoc', 'infomec_active_dims', 'infomec_nmi'} on one sample."""
    factors, codes = codes_lib.check_codes(factors, codes, max(10, 2 * n_neighbors), "infomec")
    active = active_dims(codes, prune_fraction)
    if not active.any():
        raise codes_lib.MetricInputError("infomec: every code dim is constant")
    nmi = nmi_matrix(factors, codes[:, active], n_neighbors, seed)
    split = int(round(len(codes) * (1.0 - test_fraction)))
    order = np.random.default_rng(seed).permutation(len(codes))
    train, test = order[:split], order[split:]
    std = codes[:, active].std(axis=0)
    z = (codes[:, active] - codes[:, active].mean(axis=0)) / np.where(std > 0, std, 1.0)
    return {"infom": _ratio_score(nmi), "infoc": _ratio_score(nmi.T),
            "infoe": info_e(factors[train], z[train], factors[test], z[test]),
            "infomec_active_dims": int(active.sum()), "infomec_nmi": nmi.tolist()}


@gin.configurable("infomec", denylist=["data", "representation_fn", "rng"])
def infomec(data, representation_fn, rng, num_points: int = 10000, batch_size: int = 64,
            n_neighbors: int = 3, prune_fraction: float = 1 / 8) -> dict:
    """InfoMEC on `num_points` uniform samples (paper 001's code settings by default)."""
    factors, codes = codes_lib.sample_codes(data, representation_fn, num_points, rng, batch_size)
    return infomec_from_codes(factors, codes, n_neighbors, prune_fraction,
                              seed=int(rng.integers(2**31 - 1)))
