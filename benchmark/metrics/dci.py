"""DCI: disentanglement, completeness, informativeness (Eastwood & Williams 2018).

Per factor k a classifier predicts v_k from all codes; its feature importances form
column k of the importance matrix R (d x k).
  disentanglement = sum_j rho_j (1 - H_K(R_j.)),  rho_j = row share of dim j,
  completeness    = sum_k w_k (1 - H_D(R_.k)),    w_k = column share of factor k,
  informativeness = test accuracy (mean over factors),
with entropies in base K (factors) and D (dims). Classifiers:
- 'hist_gbt' (the suite's default): sklearn's HistGradientBoostingClassifier shaped like
  dlib's trees (100 rounds, learning rate 0.1, depth 3, leaves of >= 1 point, no early
  stopping) on 255 bins; importances = total split gain per feature (read from the fitted
  trees' node records), normalised per factor. Binned trees break exact ties between
  features by column order, which matters when dims are copies of each other (a dim and
  any monotone function of it bin identically): such dims are found first (`tied_columns`),
  one of each group is fitted, and its credit is shared evenly by the group, as the exact
  GBT's randomised tie-breaking does in expectation. Many times faster than 'gbt' on
  dSprites' 40- and 32-class factors (docs/metrics.md: times and agreement with 'gbt' on
  trained codes).
- 'gbt' (disentanglement_lib's exact choice): sklearn GradientBoostingClassifier with
  default settings. dlib leaves it unseeded; here the seed comes from `rng`, so the same
  seed gives the same number. Use `dci.classifier = 'gbt'` to reproduce dlib's DCI.
Both use dlib's 10000 train / 5000 test points.
- 'random_forest' (QLAE paper 001 appendix C.5): 100 trees, entropy criterion, maximum
  depth tuned on held-out accuracy over `rf_depths`; importances of the best depth.
Fits run in parallel over factors (joblib, n_jobs).

Informativeness read through a linear readout (`readout_informativeness`, the registry's
'dci_readout'; the suite's measure, not Eastwood & Williams'): the classifiers above split
on one code dim at a time, so a code that is a *rotated* linear image of the factors costs
them depth and held-out accuracy that an aligned one does not, though it holds the same
information. The readout appends to the code (n, d) the least-squares linear estimate of
each factor from it (k columns, fitted on the training points with an intercept) and
scores the same classifier's test accuracy on those d + k features. The estimates are the
same for any invertible linear map of the code, so a rotated code is read as well as an
aligned one; the code's own columns are kept, so a code that carries a factor non-linearly
loses nothing. Only informativeness is reported: the estimates are built from the factors,
so their importances say nothing about disentanglement.
"""

from __future__ import annotations

import joblib
import numpy as np

from benchmark.metrics import codes as codes_lib

#: the values of `dci.classifier`
CLASSIFIERS = ("hist_gbt", "gbt", "random_forest")


def _entropy_rows(p: np.ndarray, base: int) -> np.ndarray:
    """Entropy in base `base` of each row of a non-negative matrix (rows normalised)."""
    total = p.sum(axis=1, keepdims=True)
    q = np.divide(p, total, out=np.full_like(p, 1.0 / p.shape[1]), where=total > 0)
    logs = np.log(q, out=np.zeros_like(q), where=q > 0)
    return -(q * logs).sum(axis=1) / np.log(base)


def disentanglement(importance: np.ndarray) -> float:
    """DCI disentanglement of an importance matrix (d, k), in [0, 1]."""
    if importance.shape[1] < 2:
        return 1.0
    per_code = 1.0 - _entropy_rows(importance, importance.shape[1])
    total = importance.sum()
    weights = importance.sum(axis=1) / total if total > 0 else np.full(len(importance),
                                                                        1.0 / len(importance))
    return float(np.sum(per_code * weights))


def completeness(importance: np.ndarray) -> float:
    """DCI completeness of an importance matrix (d, k), in [0, 1]."""
    if importance.shape[0] < 2:
        return 1.0
    per_factor = 1.0 - _entropy_rows(importance.T, importance.shape[0])
    total = importance.sum()
    weights = importance.sum(axis=0) / total if total > 0 else np.full(importance.shape[1],
                                                                        1.0 / importance.shape[1])
    return float(np.sum(per_factor * weights))


