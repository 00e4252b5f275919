"""FactorVAE score (Kim & Mnih 2018), disentanglement_lib's protocol.

Codes are divided by their global standard deviation s_d, estimated (ddof 1) on
`num_variance_estimate` points (dlib: 10,000). A dim is *active* when s_d >=
`prune_threshold` (dlib's `prune_dims.threshold = 0.05`, an ABSOLUTE threshold in code
units); `prune_relative = True` instead keeps dims with s_d >=
`prune_threshold` x max_d s_d (the suite's earlier rule: it ignores the code's
scale, which changes scores of AE / PCL codes whose units are arbitrary). Each vote fixes
one random factor k, draws a batch of `batch_size` (64) points sharing its class, and
votes (argmin over active d of Var[z_d] / s_d^2, k). A majority-vote classifier (the most
frequent factor per dim) is fitted on `num_train` (10000) training votes and scored on
`num_eval` (5000) evaluation votes; scores are accuracies in [0, 1].
No active dim: score 0 and `factor_vae_active_dims` 0, as dlib returns (dlib then reports
a wrong active-dims count, len(mask); this suite reports the true one). Every dim exactly
constant is a MetricInputError (the suite's rule for a collapsed code), not a number.
Source: disentanglement_lib/evaluation/metrics/factor_vae.py (compute_factor_vae,
_prune_dims) and its config `factor_vae_metric.gin`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from benchmark.metrics import codes as codes_lib


def votes(batch_fn: Callable[[int, np.random.Generator], np.ndarray], num_votes: int,
          num_factors: int, scale: np.ndarray, active: np.ndarray,
          rng: np.random.Generator) -> np.ndarray:
    """Vote matrix int (d, k): counts of (argmin-variance dim, fixed factor)."""
    counts = np.zeros((len(scale), num_factors), dtype=np.int64)
    active_idx = np.flatnonzero(active)
    for _ in range(num_votes):
        k = int(rng.integers(num_factors))
        batch = batch_fn(k, rng)
        variances = np.var(batch[:, active_idx] / scale[active_idx], axis=0, ddof=1)
        counts[active_idx[np.argmin(variances)], k] += 1
    return counts


def score_from_votes(train_votes: np.ndarray, eval_votes: np.ndarray) -> tuple[float, float]:
    """(train accuracy, eval accuracy) of the majority-vote classifier."""
    classifier = np.argmax(train_votes, axis=1)
    dims = np.arange(len(classifier))
    train = train_votes[dims, classifier].sum() / max(train_votes.sum(), 1)
    evaluation = eval_votes[dims, classifier].sum() / max(eval_votes.sum(), 1)
    return float(train), float(evaluation)


def active_dims(scale: np.ndarray, prune_threshold: float = 0.05,
                prune_relative: bool = False) -> np.ndarray:
    """Boolean (d,): std `scale` (d,) at or above the threshold (absolute, dlib's rule, or
    relative to the largest std)."""
    threshold = prune_threshold * scale.max() if prune_relative else prune_threshold
    return scale >= threshold


def _score(batch_fn, variance_codes, num_factors, rng, num_train, num_eval,
           prune_threshold, prune_relative) -> dict:
    scale = variance_codes.std(axis=0, ddof=1)
    if scale.max() <= 0:
        raise codes_lib.MetricInputError("factor_vae_score: every code dim is constant")
    active = active_dims(scale, prune_threshold, prune_relative)
    if not active.any():
        return {"factor_vae_score_train": 0.0, "factor_vae_score": 0.0,
                "factor_vae_active_dims": 0}
    train_votes = votes(batch_fn, num_train, num_factors, scale, active, rng)
    eval_votes = votes(batch_fn, num_eval, num_factors, scale, active, rng)
    train_acc, eval_acc = score_from_votes(train_votes, eval_votes)
    return {"factor_vae_score_train": train_acc, "factor_vae_score": eval_acc,
            "factor_vae_active_dims": int(active.sum())}


def factor_vae_score_from_codes(factors, codes, rng: np.random.Generator,
                                batch_size: int = 64, num_train: int = 10000,
                                num_eval: int = 5000, num_variance_estimate: int = 10000,
                                prune_threshold: float = 0.05,
                                prune_relative: bool = False) -> dict:
    """FactorVAE score from a uniform sample (factors int (n, k), codes (n, d)): the
    variance rows are min(num_variance_estimate, n) rows drawn without replacement; each
    vote's batch is drawn from the rows sharing a class (codes.fixed_factor_batch_from_codes)."""
    factors, codes = codes_lib.check_codes(factors, codes, 2 * batch_size, "factor_vae_score")
    variance_rows = rng.choice(len(codes), size=min(num_variance_estimate, len(codes)),
                               replace=False)
    return _score(lambda k, r: codes_lib.fixed_factor_batch_from_codes(
        factors, codes, k, batch_size, r), codes[variance_rows], factors.shape[1], rng,
        num_train, num_eval, prune_threshold, prune_relative)


def factor_vae_score(data, representation_fn, rng, batch_size: int = 64,
                     num_train: int = 10000, num_eval: int = 5000,
                     num_variance_estimate: int = 10000, prune_threshold: float = 0.05,
                     prune_relative: bool = False, pool_size: int | None = 20000) -> dict:
    """FactorVAE score with dlib's votes, batch, variance estimate and pruning rule.

    pool_size: encode this many uniform samples once and draw each vote's fixed-factor
    batch (and the variance rows) from them (same distribution as fresh batches; ~50x
    fewer images to encode). None renders and encodes fresh batches for every vote, exactly
    as dlib does (the `dlib` metric preset).
    """
    if pool_size is not None:
        factors, codes = codes_lib.sample_codes(data, representation_fn, pool_size, rng)
        return factor_vae_score_from_codes(factors, codes, rng, batch_size, num_train,
                                           num_eval, num_variance_estimate, prune_threshold,
                                           prune_relative)
    _, variance_codes = codes_lib.sample_codes(data, representation_fn, num_variance_estimate,
                                               rng, batch_size)
    return _score(lambda k, r: codes_lib.fixed_factor_batch_from_data(
        data, representation_fn, k, batch_size, r), variance_codes, data.num_factors, rng,
        num_train, num_eval, prune_threshold, prune_relative)
