"""tf.data input pipelines over any GroundTruthData: infinite, batched, prefetched, seeded.

Batch number b is drawn from `np.random.default_rng([seed, b])` alone, so the stream is
deterministic for a seed, identical whatever the parallelism, and a resumed run that
starts at batch b sees exactly the batches an uninterrupted run would have seen.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from benchmark.data import pairs
from benchmark.data.ground_truth import GroundTruthData


def batch_rng(seed: int, batch_index: int) -> np.random.Generator:
    """The generator of batch `batch_index` of the stream `seed`."""
    return np.random.default_rng([int(seed), int(batch_index)])


def image_batch(data: GroundTruthData, batch_size: int, seed: int, batch_index: int
                ) -> np.ndarray:
    """Batch `batch_index` of the image stream: float32 (batch_size, 64, 64, c)."""
    rng = batch_rng(seed, batch_index)
    return data.observations_from_factors(data.sample_factors(batch_size, rng), rng)


def pair_batch(data: GroundTruthData, batch_size: int, seed: int, batch_index: int,
               rate: float = pairs.DEFAULT_RATE, negatives: bool = False
               ) -> tuple[np.ndarray, ...]:
    """Batch of pairs (x_t, x_t+1[, x_negative]), each float32 (batch_size, 64, 64, c)."""
    rng = batch_rng(seed, batch_index)
    first, second = pairs.sample_pairs(data, batch_size, rng, rate)
    groups = [first, second]
    if negatives:
        groups.append(pairs.negative_factors(data, batch_size, rng))
    images = data.observations_from_factors(np.concatenate(groups), rng)
    return tuple(np.split(images, len(groups)))


def factor_image_batch(data: GroundTruthData, batch_size: int, seed: int, batch_index: int
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(factor classes scaled to [0, 1] float32 (batch_size, k), their images), for networks
    that take ground-truth factors as input (the manipulation network m(w))."""
    rng = batch_rng(seed, batch_index)
    factors = data.sample_factors(batch_size, rng)
    return (scaled_factors(factors, data.factor_sizes),
            data.observations_from_factors(factors, rng))


def scaled_factors(factors: np.ndarray, factor_sizes) -> np.ndarray:
    """Factor classes (n, k) as float32 class / (size - 1) in [0, 1] (0 for size-1 factors)."""
    spans = np.maximum(np.asarray(factor_sizes, dtype=np.float32) - 1.0, 1.0)
    return np.asarray(factors, dtype=np.float32) / spans


def _batched_stream(render, num_outputs: int, data: GroundTruthData, batch_size: int,
                    start_batch: int, prefetch: int, shapes=None) -> tf.data.Dataset:
    shapes = shapes or [(batch_size,) + tuple(data.observation_shape)] * num_outputs

    def render_tf(batch_index):
        outputs = tf.numpy_function(lambda b: render(int(b)), [batch_index],
                                    [tf.float32] * num_outputs, stateful=False)
        for out, shape in zip(outputs, shapes):
            out.set_shape(shape)
        return outputs[0] if num_outputs == 1 else tuple(outputs)

    stream = tf.data.Dataset.counter(start=int(start_batch), dtype=tf.int64)
    stream = stream.map(render_tf, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    # tf.data's autotuning thread sleeps between optimisations for a period that grows to
    # about a minute, and deleting the iterator waited for it: the end of training stalled
    # 0-57 s (12-14 s in three of three 300-step runs, AMD EPYC 2 cores, 2026-11-24; none
    # with autotuning off, at the same step time). The batches do not depend on it.
    options = tf.data.Options()
    options.autotune.enabled = False
    return stream.prefetch(prefetch).with_options(options)


def image_dataset(data: GroundTruthData, batch_size: int = 64, seed: int = 0,
                  start_batch: int = 0, prefetch: int = 4) -> tf.data.Dataset:
    """Infinite dataset of image batches float32 (batch_size, 64, 64, c) in [0, 1].

    Factors are uniform on the grid (disentanglement_lib's training distribution).
    `start_batch` skips the first batches without rendering them (resume).
    """
    return _batched_stream(lambda b: [image_batch(data, batch_size, seed, b)], 1, data,
                           batch_size, start_batch, prefetch)


def pair_dataset(data: GroundTruthData, batch_size: int = 64, seed: int = 0,
                 start_batch: int = 0, rate: float = pairs.DEFAULT_RATE,
                 negatives: bool = False, prefetch: int = 4) -> tf.data.Dataset:
    """Infinite dataset of (x_t, x_t+1) batches, plus x_negative when `negatives`."""
    num_outputs = 3 if negatives else 2
    return _batched_stream(
        lambda b: list(pair_batch(data, batch_size, seed, b, rate, negatives)), num_outputs,
        data, batch_size, start_batch, prefetch)


def factor_image_dataset(data: GroundTruthData, batch_size: int = 64, seed: int = 0,
                         start_batch: int = 0, prefetch: int = 4) -> tf.data.Dataset:
    """Infinite dataset of `factor_image_batch` pairs (scaled factors, images)."""
    shapes = [(batch_size, data.num_factors), (batch_size,) + tuple(data.observation_shape)]
    return _batched_stream(lambda b: list(factor_image_batch(data, batch_size, seed, b)), 2,
                           data, batch_size, start_batch, prefetch, shapes)
