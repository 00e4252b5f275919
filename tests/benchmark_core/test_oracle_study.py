"""The oracle positive-control study (gin_configs/studies/oracle_cpu.gin): its grid asks
for the arms it describes, its noise arm stays matched to the oracle's mean |x' - x|, and
one beta-VAE trains and evaluates end to end on the reduced oracle data."""

import json
import os
import pathlib
import subprocess
import sys

import gin
import pytest

from benchmark.core import config
from benchmark.data import load_data
from benchmark.data.oracle import (ORACLE_FIXED_FACTORS, OracleData, TextureData,
                                   matched_noise_eps)
from benchmark.data.variants import NoisyData

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def specs():
    from benchmark.runs import run  # noqa: F401  (run registers the run.* settings)
    from benchmark.studies import study
    gin.clear_config()
    try:
        config.parse_config(["studies/oracle_cpu.gin"], [])
        return study.expand(study.study_settings())
    finally:
        gin.clear_config()


def _data_of(spec):
    """The dataset a run of `spec` trains on, as the runner builds it."""
    gin.clear_config()
    try:
        config.parse_config(list(spec.gin_files), list(spec.bindings))
        return load_data()
    finally:
        gin.clear_config()


def test_grid_has_four_arms_of_five_seeds_on_the_reduced_dsprites(specs):
    assert len(specs) == 4 * 5
    arms = {}
    for spec in specs:
        arm = spec.name.removeprefix("beta_vae_dsprites_").rsplit("_seed", 1)[0]
        arms.setdefault(arm, spec)
    assert sorted(arms) == ["noisy@0.1", "oracle@0.157", "original", "texture@0.157"]
    data = {arm: _data_of(spec) for arm, spec in arms.items()}
    for arm, d in data.items():
        assert d.factor_names == ("posX", "posY") and d.num_images == 1024, arm
        assert d.describe()["fixed_factors"] == ORACLE_FIXED_FACTORS, arm
    assert type(data["oracle@0.157"]) is OracleData
    assert type(data["texture@0.157"]) is TextureData
    assert type(data["noisy@0.1"]) is NoisyData
    assert data["oracle@0.157"].eps == data["texture@0.157"].eps
    # The noise arm's eps is the matched one (computed, rounded in the config).
    matched = matched_noise_eps(data["oracle@0.157"], noise_seed=data["noisy@0.1"].seed)
    assert data["noisy@0.1"].eps == pytest.approx(matched, rel=0.005)


@pytest.mark.slow
def test_beta_vae_smoke_run_on_the_oracle_data(tmp_path):
    """~30 steps of the study's beta-VAE on the reduced oracle data, tiny evaluation."""
    out = tmp_path / "run"
    bindings = ["data.source = 'procedural'", "data.variant = 'oracle'",
                "data.fixed_factors = {'shape': 0, 'scale': 5, 'orientation': 0}",
                "model.num_latents = 2", "run.steps = 30", "run.checkpoint_every = 30",
                "run.metrics = ['mig']", "run.eval_points = 200", "mig.num_train = 500",
                "run.health_points = 100", "run.figures = False"]
    command = [sys.executable, "-m", "benchmark.run",
               "--gin_file=papers/zietlow2021/beta_vae_dsprites.gin",
               *[f"--gin_bindings={b}" for b in bindings], f"--output_dir={out}"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["steps"] == 30
    assert results["dataset"]["variant"] == "oracle"
    assert results["dataset"]["factor_sizes"] == [32, 32]
    assert results["dataset"]["fixed_factors"] == ORACLE_FIXED_FACTORS
    assert 0.0 <= results["scalars"]["metric/mig"] <= 1.0
    assert results["arrays"]["metric/mig/per_factor"] == [2]


def test_report_names_the_oracle_arms_at_their_default_strength():
    from benchmark.studies import report_data, report_figures
    records = [{"dataset": "dsprites", "variant": v}
               for v in ("original", "oracle@0.157", "texture@0.157", "noisy@0.1", "oracle@0.2")]
    assert report_data.nominal(records) == {("dsprites", "oracle@0.157"): "oracle",
                                            ("dsprites", "texture@0.157"): "texture",
                                            ("dsprites", "noisy@0.1"): "noisy"}
    assert report_figures.variant_eps("texture", "dsprites") == 0.157
    assert report_figures.variant_eps("wave_texture", "dsprites") == 0.157
    row = {"setting": "", "variant": "texture", "dataset": "dsprites", "model": "beta_vae"}
    assert report_figures.eps_points({("beta_vae", "dsprites", "texture")})(row) == [
        (0.157, "texture")]
    assert report_figures.eps_points(set())(row) == []      # no sweep: no curve


def test_registered_hypotheses_find_the_report_groups(specs):
    """The report names the arms 'oracle', 'texture' and 'noisy' (default strengths), so
    the study's pre-registered hypotheses are testable on its runs (fake scores here)."""
    from benchmark.studies import report_data, report_sections, study
    gin.clear_config()
    try:
        config.parse_config(["studies/oracle_cpu.gin"], [])
        settings = study.study_settings()
    finally:
        gin.clear_config()
    assert [h["id"] for h in settings.hypotheses] == ["H1", "H2", "H3", "H4"]
    mig = {"original": 0.6, "oracle@0.157": 0.2, "texture@0.157": 0.55, "noisy@0.1": 0.5}
    records = [{"model": "beta_vae", "dataset": "dsprites", "variant": variant,
                "setting": "", "seed": seed, "overpruned": False, "run_dir": f"r{i}{seed}",
                "values": {"MIG": value + 0.01 * seed, "DCI-D": value - 0.01 * seed}}
               for i, (variant, value) in enumerate(mig.items()) for seed in range(5)]
    groups, _ = report_data.group(records)
    assert sorted(v for _, _, v, _ in groups) == ["noisy", "oracle", "original", "texture"]
    rows = report_sections.hypothesis_rows({"settings": settings.record()}, groups)
    assert [r["outcome"] for r in rows] == ["supported"] * 4
