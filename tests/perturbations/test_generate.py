import dataclasses
import functools
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from benchmark import data as data_lib
from perturbations import readapt
from perturbations.artefact import load_variant

#: the data layer composed with the artefact loader, as the runner does
load_data = functools.partial(data_lib.load_data, artefact_loader=load_variant)

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _generate(tmp_path, *extra, overwrite=False, flags=()):
    reference = ["run.steps = 4", "run.batch_size = 8", "run.metric_points = 300",
                 "run.metrics = ['mig']", "run.health_points = 32", "run.figures = False"]
    bindings = [f"generation.reference_bindings = {reference!r}",
                "generation.source = 'procedural'", "generation.reference_seeds = [0, 1]",
                "generation.steps = 3", "generation.batch_size = 4",
                "generation.latent_samples = 2", "generation.checkpoint_every = 2",
                "generation.evidence_points = 300", "generation.eps_sweep = [0.3]",
                "generation.gate_steps = 2",
                f"generation.work_dir = '{tmp_path / 'work'}'",
                f"generation.output_dir = '{tmp_path / 'art'}'", *extra]
    args = [sys.executable, "-m", "perturbations.generate",
            "--gin_file=perturbations/dsprites.gin",
            *[f"--gin_bindings={b}" for b in bindings], *(["--overwrite"] if overwrite else []),
            *flags]
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


#: the reduction the tiny artefact is generated on (the ellipse's posX x posY)
FIXED = {"shape": 1, "scale": 5, "orientation": 0}


@pytest.mark.slow
def test_tiny_generation_end_to_end(tmp_path):
    """One tiny generation on the reduced dataset with an eps sweep (BASE/work: references
    and game; BASE/art, BASE/art_eps0.3), then the checks below in this order: the first
    resumes its game, the second strips its records. One generation serves both because
    it is the slowest step of the slow tests."""
    generated = tmp_path / "generated"
    result = _generate(generated, f"generation.fixed_factors = {FIXED!r}")
    assert result.returncode == 0, result.stderr[-3000:]
    _tiny_generation_makes_a_loadable_modified_variant(generated, tmp_path / "variant")
    _generation_on_a_reduced_dataset_and_its_references(generated, tmp_path / "references")


