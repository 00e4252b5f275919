"""Representations as arrays: sampling (factors, codes) from a dataset, and validating them.

Every metric has two levels: `fn(data, representation_fn, rng, **params)`
samples what it needs through `sample_codes`, and `fn_from_codes(factors, codes, ...)`
works on arrays. Both levels validate through `check_codes`, so bad input is one clear
error, never a wrong number.
"""

from __future__ import annotations

import os
from typing import Callable

import numpy as np

from benchmark.core.errors import UserError

RepresentationFn = Callable[[np.ndarray], np.ndarray]

# Size guard: codes-level metrics cost at least O(n * d) each (DCI fits a booster per factor
# on all d dims, MIG/SAP/InfoMEC discretise or score every dim), and 200 dims x 200k rows
# (4e7 values) ran past 5 minutes in a probe. Codes with more than this many
# values (rows x dims) are refused before any work; raise it per call (max_values) or for
# a process with the environment variable below.
MAX_CODE_VALUES_ENV = "BENCHMARK_MAX_CODE_VALUES"
DEFAULT_MAX_CODE_VALUES = 5_000_000


def max_code_values() -> int:
    """The size limit in values (rows x dims): $BENCHMARK_MAX_CODE_VALUES or 5,000,000."""
    text = os.environ.get(MAX_CODE_VALUES_ENV)
    if text is None:
        return DEFAULT_MAX_CODE_VALUES
    try:
        limit = int(text)
    except ValueError:
        limit = 0
    if limit < 1:
        raise MetricInputError(f"${MAX_CODE_VALUES_ENV}: expected a positive integer number "
                               f"of values, found {text!r}")
    return limit


class MetricInputError(UserError, ValueError):
    """Codes or factors that no metric can score; the message says what was expected."""


