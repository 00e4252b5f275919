import dataclasses
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

from benchmark.core.errors import ConfigError
from benchmark.studies import report_data, study

ROOT = pathlib.Path(__file__).resolve().parents[2]
TINY_RUN = ["run.steps = 4", "run.batch_size = 8", "run.metric_points = 300",
            "run.metrics = ['mig']", "run.health_points = 32", "run.figures = False",
            "model.num_latents = 3"]


def _settings(out, models=None, seeds=(0,), variants=("original", "noisy")):
    return study.study_settings(
        name="tiny", output_dir=str(out), models=models or {"ae": "models/ae.gin"},
        datasets=["dsprites"], variants=list(variants), seeds=list(seeds),
        bindings=TINY_RUN, source="procedural")


def _cli(out, *extra):
    bindings = ["study.name = 'tiny'", f"study.output_dir = '{out}'",
                "study.models = {'ae': 'models/ae.gin'}", "study.variants = ['original', 'noisy']",
                "study.seeds = [0]", f"study.bindings = {TINY_RUN!r}",
                "study.source = 'procedural'", *extra]
    return [sys.executable, "-m", "benchmark.study",
            *[f"--gin_bindings={b}" for b in bindings]]


def _failing_gin(directory) -> str:
    """A model's gin file that parses (so the study starts it) but fails when its run loads
    the data: a factor class dSprites does not have."""
    path = directory / "broken.gin"
    path.write_text("include 'models/ae.gin'\ndata.fixed_factors = {'shape': 99}\n")
    return str(path)


def test_grid_expansion_and_validation(tmp_path):
    settings = study.study_settings(
        name="g", output_dir=str(tmp_path), models={"beta_vae": "papers/zietlow2021/"
                                                    "beta_vae_{dataset}.gin", "ae": "x.gin"},
        datasets=["dsprites", "shapes3d"], variants=["original", "modified@0.2"],
        artefacts={"dsprites": {"modified": "a"}, "shapes3d": {"modified": "b"}},
        seeds=[0, 1], line_search={"beta_vae": ["beta_vae.beta", [1, 8]]})
    specs = study.expand(settings)
    assert len(specs) == 2 * 2 * 2 * 2 + 2 * 2 * 2       # line-searched beta_vae + ae
    spec = next(s for s in specs if s.name == "beta_vae_shapes3d_modified@0.2_beta=8_seed1")
    assert spec.gin_files == ("papers/zietlow2021/beta_vae_shapes3d.gin",)
    assert "beta_vae.beta = 8" in spec.bindings and "data.eps = 0.2" in spec.bindings
    assert f"data.artefact = '{os.path.abspath('b')}'" in spec.bindings
    with pytest.raises(ValueError, match="names no modified artefact"):
        study.study_settings(name="g", output_dir="o", models={"ae": "a"},
                             variants=["modified"])
    with pytest.raises(ValueError, match="unknown variant"):
        study.study_settings(name="g", output_dir="o", models={"ae": "a"}, variants=["odd"])


def test_model_variants_train_a_model_on_a_subset_of_the_variants(tmp_path):
    common = dict(name="g", output_dir=str(tmp_path), seeds=[0, 1],
                  models={"beta_vae": "b.gin", "ae": "a.gin"},
                  variants=["original", "wave@0.3", "noisy@0.4"])
    settings = study.study_settings(**common, model_variants={"ae": ["original"]})
    names = {s.name for s in study.expand(settings)}
    assert len(names) == 3 * 2 + 1 * 2
    assert "ae_dsprites_original_seed1" in names and "ae_dsprites_wave@0.3_seed0" not in names
    assert settings.model_variants == {"ae": ["original"]}
    assert settings.record()["model_variants"] == {"ae": ["original"]}
    assert "model_variants" not in study.study_settings(**common).record()  # old: unchanged
    with pytest.raises(ValueError, match="subset of study.variants"):
        study.study_settings(**common, model_variants={"ae": ["wave@0.2"]})
    with pytest.raises(ValueError, match="not in study.models"):
        study.study_settings(**common, model_variants={"pcl": ["original"]})
    drop = {"id": "H1", "test": "drop", "model": "ae", "dataset": "dsprites",
            "variant": "wave"}
    with pytest.raises(ValueError, match="'ae' is not trained on"):
        study.study_settings(**common, model_variants={"ae": ["original"]},
                             hypotheses=[drop])
    study.study_settings(**common, hypotheses=[drop])


