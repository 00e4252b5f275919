"""Modularity and explicitness (Ridgeway & Zemel 2018), disentanglement_lib's estimators.

Modularity: with m_ik the discrete MI (nats) between histogram-discretised code dim i
(`num_bins` equal-width bins, 20) and factor k, K factors,
    delta_i = (sum_k m_ik^2 - max_k m_ik^2) / (max_k m_ik^2 (K - 1)),
    modularity = mean over ALL d dims of (1 - delta_i), in [0, 1],
exactly dlib's `modularity()`: a dim with zero MI to every factor (e.g. a constant dim)
scores 0 and still counts in the mean (dlib divides 0 by 0 and sets those rows to 0), so
a 5-factor perfect code plus a constant dim and a duplicated dim scores ~6/7 = 0.857. (The
suite's earlier rule dropped such dims and gave 0.9999 there.) A code with no
informative dim scores 0. K = 1: informative dims score 1 (dlib divides by K - 1 = 0).
`modularity_informative_dims` counts the dims with non-zero MI.
Explicitness: per factor, a one-vs-rest logistic regression on all standardised codes;
the mean one-vs-rest ROC AUC over classes, averaged over factors (train and test), in
[0, 1].
Source: disentanglement_lib/evaluation/metrics/modularity_explicitness.py.
"""

from __future__ import annotations

import numpy as np

from benchmark.metrics import codes as codes_lib
from benchmark.metrics.mig import mutual_info_matrix


def modularity_from_mi(mi: np.ndarray) -> tuple[float, int]:
    """(modularity in [0, 1], number of dims with non-zero MI) from an MI matrix (d, k)."""
    squared = np.square(np.asarray(mi, dtype=np.float64))
    peak = squared.max(axis=1)
    informative = peak > 0
    per_dim = np.zeros(len(squared))
    spread = squared.sum(axis=1) - peak
    per_dim[informative] = 1.0 - spread[informative] / (peak[informative]
                                                         * max(squared.shape[1] - 1, 1))
    return float(per_dim.mean()), int(informative.sum())


def _mean_ovr_auc(model, scaler, codes, labels, classes) -> float:
    from sklearn.metrics import roc_auc_score

    proba = model.predict_proba(scaler.transform(codes))
    aucs = [roc_auc_score(labels == c, proba[:, i]) for i, c in enumerate(classes)
            if 0 < np.sum(labels == c) < len(labels)]
    return float(np.mean(aucs))


def modularity_explicitness_from_codes(factors_train, codes_train, factors_test, codes_test,
                                       num_bins: int = 20) -> dict[str, float]:
    """{'modularity', 'modularity_informative_dims', 'explicitness_train',
    'explicitness_test'} from factors int (n, k) and codes (n, d), train and test."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

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
    return {"modularity": modularity, "modularity_informative_dims": dims,
            "explicitness_train": float(np.mean(train_auc)),
            "explicitness_test": float(np.mean(test_auc))}


def modularity_explicitness(data, representation_fn, rng, num_train: int = 10000,
                            num_test: int = 5000, batch_size: int = 16, num_bins: int = 20
                            ) -> dict[str, float]:
    """Modularity and explicitness on fresh samples (dlib defaults 10000 / 5000, 20 bins)."""
    f_train, c_train = codes_lib.sample_codes(data, representation_fn, num_train, rng, batch_size)
    f_test, c_test = codes_lib.sample_codes(data, representation_fn, num_test, rng, batch_size)
    return modularity_explicitness_from_codes(f_train, c_train, f_test, c_test, num_bins)
