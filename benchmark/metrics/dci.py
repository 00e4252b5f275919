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
  trees' node records), normalised per factor, averaged over a fit with the columns in
  order and one with them reversed (ties, see _fit_factor). About 15x faster than 'gbt' on dSprites'
  40- and 32-class factors (9 s vs 246 s for a 10-dim code on 2 cores), which is what
  keeps the whole metric suite under a minute; its agreement with 'gbt' on trained codes
  is measured in the README (Metrics).
- 'gbt' (disentanglement_lib's exact choice): sklearn GradientBoostingClassifier with
  default settings. dlib leaves it unseeded; here the seed comes from `rng`, so the same
  seed gives the same number. Use `dci.classifier = 'gbt'` to reproduce dlib's DCI.
Both use dlib's 10000 train / 5000 test points.
- 'random_forest' (QLAE paper 001 appendix C.5): 100 trees, entropy criterion, maximum
  depth tuned on held-out accuracy over `rf_depths`; importances of the best depth.
Fits run in parallel over factors (joblib, n_jobs).
"""

from __future__ import annotations

import joblib
import numpy as np
from sklearn.ensemble import (GradientBoostingClassifier, HistGradientBoostingClassifier,
                              RandomForestClassifier)

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


def _hist_gbt(x_train, y_train, x_test, y_test, seed: int, reverse: bool
              ) -> tuple[np.ndarray, float, float]:
    """One histogram GBT fit shaped like dlib's trees, with the columns in order or
    reversed: (split-gain importances in the original column order, train acc, test acc)."""
    order = slice(None, None, -1) if reverse else slice(None)
    model = HistGradientBoostingClassifier(
        max_iter=100, learning_rate=0.1, max_depth=3, max_leaf_nodes=None,
        min_samples_leaf=1, early_stopping=False, random_state=seed)
    model.fit(x_train[:, order], y_train)
    return (_split_gains(model, x_train.shape[1])[order],
            float(np.mean(model.predict(x_train[:, order]) == y_train)),
            float(np.mean(model.predict(x_test[:, order]) == y_test)))


def _fit_factor(classifier: str, x_train, y_train, x_test, y_test, seed: int,
                rf_depths) -> tuple[np.ndarray, float, float]:
    if classifier == "gbt":
        model = GradientBoostingClassifier(random_state=seed).fit(x_train, y_train)
    elif classifier == "hist_gbt":
        # Binned trees break exact ties between features by column order (common in small
        # pure nodes, and total for an exact copy of a dim, which would get no credit at
        # all); fitting once with the columns in order and once reversed, and averaging,
        # splits tied credit evenly, as the exact GBT's randomised tie-breaking does in
        # expectation. `importance_matrix` runs the two fits as separate jobs.
        fits = [_hist_gbt(x_train, y_train, x_test, y_test, seed, r) for r in (False, True)]
        return _mean_fits(fits)
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


def _mean_fits(fits) -> tuple[np.ndarray, float, float]:
    return (np.mean([f[0] for f in fits], axis=0), float(np.mean([f[1] for f in fits])),
            float(np.mean([f[2] for f in fits])))


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
        # Each factor's two fits are separate jobs, the largest (most classes: one tree per
        # class and round) first, so 2 workers stay busy to the end (same numbers).
        jobs = sorted(((k, r) for k in range(num_factors) for r in (False, True)),
                      key=lambda job: -len(np.unique(factors_train[:, job[0]])))
        fits = joblib.Parallel(n_jobs=n_jobs)(
            joblib.delayed(_hist_gbt)(codes_train, factors_train[:, k], codes_test,
                                      factors_test[:, k], int(seeds[k]), r)
            for k, r in jobs)
        by_factor = {}
        for (k, _), fit in zip(jobs, fits):
            by_factor.setdefault(k, []).append(fit)
        results = [_mean_fits(by_factor[k]) for k in range(num_factors)]
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