def test_cell_seeds_give_a_model_or_one_cell_fewer_seeds(tmp_path):
    common = dict(name="g", output_dir=str(tmp_path), seeds=[0, 1, 2, 3],
                  models={"beta_vae": "b.gin", "pcl": "p.gin"},
                  variants=["original", "modified_texture@1", "noisy@0.1"],
                  artefacts={"dsprites": {"modified_texture": "a"}},
                  model_variants={"pcl": ["original"]})
    settings = study.study_settings(**common, cell_seeds={"pcl": [0, 1],
                                                          "beta_vae/noisy@0.1": [2]})
    names = [s.name for s in study.expand(settings)]
    assert len(names) == 2 * 4 + 1 + 2
    assert "beta_vae_dsprites_noisy@0.1_seed2" in names
    assert "beta_vae_dsprites_noisy@0.1_seed0" not in names
    assert "pcl_dsprites_original_seed1" in names and "pcl_dsprites_original_seed2" not in names
    assert names.index("pcl_dsprites_original_seed1") < names.index(   # still seed-major
        "beta_vae_dsprites_original_seed2")
    assert "cell_seeds" not in study.study_settings(**common).record()  # old: unchanged
    for wrong, message in (({"pcl": [7]}, "subset of study.seeds"),
                           ({"pcl/noisy@0.1": [0]}, "found 'pcl/noisy@0.1'"),
                           ({"ae": [0]}, "found 'ae'"), ({"pcl": []}, "non-empty")):
        with pytest.raises(ValueError, match=message):
            study.study_settings(**common, cell_seeds=wrong)


def test_start_from_points_each_run_at_its_namesake_in_a_shorter_study(tmp_path):
    shorter = tmp_path / "pool_6k"
    (shorter / "runs" / "beta_vae_dsprites_original_seed0").mkdir(parents=True)
    common = dict(name="g", output_dir=str(tmp_path / "pool_12k"), seeds=[0, 1],
                  models={"beta_vae": "b.gin"})
    specs = {s.name: s for s in study.expand(study.study_settings(
        **common, start_from=str(shorter)))}
    source = shorter / "runs" / "beta_vae_dsprites_original_seed0"
    assert f"run.start_from = '{source}'" in specs["beta_vae_dsprites_original_seed0"].bindings
    assert not any("start_from" in b for b in specs["beta_vae_dsprites_original_seed1"].bindings)
    assert specs["beta_vae_dsprites_original_seed0"].bindings[-1] == "run.seed = 0"
    with pytest.raises(ValueError, match="study.start_from: expected a study directory"):
        study.study_settings(**common, start_from=str(tmp_path / "none"))