def _split_gains(model: HistGradientBoostingClassifier, num_features: int) -> np.ndarray:
    """Normalised total split gain per feature of a fitted histogram GBT, (num_features,)."""
    gains = np.zeros(num_features)
    for iteration in model._predictors:           # sklearn keeps no feature_importances_
        for tree in iteration:
            splits = tree.nodes[~tree.nodes["is_leaf"].astype(bool)]
            np.add.at(gains, splits["feature_idx"], np.maximum(splits["gain"], 0.0))
    return gains / gains.sum() if gains.sum() > 0 else gains


def tied_columns(codes: np.ndarray) -> list[list[int]]:
    """Groups of columns of `codes` (n, d) that any binned tree splits identically: equal
    dense ranks, or reversed ones (a dim and a monotone function of it). Each group is
    sorted; groups are ordered by their first column; a column tied with none is a group
    of its own."""
    keys = {}
    for j in range(codes.shape[1]):
        ranks = np.unique(codes[:, j], return_inverse=True)[1].reshape(-1)
        flipped = ranks.max() - ranks
        key = min(ranks.tobytes(), flipped.tobytes())
        keys.setdefault(key, []).append(j)
    return sorted(keys.values())


def _hist_gbt(x_train, y_train, x_test, y_test, seed: int,
              groups: list[list[int]]) -> tuple[np.ndarray, float, float]:
    """One histogram GBT fit shaped like dlib's trees on the first column of each group of
    tied columns: (split-gain importances (d,), each group's credit shared evenly by its
    columns; train acc; test acc)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    kept = [group[0] for group in groups]
    model = HistGradientBoostingClassifier(
        max_iter=100, learning_rate=0.1, max_depth=3, max_leaf_nodes=None,
        min_samples_leaf=1, early_stopping=False, random_state=seed)
    model.fit(x_train[:, kept], y_train)
    gains = _split_gains(model, len(kept))
    importance = np.zeros(x_train.shape[1])
    for group, gain in zip(groups, gains):
        importance[group] = gain / len(group)
    return (importance, float(np.mean(model.predict(x_train[:, kept]) == y_train)),
            float(np.mean(model.predict(x_test[:, kept]) == y_test)))


def _fit_factor(classifier: str, x_train, y_train, x_test, y_test, seed: int,
                rf_depths) -> tuple[np.ndarray, float, float]:
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

    if classifier == "gbt":
        model = GradientBoostingClassifier(random_state=seed).fit(x_train, y_train)
    else:
        # Depth tuned on a validation split of the training points (paper 001 app. C.5).
        split = int(0.9 * len(x_train))
        best, best_acc = None, -1.0
        for depth in rf_depths:
            candidate = RandomForestClassifier(n_estimators=100, criterion="entropy",
                                               max_depth=depth, random_state=seed, n_jobs=1)
            candidate.fit(x_train[:split], y_train[:split])
            acc = float(np.mean(candidate.predict(x_train[split:]) == y_train[split:]))
            if acc > best_acc:
                best, best_acc = depth, acc
        model = RandomForestClassifier(n_estimators=100, criterion="entropy", max_depth=best,
                                       random_state=seed, n_jobs=1).fit(x_train, y_train)
    train_acc = float(np.mean(model.predict(x_train) == y_train))
    test_acc = float(np.mean(model.predict(x_test) == y_test))
    return np.abs(model.feature_importances_), train_acc, test_acc


def importance_matrix(factors_train, codes_train, factors_test, codes_test,
                      rng: np.random.Generator, classifier: str = "hist_gbt", n_jobs: int = 2,
                      rf_depths=(2, 4, 8, 16, None)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(R (d, k), train accuracy (k,), test accuracy (k,))."""
    if classifier not in CLASSIFIERS:
        raise ValueError(f"dci classifier must be 'gbt', 'hist_gbt' or 'random_forest', found "
                         f"{classifier!r}")
    num_factors = factors_train.shape[1]
    seeds = rng.integers(0, 2**31 - 1, size=num_factors)
    if classifier == "hist_gbt":
        # One job per factor, the largest (most classes: one tree per class and round)
        # first, so the workers stay busy to the end.
        groups = tied_columns(np.concatenate([codes_train, codes_test]))
        order = sorted(range(num_factors), key=lambda k: -len(np.unique(factors_train[:, k])))
        fits = joblib.Parallel(n_jobs=n_jobs)(
            joblib.delayed(_hist_gbt)(codes_train, factors_train[:, k], codes_test,
                                      factors_test[:, k], int(seeds[k]), groups)
            for k in order)
        results = [fit for _, fit in sorted(zip(order, fits), key=lambda pair: pair[0])]
    else:
        results = joblib.Parallel(n_jobs=n_jobs)(
            joblib.delayed(_fit_factor)(classifier, codes_train, factors_train[:, k],
                                        codes_test, factors_test[:, k], int(seeds[k]),
                                        rf_depths)
            for k in range(num_factors))
    importance = np.stack([r[0] for r in results], axis=1)
    return importance, np.array([r[1] for r in results]), np.array([r[2] for r in results])