def check_codes(factors, codes, min_samples: int = 2, metric: str = "metric",
                max_values: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Validated (factors int64 (n, k), codes float64 (n, d)).

    Rejects: non-2-D arrays, mismatched row counts, fewer than `min_samples` rows,
    non-integer or negative factor classes, NaN/inf codes, codes of more than `max_values` values (default
    `max_code_values()`), and factors that take a single value (a metric cannot tell
    whether a code captures a constant). Constant code dims are legitimate.
    """
    codes = check_code_array(codes, min_samples, metric, max_values)
    factors = np.asarray(factors)
    if factors.ndim != 2 or factors.shape[1] == 0:
        raise MetricInputError(f"{metric}: expected factors of shape (n, k), k >= 1, found "
                               f"{factors.shape}")
    if len(factors) != len(codes):
        raise MetricInputError(f"{metric}: expected as many factor rows as code rows, found "
                               f"{len(factors)} and {len(codes)}")
    if factors.dtype.kind not in "iu":
        if factors.dtype.kind != "f" or not np.all(np.mod(factors, 1) == 0):
            raise MetricInputError(f"{metric}: expected integer factor classes, found dtype "
                                   f"{factors.dtype}")
    factors = factors.astype(np.int64)
    if factors.min() < 0:
        row, col = np.argwhere(factors < 0)[0]
        raise MetricInputError(f"{metric}: expected factor classes >= 0 (indices into each "
                               f"factor's values), found {factors[row, col]} at row {row}, "
                               f"factor {col}")
    single = [j for j in range(factors.shape[1]) if np.all(factors[:, j] == factors[0, j])]
    if single:
        raise MetricInputError(f"{metric}: factor(s) {single} take a single value in these "
                               f"{len(factors)} samples; drop constant factors first")
    return factors, codes


def check_code_array(codes, min_samples: int = 2, metric: str = "metric",
                     max_values: int | None = None) -> np.ndarray:
    """Validated codes float64 (n, d): 2-D, numeric, finite, at least `min_samples` rows,
    at most `max_values` values (default `max_code_values()`)."""
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.shape[1] == 0:
        raise MetricInputError(f"{metric}: expected codes of shape (n, d), d >= 1, found "
                               f"{codes.shape}")
    limit = max_code_values() if max_values is None else int(max_values)
    if codes.size > limit:
        raise MetricInputError(
            f"{metric}: codes of shape {codes.shape} hold {codes.size:,} values, more than "
            f"the limit of {limit:,} (rows x dims; codes-level metrics take time that grows "
            f"with it): evaluate a row subsample, or raise the limit with "
            f"${MAX_CODE_VALUES_ENV} or max_values")
    if len(codes) < min_samples:
        raise MetricInputError(f"{metric}: needs at least {min_samples} samples, found "
                               f"{len(codes)}")
    if codes.dtype.kind not in "iuf":
        raise MetricInputError(f"{metric}: expected numeric codes, found dtype {codes.dtype}")
    codes = codes.astype(np.float64)
    bad = ~np.isfinite(codes)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise MetricInputError(f"{metric}: codes contain {int(bad.sum())} NaN/inf values "
                               f"(first at row {row}, dim {col})")
    return codes


def read_npz(path, names, what: str = "") -> dict[str, np.ndarray]:
    """{name: array} of the arrays `names` of an .npz data file, read with
    allow_pickle=False; MetricInputError naming the file, what was expected (`what`, e.g.
    "the export's manifest says how") and what was found otherwise: a truncated or corrupt
    archive (zip, deflate, .npy header or body), missing arrays, object arrays, or a file
    that is no archive at all (numpy would read it only by unpickling it, which a data file
    never is)."""
    import tokenize
    import zipfile
    import zlib

    expected = (f"expected an .npz with the arrays {', '.join(repr(n) for n in names)}"
                + (f" ({what})" if what else ""))
    try:
        with np.load(path, allow_pickle=False) as saved:
            if not hasattr(saved, "files"):
                raise MetricInputError(f"{path}: {expected}, found a single .npy array")
            missing = [n for n in names if n not in saved.files]
            if missing:
                raise MetricInputError(f"{path}: {expected}, found {saved.files}")
            return {name: saved[name] for name in names}
    except MetricInputError:
        raise
    except ValueError as error:
        if "allow_pickle" in str(error):
            found = ("object arrays, which are read only by unpickling (never done for a "
                     "data file)" if zipfile.is_zipfile(path) else
                     "a file that is no .npz archive (numpy would read it only by unpickling "
                     "it, never done for a data file)")
        else:
            found = f"an unreadable file ({error})"
        raise MetricInputError(f"{path}: {expected}, found {found}") from None
    except (OSError, EOFError, KeyError, SyntaxError, MemoryError, zipfile.BadZipFile,
            zlib.error, tokenize.TokenError) as error:
        raise MetricInputError(f"{path}: {expected}, found an unreadable file (truncated or "
                               f"corrupt? {type(error).__name__}: {error})") from None


def load_codes(path: str) -> tuple[np.ndarray, np.ndarray]:
    """(factors, codes) from an npz (the format of `python -m benchmark.metrics evaluate`
    and a run's eval_codes.npz); ValueError naming the file when it is not one
    (read_npz)."""
    arrays = read_npz(path, ("factors", "codes"))
    return arrays["factors"], arrays["codes"]


#: images per call of the representation in `sample_codes` (at least the sampling batch)
ENCODE_BATCH_SIZE = 256


def sample_codes(data, representation_fn: RepresentationFn, num_points: int,
                 rng: np.random.Generator, batch_size: int = 64,
                 encode_batch_size: int = ENCODE_BATCH_SIZE
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(factors int64 (n, k), codes float64 (n, d)) of `num_points` uniform samples.

    Factors are drawn (and images rendered) `batch_size` at a time, the metric's own
    sampling batch (dlib's, which fixes the samples a seed gives); the images are encoded
    max(batch_size, encode_batch_size) at a time: the same samples, ~10x fewer calls of
    the representation at dlib's batch of 16. `representation_fn` maps images float32
    (b, 64, 64, c) to codes (b, d); its output is checked for shape and finiteness.
    """
    factors, codes, pending = [], [], []
    chunk = max(int(batch_size), int(encode_batch_size))

    def encode():
        images = np.concatenate(pending)
        out = np.asarray(representation_fn(images))
        if out.ndim != 2 or len(out) != len(images):
            raise MetricInputError(f"representation_fn: expected codes of shape "
                                   f"({len(images)}, d) for a batch of {len(images)} images, "
                                   f"found {out.shape}")
        codes.append(out)
        pending.clear()

    remaining = int(num_points)
    while remaining > 0:
        size = min(batch_size, remaining)
        f = data.sample_factors(size, rng)
        pending.append(data.observations_from_factors(f, rng))
        factors.append(f)
        remaining -= size
        if sum(len(p) for p in pending) >= chunk or remaining == 0:
            encode()
    return np.concatenate(factors), np.concatenate(codes).astype(np.float64)


def batches(array, batch_size: int) -> list:
    """Consecutive slices of at most `batch_size` rows of `array` (the last may be shorter)."""
    return [array[i:i + batch_size] for i in range(0, len(array), batch_size)]


def apply_in_batches(fn: Callable, inputs, batch_size: int = 256, dtype=None) -> np.ndarray:
    """`fn` (a model's representation or encoder, a network) applied to consecutive slices
    of at most `batch_size` rows of `inputs`, outputs concatenated along the first axis as
    one numpy array (cast to `dtype` when given). `inputs` must hold at least one row."""
    out = np.concatenate([np.asarray(fn(chunk)) for chunk in batches(inputs, batch_size)])
    return out if dtype is None else out.astype(dtype)


def histogram_discretize(codes: np.ndarray, num_bins: int = 20) -> np.ndarray:
    """Each code dim binned into `num_bins` equal-width bins over its range: int (n, d).

    disentanglement_lib's `histogram_discretize`; a constant dim falls into one bin.
    """
    out = np.zeros(codes.shape, dtype=np.int64)
    for j in range(codes.shape[1]):
        edges = np.histogram_bin_edges(codes[:, j], bins=num_bins)
        out[:, j] = np.digitize(codes[:, j], edges[:-1])
    return out


def discrete_entropy(labels: np.ndarray) -> float:
    """Entropy (nats) of a discrete label vector (n,)."""
    _, counts = np.unique(labels, return_counts=True)
    p = counts / counts.sum()
    return float(-np.sum(p * np.log(p)))


def discrete_mutual_info(a: np.ndarray, b: np.ndarray) -> float:
    """Mutual information (nats, >= 0) between two discrete label vectors (n,).

    Exactly 0 when either takes a single value and never negative, as sklearn's
    `mutual_info_score` (dlib's estimator): the sum would otherwise leave a rounding
    residue of ~2e-16, enough to count a constant dim as informative (modularity).
    """
    _, ai = np.unique(a, return_inverse=True)
    _, bi = np.unique(b, return_inverse=True)
    if ai.max() == 0 or bi.max() == 0:
        return 0.0
    joint = np.zeros((ai.max() + 1, bi.max() + 1))
    np.add.at(joint, (ai.reshape(-1), bi.reshape(-1)), 1.0)
    joint /= joint.sum()
    pa, pb = joint.sum(1, keepdims=True), joint.sum(0, keepdims=True)
    nz = joint > 0
    return max(0.0, float(np.sum(joint[nz] * np.log(joint[nz] / (pa @ pb)[nz]))))


def fixed_factor_batch_from_data(data, representation_fn: RepresentationFn, factor: int,
                                 batch_size: int, rng: np.random.Generator) -> np.ndarray:
    """Codes (batch_size, d) of images sharing one random class of `factor` (dlib style)."""
    factors = data.sample_factors(batch_size, rng)
    factors[:, factor] = factors[0, factor]
    out = np.asarray(representation_fn(data.observations_from_factors(factors, rng)))
    if out.ndim != 2 or len(out) != batch_size:
        raise MetricInputError(f"representation_fn: expected codes of shape ({batch_size}, d), "
                               f"found {out.shape}")
    return out.astype(np.float64)


def fixed_factor_batch_from_codes(factors: np.ndarray, codes: np.ndarray, factor: int,
                                  batch_size: int, rng: np.random.Generator) -> np.ndarray:
    """Codes (batch_size, d) of sampled points sharing one class of `factor`.

    The codes-level stand-in for an intervention: with factors drawn independently, the
    points of a uniform sample that share v_k = c are a sample of the other factors given
    v_k = c. Drawn with replacement when fewer than `batch_size` points share the class.
    """
    anchor = factors[rng.integers(len(factors)), factor]
    rows = np.flatnonzero(factors[:, factor] == anchor)
    return codes[rng.choice(rows, size=batch_size, replace=len(rows) < batch_size)]
