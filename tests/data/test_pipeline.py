import numpy as np
import pytest

from benchmark.data import dsprites, make_variant, pipeline


@pytest.fixture(scope="module")
def data():
    return dsprites.DSprites(source="procedural")


def _take(dataset, n):
    return [np.asarray(b) if not isinstance(b, tuple) else tuple(np.asarray(x) for x in b)
            for b in dataset.take(n)]


def test_image_stream_is_seeded_shaped_and_resumable(data):
    first = _take(pipeline.image_dataset(data, batch_size=16, seed=3), 4)
    again = _take(pipeline.image_dataset(data, batch_size=16, seed=3), 4)
    other = _take(pipeline.image_dataset(data, batch_size=16, seed=4), 1)
    resumed = _take(pipeline.image_dataset(data, batch_size=16, seed=3, start_batch=2), 2)
    assert first[0].shape == (16, 64, 64, 1) and first[0].dtype == np.float32
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(resumed[0], first[2])
    np.testing.assert_array_equal(resumed[1], first[3])
    assert not np.array_equal(first[0], other[0])
    assert not np.array_equal(first[0], first[1])


def test_batches_equal_direct_rendering(data):
    batch = _take(pipeline.image_dataset(data, batch_size=8, seed=0, start_batch=5), 1)[0]
    np.testing.assert_array_equal(batch, pipeline.image_batch(data, 8, 0, 5))


def test_pair_stream_with_negatives(data):
    batches = _take(pipeline.pair_dataset(data, batch_size=8, seed=1, negatives=True), 2)
    x_t, x_next, x_neg = batches[0]
    assert x_t.shape == x_next.shape == x_neg.shape == (8, 64, 64, 1)
    direct = pipeline.pair_batch(data, 8, 1, 0, negatives=True)
    for a, b in zip(batches[0], direct):
        np.testing.assert_array_equal(a, b)
    plain = _take(pipeline.pair_dataset(data, batch_size=8, seed=1), 1)[0]
    assert len(plain) == 2


def test_noisy_stream(data):
    noisy = make_variant(data, "noisy")
    batch = _take(pipeline.image_dataset(noisy, batch_size=8, seed=0), 1)[0]
    assert 0.0 <= batch.min() and batch.max() <= 1.0
    assert len(np.unique(batch)) > 100


def test_streams_run_without_autotuning_so_their_iterators_close_at_once(data):
    """tf.data's autotuning thread made deleting a training iterator wait up to ~a minute
    (benchmark/data/pipeline.py); every stream turns it off."""
    import time
    streams = [pipeline.image_dataset(data, batch_size=8),
               pipeline.pair_dataset(data, batch_size=8, negatives=True)]
    for stream in streams:
        assert stream.options().autotune.enabled is False
        iterator = iter(stream)
        for _ in range(3):
            next(iterator)
        start = time.perf_counter()
        del iterator
        assert time.perf_counter() - start < 5.0