def dci_from_codes(factors_train, codes_train, factors_test, codes_test,
                   rng: np.random.Generator, classifier: str = "hist_gbt", n_jobs: int = 2
                   ) -> dict[str, float]:
    """{'dci_disentanglement', 'dci_completeness', 'dci_informativeness_train/test'}."""
    factors_train, codes_train = codes_lib.check_codes(factors_train, codes_train, 2, "dci")
    factors_test, codes_test = codes_lib.check_codes(factors_test, codes_test, 1, "dci")
    if codes_train.shape[1] != codes_test.shape[1]:
        raise codes_lib.MetricInputError(f"dci: train and test codes have {codes_train.shape[1]} "
                                         f"and {codes_test.shape[1]} dims")
    importance, train_acc, test_acc = importance_matrix(
        factors_train, codes_train, factors_test, codes_test, rng, classifier, n_jobs)
    return {"dci_disentanglement": disentanglement(importance),
            "dci_completeness": completeness(importance),
            "dci_informativeness_train": float(train_acc.mean()),
            "dci_informativeness_test": float(test_acc.mean()),
            "dci_importance_matrix": importance.tolist()}


def dci(data, representation_fn, rng, num_train: int = 10000, num_test: int = 5000,
        batch_size: int = 16, classifier: str = "hist_gbt", n_jobs: int = 2) -> dict[str, float]:
    """DCI on fresh samples (dlib's 10000 train / 5000 test; classifiers as above)."""
    f_train, c_train = codes_lib.sample_codes(data, representation_fn, num_train, rng, batch_size)
    f_test, c_test = codes_lib.sample_codes(data, representation_fn, num_test, rng, batch_size)
    return dci_from_codes(f_train, c_train, f_test, c_test, rng, classifier, n_jobs)


def linear_readout(factors_train, codes_train, codes_test) -> tuple[np.ndarray, np.ndarray]:
    """(train (n, k), test (m, k)): the least-squares estimate of each factor (its class
    index) from the code with an intercept, fitted on (factors_train (n, k), codes_train
    (n, d)) and applied to codes_train and codes_test (m, d)."""
    def design(codes):
        return np.column_stack([np.asarray(codes, np.float64), np.ones(len(codes))])

    weights, *_ = np.linalg.lstsq(design(codes_train), np.asarray(factors_train, np.float64),
                                  rcond=None)
    return design(codes_train) @ weights, design(codes_test) @ weights


def readout_informativeness(factors_train, codes_train, factors_test, codes_test,
                            rng: np.random.Generator, classifier: str = "hist_gbt",
                            n_jobs: int = 2) -> dict[str, float]:
    """{'dci_readout_informativeness_train', 'dci_readout_informativeness_test'}: mean
    accuracy over factors of `classifier` on the code with its linear readout appended
    (module docstring), in [0, 1]."""
    factors_train, codes_train = codes_lib.check_codes(factors_train, codes_train, 2,
                                                       "dci_readout")
    factors_test, codes_test = codes_lib.check_codes(factors_test, codes_test, 1, "dci_readout")
    if codes_train.shape[1] != codes_test.shape[1]:
        raise codes_lib.MetricInputError(f"dci_readout: train and test codes have "
                                         f"{codes_train.shape[1]} and {codes_test.shape[1]} dims")
    readout_train, readout_test = linear_readout(factors_train, codes_train, codes_test)
    _, train_acc, test_acc = importance_matrix(
        factors_train, np.column_stack([codes_train, readout_train]), factors_test,
        np.column_stack([codes_test, readout_test]), rng, classifier, n_jobs)
    return {"dci_readout_informativeness_train": float(train_acc.mean()),
            "dci_readout_informativeness_test": float(test_acc.mean())}
