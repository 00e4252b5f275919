"""Several runs in one process (benchmark/runs/worker.py, `study --runs_per_process`): each run
gives the same numbers, codes and arrays as the same run alone in its own process."""

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.cli import ROOT, environment, python_m

TINY = ["run.steps = 6", "run.batch_size = 8", "run.metric_points = 300",
        "run.metrics = ['mig', 'dci']", "mig.num_train = 300", "dci.num_train = 200",
        "dci.num_test = 100", "run.health_points = 32", "run.checkpoint_every = 3",
        "run.figures = False", "model.num_latents = 3", "data.source = 'procedural'"]
SPECS = [("beta_vae_original", ["models/beta_vae.gin", "datasets/dsprites.gin"],
          ["run.seed = 0"]),
         ("ae_noisy", ["models/ae.gin", "datasets/dsprites.gin"],
          ["run.seed = 1", "data.variant = 'noisy'"]),
         ("beta_vae_seed2", ["models/beta_vae.gin", "datasets/dsprites.gin"],
          ["run.seed = 2"])]


def _worker(specs, out):
    payload = [{"name": name, "gin_files": files, "bindings": [*TINY, *extra],
                "output_dir": str(out / name)} for name, files, extra in specs]
    return subprocess.run([sys.executable, "-m", "benchmark.worker"], cwd=ROOT,
                          input=json.dumps(payload), env=environment(), capture_output=True,
                          text=True, timeout=900)


def _same(a, b):
    first = json.loads((a / "results.json").read_text())
    second = json.loads((b / "results.json").read_text())
    assert first["scalars"] == second["scalars"]
    assert first["fingerprint"] == second["fingerprint"]
    for name in ("arrays.npz", "eval_codes.npz"):
        with np.load(a / name) as x, np.load(b / name) as y:
            assert sorted(x.files) == sorted(y.files)
            for key in x.files:
                np.testing.assert_array_equal(x[key], y[key], err_msg=f"{name} {key}")


@pytest.mark.slow
def test_runs_in_one_worker_equal_each_run_alone(tmp_path):
    together = _worker(SPECS, tmp_path / "together")
    assert together.returncode == 0, together.stderr[-3000:]
    lines = [json.loads(line) for line in together.stdout.splitlines() if line.startswith("{")]
    assert [(r["name"], r["exit_code"]) for r in lines] == [(n, 0) for n, _, _ in SPECS]
    for name, files, extra in SPECS:
        alone = python_m("benchmark.run", *[f"--gin_file={f}" for f in files],
                         *[f"--gin_bindings={b}" for b in [*TINY, *extra]],
                         f"--output_dir={tmp_path / 'alone' / name}")
        assert alone.returncode == 0, alone.stderr[-3000:]
        _same(tmp_path / "alone" / name, tmp_path / "together" / name)
    timings = json.loads((tmp_path / "together" / SPECS[2][0] / "results.json").read_text())[
        "timings"]
    assert timings["setup_seconds"] < lines[2]["seconds"]      # counted from its own start


@pytest.mark.slow
def test_a_failing_run_does_not_stop_the_next(tmp_path):
    specs = [("bad", ["models/beta_vae.gin", "datasets/dsprites.gin"],
              ["model.method = 'beta_vea'"]),
             ("good", ["models/beta_vae.gin", "datasets/dsprites.gin"], ["run.seed = 0"])]
    result = _worker(specs, tmp_path)
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert result.returncode == 0, result.stderr[-3000:]
    assert lines[0]["exit_code"] == 2 and "unknown model.method" in lines[0]["stderr_tail"]
    assert lines[1]["exit_code"] == 0 and (tmp_path / "good" / "results.json").exists()
    assert not (tmp_path / "bad").exists()


def test_the_worker_refuses_malformed_input():
    result = subprocess.run([sys.executable, "-m", "benchmark.worker"], cwd=ROOT,
                            input='[{"name": 3}]', env=environment(), capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 2 and result.stderr.strip().startswith("error: expected runs")


@pytest.mark.slow
def test_a_study_with_runs_per_process_runs_the_default_studys_runs(tmp_path):
    """`python -m benchmark.study --runs_per_process=3`: 4 runs in 2 workers (3 + 1), each
    run the configuration a process-per-run study asks for (its fingerprint, as
    `run_states` checks it), every run recorded. That a run in a worker gives the same
    numbers as the same run alone is test_runs_in_one_worker_equal_each_run_alone."""
    from benchmark.studies import study as study_lib
    out = tmp_path / "pooled"
    bindings = ["study.name = 'w'", f"study.output_dir = '{out}'",
                "study.models = {'beta_vae': 'models/beta_vae.gin', 'ae': 'models/ae.gin'}",
                "study.variants = ['original', 'noisy']", "study.seeds = [0]",
                f"study.bindings = {TINY!r}", "study.source = 'procedural'"]
    pooled = python_m("benchmark.study", *[f"--gin_bindings={b}" for b in bindings],
                      "--runs_per_process=3")
    assert pooled.returncode == 0, pooled.stderr[-3000:]
    assert "4 finished, 4 ran now, 0 failed" in pooled.stdout
    specs = study_lib.expand(json.loads((out / "study.json").read_text())["settings"])
    finished, changed, unconfigurable = study_lib.run_states(out, specs)
    assert finished == {s.name for s in specs} and len(specs) == 4
    assert not changed and not unconfigurable
