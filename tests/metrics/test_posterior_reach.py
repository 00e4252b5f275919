"""benchmark.metrics.posterior_reach: a posterior's sd in the factors' class steps."""

import json

import numpy as np
import pytest

from benchmark.metrics import posterior_reach
from benchmark.metrics.codes import MetricInputError
from tests.cli import python_m


def _grid(sizes=(8, 6)):
    return np.stack(np.meshgrid(*map(np.arange, sizes), indexing="ij"), -1).reshape(-1, 2)


def test_reach_of_a_known_posterior():
    """Latent 0 moves 0.1 per class of factor 0 with sd 0.2 (reach 2 classes); latent 1
    moves 0.5 per class of factor 1 with sd 0.05 (reach 0.1); both exactly linear."""
    factors = _grid()
    means = np.stack([0.1 * factors[:, 0], -0.5 * factors[:, 1]], 1)
    sds = np.stack([np.full(len(factors), 0.2), np.full(len(factors), 0.05)], 1)
    row = posterior_reach.reach_in_class_steps(factors, means, sds)
    np.testing.assert_allclose(row["reach"], [2.0, 0.1], rtol=1e-9)
    np.testing.assert_allclose(row["sd"], [0.2, 0.05], rtol=1e-12)
    np.testing.assert_allclose(row["gradient"], [[0.1, 0.0], [0.0, -0.5]], atol=1e-12)
    assert row["factor"] == [0, 1]
    np.testing.assert_allclose(row["r2"], [1.0, 1.0], atol=1e-12)


def test_reach_reads_a_turned_latent_along_its_own_direction():
    """A latent moving 0.3 per class along (1, 1)/sqrt 2 with sd 0.3 reaches 1 class step
    along that direction, not 1/sqrt 2 along either axis."""
    factors = _grid((10, 10))
    means = (0.3 / np.sqrt(2)) * (factors[:, :1] + factors[:, 1:])
    row = posterior_reach.reach_in_class_steps(factors, means, np.full_like(means, 0.3))
    np.testing.assert_allclose(row["reach"], [1.0], rtol=1e-9)


@pytest.mark.parametrize("sds, found", [(0.0, "> 0"), (np.nan, "finite")])
def test_a_posterior_sd_that_is_not_positive_and_finite_is_refused(sds, found):
    factors = _grid()
    means = 0.1 * factors.astype(float)
    with pytest.raises(MetricInputError, match=found):
        posterior_reach.reach_in_class_steps(factors, means, np.full_like(means, sds))


def test_a_latent_that_does_not_move_has_no_reach():
    factors = _grid()
    means = np.stack([0.1 * factors[:, 0], np.zeros(len(factors))], 1)
    with pytest.raises(MetricInputError, match=r"latent\(s\) \[1\] do not move"):
        posterior_reach.reach_in_class_steps(factors, means, np.full_like(means, 0.1))


def test_a_directory_without_runs_is_one_clear_error(tmp_path):
    done = python_m("benchmark.posterior_reach", tmp_path, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert "expected a run directory (operative_config.gin) or a study directory" in last
    assert not (tmp_path / "posterior_reach.json").exists()
    run = tmp_path / "study" / "runs" / "beta_vae_dsprites_original_seed0"
    run.mkdir(parents=True)                      # a published run: its checkpoints not in git
    (run / "operative_config.gin").write_text("model.method = 'beta_vae'\n")
    done = python_m("benchmark.posterior_reach", tmp_path / "study", timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert "expected checkpoints/ with a checkpoint, found none" in last and "retrain" in last
    assert not (tmp_path / "study" / "posterior_reach.json").exists()


@pytest.mark.slow
def test_the_command_reads_a_trained_run_and_skips_an_encoder_without_posterior(tmp_path):
    from tests.benchmark_core.test_run import _run_here

    study = tmp_path / "study"
    plane = ["model.num_latents = 2",
             "data.fixed_factors = {'shape': 1, 'scale': 5, 'orientation': 0}"]
    _run_here(study / "runs" / "vae", *plane)
    _run_here(study / "runs" / "ae", *plane, "model.method = 'ae'")
    _run_here(study / "runs" / "wave", *plane, "data.variant = 'wave'", "data.eps = 0.2")
    done = python_m("benchmark.posterior_reach", study, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ae: no posterior (encode() gives no 'logvar'), skipped" in done.stdout
    rows = json.loads((study / "posterior_reach.json").read_text())["runs"]
    assert [r["run"] for r in rows] == ["vae", "wave"]
    row, wave = rows
    assert row["perturbation"] is None                            # the original: nothing added
    rendered = wave["perturbation"]                                # what the decoder renders
    assert rendered["images"] == 32 * 32 and rendered["energy"] > 1.0
    assert np.isfinite(rendered["share"]) and "perturbation rendered" in done.stdout
    assert row["step"] == 4 and row["images"] == 32 * 32          # every image of the plane
    assert row["factor_names"] == ["posX", "posY"]
    assert len(row["reach"]) == 2 and all(r > 0 and np.isfinite(r) for r in row["reach"])
    assert all(f in row["factor_names"] for f in row["factor"])
