"""β-VAE score (Higgins et al. 2017), disentanglement_lib's protocol.

Each training point fixes one random factor k, draws `batch_size` pairs of images, each
pair sharing k's class (a fresh class per pair; all other factors independent), and uses the mean absolute difference of
the pairs' codes as the feature, with label k. A logistic regression (sklearn defaults, as
in dlib) is trained on 10000 points and scored on 5000: the score is its accuracy.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from benchmark.metrics import codes as codes_lib


def training_points(pair_fn: Callable[[int, np.random.Generator], tuple[np.ndarray, np.ndarray]],
                    num_points: int, num_factors: int, rng: np.random.Generator
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(features float (num_points, d), labels int (num_points,))."""
    features, labels = [], []
    for _ in range(num_points):
        k = int(rng.integers(num_factors))
        first, second = pair_fn(k, rng)
        features.append(np.mean(np.abs(first - second), axis=0))
        labels.append(k)
    return np.array(features), np.array(labels)


def _score(pair_fn, num_factors, rng, num_train, num_eval) -> dict:
    from sklearn.linear_model import LogisticRegression

    x_train, y_train = training_points(pair_fn, num_train, num_factors, rng)
    x_eval, y_eval = training_points(pair_fn, num_eval, num_factors, rng)
    if len(np.unique(y_train)) < 2:
        raise codes_lib.MetricInputError("beta_vae_score: training points cover one factor; "
                                         "increase num_train")
    model = LogisticRegression(max_iter=1000, random_state=int(rng.integers(2**31 - 1)))
    model.fit(x_train, y_train)
    return {"beta_vae_score_train": float(np.mean(model.predict(x_train) == y_train)),
            "beta_vae_score": float(np.mean(model.predict(x_eval) == y_eval))}


def beta_vae_score_from_codes(factors, codes, rng: np.random.Generator, batch_size: int = 64,
                              num_train: int = 10000, num_eval: int = 5000) -> dict:
    """β-VAE score from a uniform sample (factors, codes): the partner of a sampled point
    is another sampled point of the same class of k (the codes-level intervention)."""
    factors, codes = codes_lib.check_codes(factors, codes, 2 * batch_size, "beta_vae_score")
    # Rows sorted by each factor's class: the partners of a row are a contiguous block.
    order = np.argsort(factors, axis=0, kind="stable")

    def pair_fn(k, r):
        first = r.integers(len(codes), size=batch_size)
        sorted_classes = factors[order[:, k], k]
        lo = np.searchsorted(sorted_classes, factors[first, k], side="left")
        hi = np.searchsorted(sorted_classes, factors[first, k], side="right")
        second = order[lo + (r.random(batch_size) * (hi - lo)).astype(np.int64), k]
        return codes[first], codes[second]
    return _score(pair_fn, factors.shape[1], rng, num_train, num_eval)


def beta_vae_score(data, representation_fn, rng, batch_size: int = 64,
                   num_train: int = 10000, num_eval: int = 5000,
                   pool_size: int | None = 20000) -> dict:
    """β-VAE score (dlib defaults: batch 64, 10000 / 5000 points).

    pool_size: encode this many uniform samples once and draw every pair from them (same
    distribution as fresh pairs; ~100x fewer images to encode). None renders and encodes
    fresh pairs for every point, exactly as dlib does.
    """
    if pool_size is not None:
        factors, codes = codes_lib.sample_codes(data, representation_fn, pool_size, rng)
        return beta_vae_score_from_codes(factors, codes, rng, batch_size, num_train, num_eval)
    def pair_fn(k, r):
        first = data.sample_factors(batch_size, r)
        second = data.sample_factors(batch_size, r)
        second[:, k] = first[:, k]
        images = data.observations_from_factors(np.concatenate([first, second]), r)
        both = np.asarray(representation_fn(images), dtype=np.float64)
        if both.ndim != 2 or len(both) != 2 * batch_size:
            raise codes_lib.MetricInputError(f"representation_fn: expected codes of shape "
                                             f"({2 * batch_size}, d), found {both.shape}")
        return both[:batch_size], both[batch_size:]
    return _score(pair_fn, data.num_factors, rng, num_train, num_eval)
