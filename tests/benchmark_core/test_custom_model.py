"""The newcomer's path: a whole custom model (examples/wae_mmd.py) through the interface
check, `benchmark.run` and `benchmark.audit`, at tiny size."""

import json

import gin
import keras
import numpy as np
import pytest
import tensorflow as tf

from benchmark.core import config
from models import interface, registry
from models.base import TrainableModel

SHAPE = (64, 64, 1)


class _NoRepresentation(TrainableModel):
    def loss_terms(self, batch, step, seed):
        return {"loss": tf.zeros(())}


class _WrongCodes(_NoRepresentation):
    def representation(self, images):
        return tf.zeros((1, 3))                      # one row for a batch of two


class _EncodeWithoutMean(_WrongCodes):
    def representation(self, images):
        return tf.zeros((tf.shape(images)[0], 3))

    def encode(self, images):
        return {"z": self.representation(images)}


@pytest.mark.parametrize("cls, message", [
    (_NoRepresentation, r"lacks \['representation'\]"),
    (_WrongCodes, r"shape \(1, 3\) from representation on 2 images"),
    (_EncodeWithoutMean, r"from encode, expected a dict with at least 'mean'"),
])
def test_interface_check_names_what_is_missing_before_training(cls, message):
    with pytest.raises(interface.ModelInterfaceError, match=message) as error:
        interface.check_model(cls(), SHAPE, "model.factory @X")
    assert "examples/wae_mmd.py" in str(error.value)


def test_registry_checks_custom_models_and_builds_the_template():
    gin.clear_config()
    with pytest.raises(interface.ModelInterfaceError, match="representation"):
        registry.make_model(SHAPE, method="custom", factory=lambda shape, n: _NoRepresentation())
    from examples import wae_mmd
    keras.utils.set_random_seed(0)
    model = registry.make_model(SHAPE, method="custom", num_latents=4, factory=wae_mmd.WAEMMD)
    images = np.random.default_rng(0).uniform(size=(8,) + SHAPE).astype(np.float32)
    assert model.representation(images).shape == (8, 4)
    terms = model.train_step(images, 0, tf.constant([0, 0], tf.int64))
    assert set(terms) == {"loss", "reconstruction", "mmd"}
    assert np.isfinite(float(terms["loss"]))


def test_imq_mmd_separates_matching_from_shifted_samples():
    from examples.wae_mmd import imq_mmd
    rng = np.random.default_rng(0)
    prior = tf.constant(rng.normal(size=(256, 3)), tf.float32)
    same = float(imq_mmd(tf.constant(rng.normal(size=(256, 3)), tf.float32), prior))
    shifted = float(imq_mmd(tf.constant(rng.normal(size=(256, 3)) + 2.0, tf.float32), prior))
    assert abs(same) < 0.01 and shifted > 0.1


def test_gin_errors_say_how_to_fix_the_plugin(tmp_path):
    missing_module = tmp_path / "a.gin"
    missing_module.write_text("import no_such_package.method\n")
    with pytest.raises(ValueError, match="PYTHONPATH"):
        config.parse_config([str(missing_module)], [])
    unregistered = tmp_path / "b.gin"
    unregistered.write_text("import models.configurables\nmodel.factory = @LaplaceVAE\n")
    with pytest.raises(ValueError, match="@gin.configurable"):
        config.parse_config([str(unregistered)], [])
    gin.clear_config()


@pytest.mark.slow
def test_custom_model_runs_through_the_audit(tmp_path):
    from benchmark.studies import audit
    from perturbations import artefact, manipulation
    from tests.benchmark_core.test_report import _result
    from tests.benchmark_core.test_study import TINY_RUN

    art = artefact.save_manipulation(tmp_path / "art", manipulation.manipulation_network(5), {
        "dataset": "dsprites", "factor_sizes": [3, 6, 40, 32, 32], "eps": 0.1})
    reference = tmp_path / "reference"
    reference.mkdir()
    (reference / "study.json").write_text(json.dumps({"settings": {
        "datasets": ["dsprites"], "artefacts": {"dsprites": {"modified": str(art)}},
        "bindings": TINY_RUN, "source": "procedural"}}))
    for i, (o, m) in enumerate([(0.3, 0.1), (0.32, 0.12), (0.28, 0.09)]):
        _result(reference / "runs" / f"b_o{i}", "beta_vae", "original", i, o, 0.5)
        _result(reference / "runs" / f"b_m{i}", "beta_vae", "modified", i, m, 0.5, eps=0.1)
    out = tmp_path / "audit"
    audit.run_audit("examples/wae_mmd.gin", "wae_mmd", [0], reference, out)
    result = json.loads((out / "audit.json").read_text())
    assert result["model_name"] == "wae_mmd" and not result["failed_runs"]
    assert sorted(p.parent.name for p in (out / "runs").glob("*/results.json")) == [
        "wae_mmd_dsprites_modified_seed0", "wae_mmd_dsprites_noisy_seed0",
        "wae_mmd_dsprites_original_seed0"]
    # each of its runs is `python -m benchmark.run --gin_file=examples/wae_mmd.gin` (the
    # runner's command line, as a user calls it)
    results = json.loads((out / "runs" / "wae_mmd_dsprites_original_seed0" / "results.json"
                          ).read_text())
    assert results["model"] == "wae_mmd"
    scalars = results["scalars"]
    assert {"loss/loss", "loss/reconstruction", "loss/mmd"} <= set(scalars)
    assert 0.0 <= scalars["metric/mig"] <= 1.0
    assert scalars["health/psnr"] > 0
    assert "health/active_units" not in scalars                  # no posterior variance