@pytest.mark.slow
def test_study_is_interrupted_resumes_and_skips_finished_runs(tmp_path):
    out = tmp_path / "study"
    process = subprocess.Popen(_cli(out), cwd=ROOT, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    deadline = time.time() + 300
    while time.time() < deadline and not list((out / "runs").glob("*/checkpoints")):
        time.sleep(0.5)
    os.killpg(process.pid, signal.SIGKILL)          # kill -9 the study and its runner
    process.wait()
    assert list((out / "runs").glob("*/checkpoints")), "the study never started a run"
    finished_before = {p.parent.name for p in (out / "runs").glob("*/results.json")}
    assert len(finished_before) < 2
    again = subprocess.run(_cli(out), cwd=ROOT, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert again.returncode == 0, again.stderr[-3000:]
    results = sorted(p.parent.name for p in (out / "runs").glob("*/results.json"))
    assert results == ["ae_dsprites_noisy_seed0", "ae_dsprites_original_seed0"]
    stamps = {p: p.stat().st_mtime_ns for p in (out / "runs").glob("*/results.json")}
    summary = study.execute(_settings(out))        # everything finished: nothing reruns
    assert summary["ran"] == [] and len(summary["finished"]) == 2
    assert stamps == {p: p.stat().st_mtime_ns for p in (out / "runs").glob("*/results.json")}
    noisy = json.loads((out / "runs" / "ae_dsprites_noisy_seed0" / "results.json").read_text())
    assert noisy["dataset"]["variant"] == "noisy" and noisy["dataset"]["eps"] == 0.1
    assert (out / "samples" / "dsprites_noisy.png").exists()
    assert json.loads((out / "samples" / "dsprites_noisy.change.json").read_text())["linf"] > 0
    rows = report_data.summary_rows(*report_data.group(report_data.load_runs(out)))
    assert {r["variant"] for r in rows} == {"original", "noisy"}


@pytest.mark.slow
def test_failed_runs_are_recorded_and_retried_on_request(tmp_path):
    out = tmp_path / "study"
    out.mkdir()
    # bookkeeping of an earlier grid in the same directory is merged, never overwritten
    earlier = {"older_run": {"exit_code": 1, "stderr_tail": "x", "time": "t"}}
    (out / "failed.json").write_text(json.dumps(earlier))
    (out / "study.json").write_text(json.dumps(
        {"settings": {"name": "older"}, "runs": [{"name": "older_run", "gin_files": [],
                                                   "bindings": []}]}))
    # a run that fails while it runs (no official file where the source asks for one)
    settings = dataclasses.replace(
        _settings(out, models={"broken": "models/ae.gin"}, variants=["original"]),
        source="file")
    first = study.execute(settings)
    assert first["failed"] == ["broken_dsprites_original_seed0"]
    failed = json.loads((out / "failed.json").read_text())
    assert "not found" in failed["broken_dsprites_original_seed0"]["stderr_tail"]
    assert failed["older_run"] == earlier["older_run"]
    recorded = json.loads((out / "study.json").read_text())
    assert [r["name"] for r in recorded["runs"]] == ["older_run",
                                                     "broken_dsprites_original_seed0"]
    assert recorded["settings"]["name"] == "tiny"
    assert recorded["previous_settings"] == [{"name": "older"}]
    second = study.execute(settings)
    assert second["ran"] == [] and second["skipped"] == ["broken_dsprites_original_seed0"]
    third = study.execute(settings, retry_failed=True)
    assert third["failed"] == ["broken_dsprites_original_seed0"]


def test_a_grid_that_cannot_be_configured_is_refused_before_any_run(tmp_path, capsys):
    """Issue 31 item 5: a missing gin file or a misspelt binding is the user's error, said
    once before any run starts (it used to fail every run of the grid, one by one)."""
    out = tmp_path / "study"
    for models, bindings, words in (({"broken": "models/no_such_model.gin"}, [],
                                     "no_such_model"),
                                    ({"ae": "models/ae.gin"}, ["run.stepz = 4"], "stepz")):
        settings = dataclasses.replace(
            _settings(out, models=models, variants=["original", "noisy"]),
            bindings=(*TINY_RUN, *bindings))
        with pytest.raises(ConfigError, match=rf"cannot be configured, so no run was "
                                              rf"started: .*{words}.*\(and 1 more"):
            study.execute(settings)
        assert not (out / "failed.json").exists() and not (out / "runs").exists()
    summary = study.execute(settings, dry_run=True)
    assert "bad config" in capsys.readouterr().out and len(summary["unconfigurable"]) == 2


@pytest.mark.identities_subprocess
def test_identities_computed_here_equal_the_commands(tmp_path):
    """The other in-process study tests get their runs' fingerprints from this process
    (tests/conftest.py); a user's study gets them from `python -m benchmark.identities`.
    Both give the same answer, an unconfigurable run's error included."""
    from benchmark.runs.identities import spec_identities

    settings = dataclasses.replace(
        _settings(tmp_path, models={"ae": "models/ae.gin", "broken": "models/no_such.gin"},
                  variants=["original", "noisy"]), bindings=TINY_RUN)
    specs = study.expand(settings)
    command = study.expected_identities(specs)
    here = spec_identities(study.identity_requests(specs))
    assert command == here and len(command) == 4
    assert sum("error" in v for v in command.values()) == 2
    assert len({v["fingerprint"] for v in command.values() if "fingerprint" in v}) == 2


def test_dry_run_lists_the_grid_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "study"
    summary = study.execute(_settings(out), dry_run=True)
    assert summary["ran"] == [] and summary["finished"] == []
    assert "to run    ae_dsprites_original_seed0" in capsys.readouterr().out
    assert not out.exists()


def test_grid_runs_seed_major():
    from benchmark.studies import study
    settings = study.study_settings(name="t", output_dir="o",
                                    models={"ae": "a_{dataset}.gin", "pcl": "p_{dataset}.gin"},
                                    variants=["original", "noisy"], seeds=[3, 1])
    names = [s.name for s in study.expand(settings)]
    assert names[:4] == ["ae_dsprites_original_seed3", "ae_dsprites_noisy_seed3",
                         "pcl_dsprites_original_seed3", "pcl_dsprites_noisy_seed3"]
    assert all(n.endswith("seed1") for n in names[4:]) and len(names) == 8


def test_second_study_on_a_directory_is_refused_naming_the_holder(tmp_path):
    from benchmark.core.lock import DirectoryLocked, directory_lock
    out = tmp_path / "study"
    with directory_lock(out, "the first study"):
        with pytest.raises(DirectoryLocked, match=rf"pid {os.getpid()} .*the first study"):
            study.execute(_settings(out))
    assert not (out / "study.json").exists()


def _published_copy(tmp_path, name="ae_dsprites_original_seed0"):
    """A published run directory (written before fingerprints) copied into a new study,
    with the published study's settings for that one run."""
    published = ROOT / "results" / "zietlow2021_cpu"
    settings = json.loads((published / "study.json").read_text())["settings"]
    out = tmp_path / "study"
    shutil.copytree(published / "runs" / name, out / "runs" / name)
    settings.update(output_dir=str(out), models={"ae": settings["models"]["ae"]},
                    variants=["original"], seeds=[0], line_search={})
    return out, settings


@pytest.mark.slow
def test_published_runs_count_as_finished_and_a_changed_study_is_refused(tmp_path, capsys):
    """Issue 19.4 / 17.1: a run counts as finished only with the configuration asked for;
    published runs (no fingerprint field) are identified by their gin_config."""
    from benchmark.runs import fingerprint
    out, settings = _published_copy(tmp_path)
    assert "fingerprint" not in json.loads(
        (out / "runs" / "ae_dsprites_original_seed0" / "results.json").read_text())
    summary = study.execute(study.study_settings(**settings), dry_run=True)
    assert summary["finished"] == ["ae_dsprites_original_seed0"] and not summary["changed"]
    assert "finished  ae_dsprites_original_seed0" in capsys.readouterr().out

    changed = dict(settings, bindings=[b.replace("run.steps = 2000", "run.steps = 4000")
                                       for b in settings["bindings"]])
    assert changed["bindings"] != settings["bindings"]
    summary = study.execute(study.study_settings(**changed), dry_run=True)
    assert summary["finished"] == [] and summary["changed"] == ["ae_dsprites_original_seed0"]
    with pytest.raises(fingerprint.ConfigMismatch,
                       match=r"(?s)run directories .*\(1; .*run\.steps: 2000 -> 4000"):
        study.execute(study.study_settings(**changed))
    assert not (out / "failed.json").exists()


def test_report_counts_a_copied_run_once(tmp_path, caplog):
    """Issue 19.6: a copied run directory is not another seed."""
    out, _ = _published_copy(tmp_path)
    shutil.copytree(out / "runs" / "ae_dsprites_original_seed0",
                    out / "runs" / "copy_of_ae_dsprites_original_seed0")
    runs = report_data.load_runs(out)
    assert len(runs) == 1 and runs[0]["run_dir"].endswith("/ae_dsprites_original_seed0")
    assert "is the same run as" in caplog.text


def test_progress_line_counts_runs_and_estimates_the_rest():
    assert study.progress_line(2, 8, 600.0) == "2/8 runs done, 10 min elapsed, about 30 min left"
    assert study.progress_line(8, 8, 2400.0) == "8/8 runs done, 40 min elapsed, all done"
    # 2 side by side, 25 min each: the first ends at 25 min with 9 left, ~4.5 pairs
    assert study.progress_line(1, 10, 1500.0, [1500.0], workers=2) == (
        "1/10 runs done, 25 min elapsed, about 112 min left")
    assert study.progress_line(9, 10, 7000.0, [1500.0] * 9, workers=2).endswith(
        "about 25 min left")                   # the last run has no partner


def test_eta_leaves_out_a_run_that_resumed(tmp_path, monkeypatch, caplog):
    """A run resumed from its checkpoint trains only its last steps: its time would make
    the ETA of a resumed study far too short (182 min for a study 9 h from its end)."""
    import logging as py_logging
    out = tmp_path / "s"
    settings = _settings(out, variants=["original", "noisy"], seeds=(0, 1))
    resumed = out / "runs" / "ae_dsprites_noisy_seed0" / "checkpoints"
    resumed.mkdir(parents=True)
    (resumed / "checkpoint").write_text("")
    times = {"ae_dsprites_noisy_seed0": 60.0}
    monkeypatch.setattr(study, "write_sample_grids", lambda *a: None)
    monkeypatch.setattr(study, "_timed_run", lambda command, cwd: (
        0, "", next((t for n, t in times.items() if n in " ".join(command)), 1200.0)))
    caplog.set_level(py_logging.INFO)
    study.execute(settings, workers=1)
    lines = [r.getMessage() for r in caplog.records if "runs done" in r.getMessage()]
    assert len(lines) == 4
    # the mocked runs end at once, so the order they are reported in is not fixed: the
    # resumed run may end first, and then no estimate is given
    for done, line in enumerate(lines[:3], 1):     # 20 min a fresh run, 1 worker
        if all(l.startswith("ae_dsprites_noisy_seed0 ") for l in lines[:done]):
            assert line.endswith("time left known when a fresh run ends"), line
        else:
            assert line.endswith(f"about {20 * (4 - done)} min left"), line


def test_eta_waits_for_a_fresh_run_when_only_resumed_runs_ended():
    # 1 resumed run of 1 min ended: 1 min a run would read a 9-run study as 9 min
    assert study.progress_line(1, 10, 60.0, [], resumed_done=1).endswith(
        "time left known when a fresh run ends")
    assert study.progress_line(2, 10, 600.0, [], resumed_done=1) == (
        "2/10 runs done, 10 min elapsed, about 40 min left")


def test_progress_bar_only_on_a_terminal():
    import io

    from benchmark.studies import study as study_lib

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    assert study_lib.progress_bar(3, io.StringIO()).disable
    shown = Terminal()
    bar = study_lib.progress_bar(3, shown)
    assert not bar.disable
    bar.update(1)
    bar.close()
    assert "1/3" in shown.getvalue() and "run" in shown.getvalue()


def test_sample_sheets_and_arm_sizes_of_a_reduced_study_are_of_its_reduction(
        tmp_path, monkeypatch):
    """write_sample_grids passes the study's data.fixed_factors, data.factor_strides and
    data.factor_ranges to the preview command, so
    an arm's size (X.change.json) is measured on the images the study trains on; a sheet
    whose arm size is missing is written again."""
    commands = []
    monkeypatch.setattr(study, "run_one", lambda command, cwd: (commands.append(command)
                                                                or (0, "")))
    settings = dataclasses.replace(
        _settings(tmp_path / "s", variants=["original", "wave@0.3"]),
        bindings=(*TINY_RUN, "data.fixed_factors = {'shape': 1, 'scale': 5}",
                  "data.factor_strides = {'posY': 2}", "data.factor_ranges = {'posX': (10, 21)}"))
    (tmp_path / "samples").mkdir()
    (tmp_path / "samples" / "dsprites_original.png").write_bytes(b"")
    (tmp_path / "samples" / "dsprites_wave@0.3.png").write_bytes(b"")
    study.write_sample_grids(settings, tmp_path / "samples")
    assert len(commands) == 1 and "--variant=wave" in commands[0]
    assert "--fixed_factors={'shape': 1, 'scale': 5}" in commands[0]
    assert "--factor_strides={'posY': 2}" in commands[0]
    assert "--factor_ranges={'posX': (10, 21)}" in commands[0]


def test_a_battery_study_keeps_each_runs_angles_as_it_finishes(tmp_path, monkeypatch):
    """The evaluation codes are not kept in git, so a study whose battery names a plane
    writes alignment.json after every finished run: the angles of runs trained in an
    earlier session survive in the published file, where their codes do not."""
    import numpy as np

    out = tmp_path / "s"
    settings = dataclasses.replace(
        _settings(out, variants=["original", "noisy"], seeds=(0, 1)),
        battery={"manipulated": "noisy", "controls": [], "plane": [0, 1]})
    angles = {"ae_dsprites_original_seed0": 10.0, "ae_dsprites_noisy_seed0": 30.0,
              "ae_dsprites_original_seed1": 5.0, "ae_dsprites_noisy_seed1": 40.0}

    def fake_run(command, cwd):
        run_dir = pathlib.Path(next(a.split("=", 1)[1] for a in command
                                    if a.startswith("--output_dir=")))
        theta = np.radians(angles[run_dir.name])
        rng = np.random.default_rng(0)
        factors = rng.integers(0, 32, size=(400, 2)).astype(float)
        rotation = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
        run_dir.mkdir(parents=True, exist_ok=True)
        np.savez(run_dir / "eval_codes.npz", factors=factors, codes=factors @ rotation)
        return 0, "", 1.0

    monkeypatch.setattr(study, "write_sample_grids", lambda *a: None)
    monkeypatch.setattr(study, "_timed_run", fake_run)
    study.execute(settings, workers=1)
    rows = {r["run"]: r for r in json.loads((out / "alignment.json").read_text())["runs"]}
    assert set(rows) == set(angles)
    for name, theta in angles.items():
        assert np.mean(rows[name]["misalignment_deg"]) == pytest.approx(min(theta, 90 - theta))
    # a later session (a fresh clone) lost the codes of seed 0: its rows stay
    for name in ("ae_dsprites_original_seed0", "ae_dsprites_noisy_seed0"):
        (out / "runs" / name / "eval_codes.npz").unlink()
    study.record_alignment(out, settings)
    rows = {r["run"]: r for r in json.loads((out / "alignment.json").read_text())["runs"]}
    assert set(rows) == set(angles)
    assert np.mean(rows["ae_dsprites_noisy_seed0"]["misalignment_deg"]) == pytest.approx(30.0)
    # a file of another plane is not overwritten and stops no run
    (out / "alignment.json").write_text(json.dumps({"columns": [0, 2], "runs": []}))
    study.record_alignment(out, settings)
    assert json.loads((out / "alignment.json").read_text())["columns"] == [0, 2]
    # no plane, no file
    other = tmp_path / "t"
    monkeypatch.setattr(study, "_timed_run", fake_run)
    study.execute(_settings(other, variants=["original", "noisy"], seeds=(0,)), workers=1)
    assert not (other / "alignment.json").exists()
