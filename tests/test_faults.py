"""Issue 31: the faults a fault-injection probe of the suite found, each reproduced as a user
meets it (the commands run as `python -m ...` subprocesses) and shown fixed.

D1 identity by content · D2 --overwrite removes only the suite's files · D3 the Ray backend
from the command line · D4 the audit refuses foreign imports in a reference study ·
D5/D6 bad settings are one line and exit 2 before any work · D7 a full or read-only disk is
one line · D8 an interrupted export's temporary file goes · D9 the same numbers whatever
CPUs the process may use · a run locked before its data loads, a busy run not "failed".
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from tests.cli import ROOT, environment, python_m

TINY = ["run.steps = 4", "run.batch_size = 8", "run.metric_points = 300",
        "run.metrics = ['mig']", "mig.num_train = 300", "run.health_points = 32",
        "run.checkpoint_every = 2", "run.figures = False", "model.num_latents = 3",
        "data.source = 'procedural'"]
BETA_VAE = ["--gin_file=models/beta_vae.gin", "--gin_file=datasets/dsprites.gin"]


_env = environment


def _command(module, *args, cwd=ROOT, timeout=600, **env):
    return python_m(module, *args, cwd=cwd, timeout=timeout, **env)


def _run(out, *bindings, overwrite=False, **kwargs):
    args = [*BETA_VAE, *[f"--gin_bindings={b}" for b in (*TINY, *bindings)],
            f"--output_dir={out}"]
    return _command("benchmark.run", *args, *(["--overwrite"] if overwrite else []), **kwargs)


def _one_line_error(result, *words):
    """A user error: exit 2, one line `error: ...` on stderr, no traceback."""
    lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert lines[-1].startswith("error: "), result.stderr[-3000:]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr[-3000:]
    for word in words:
        assert word in lines[-1], lines[-1]
    return lines[-1]


def _noise_artefact(directory, seed):
    result = _command("perturbations.noise", "--dataset=dsprites", "--eps=0.1",
                      f"--seed={seed}", f"--out={directory}")
    assert result.returncode == 0, result.stderr[-2000:]
    return directory


@pytest.mark.slow
def test_d1_another_artefact_under_the_same_path_is_another_configuration(tmp_path):
    artefact = _noise_artefact(tmp_path / "artefact", seed=1)
    # run.seed bound as a study binds it, so that the run below is the study's own run
    noisy = ["data.variant = 'noisy'", f"data.artefact = '{artefact}'", "run.seed = 0"]
    first = _run(tmp_path / "run", *noisy)
    assert first.returncode == 0, first.stderr[-2000:]
    again = _run(tmp_path / "run", *noisy)                 # same content: nothing to do
    assert again.returncode == 0 and "is complete" in again.stderr
    shutil.rmtree(artefact)
    _noise_artefact(artefact, seed=2)                       # replaced under the same path
    replaced = _run(tmp_path / "run", *noisy)
    _one_line_error(replaced, "holds a run of another configuration", "data.artefact",
                    "metadata_sha256")
    # a study over the same grid sees the change too ("1 finished, 0 ran now" before)
    study = ["study.name = 'd1'", f"study.output_dir = '{tmp_path / 'study'}'",
             "study.models = {'beta_vae': 'models/beta_vae.gin'}",
             "study.variants = ['noisy']", "study.seeds = [0]", f"study.bindings = {TINY!r}",
             f"study.artefacts = {{'dsprites': {{'noisy': '{artefact}'}}}}",
             "study.source = 'procedural'"]
    shutil.copytree(tmp_path / "run", tmp_path / "study" / "runs" /
                    "beta_vae_dsprites_noisy_seed0")
    dry = _command("benchmark.study", *[f"--gin_bindings={b}" for b in study], "--dry_run")
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "changed   beta_vae_dsprites_noisy_seed0" in dry.stdout
    # ... for the artefact alone (a run copied from elsewhere differed in run.seed too)
    import gin
    from benchmark.core import config
    from benchmark.studies import study as study_lib
    gin.clear_config()
    try:
        config.parse_config([], study)
        specs = study_lib.expand(study_lib.study_settings())
    finally:
        gin.clear_config()
    why = study_lib.run_states(tmp_path / "study", specs)[1]["beta_vae_dsprites_noisy_seed0"]
    assert "data.artefact" in why and "metadata_sha256" in why and "run.seed" not in why, why


@pytest.mark.slow
def test_d2_overwrite_removes_only_what_the_suite_wrote(tmp_path):
    """--overwrite removes only what the run wrote (its manifest): user files,
    foreign event files in tb/ (R9) and a directory with no run record are kept."""
    foreign = tmp_path / "foreign"                          # no run record: refused
    (foreign / "checkpoints").mkdir(parents=True)
    (foreign / "checkpoints" / "precious.ckpt").write_text("mine")
    (foreign / "tb").mkdir()
    (foreign / "tb" / "events.user").write_text("mine")
    (foreign / "arrays.npz").write_text("mine")
    refused = _run(foreign, overwrite=True)
    _one_line_error(refused, "no run record", "nothing there was removed")
    assert (foreign / "checkpoints" / "precious.ckpt").read_text() == "mine"
    assert (foreign / "tb" / "events.user").read_text() == "mine"
    assert (foreign / "arrays.npz").read_text() == "mine"
    assert _run(foreign).returncode == 2                    # nor trained into

    run = tmp_path / "run"                                  # a finished run with user files
    assert _run(run).returncode == 0
    (run / "checkpoints" / "user_note.txt").write_text("mine")
    (run / ".results.json.keep_me_user").write_text("mine")
    (run / "notes.txt").write_text("mine")
    # R9: of the event files in tb/, only those the run listed in its manifest are its own
    manifest = json.loads((run / "run_manifest.json").read_text())
    own = [n for n in manifest if n.startswith("tb/events.out.tfevents.")]
    assert len(own) == 1 and "tb/" in manifest
    (run / "tb" / "events.out.tfevents.1700000000.elsewhere.1.v2").write_text("mine")
    replaced = _run(run, overwrite=True)
    assert replaced.returncode == 0, replaced.stderr[-2000:]
    kept = [line for line in replaced.stderr.splitlines()
            if "kept files the suite did not write: " in line]
    assert len(kept) == 1 and "checkpoints/user_note.txt" in kept[0], replaced.stderr[-2000:]
    assert "tb/events.out.tfevents.1700000000" in kept[0]
    for name in ("checkpoints/user_note.txt", ".results.json.keep_me_user", "notes.txt",
                 "tb/events.out.tfevents.1700000000.elsewhere.1.v2"):
        assert (run / name).read_text() == "mine", name
    assert not (run / own[0]).exists()
    assert json.loads((run / "results.json").read_text())["resumed_from"] == 0


@pytest.mark.slow
def test_d3_the_ray_backend_runs_from_the_command_line(tmp_path):
    pytest.importorskip("ray")
    bindings = ["study.name = 'd3'", f"study.output_dir = '{tmp_path}'",
                "study.models = {'ae': 'models/ae.gin'}", "study.variants = ['original']",
                "study.seeds = [0]", f"study.bindings = {TINY!r}",
                "study.source = 'procedural'"]
    result = _command("benchmark.study", *[f"--gin_bindings={b}" for b in bindings],
                      "--backend=ray")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "1 finished, 1 ran now, 0 failed" in result.stdout
    assert (tmp_path / "runs" / "ae_dsprites_original_seed0" / "results.json").exists()


@pytest.mark.parametrize("binding", ["import planted_mod", "include '/etc/planted.gin'"])
def test_d4_the_audit_refuses_a_reference_study_that_imports_foreign_code(tmp_path,
                                                                          binding):
    marker = tmp_path / "imported.marker"
    (tmp_path / "planted_mod.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    reference = tmp_path / "reference"
    reference.mkdir()
    (reference / "study.json").write_text(json.dumps({"settings": {
        "bindings": [binding, "run.steps = 4"], "datasets": ["dsprites"],
        "artefacts": {}, "source": "procedural"}}))
    result = _command("benchmark.audit", "--gin_file=models/ae.gin", f"--reference={reference}",
                      f"--output_dir={tmp_path / 'audit'}", cwd=tmp_path,
                      PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    _one_line_error(result, "settings.bindings", "planted")
    assert not marker.exists() and not (tmp_path / "audit").exists()


#: bad settings of each layer (data, model, method, optimiser), each a one-line error before
#: any work; the command's own path for each class is a subprocess case below, and
#: tests/test_faults_round3.py::test_the_first_line_a_user_sees_is_the_error (fast) runs
#: an unknown model.method and run.steps = 0 the same way
BAD_SETTINGS = [
    ("data.name = 'mnist'", ["unknown dataset 'mnist'"]),
    ("data.variant = 'weird'", ["unknown dataset variant 'weird'"]),
    ("data.source = 'nonsense'", ["source must be 'auto', 'procedural' or 'file'"]),
    ("data.eps = -0.5", ["data.eps", "found -0.5"]),
    ("model.num_latents = 0", ["model.num_latents must be >= 1, found 0"]),
    ("beta_vae.beta = -8.0", ["beta_vae.beta must be a number in [0.0, inf]", "-8.0"]),
    ("adam.learning_rate = 0", ["adam.learning_rate"]),
]


def _with_variant(binding):
    return [binding, "data.variant = 'noisy'"] if binding.startswith("data.eps") else [binding]


@pytest.mark.slow
@pytest.mark.parametrize("binding, words", [
    BAD_SETTINGS[1], BAD_SETTINGS[4], ("run.steps = (", ["gin cannot parse"])])
def test_d5_d6_a_bad_setting_is_one_line_before_any_work(tmp_path, binding, words):
    result = _run(tmp_path / "run", *_with_variant(binding))
    _one_line_error(result, *words)
    assert not (tmp_path / "run" / "checkpoints").exists()


@pytest.mark.parametrize("binding, words", BAD_SETTINGS)
def test_d5_d6_every_layers_bad_setting_is_a_one_line_user_error(tmp_path, binding, words):
    """The same settings through the command's main in this process: a UserError (what
    the command prints as `error: ...`, exit 2) of one line, before any directory."""
    from benchmark.core.errors import UserError, user_message
    from tests.benchmark_core.test_run import _run_here
    with pytest.raises(UserError) as raised:
        _run_here(tmp_path / "run", *_with_variant(binding))
    message = user_message(raised.value)
    assert "\n" not in message.strip() and all(w in message for w in words), message
    assert not (tmp_path / "run").exists()


def test_d5_the_other_commands_say_a_gin_syntax_error_in_one_line(tmp_path):
    study = _command("benchmark.study", "--gin_bindings=study.seeds = (")
    _one_line_error(study, "gin cannot parse")
    codes = tmp_path / "codes.npz"
    np.savez(codes, factors=np.zeros((20, 2), int), codes=np.zeros((20, 2)))
    metrics = _command("benchmark.metrics", "evaluate", f"--codes={codes}",
                       "--gin_bindings=mig.num_bins = (")
    _one_line_error(metrics, "gin cannot parse")


def test_d6_metrics_evaluate_refuses_no_metric_and_negative_classes_and_warns_on_constant(
        tmp_path):
    rng = np.random.default_rng(0)
    factors = rng.integers(0, 4, (200, 2))
    codes = tmp_path / "codes.npz"
    np.savez(codes, factors=factors, codes=rng.normal(size=(200, 2)))
    _one_line_error(_command("benchmark.metrics", "evaluate", f"--codes={codes}",
                             "--metrics="), "--metrics is empty")
    negative = tmp_path / "negative.npz"
    np.savez(negative, factors=factors - 1, codes=rng.normal(size=(200, 2)))
    _one_line_error(_command("benchmark.metrics", "evaluate", f"--codes={negative}",
                             "--metrics=mig"), "factor classes >= 0", "found -1")
    constant = tmp_path / "constant.npz"
    np.savez(constant, factors=factors, codes=np.ones((200, 2)))
    result = _command("benchmark.metrics", "evaluate", f"--codes={constant}", "--metrics=mig")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "every code dim is constant over these 200 samples" in result.stderr


def test_d7_a_storage_failure_is_one_line_naming_the_path(tmp_path):
    """In a subprocess, the suite's writes fail as on a full disk / read-only file system
    (the mounted file systems of the next test need root)."""
    script = textwrap.dedent(f"""
        import errno, os, sys
        from absl import app
        from benchmark.core.atomic import write_json
        from benchmark.core.errors import cli_main

        @cli_main
        def main(argv):
            if argv[1] == "atomic":
                def full(*a, **k):
                    raise OSError(errno.ENOSPC, "No space left on device")
                os.replace = full
                write_json({str(tmp_path / 'out' / 'results.json')!r}, {{}})
            if argv[1] == "tf":    # only this kind needs TensorFlow's import (seconds)
                import tensorflow as tf
                from benchmark.runs.train import storage_errors
                with storage_errors({str(tmp_path / 'out' / 'checkpoints')!r}):
                    raise tf.errors.ResourceExhaustedError(
                        None, None, "/x/ckpt-2_temp/part; No space left on device")
            if argv[1] == "readonly":
                raise OSError(errno.EROFS, "Read-only file system", "/x/run/.lock")
            if argv[1] == "other":
                raise OSError(errno.EIO, "Input/output error", "/x")

        app.run(main)
    """)
    run = lambda kind: subprocess.run([sys.executable, "-c", script, kind], cwd=ROOT,
                                      env=_env(), capture_output=True, text=True, timeout=300)
    _one_line_error(run("atomic"), "writing", "results.json failed: No space left on device")
    assert not list((tmp_path / "out").iterdir())         # no temporary file left behind
    _one_line_error(run("tf"), "checkpoints failed: No space left on device")
    _one_line_error(run("readonly"), "Read-only file system: /x/run/.lock")
    other = run("other")
    assert other.returncode == 1 and "Traceback" in other.stderr   # not the user's to fix


def _mount(point, *options):
    point.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs",
                           str(point)], capture_output=True).returncode == 0


@pytest.mark.slow
def test_d7_a_full_and_a_read_only_file_system_are_one_line_and_resume_exactly(tmp_path):
    point = tmp_path / "small"
    if not (hasattr(os, "geteuid") and os.geteuid() == 0 and _mount(point, "size=1m")):
        pytest.skip("mounting a small file system needs root")
    try:
        full = _run(point / "run")
        _one_line_error(full, "No space left on device", str(point / "run"))
        assert not (point / "run" / "results.json").exists()
        subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True)
        _one_line_error(_run(point / "other"), "Read-only file system", str(point / "other"))
        subprocess.run(["mount", "-o", "remount,rw,size=64m", str(point)], check=True)
        resumed = _run(point / "run")                       # room again: the run completes
        assert resumed.returncode == 0, resumed.stderr[-2000:]
    finally:
        subprocess.run(["umount", "-l", str(point)])


@pytest.mark.slow
def test_d8_an_interrupted_export_leaves_no_temporary_file_after_a_rerun(tmp_path):
    out = tmp_path / "dsprites.npz"
    args = ["export", "--dataset=dsprites", "--source=procedural", f"--out={out}"]
    process = subprocess.Popen([sys.executable, "-m", "benchmark.data", *args], cwd=ROOT,
                               env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while not list(tmp_path.glob(".dsprites.npz.*.npz")) and time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read()[-2000:]
        time.sleep(0.2)
    time.sleep(1.0)
    process.send_signal(signal.SIGKILL)                     # killed mid-write
    process.wait()
    assert list(tmp_path.glob(".dsprites.npz.*.npz")) and not out.exists()
    (tmp_path / ".dsprites.npz.keep_me").write_text("mine")  # not a temporary name
    rerun = _command("benchmark.data", *args)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert out.exists() and not list(tmp_path.glob(".dsprites.npz.*.npz"))
    assert (tmp_path / ".dsprites.npz.keep_me").read_text() == "mine"


@pytest.mark.slow
def test_d9_the_same_numbers_whatever_cpus_the_process_may_use(tmp_path):
    taskset = shutil.which("taskset")
    if taskset is None or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs taskset and two CPUs")
    cpus = sorted(os.sched_getaffinity(0))
    args = [*BETA_VAE, *[f"--gin_bindings={b}" for b in TINY],
            "--gin_bindings=run.steps = 20", "--gin_bindings=run.checkpoint_every = 20"]

    def scalars(out, *prefix):
        result = subprocess.run([*prefix, sys.executable, "-m", "benchmark.run", *args,
                                 f"--output_dir={out}"], cwd=ROOT, env=_env(),
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-2000:]
        return json.loads((out / "results.json").read_text())["scalars"]

    one_cpu = scalars(tmp_path / "one", taskset, "-c", str(cpus[0]))
    all_cpus = scalars(tmp_path / "all")
    keep = [k for k in all_cpus if not k.startswith(("time/", "throughput/"))]
    assert {k: one_cpu[k] for k in keep} == {k: all_cpus[k] for k in keep}


@pytest.mark.slow
def test_the_lock_comes_before_the_data_and_a_busy_run_is_not_failed(tmp_path):
    from benchmark.core.lock import directory_lock
    run_dir = tmp_path / "study" / "runs" / "ae_dsprites_original_seed0"
    bindings = ["study.name = 'busy'", f"study.output_dir = '{tmp_path / 'study'}'",
                "study.models = {'ae': 'models/ae.gin'}", "study.variants = ['original']",
                "study.seeds = [0]", f"study.bindings = {TINY!r}",
                "study.source = 'procedural'"]
    with directory_lock(run_dir, "an orphaned runner"):
        started = time.monotonic()
        locked = _run(run_dir, "model.method = 'ae'")
        _one_line_error(locked, "is being written by another process", "an orphaned runner")
        study = _command("benchmark.study", *[f"--gin_bindings={b}" for b in bindings])
    assert study.returncode == 0, study.stderr[-2000:]
    assert "0 failed" in study.stdout and "1 busy" in study.stdout
    assert not (tmp_path / "study" / "failed.json").exists() or \
        json.loads((tmp_path / "study" / "failed.json").read_text()) == {}
    assert time.monotonic() - started < 60
