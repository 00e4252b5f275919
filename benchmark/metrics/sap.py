"""SAP score (Kumar et al. 2018, sec. 3).

For each (code dim i, factor k) a classifier predicts v_k from z_i alone; S_ik is its test
accuracy. SAP = mean_k (S_(1)k - S_(2)k), the gap between the two best dims per factor.
Classifiers:
- 'threshold' (default; Kumar et al.'s definition for categorical factors):
  a decision tree on the one dim with at most K leaves, i.e. K - 1 thresholds for K
  classes, scored by balanced accuracy (a depth-1 stump could only ever predict two
  classes). A perfect code scores mean_k (1 - 1/K_k) (0.88 on dSprites' five factors):
  the runner-up dim sits at chance balanced accuracy.
- 'linear_svm' (disentanglement_lib's implementation: LinearSVC, C = 0.01, balanced class
  weights, plain accuracy). A one-dimensional linear one-vs-rest SVM cannot carve 32 or
  40 ordered classes, so even a perfect dSprites code scores about 0.18 with it; use
  `sap.classifier = 'linear_svm'` to compare with dlib-based papers.
"""

from __future__ import annotations

import numpy as np

from benchmark.metrics import codes as codes_lib

#: the values of `sap.classifier`
CLASSIFIERS = ("threshold", "linear_svm")


def score_matrix(codes_train, factors_train, codes_test, factors_test,
                 classifier: str = "threshold", seed: int = 0) -> np.ndarray:
    """S (d, k): accuracy of predicting each factor from each single code dim."""
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.svm import LinearSVC
    from sklearn.tree import DecisionTreeClassifier

    if classifier not in CLASSIFIERS:
        raise ValueError(f"sap classifier must be 'linear_svm' or 'threshold', found "
                         f"{classifier!r}")
    d, k = codes_train.shape[1], factors_train.shape[1]
    scores = np.zeros((d, k))
    for i in range(d):
        x_train, x_test = codes_train[:, i:i + 1], codes_test[:, i:i + 1]
        for j in range(k):
            y_train, y_test = factors_train[:, j], factors_test[:, j]
            if classifier == "linear_svm":
                model = LinearSVC(C=0.01, class_weight="balanced", random_state=seed)
                scores[i, j] = np.mean(model.fit(x_train, y_train).predict(x_test) == y_test)
            else:
                model = DecisionTreeClassifier(max_leaf_nodes=max(2, len(np.unique(y_train))),
                                               class_weight="balanced", random_state=seed)
                scores[i, j] = balanced_accuracy_score(
                    y_test, model.fit(x_train, y_train).predict(x_test))
    return scores


def sap_from_codes(factors_train, codes_train, factors_test, codes_test,
                   classifier: str = "threshold", seed: int = 0) -> dict[str, float]:
    """{'sap': mean gap in [0, 1], 'sap_score_matrix': S}; needs >= 2 code dims."""
    factors_train, codes_train = codes_lib.check_codes(factors_train, codes_train, 2, "sap")
    factors_test, codes_test = codes_lib.check_codes(factors_test, codes_test, 1, "sap")
    if codes_train.shape[1] < 2:
        raise codes_lib.MetricInputError(f"sap: needs at least 2 code dims, found "
                                         f"{codes_train.shape[1]}")
    scores = score_matrix(codes_train, factors_train, codes_test, factors_test, classifier,
                          seed)
    top = np.sort(scores, axis=0)[::-1]
    return {"sap": float(np.mean(top[0] - top[1])), "sap_score_matrix": scores.tolist()}


def sap(data, representation_fn, rng, num_train: int = 10000, num_test: int = 5000,
        batch_size: int = 16, classifier: str = "threshold") -> dict[str, float]:
    """SAP on fresh samples (dlib's 10000 train / 5000 test; classifiers as above)."""
    f_train, c_train = codes_lib.sample_codes(data, representation_fn, num_train, rng, batch_size)
    f_test, c_test = codes_lib.sample_codes(data, representation_fn, num_test, rng, batch_size)
    return sap_from_codes(f_train, c_train, f_test, c_test, classifier,
                          int(rng.integers(2**31 - 1)))
