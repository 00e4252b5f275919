import numpy as np
import pytest
import tensorflow as tf

from benchmark.data import dsprites, pipeline
from benchmark.runs import train as train_lib
from models import architectures, factorvae


def test_permutation_keeps_each_marginal_and_breaks_rows():
    z = tf.constant(np.random.default_rng(0).normal(size=(64, 4)), tf.float32)
    permuted = factorvae.permute_dims(z, [3, 4]).numpy()
    np.testing.assert_array_equal(np.sort(permuted, axis=0), np.sort(z.numpy(), axis=0))
    assert (permuted != z.numpy()).any(axis=1).mean() > 0.9
    np.testing.assert_array_equal(permuted, factorvae.permute_dims(z, [3, 4]).numpy())


def test_factorvae_trains_both_networks(tmp_path):
    data = dsprites.DSprites(source="procedural")
    model = factorvae.FactorVAE(architectures.conv_encoder((64, 64, 1), 3),
                                architectures.conv_decoder(3, (64, 64, 1)),
                                discriminator_units=16)
    before = [v.numpy().copy() for v in model.discriminator.trainable_variables]
    result = train_lib.train(model, lambda s: pipeline.image_dataset(data, 8, 0, s), 3,
                             tmp_path, seed=0, progress=False)
    terms = result["final_terms"]
    assert {"total_correlation", "discriminator_loss"} <= set(terms)
    assert all(np.isfinite(v) for v in terms.values())
    after = model.discriminator.trainable_variables
    assert any(not np.allclose(a, b.numpy()) for a, b in zip(before, after))
    assert terms["discriminator_loss"] == pytest.approx(np.log(2), abs=0.3)
