"""Modularity and explicitness (Ridgeway & Zemel 2018), disentanglement_lib's estimators.

Modularity: with m_ik the discrete MI between histogram-discretised code dim i (20 bins)
and factor k, dim i's deviation from an ideal one-factor template is
sum_k (m_ik - t_ik)^2 / (max_k m_ik^2 (K - 1)), t keeping only the largest entry;
modularity = mean_i (1 - deviation_i). Dims with zero MI to every factor (e.g. constant
dims, on which dlib divides by zero) carry no information and are left out; the number
used is reported.
Explicitness: per factor, a one-vs-rest logistic regression on all codes; the mean
one-vs-rest ROC AUC over classes, averaged over factors (train and test).
"""

from __future__ import annotations

import gin
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.preprocessing import StandardScaler

from benchmark.metrics import codes as codes_lib
from benchmark.metrics.mig import mutual_info_matrix


def modularity_from_mi(mi: np.ndarray) -> tuple[float, int]:
    """(modularity, number of informative dims) from an MI matrix (d, k)."""
    peak = mi.max(axis=1)
    informative = peak > 0
    if not informative.any():
        raise codes_lib.MetricInputError("modularity: no code dim carries information "
                                         "about any factor")
    mi, peak = mi[informative], peak[informative]
    template = np.where(mi == peak[:, None], mi, 0.0)
    k = mi.shape[1]
    deviation = ((mi - template) ** 2).sum(axis=1) / (peak ** 2 * max(k - 1, 1))
    return float(np.mean(1.0 - deviation)), int(informative.sum())


def _mean_ovr_auc(model, scaler, codes, labels, classes) -> float:
    proba = model.predict_proba(scaler.transform(codes))
    aucs = [roc_auc_score(labels == c, proba[:, i]) for i, c in enumerate(classes)
            if 0 < np.sum(labels == c) < len(labels)]
    return float(np.mean(aucs))


def modularity_explicitness_from_codes(factors_train, codes_train, factors_test, codes_test,
                                       num_bins: int = 20) -> dict[str, float]:
    """{'modularity', 'modularity_dims', 'explicitness_train', 'explicitness_test'}."""
    factors_train, codes_train = codes_lib.check_codes(factors_train, codes_train, 2,
                                                       "modularity")
    factors_test, codes_test = codes_lib.check_codes(factors_test, codes_test, 2,
                                                     "explicitness")
    mi = mutual_info_matrix(factors_train, codes_lib.histogram_discretize(codes_train, num_bins))
    modularity, dims = modularity_from_mi(mi)
    scaler = StandardScaler().fit(codes_train)
    train_auc, test_auc = [], []
    for k in range(factors_train.shape[1]):
        classes = np.unique(factors_train[:, k])
        model = LogisticRegression(max_iter=1000).fit(scaler.transform(codes_train),
                                                      factors_train[:, k])
        train_auc.append(_mean_ovr_auc(model, scaler, codes_train, factors_train[:, k], classes))
        test_auc.append(_mean_ovr_auc(model, scaler, codes_test, factors_test[:, k], classes))
    return {"modularity": modularity, "modularity_dims": dims,
            "explicitness_train": float(np.mean(train_auc)),
            "explicitness_test": float(np.mean(test_auc))}


@gin.configurable("modularity_explicitness", denylist=["data", "representation_fn", "rng"])
def modularity_explicitness(data, representation_fn, rng, num_train: int = 10000,
                            num_test: int = 5000, batch_size: int = 16) -> dict[str, float]:
    """Modularity and explicitness on fresh samples (dlib defaults 10000 / 5000)."""
    f_train, c_train = codes_lib.sample_codes(data, representation_fn, num_train, rng, batch_size)
    f_test, c_test = codes_lib.sample_codes(data, representation_fn, num_test, rng, batch_size)
    return modularity_explicitness_from_codes(f_train, c_train, f_test, c_test)
