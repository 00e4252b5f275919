"""benchmark.objective_cost: what a change of the images costs a Bernoulli decoder."""

import json

import numpy as np
import pytest

from benchmark.metrics.codes import MetricInputError
from benchmark.studies import objective_cost
from tests.cli import python_m


def test_the_cost_is_the_cross_entropy_difference_exactly():
    import tensorflow as tf

    rng = np.random.default_rng(0)
    clean = (rng.random((5, 6, 6, 1)) > 0.7).astype(np.float64)
    changed = np.clip(clean + rng.uniform(-0.3, 0.3, clean.shape), 0.0, 1.0)
    logits = rng.normal(0.0, 4.0, clean.shape)

    def ce(targets):
        return tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(
            labels=tf.constant(targets), logits=tf.constant(logits)), axis=(1, 2, 3)).numpy()

    cost = objective_cost.bernoulli_cost(clean, changed, logits)
    np.testing.assert_allclose(cost, ce(changed) - ce(clean), rtol=1e-9, atol=1e-9)
    # a pixel moved away from a sure prediction costs |Δx| · |logit|, whatever its energy
    one = np.zeros((1, 2, 2, 1))
    sure = np.full(one.shape, -5.0)                 # the decoder is sure every pixel is 0
    half = one.copy()
    half[0, 0, 0, 0] = 0.5                          # energy 0.25, L1 0.5
    quarter = one.copy()
    quarter[0, :, :, 0] = 0.125                     # energy 0.0625, L1 0.5
    assert objective_cost.bernoulli_cost(one, half, sure)[0] == pytest.approx(2.5)
    assert objective_cost.bernoulli_cost(one, quarter, sure)[0] == pytest.approx(2.5)


@pytest.mark.parametrize("shapes, logit, found", [
    (((2, 3, 3, 1), (2, 3, 3, 1), (2, 3, 3, 2)), 0.0, "of one shape"),
    (((2, 3, 3, 1),) * 3, np.nan, "finite logits"),
])
def test_inputs_that_are_not_images_and_logits_are_refused(shapes, logit, found):
    clean, changed, logits = (np.zeros(s) for s in shapes)
    with pytest.raises(MetricInputError, match=found):
        objective_cost.bernoulli_cost(clean, changed, logits + logit)


def test_the_match_finds_the_strength_of_a_known_cost():
    eps = objective_cost.match_strength(lambda e: 100.0 * e * e, 25.0, 0.0, 1.0)
    assert eps == pytest.approx(0.5, abs=1e-9)
    with pytest.raises(ValueError, match="expected the cost to rise through 400 between "
                                         "strengths 0 and 1, found 0 and 100"):
        objective_cost.match_strength(lambda e: 100.0 * e * e, 400.0, 0.0, 1.0)


def test_a_run_without_checkpoints_is_one_clear_error(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "operative_config.gin").write_text("model.method = 'beta_vae'\n")
    done = python_m("benchmark.objective_cost", run, "--variants=noisy@0.1", timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "expected checkpoints/ with a checkpoint, found none" in \
        done.stderr.strip().splitlines()[-1]
    assert not (run / "objective_cost.json").exists()
    done = python_m("benchmark.objective_cost", run, timeout=120)       # no --variants
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == (
        "error: --variants: expected at least one arm, e.g. rotated@5, found none")
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_the_command_costs_a_trained_run_and_matches_noise_to_it(tmp_path):
    from tests.benchmark_core.test_run import _run_here

    run = tmp_path / "vae"
    _run_here(run, "model.num_latents = 2",
              "data.fixed_factors = {'shape': 1, 'scale': 5, 'orientation': 0}")
    done = python_m("benchmark.objective_cost", run, "--variants=wave@0.2,noisy@0.1,noisy@0.3",
                    "--match=noisy", timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads((run / "objective_cost.json").read_text())
    assert record["images"] == 32 * 32 and record["step"] == 4
    rows = record["variants"]
    assert set(rows) == {"wave@0.2", "noisy@0.1", "noisy@0.3"}
    assert 0 < rows["noisy@0.1"]["cost_per_image"] < rows["noisy@0.3"]["cost_per_image"]
    assert rows["noisy@0.1"]["mean_abs"] == pytest.approx(0.05, rel=0.02)   # reflected: ε/2
    matched = record["matched"]["noisy"]
    assert matched["to"] == "wave@0.2" and 0.0 < matched["eps"] < 1.0
    assert matched["cost_per_image"] == pytest.approx(rows["wave@0.2"]["cost_per_image"],
                                                      rel=1e-3)
    assert "noisy matched to wave@0.2: eps" in done.stdout
