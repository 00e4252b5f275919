import json
import os
import pathlib
import subprocess
import sys

import gin
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TINY = ["--gin_bindings=run.steps = 4", "--gin_bindings=run.batch_size = 8",
        "--gin_bindings=run.eval_points = 300", "--gin_bindings=run.metrics = ['mig']",
        "--gin_bindings=run.health_points = 64", "--gin_bindings=run.checkpoint_every = 2",
        "--gin_bindings=model.num_latents = 3", "--gin_bindings=data.source = 'procedural'"]


def _run(*args):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run([sys.executable, "-m", "benchmark.run", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def test_run_writes_a_complete_run_directory_and_skips_it_next_time(tmp_path):
    out = tmp_path / "run"
    args = ["--gin_file=models/beta_vae.gin", "--gin_file=datasets/dsprites.gin", *TINY,
            f"--output_dir={out}"]
    first = _run(*args)
    assert first.returncode == 0, first.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    assert results["schema_version"] == 1 and results["steps"] == 4
    assert results["dataset"]["name"] == "dsprites" and results["model"] == "beta_vae"
    assert 0.0 <= results["metrics"]["mig"]["mig"] <= 1.0
    assert set(results["final_losses"]) >= {"loss", "reconstruction", "kl"}
    assert (out / "operative_config.gin").read_text().count("beta_vae.beta") == 1
    assert (out / "eval_codes.npz").exists() and list((out / "tb").iterdir())
    health = results["metrics"]["health"]
    assert 0 <= health["active_units"] <= 3 and len(health["mean_posterior_variance"]) == 3
    assert health["overpruned"] == (health["active_units"] < 5)
    assert health["psnr"] > 0 and health["reconstruction_loss"] > 0
    for name in ("reconstructions.png", "traversals.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    stamp = (out / "results.json").stat().st_mtime_ns
    again = _run(*args)
    assert again.returncode == 0 and (out / "results.json").stat().st_mtime_ns == stamp


def test_misspelt_binding_fails_before_training(tmp_path):
    result = _run("--gin_file=models/beta_vae.gin", "--gin_bindings=beta_vae.betta = 3",
                  f"--output_dir={tmp_path / 'run'}")
    assert result.returncode == 2 and "betta" in result.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("path", sorted(str(p.relative_to(ROOT / "gin_configs"))
                                         for p in (ROOT / "gin_configs").rglob("*.gin")))
def test_every_gin_config_parses_and_builds(path):
    import numpy as np

    from benchmark import config, run  # noqa: F401  (run registers the run.* settings)
    from benchmark.data import load_data
    from models.registry import make_model
    gin.clear_config()
    try:
        if path.startswith("studies/"):
            from benchmark import study
            config.parse_config([path], [])
            specs = study.expand(study.study_settings())
            assert specs and all((ROOT / "gin_configs" / f).exists()
                                 for s in specs for f in s.gin_files)
            return
        if path.startswith("perturbations/"):
            from perturbations import generate
            config.parse_config([path], [])
            settings = generate.generation_settings()
            assert all((ROOT / "gin_configs" / f).exists()
                       for f in settings["reference_gin_files"])
            return
        config.parse_config([path], ["data.source = 'procedural'"])
        data = load_data()
        if path.startswith(("models/", "papers/")):
            model = make_model(data.observation_shape)
            codes = model.representation(np.zeros((2,) + data.observation_shape, np.float32))
            assert codes.shape[0] == 2
        if path.startswith("papers/zietlow2021/"):
            assert codes.shape[1] == data.num_factors     # latent dim = varying factors
    finally:
        gin.clear_config()


def test_unknown_method_is_a_clear_error():
    from models.registry import make_model
    with pytest.raises(ValueError, match="unknown model.method"):
        make_model((64, 64, 1), method="vae2")


def test_model_health_of_every_method():
    import numpy as np

    from benchmark.run import model_health
    from models.registry import METHODS, make_model
    images = np.random.default_rng(0).uniform(0, 1, (6, 64, 64, 1)).astype(np.float32)
    for method in METHODS:
        health = model_health(make_model((64, 64, 1), method=method, num_latents=3), images, 5,
                              batch_size=4)
        variational = method in ("beta_vae", "annealed_vae", "beta_tcvae", "dip_vae",
                                 "factor_vae", "slowvae", "cliff_vae", "hfs_vae", "qlvae")
        assert ("active_units" in health) == variational, method
        assert ("psnr" in health) == (method != "pcl"), method