def _tiny_generation_makes_a_loadable_modified_variant(generated, tmp_path):
    tmp_path.mkdir()
    art = generated / "art"
    metadata = json.loads((art / "metadata.json").read_text())
    assert metadata["kind"] == "manipulation" and metadata["eps"] == 0.1
    ent = metadata["references"]["entangled"][0]
    dis = metadata["references"]["disentangled"][0]
    assert ent["mig"] <= dis["mig"] and ent["run_dir"] != dis["run_dir"]
    assert sorted(ent["dims_by_posterior_variance"]) == list(range(5))
    assert metadata["training"]["steps"] == 3
    # what made the artefact travels with it: the game's settings (optimisers included)
    # and where the neuron started and ended
    training = metadata["training"]
    assert training["game_settings"]["optimizers"][0]["learning_rate"] > 0
    assert len(training["neuron_initial_weights"]) == len(training["neuron_final_weights"])
    assert 0.0 <= training["neuron_turn_deg"] <= 180.0
    evidence = json.loads((art / "evidence.json").read_text())
    assert evidence["pixel_statistics"]["max_abs_change"] <= 0.1 + 1e-6
    assert set(evidence["reference_mig"]) == {f"entangled:{ent['run_dir']}",
                                              f"disentangled:{dis['run_dir']}"}
    assert (art / "figure.png").read_bytes()[:4] == b"\x89PNG"
    # The re-adaptation gate ran on it (2 updates an arm) and is recorded.
    assert evidence["readaptation"]["evaluations"] == [0, 1, 2]
    assert evidence["readaptation_gate_passed"] == evidence["readaptation"]["gate"]["passes"]
    # Diagnostics of m(w) are published with every artefact, the swept ones included.
    diagnostics = evidence["diagnostics"]
    assert diagnostics["eps"] == 0.1 and diagnostics["dataset"] == "dsprites"
    assert set(diagnostics["factor_sensitivity"]["absolute"]) == set(metadata["factor_names"])
    assert evidence["below_minimum_effect"] == diagnostics["minimum_effect"]["below_minimum"]
    swept_evidence = json.loads((generated / "art_eps0.3" / "evidence.json").read_text())
    assert swept_evidence["diagnostics"]["eps"] == 0.3
    assert (swept_evidence["diagnostics"]["change"]["modified_mean_abs_change"]
            > diagnostics["change"]["modified_mean_abs_change"])
    assert (generated / "art_eps0.3" / "figure.png").read_bytes()[:4] == b"\x89PNG"
    # each swept artefact carries the references too, as its metadata records them
    swept_refs = json.loads((generated / "art_eps0.3" / "metadata.json").read_text())
    assert swept_refs["references"]["entangled"][0]["sha256"] == ent["sha256"]
    assert (generated / "art_eps0.3" / "references" / "entangled0" / "published.json"
            ).is_file()
    modified = load_data("dsprites", "modified", "procedural", artefact=str(art),
                         fixed_factors=FIXED)
    original = load_data("dsprites", "original", "procedural", fixed_factors=FIXED)
    factors = original.sample_factors(8, np.random.default_rng(0))
    change = modified.observations_from_factors(factors) - original.observations_from_factors(
        factors)
    assert 0 < np.abs(change).max() <= 0.1 + 1e-6
    swept = load_data("dsprites", "modified", "procedural", artefact=f"{art}_eps0.3",
                      fixed_factors=FIXED)
    assert swept.eps == 0.3
    # A model trains on a modified variant through the runner:
    # tests/benchmark_core/test_materialized_run.py (per batch, memory, disk) and
    # test_pipeline.py (a generated artefact), both `python -m benchmark.run`.
    # Starting it again refuses to replace the artefact (issue 17.8), before any work ...
    weights = (art / "manipulation.weights.h5").read_bytes()
    refused = _generate(generated, f"generation.fixed_factors = {FIXED!r}")
    assert refused.returncode == 2 and "--overwrite" in refused.stderr
    assert (art / "manipulation.weights.h5").read_bytes() == weights
    # ... and with --overwrite it resumes: references and m are finished, nothing retrains
    # (without the gate and the sweep this time, which are not what is checked here).
    again = _generate(generated, f"generation.fixed_factors = {FIXED!r}",
                      "generation.gate_steps = 0", "generation.eps_sweep = []", overwrite=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((art / "metadata.json").read_text())["training"]["steps"] == 3
    # Another game in the same work_dir is refused before it touches the checkpoints.
    checkpoints = sorted((generated / "work" / "manipulation" / "checkpoints").iterdir())
    other = _generate(generated, f"generation.fixed_factors = {FIXED!r}",
                      "generation.mean_penalty = 1.0", overwrite=True)
    assert other.returncode == 2 and "mean_penalty: recorded 0.0, now 1.0" in other.stderr
    assert sorted((generated / "work" / "manipulation" / "checkpoints").iterdir()) == checkpoints


def test_generation_rejects_a_misspelt_setting(tmp_path):
    result = _generate(tmp_path, "generation.stepz = 3")
    assert result.returncode == 2 and "stepz" in result.stderr
    assert not (tmp_path / "work").exists()


def test_resume_replaces_only_what_its_own_game_made(tmp_path):
    (tmp_path / "art").mkdir()
    (tmp_path / "art" / "metadata.json").write_text("{}")
    result = _generate(tmp_path, flags=["--resume"])
    assert result.returncode == 2 and "did not make" in result.stderr
    assert (tmp_path / "art" / "metadata.json").read_text() == "{}"
    assert not (tmp_path / "work").exists()


def _fake_run(study, name, model, variant="original", finished=True):
    run_dir = study / "runs" / name
    run_dir.mkdir(parents=True)
    if finished:
        (run_dir / "results.json").write_text(json.dumps(
            {"model": model, "dataset": {"name": "dsprites", "variant": variant}}))
    return str(run_dir)


def test_a_reference_pool_is_the_finished_runs_of_a_study(tmp_path):
    from perturbations import references
    from perturbations.generate import gather_references, generation_settings, pool_runs
    study = tmp_path / "pool"
    first = _fake_run(study, "beta_vae_dsprites_original_seed0", "beta_vae")
    _fake_run(study, "beta_vae_dsprites_noisy_seed0", "beta_vae", "noisy")
    _fake_run(study, "ae_dsprites_original_seed0", "ae")
    assert pool_runs(study, "beta_vae", "dsprites") == ([first], 1)
    _fake_run(study, "beta_vae_dsprites_original_seed1", "beta_vae", finished=False)
    assert pool_runs(study, "beta_vae", "dsprites") == ([first], 2)
    settings = generation_settings(reference_study=str(study), reference_seeds=())
    with pytest.raises(references.ReferenceError, match="1 of its 2 beta_vae runs on "
                       "original dsprites are not finished"):
        gather_references(settings)
    with pytest.raises(references.ReferenceError, match="expected a study directory"):
        pool_runs(tmp_path / "nowhere", "beta_vae", "dsprites")
    # a study still training has not made every run's directory yet: its study.json
    # says how many runs the pool will hold (5 seeds, 3 for the AE's cell)
    (study / "study.json").write_text(json.dumps({"settings": {
        "models": {"beta_vae": "b.gin", "ae": "a.gin"}, "datasets": ["dsprites"],
        "variants": ["original", "noisy"], "seeds": [0, 1, 2, 3, 4],
        "cell_seeds": {"ae": [0, 1, 2]}}}))
    assert pool_runs(study, "beta_vae", "dsprites") == ([first], 5)
    assert pool_runs(study, "ae", "dsprites")[1] == 3
    # only the asked dataset's runs count; a line-searched model has a run per value
    (study / "study.json").write_text(json.dumps({"settings": {
        "models": {"beta_vae": "b.gin"}, "datasets": ["dsprites", "shapes3d"],
        "variants": ["original"], "seeds": [0, 1],
        "line_search": {"beta_vae": ["beta_vae.beta", [1, 4, 16]]}}}))
    assert pool_runs(study, "beta_vae", "dsprites")[1] == 6
    assert pool_runs(study, "beta_vae", "mpi3d") == ([], 0)      # a dataset it lacks


def _generation_on_a_reduced_dataset_and_its_references(generated, tmp_path):
    """generation.fixed_factors: the references train on the reduction, the artefact
    records it and loads only with it (issue 14 item 5 at CPU scale); references of
    another reduction are refused before the game starts."""
    tmp_path.mkdir()
    art = generated / "art"
    metadata = json.loads((art / "metadata.json").read_text())
    assert metadata["fixed_factors"] == {"shape": 1, "scale": 5, "orientation": 0}
    assert metadata["factor_names"] == ["posX", "posY"] and metadata["factor_sizes"] == [32, 32]
    reference = json.loads((generated / "work" / "references" / "seed0" / "results.json"
                            ).read_text())
    assert reference["dataset"]["fixed_factors"] == metadata["fixed_factors"]
    evidence = json.loads((art / "evidence.json").read_text())
    assert set(evidence["diagnostics"]["factor_sensitivity"]["absolute"]) == {"posX", "posY"}
    for variant in ("modified", "modified_texture"):
        data = load_data("dsprites", variant, "procedural", artefact=str(art),
                         fixed_factors={"shape": 1, "scale": 5, "orientation": 0})
        assert data.describe()["variant"] == variant
    # The references it was made from are published inside it (issue 28 step 1): the
    # re-adaptation below runs with the reference runs moved away, as in a clean clone.
    for side in ("entangled", "disentangled"):
        entry = metadata["references"][side][0]
        assert entry["published"] == f"references/{side}0"
        published = json.loads((art / entry["published"] / "published.json").read_text())
        assert published["sha256"] == entry["sha256"] and published["step"] == 4
        assert sorted(entry["sha256"]) == sorted(
            ["results.json", "arrays.npz", "encoder.weights.h5", "decoder.weights.h5"])
    runs = generated / "work" / "references"
    runs.rename(tmp_path / "moved_away")
    # The re-adaptation gate runs on it and publishes beside the diagnostics.
    readapted = subprocess.run(
        [sys.executable, "-m", "perturbations.readapt", str(art), "--steps=3",
         "--eval_every=2", "--eval_images=8", "--batch_size=4", "--publish"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert readapted.returncode == 0, readapted.stderr[-3000:]
    assert "gate: " in readapted.stdout
    evidence = json.loads((art / "evidence.json").read_text())
    assert "diagnostics" in evidence and evidence["readaptation"]["evaluations"] == [0, 2, 3]
    arms = evidence["readaptation"]["arms"]
    assert set(arms) == {"original", "modified", "modified_texture"}
    assert all(len(a["gap"]) == 3 for a in arms.values())
    assert isinstance(evidence["readaptation"]["gate"]["passes"], bool)
    assert (art / "readaptation.png").read_bytes()[:4] == b"\x89PNG"
    # the naive move as an artefact, from the published references alone; a run loads
    # it as data.variant 'naive'
    naive_dir = tmp_path / "naive"
    made = subprocess.run(
        [sys.executable, "-m", "perturbations.naive_artefact", str(art), f"--out={naive_dir}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert made.returncode == 0, made.stderr[-3000:]
    naive_metadata = json.loads((naive_dir / "metadata.json").read_text())
    assert naive_metadata["kind"] == "naive" and naive_metadata["made_from"] == str(art)
    assert [r["run_dir"] for r in naive_metadata["references"]["entangled"]] == [
        str(art / "references" / "entangled0")]
    naive = load_data(variant="naive", artefact=str(naive_dir), source="procedural",
                      fixed_factors={"shape": 1, "scale": 5, "orientation": 0})
    from benchmark.data.change import arm_change
    plain = load_data(source="procedural",
                      fixed_factors={"shape": 1, "scale": 5, "orientation": 0})
    assert arm_change(plain, naive)["energy_per_image"] == pytest.approx(
        naive_metadata["energy_per_image_at_eps_1"], rel=1e-4)
    # its control with the references' roles swapped: the other side's half of the move
    swapped_dir = tmp_path / "naive_swapped"
    from perturbations.naive_artefact import write_naive_artefact   # the command's work
    write_naive_artefact(art, swapped_dir, towards="disentangled")
    swapped_metadata = json.loads((swapped_dir / "metadata.json").read_text())
    assert swapped_metadata["towards"] == "disentangled"
    assert swapped_metadata["delta"].startswith("clip(x + (r_dis - r_ent)")
    swapped = load_data(variant="naive_swapped", artefact=str(swapped_dir),
                        source="procedural",
                        fixed_factors={"shape": 1, "scale": 5, "orientation": 0})
    grid = plain.factors_of(np.arange(plain.num_images))
    moved, moved_back = (naive.delta(grid), swapped.delta(grid))
    # a binary pixel moves one way only: where one move is nonzero the other is zero or
    # of the opposite sign, never the same one
    assert not np.any((moved * moved_back) > 0) and np.abs(moved_back).sum() > 0
    assert arm_change(plain, swapped)["energy_per_image"] == pytest.approx(
        swapped_metadata["energy_per_image_at_eps_1"], rel=1e-4)
    # issue 28 step 4's arms: the naive move, noise and the wave, each matched in energy
    matched = subprocess.run(
        [sys.executable, "-m", "perturbations.readapt", str(art), "--steps=2",
         "--eval_every=2", "--eval_images=8", "--batch_size=4",
         "--arms=original,modified,modified@0.05,naive@matched,modified@matched,"
         "noisy@matched,wave@matched,wave_entangled@matched", "--match_to=modified@0.05",
         f"--out={tmp_path / 'matched.json'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert matched.returncode == 0, matched.stderr[-3000:]
    found = json.loads((tmp_path / "matched.json").read_text())
    energy = found["arm_change"]["modified@0.05"]["energy_per_image"]      # --match_to
    assert set(found["arm_eps"]) == {"naive@matched", "modified@matched", "noisy@matched",
                                     "wave@matched", "wave_entangled@matched"}
    assert found["arm_eps"]["modified@matched"] == pytest.approx(0.05, rel=1e-2)
    assert 0.0 <= found["wave_entangled_direction_deg"] < 180.0
    assert found["references_published_from"] == {"entangled": ["generation"],
                                                  "disentangled": ["generation"]}
    for arm in found["arm_eps"]:
        assert found["arm_change"][arm]["energy_per_image"] == pytest.approx(energy, rel=1e-2)
        assert 0 < found["arm_change"][arm]["linf"] <= 1.0
    # an interrupted --seeds run resumes: the arm it had finished is kept, not run again
    kept = {"entangled": [1.0, 1.0], "disentangled": [2.0, 2.0], "gap": [-1.0, -1.0],
            "seconds": 0.0}
    settings = {"artefact": str(art), "steps": 1, "batch_size": 2, "eval_every": 1,
                "eval_images": 4, "source": None, "arms": ["original", "modified"],
                "match_to": "modified", "method": readapt.METHOD}
    (tmp_path / "seeds.json.partial.json").write_text(json.dumps(readapt.partial_record(
        settings, {}, {"seed": 0, "arms": {"original": kept}})))
    resumed = subprocess.run(
        [sys.executable, "-m", "perturbations.readapt", str(art), "--steps=1",
         "--eval_every=1", "--eval_images=4", "--batch_size=2", "--seeds=0,1",
         "--arms=original,modified", f"--out={tmp_path / 'seeds.json'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    seeds = json.loads((tmp_path / "seeds.json").read_text())["runs"]
    assert seeds["0"]["arms"]["original"] == kept
    assert seeds["1"]["arms"]["original"] != kept and len(seeds["0"]["arms"]["modified"][
        "gap"]) == 2
    (tmp_path / "moved_away").rename(runs)
    # An artefact made before artefacts carried references: the command retrains each
    # reference from its recorded config and seed and publishes it only if it repeats the
    # recorded run (the same MIG).
    bare = json.loads((art / "metadata.json").read_text())
    for side in ("entangled", "disentangled"):
        for key in ("published", "sha256"):
            del bare["references"][side][0][key]
    (art / "metadata.json").write_text(json.dumps(bare))
    shutil.rmtree(art / "references")
    for seed in (0, 1):
        shutil.rmtree(runs / f"seed{seed}" / "checkpoints")
    republished = subprocess.run(
        [sys.executable, "-m", "perturbations.publish_references", str(art),
         f"--work_dir={tmp_path / 'republish'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert republished.returncode == 0, republished.stderr[-3000:]
    assert republished.stdout.count("(retrained, MIG recorded") == 2
    entry = json.loads((art / "metadata.json").read_text())["references"]["entangled"][0]
    assert entry["published_from"] == "retrained" and entry["retrained_mig"] == entry["mig"]
    assert (art / "references" / "entangled0" / "published.json").is_file()
    # a published file that was changed is refused before anything loads it
    weights = art / "references" / "entangled0" / "decoder.weights.h5"
    flipped = bytearray(weights.read_bytes())
    flipped[-1] ^= 0xFF
    weights.write_bytes(bytes(flipped))
    # (the command's one-line refusals: tests/perturbations/test_readapt.py)
    from perturbations.references import ReferenceError as RefError
    with pytest.raises(RefError, match="decoder.weights.h5 has SHA-256"):
        readapt.readaptation(art, steps=1)
    refs = [str(runs / f"seed{s}") for s in (0, 1)]
    # A game whose chosen references kept no checkpoints (a pool in a clone) retrains them
    # from their recorded config and seed and uses them only because they repeat the run.
    shutil.rmtree(tmp_path / "republish")
    fresh = [f"generation.fixed_factors = {FIXED!r}", f"generation.reference_runs = {refs!r}",
             "generation.reference_seeds = []", "generation.eps_sweep = []",
             "generation.gate_steps = 0"]
    planned = _generate(tmp_path / "fresh", *fresh, flags=("--dry_run",))
    assert planned.returncode == 0, planned.stderr[-2000:]
    assert planned.stdout.count("no checkpoints: retrained first") == 2
    regenerated = _generate(tmp_path / "fresh", *fresh)
    assert regenerated.returncode == 0, regenerated.stderr[-3000:]
    again = json.loads((tmp_path / "fresh" / "art" / "metadata.json").read_text())
    for side in ("entangled", "disentangled"):
        entry = again["references"][side][0]
        assert entry["run_dir"] in refs and entry["published_from"] == "retrained"
        assert entry["retrained_mig"] == entry["mig"]
    assert not any((runs / f"seed{s}" / "checkpoints").exists() for s in (0, 1))
    # A second game on the same runs takes the first artefact's published copies (SHA-256
    # and MIG checked) and retrains nothing.
    second = _generate(tmp_path / "second", *fresh,
                       f"generation.reference_artefacts = ['{tmp_path / 'fresh' / 'art'}']")
    assert second.returncode == 0, second.stderr[-3000:]
    assert not (tmp_path / "second" / "work" / "retrained_references").exists()
    copied = json.loads((tmp_path / "second" / "art" / "metadata.json").read_text())
    for side in ("entangled", "disentangled"):
        entry = copied["references"][side][0]
        assert entry["published_from"] == "artefact"
        assert entry["copy"] == str(tmp_path / "fresh" / "art" / "references" / f"{side}0")
        assert entry["sha256"] == again["references"][side][0]["sha256"]
    # references of another reduction: refused before the game (the command's refusals
    # are one line: test_generation_rejects_a_misspelt_setting, ..._its_own_game_made)
    from perturbations.generate import generate, generation_settings
    other = generation_settings(
        source="procedural", fixed_factors={"shape": 0, "scale": 5, "orientation": 0},
        reference_runs=refs, reference_seeds=(), work_dir=str(tmp_path / "other" / "work"),
        output_dir=str(tmp_path / "other" / "art"))
    with pytest.raises(RefError, match="expected a run on original dsprites with fixed "
                                       "factors"):
        generate(other)
    assert not (tmp_path / "other" / "art").exists()


def test_initial_manipulation_depends_on_the_seed_only():
    """m's initial weights come from generation.seed (before, two generations with the
    same settings logged the one neuron's weight norm as 1.394 and 1.258 after 10 and 25
    updates at lr 1e-4, which can move it by at most 0.003)."""
    from benchmark.data import get_dataset
    from perturbations.generate import generation_settings, initial_manipulation
    data = get_dataset("dsprites", "procedural")

    def weights(seed):
        network = initial_manipulation(data, generation_settings(seed=seed))
        return network.get_layer("single_neuron").get_weights()[0]

    first, again, other = weights(0), weights(0), weights(1)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_the_neurons_initial_direction_is_a_setting_checked_before_any_training():
    from perturbations.generate import (generation_data, generation_settings,
                                        initial_manipulation)
    ellipse = {"shape": 1, "scale": 5, "orientation": 0}
    settings = generation_settings(source="procedural", fixed_factors=ellipse,
                                   neuron_direction="diagonal")
    data = generation_data(settings)
    kernel = initial_manipulation(data, settings).get_layer("single_neuron").get_weights()[0]
    random = initial_manipulation(data, generation_settings(
        source="procedural", fixed_factors=ellipse)).get_layer("single_neuron").get_weights()[0]
    assert kernel[0, 0] == pytest.approx(kernel[1, 0])
    assert np.linalg.norm(kernel) == pytest.approx(np.linalg.norm(random), rel=1e-6)
    for bad in ("random", [0, 0], ["a", 1]):
        with pytest.raises(ValueError, match="neuron_direction must be"):
            generation_settings(neuron_direction=bad)
    with pytest.raises(ValueError, match="expected 2 numbers"):
        generation_data(generation_settings(source="procedural", fixed_factors=ellipse,
                                            neuron_direction=[1.0, 0.0, 0.0]))


def test_an_unknown_fixed_factor_is_refused_by_the_data_check():
    """generation_data, which main calls before it trains anything or makes a directory,
    refuses it (the command's one-line path for a bad setting:
    test_generation_rejects_a_misspelt_setting)."""
    from perturbations.generate import generation_data, generation_settings
    with pytest.raises(ValueError, match="unknown factor 'colour'"):
        generation_data(generation_settings(source="procedural", fixed_factors={"colour": 0}))


def test_a_work_dir_records_its_game_and_refuses_another(tmp_path):
    from benchmark.core.errors import UserError
    from models.optimizers import manipulation_adam
    from perturbations.generate import (check_game_settings, generation_settings,
                                        record_game_settings)

    settings = generation_settings(mean_penalty=4096.0, reference_runs=("a", "b"))
    wanted = check_game_settings(tmp_path, settings, [manipulation_adam(1e-3)] * 2)
    # issue 30 item 3: nothing is recorded until the game starts (a generation that
    # failed before it used to leave a record that refused the corrected command)
    assert not (tmp_path / "game_settings.json").exists()
    record_game_settings(tmp_path, wanted)
    recorded = json.loads((tmp_path / "game_settings.json").read_text())
    assert recorded["mean_penalty"] == 4096.0 and recorded["reference_runs"] == ["a", "b"]
    # the same game (and more updates of it) resumes
    check_game_settings(tmp_path, dataclasses.replace(settings, steps=99999),
                        [manipulation_adam(1e-3)] * 2)
    for changed, optimizer, named in (
            (dataclasses.replace(settings, unit_variance_init=True), 1e-3,
             "unit_variance_init"),
            (settings, 1e-4, "optimizers")):
        with pytest.raises(UserError, match=f"{named}: recorded .*set generation.work_dir"):
            check_game_settings(tmp_path, changed, [manipulation_adam(optimizer)] * 2)
    assert json.loads((tmp_path / "game_settings.json").read_text()) == recorded
    # the reference choice's rules, added later, are recorded only when set: a game recorded
    # before them resumes, and one that sets them is told apart
    assert "reference_study" not in recorded and "reference_min_mig_gap" not in recorded
    with pytest.raises(UserError, match="reference_min_mig_gap: recorded None, now 0.1"):
        check_game_settings(tmp_path, dataclasses.replace(settings, reference_min_mig_gap=0.1),
                            [manipulation_adam(1e-3)] * 2)


def test_the_neurons_turn_is_the_angle_between_its_weight_vectors():
    from perturbations.generate import neuron_record

    record = neuron_record([1.0, 1.0, 1.0], [1.0, 1.0, 1.0 + 1e-9])
    assert record["neuron_turn_deg"] == pytest.approx(0.0, abs=1e-3)
    assert neuron_record([1.0, 0.0], [0.0, 2.0])["neuron_turn_deg"] == pytest.approx(90.0)
    assert neuron_record(None, [1.0]) == {}
