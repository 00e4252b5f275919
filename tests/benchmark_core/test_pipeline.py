"""benchmark.pipeline: stages in order, each resumable (issue 28 step 8: paper 002 at
paper scale in one command), checked with a dry run and a tiny-step end to end run."""

import json
import os
import pathlib
import subprocess
import sys

import gin
import pytest

from benchmark.core import config
from benchmark.core.errors import ConfigError
from benchmark.studies import pipeline
from tests.benchmark_core.test_study import TINY_RUN

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAPER = "pipelines/zietlow2021_paper.gin"


def _cli(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "benchmark.pipeline", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


def _stages(bindings=()):
    gin.clear_config()
    try:
        config.parse_config([PAPER], list(bindings))
        return pipeline.pipeline_settings()
    finally:
        gin.clear_config()


def test_the_paper_pipeline_chains_pools_games_and_table1():
    stages = _stages()
    assert [(s["name"], s["kind"]) for s in stages] == [
        ("restarts_dsprites", "study"), ("restarts_shapes3d", "study"),
        ("game_dsprites", "generate"), ("game_shapes3d", "generate"), ("table1", "study")]
    # each game reads the pool its study stage writes, and Table 1 the artefacts they make
    texts = {s["name"]: (config.GIN_SEARCH_PATH / s["gin_file"]).read_text() for s in stages}
    assert "results/zietlow2021_restarts_dsprites'" in texts["restarts_dsprites"]
    assert ("reference_study = 'results/zietlow2021_restarts_dsprites'"
            in texts["game_dsprites"])
    assert ("reference_study = 'results/zietlow2021_restarts_shapes3d'"
            in texts["game_shapes3d"])
    for dataset in ("dsprites", "shapes3d"):
        artefact = f"results/perturbations/zietlow2021_paper_{dataset}_modified"
        assert artefact in texts[f"game_{dataset}"] and artefact in texts["table1"]
    command = pipeline.stage_command(stages[0], "ray", 4, "10.0.0.1:6379")
    assert command[1:3] == ["-m", "benchmark.study"]
    assert command[-3:] == ["--backend=ray", "--workers=4", "--address=10.0.0.1:6379"]
    assert pipeline.stage_command(stages[2])[-1] == "--resume"
    assert pipeline.stage_command(stages[2], dry_run=True)[-1] == "--dry_run"
    bound = _stages(["pipeline.stage_bindings = {'table1': ['study.seeds = [0]']}"])
    assert bound[4]["bindings"] == ["study.seeds = [0]"] and bound[0]["bindings"] == []


def test_a_wrong_pipeline_is_one_clear_error(tmp_path):
    for stages, expected in (
            ([("a", "train", "x.gin")], "expected a kind in"),
            ([("a", "study", "x.gin"), ("a", "study", "y.gin")], "appears twice"),
            ([("a", "study")], "string triples"),
            ([], "at least one stage")):
        with pytest.raises(ConfigError, match=expected):
            pipeline.pipeline_settings(stages=stages)
    with pytest.raises(ConfigError, match=r"names no stage.*\['b'\]"):
        pipeline.pipeline_settings(stages=[("a", "study", "x.gin")],
                                   stage_bindings={"b": []})
    with pytest.raises(ConfigError, match="list of gin binding strings"):
        pipeline.pipeline_settings(stages=[("a", "study", "x.gin")],
                                   stage_bindings={"a": "study.seeds = [0]"})
    with pytest.raises(ConfigError, match=r"no stage named \['game'\]"):
        pipeline.select(_stages(), ["game"])
    result = _cli(f"--gin_file={PAPER}", "--stages=table1,nope", "--dry_run")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "nope" in result.stderr
    no_stages = tmp_path / "no_stages.gin"
    no_stages.write_text("pipeline.stage_bindings = {}\n")
    for args, expected in [((), "--gin_file is required"),
                           ((f"--gin_file={no_stages}",), "not provided in config: ['stages']")]:
        result = _cli(*args)
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert expected in result.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_dry_run_of_the_paper_pipeline_trains_nothing():
    result = _cli(f"--gin_file={PAPER}", "--dry_run")
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "10 runs, 0 finished" in result.stderr and "16 runs, 0 finished" in result.stderr
    assert "360 runs, 0 finished" in result.stderr
    assert "pool results/zietlow2021_restarts_dsprites: not trained yet" in out
    assert "references 4 entangled + 4 disentangled" in out
    assert "bad config: 120 run(s) cannot be configured now" in out    # no artefacts yet
    assert out.count("dry run: nothing was trained") == 3       # 2 games + the pipeline
    assert not (ROOT / "results/zietlow2021_restarts_dsprites").exists()


@pytest.mark.slow
def test_tiny_pipeline_end_to_end_and_resumed(tmp_path):
    """The dSprites half of the paper pipeline at tiny scale: a pool of 2 restarts, the game
    choosing its references from it, Table 1's beta-VAE on the modified data; the same
    command again trains nothing."""
    pool, art, table = tmp_path / "pool", tmp_path / "art", tmp_path / "table1"
    tiny = [*TINY_RUN, "model.num_latents = 5"]
    bindings = {
        "restarts_dsprites": [f"study.output_dir = '{pool}'", "study.seeds = [0, 1]",
                              f"study.bindings = {tiny!r}"],
        "game_dsprites": [f"generation.reference_study = '{pool}'",
                          f"generation.work_dir = '{tmp_path / 'game'}'",
                          f"generation.output_dir = '{art}'", "generation.steps = 3",
                          "generation.batch_size = 4", "generation.latent_samples = 2",
                          "generation.checkpoint_every = 2", "generation.evidence_points = 300",
                          "generation.eps_sweep = []", "generation.gate_steps = 0"],
        "table1": [f"study.output_dir = '{table}'", "study.seeds = [0]",
                   "study.datasets = ['dsprites']", "study.variants = ['modified']",
                   "study.models = {'beta_vae': 'papers/zietlow2021/beta_vae_{dataset}.gin'}",
                   f"study.artefacts = {{'dsprites': {{'modified': '{art}'}}}}",
                   f"study.bindings = {tiny!r}"]}
    args = [f"--gin_file={PAPER}", "--stages=restarts_dsprites,game_dsprites,table1",
            f"--gin_bindings=pipeline.stage_bindings = {bindings!r}"]
    result = _cli(*args)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert "pipeline finished: 3 stage(s)" in result.stdout
    metadata = json.loads((art / "metadata.json").read_text())
    pooled = sorted(str(pool / "runs" / f"beta_vae_dsprites_original_seed{s}")
                    for s in range(2))
    assert sorted(metadata["references"]["all_migs"]) == pooled
    chosen = [metadata["references"][side][0]["run_dir"]
              for side in ("entangled", "disentangled")]
    migs = metadata["references"]["all_migs"]
    assert migs[chosen[0]] == min(migs.values()) and migs[chosen[1]] == max(migs.values())
    # Table 1 on the artefact the game made (its original arm is a study run like the
    # pool's, left out here)
    results = json.loads((table / "runs" / "beta_vae_dsprites_modified_seed0"
                          / "results.json").read_text())
    assert results["dataset"]["variant"] == "modified"
    assert (tmp_path / "game" / "generated.json").is_file()
    again = _cli(*args)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count("0 ran now") == 2
    assert "generated before with these settings" in again.stdout
    # a stage that fails stops the pipeline: a game asking for more references than the pool
    bindings["game_dsprites"].append("generation.ensemble_size = 2")
    failed = _cli(f"--gin_file={PAPER}", "--stages=game_dsprites,table1",
                  f"--gin_bindings=pipeline.stage_bindings = {bindings!r}")
    assert failed.returncode == 2
    assert "stage game_dsprites exited with status 2" in failed.stdout
    assert "[2/2]" not in failed.stdout
