"""Every shipped gin config parses and builds, at tiny size and without training: model,
paper and example configs build their model (checked against models/interface.py), the
others load their data; metric presets resolve every metric's settings; perturbation
configs their generation settings; a known-answer table its rows; a study config expands, and every run of its grid
resolves its run, metric and model settings (names and values checked, no model built)."""

import pathlib

import gin
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIGS = (sorted(str(p.relative_to(ROOT / "gin_configs"))
                  for p in (ROOT / "gin_configs").rglob("*.gin"))
           + sorted(f"examples/{p.name}" for p in (ROOT / "examples").glob("*.gin")))


def _resolve_run(gin_files, bindings) -> str:
    """Parses one run of a study and resolves every setting the runner would read before
    building anything; returns its model.method."""
    from benchmark import metrics
    from benchmark.core import config
    from benchmark.runs import run
    from models import configurables, registry
    gin.clear_config()
    config.parse_config(list(gin_files), list(bindings))
    settings = run.run_settings()
    metrics.resolve_settings(settings.metrics, settings.seed)
    model = gin.get_bindings("model", resolve_references=False)
    registry.resolve_settings(model["method"], model.get("architecture", "conv"),
                              configurables.bound_settings())
    return model["method"]


def test_every_gin_folder_and_the_examples_are_covered():
    assert {path.split("/")[0] for path in CONFIGS} == {
        "datasets", "metrics", "models", "papers", "perturbations", "studies", "examples",
        "pipelines", "known_answers"}
    assert "examples/wae_mmd.gin" in CONFIGS and "examples/sparse_vae.gin" in CONFIGS


@pytest.mark.parametrize("path", CONFIGS)
def test_every_gin_config_parses_and_builds(path):
    from benchmark.core import config
    from benchmark.data import load_data
    from benchmark.runs import run  # noqa: F401  (run registers the run.* settings)
    from models.configurables import configured_model
    from models.registry import MODELS
    gin.clear_config()
    try:
        if path.startswith("studies/"):
            from benchmark.studies import study
            config.parse_config([path], [])
            specs = study.expand(study.study_settings())
            # a model's gin file: under gin_configs/, or a user's (examples/) from the root
            assert specs and all((ROOT / "gin_configs" / f).exists() or (ROOT / f).exists()
                                 for s in specs for f in s.gin_files)
            runs = {(s.gin_files, tuple(b for b in s.bindings if not b.startswith("run.seed")))
                    for s in specs}                     # seeds differ in run.seed alone
            assert all(_resolve_run(*r) in MODELS for r in sorted(runs))
            return
        if path.startswith("pipelines/"):     # its stages' configs are cases of their own
            from benchmark.studies import pipeline
            config.parse_config([path], [])
            stages = pipeline.pipeline_settings()
            assert stages and all(s["gin_file"] in CONFIGS for s in stages)
            return
        if path.startswith("known_answers/"):   # a registered table: its rows check out
            from benchmark.studies import known_answers
            config.parse_config([path], [])
            table = known_answers.known_answer_table()
            assert (ROOT / table["reference"] / "study.json").exists()
            assert {r["expected"] for r in table["rows"]} <= set(known_answers.OUTCOMES)
            return
        if path.startswith("metrics/"):          # metric presets: every metric resolves
            from benchmark import metrics
            config.parse_config([path], [])
            settings = metrics.resolve_settings(list(metrics.METRICS), 0)
            assert set(gin.get_bindings("dci")) | set(gin.get_bindings("sap")) and settings
            return
        if path.startswith("perturbations/"):
            from models.configurables import configured_optimizer
            from perturbations import generate
            config.parse_config([path], [])
            settings = generate.generation_settings()
            assert all((ROOT / "gin_configs" / f).exists()
                       for f in settings.reference_gin_files)
            assert configured_optimizer("manipulation_adam").learning_rate is not None
            return
        config.parse_config([str(ROOT / path) if path.startswith("examples/") else path],
                            ["data.source = 'procedural'"])
        data = load_data()
        if path.startswith(("models/", "papers/", "examples/")):
            model = configured_model(data.observation_shape)
            codes = model.representation(np.zeros((2,) + data.observation_shape, np.float32))
            assert codes.shape[0] == 2
        if path.startswith("papers/zietlow2021/"):
            assert codes.shape[1] == data.num_factors     # latent dim = varying factors
    finally:
        gin.clear_config()
