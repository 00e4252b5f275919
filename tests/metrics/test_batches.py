"""codes.apply_in_batches: the one batched-inference helper (run.py's representation and
model health, the manipulation network's delta, generate's reference encoders)."""

import numpy as np
import pytest

from benchmark.metrics import codes as codes_lib


def test_batches_are_consecutive_slices():
    rows = np.arange(10)
    assert [b.tolist() for b in codes_lib.batches(rows, 4)] == [[0, 1, 2, 3], [4, 5, 6, 7],
                                                                 [8, 9]]
    assert [b.tolist() for b in codes_lib.batches(rows, 10)] == [rows.tolist()]
    assert codes_lib.batches(rows[:0], 3) == []


def test_apply_in_batches_calls_fn_per_slice_and_concatenates():
    images = np.random.default_rng(0).random((7, 4, 4, 1)).astype(np.float32)
    sizes = []

    def encode(batch):
        sizes.append(len(batch))
        return batch.reshape(len(batch), -1)[:, :3].astype(np.float64) * 2   # codes (b, 3)

    out = codes_lib.apply_in_batches(encode, images, 3)
    assert sizes == [3, 3, 1]
    np.testing.assert_array_equal(out, images.reshape(7, -1)[:, :3].astype(np.float64) * 2)
    assert out.dtype == np.float64
    cast = codes_lib.apply_in_batches(encode, images, 256, np.float32)
    assert cast.dtype == np.float32 and sizes[3:] == [7]
    with pytest.raises(ValueError):                       # no rows: nothing to concatenate
        codes_lib.apply_in_batches(encode, images[:0], 3)


def test_run_representation_is_the_models_representation_in_batches():
    from benchmark.runs.run import batched_representation

    class Model:
        calls = []

        def representation(self, images):
            self.calls.append(len(images))
            return images.mean(axis=(1, 2))

    images = np.random.default_rng(1).random((5, 2, 2, 3))
    out = batched_representation(Model(), batch_size=2)(images)
    assert Model.calls == [2, 2, 1]
    np.testing.assert_allclose(out, images.mean(axis=(1, 2)))


def test_generate_reference_migs_encode_in_batches():
    from benchmark import metrics as metrics_lib
    from benchmark.data import dsprites
    from benchmark.metrics import mig
    from perturbations.generate import reference_migs

    data = dsprites.DSprites(source="procedural")
    sizes = []

    def encoder(images):
        sizes.append(len(images))
        return {"mean": images.reshape(len(images), -1)[:, ::512]}

    found = reference_migs(data, data, {"e": encoder}, seed=3, points=300)
    expected = mig.mig(data, lambda x: x.reshape(len(x), -1)[:, ::512],
                       metrics_lib.metric_rng(3, "mig"), num_train=300)["mig"]
    assert found == {"e": {"original": expected, "modified": expected}}
    assert max(sizes) <= 256



def test_sample_codes_encodes_in_large_batches_and_keeps_the_samples():
    """Factors are drawn batch_size at a time (the seed fixes the same samples as before);
    the representation sees max(batch_size, encode_batch_size) images per call."""
    from benchmark.data.ground_truth import GroundTruthData

    class Grid(GroundTruthData):
        name, factor_names, factor_sizes = "grid", ("a", "b"), (7, 5)
        factor_values = (np.arange(7.0), np.arange(5.0))
        observation_shape = (2, 2, 1)

        def observations_from_factors(self, factors, rng=None):
            f = np.asarray(factors, np.float32)
            return np.repeat(f[:, :, None], 2, axis=2).reshape(len(f), 2, 2, 1)

    calls = []

    def representation(images):
        calls.append(len(images))
        return images.reshape(len(images), -1)[:, ::2] * 2.0

    data = Grid()
    factors, found = codes_lib.sample_codes(data, representation, 1000,
                                            np.random.default_rng(5), batch_size=16,
                                            encode_batch_size=256)
    rng = np.random.default_rng(5)
    expected = np.concatenate([data.sample_factors(min(16, 1000 - i), rng)
                               for i in range(0, 1000, 16)])
    np.testing.assert_array_equal(factors, expected)
    np.testing.assert_array_equal(found, 2.0 * expected)
    assert calls == [256, 256, 256, 232]
    with pytest.raises(codes_lib.MetricInputError, match=r"expected codes of shape \(256, d\)"):
        codes_lib.sample_codes(data, lambda x: np.zeros((1, 2)), 300,
                               np.random.default_rng(0), batch_size=16)
