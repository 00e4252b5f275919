"""Reliability round 3 (issue 60): each fault as a user met it, through `python -m ...`
subprocesses, shown fixed.

R1 names that become paths stay inside their directory · R2 a reference imports only the
suite's own modules · R3 a study run killed by a signal resumes, and the exit status says
when runs are left · R4 a damaged latest checkpoint falls back to the last intact one.
"""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

from benchmark.core import config
from tests.cli import ROOT, environment
from tests.test_faults import TINY, _command, _one_line_error, _run


def _files(directory):
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


def _study(out, *extra, name="r3", steps=None):
    bindings = [*TINY, *([f"run.steps = {steps}", "run.checkpoint_every = 25"] if steps
                         else [])]
    return [f"--gin_bindings={b}" for b in (
        f"study.name = '{name}'", f"study.output_dir = '{out}'",
        "study.models = {'ae': 'models/ae.gin'}", "study.variants = ['original']",
        "study.seeds = [0]", f"study.bindings = {bindings!r}", "study.source = 'procedural'",
        *extra)]


# R1 -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["../../../escape_probe", "a/b", ".hidden", "x..y", ""])
def test_r1_audit_score_refuses_a_name_that_would_leave_the_output_directory(tmp_path,
                                                                               name):
    work = tmp_path / "deep" / "er" / "work"
    work.mkdir(parents=True)
    before = _files(tmp_path)
    result = _command("benchmark.audit", "score", f"--export={tmp_path / 'export'}",
                      f"--name={name}", f"--output_dir={work / 'OUT'}", cwd=work)
    if name == "":
        _one_line_error(result, "score needs --export")
    else:
        _one_line_error(result, "--name", "expected a name of letters, digits")
    assert _files(tmp_path) == before


def test_r1_the_audit_refuses_a_method_name_that_is_a_path(tmp_path):
    result = _command("benchmark.audit", "--gin_file=models/ae.gin", "--name=../up",
                      f"--output_dir={tmp_path / 'OUT'}", "--dry_run")
    _one_line_error(result, "--name", "'../up'")
    assert not (tmp_path / "OUT").exists()


def test_r1_a_study_refuses_a_model_key_that_is_a_path(tmp_path):
    out = tmp_path / "study"
    result = _command("benchmark.study", *_study(
        out, "study.models = {'../../escape': 'models/ae.gin'}"))
    _one_line_error(result, "a study run's name", "../../escape")
    assert _files(tmp_path) == []


def test_r1_path_names_unit():
    for good in ("sparse_vae", "beta_vae_dsprites_wave@0.3_seed0", "m_beta=4.0_seed1"):
        assert config.check_path_name(good, "x") == good
    for bad in ("..", "../a", "a/b", "a\\b", ".a", "", "a b", "a" * 151, None, 3):
        with pytest.raises(ValueError, match="expected a name"):
            config.check_path_name(bad, "x")


# R2 -----------------------------------------------------------------------------------

def test_r2_a_reference_cannot_import_a_namesake_of_the_suites_packages(tmp_path):
    marker = tmp_path / "imported.marker"
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "__init__.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('package ran')\n")
    (tmp_path / "examples" / "evilmod.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('module ran')\n")
    reference = tmp_path / "reference"
    reference.mkdir()
    (reference / "study.json").write_text(json.dumps({"settings": {
        "bindings": ["import examples.evilmod", "run.steps = 4"], "datasets": ["dsprites"],
        "artefacts": {}, "source": "procedural"}}))
    result = _command("benchmark.audit", "--gin_file=models/ae.gin", f"--reference={reference}",
                      f"--output_dir={tmp_path / 'audit'}", "--dry_run", cwd=tmp_path)
    _one_line_error(result, "settings.bindings", "examples.evilmod", str(config.SUITE_ROOT))
    assert not marker.exists() and not (tmp_path / "audit").exists()


def test_r2_the_suites_own_modules_pass_and_others_do_not(tmp_path, monkeypatch):
    for module in ("examples.sparse_vae", "benchmark.metrics", "models", "perturbations.noise"):
        assert config.is_suite_module(module), module
    for module in ("examples.evilmod", "os", "benchmark_extra", "examples.sparse_vae.x"):
        assert not config.is_suite_module(module), module
    config.check_untrusted_config("import examples.sparse_vae\nrun.steps = 4", "test")
    (tmp_path / "examples").mkdir()                       # a namesake ahead on sys.path
    (tmp_path / "examples" / "__init__.py").write_text("")
    (tmp_path / "examples" / "sparse_vae.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "examples", raising=False)
    assert not config.is_suite_module("examples.sparse_vae")


# R3 -----------------------------------------------------------------------------------

def _runner_pid(run_dir) -> int | None:
    """The pid of the `benchmark.run` process writing `run_dir` (from /proc)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                args = handle.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "benchmark.run" in args and f"--output_dir={run_dir}" in args:
            return int(entry)
    return None


@pytest.mark.slow
def test_r3_a_study_run_killed_by_a_signal_is_resumed_by_the_next_study_command(tmp_path):
    out = tmp_path / "study"
    args = _study(out, steps=1000)
    run_dir = out / "runs" / "ae_dsprites_original_seed0"
    study = subprocess.Popen([sys.executable, "-m", "benchmark.study", *args], cwd=ROOT,
                             env=environment(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while time.time() < deadline and not (run_dir / "checkpoints" / "checkpoint").exists():
        time.sleep(0.2)
    pid = _runner_pid(run_dir.resolve())
    assert pid is not None, "the study's run never started"
    os.kill(pid, signal.SIGKILL)                             # the run, not the study
    stdout, stderr = study.communicate(timeout=300)
    assert study.returncode == 1, stderr[-3000:]
    assert "1 stopped (rerun to resume)" in stdout, stdout
    assert "was stopped (exit -9, signal 9), not failed" in stderr
    failed = out / "failed.json"
    assert not failed.exists() or json.loads(failed.read_text()) == {}
    assert not (run_dir / "results.json").exists()
    # the next study command resumes it from its checkpoint (the same configuration)
    again = _command("benchmark.study", *args)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "1 finished, 1 ran now, 0 failed" in again.stdout
    resumed = json.loads((run_dir / "results.json").read_text())
    assert resumed["resumed_from"] > 0


def test_r3_a_stopped_run_recorded_as_failed_by_an_older_suite_is_resumed(tmp_path):
    out = tmp_path / "study"
    out.mkdir()
    (out / "failed.json").write_text(json.dumps({"ae_dsprites_original_seed0": {
        "exit_code": -9, "stderr_tail": "", "time": "2026-11-28 10:00:00"}}))
    dry = _command("benchmark.study", *_study(out), "--dry_run")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "to run    ae_dsprites_original_seed0" in dry.stdout


@pytest.mark.slow
def test_r3_the_exit_status_says_runs_are_left_failed(tmp_path):
    out = tmp_path / "study"
    broken = ["data.fixed_factors = {'shape': 7}"]          # parses; fails at data load
    first = _command("benchmark.study", *_study(out, f"study.bindings = {[*TINY, *broken]!r}"))
    assert first.returncode == 1 and "1 failed" in first.stdout, first.stderr[-2000:]
    again = _command("benchmark.study", *_study(out, f"study.bindings = {[*TINY, *broken]!r}"))
    assert again.returncode == 1, again.stderr[-2000:]
    assert "1 skipped as failed before" in again.stdout
    assert "--retry_failed runs them again" in again.stderr


# R4 -----------------------------------------------------------------------------------

def _truncate(path):
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        handle.truncate(size // 2)


@pytest.mark.slow
def test_r4_a_damaged_latest_checkpoint_falls_back_to_the_last_intact_one(tmp_path):
    whole, damaged = tmp_path / "whole", tmp_path / "damaged"
    assert _run(whole).returncode == 0
    shutil.copytree(whole, damaged)                         # the same run, trained once
    (damaged / "results.json").unlink()                    # killed after its last checkpoint
    _truncate(next((damaged / "checkpoints").glob("ckpt-4.data-*")))
    resumed = _run(damaged)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Traceback" not in resumed.stderr
    assert "damaged checkpoint(s)" in resumed.stderr and "ckpt-4 (IndexError" in resumed.stderr
    first = json.loads((whole / "results.json").read_text())
    second = json.loads((damaged / "results.json").read_text())
    assert second["resumed_from"] == 2
    assert second["scalars"] == first["scalars"]             # steps 3-4 trained again alike
    # every checkpoint damaged: one line, nothing trained
    (damaged / "results.json").unlink()
    for data in (damaged / "checkpoints").glob("ckpt-*.data-*"):
        _truncate(data)
    broken = _run(damaged)
    _one_line_error(broken, "every checkpoint is damaged", "--overwrite")
    # a damaged state file (TensorFlow ignores it): the checkpoints are found by name
    (damaged / "checkpoints").rename(tmp_path / "spoilt")
    (damaged / "checkpoints").mkdir()
    for path in (whole / "checkpoints").iterdir():
        (damaged / "checkpoints" / path.name).write_bytes(path.read_bytes())
    (damaged / "checkpoints" / "checkpoint").write_text("model_checkpoint_path: {{{")
    state = _run(damaged)
    assert state.returncode == 0, state.stderr[-3000:]
    resumed = json.loads((damaged / "results.json").read_text())
    assert resumed["resumed_from"] == 4 and resumed["scalars"] == first["scalars"]


# R5 -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_r5_the_report_keeps_runs_of_different_configurations_apart(tmp_path):
    for name, steps in (("short", 4), ("long", 6)):
        result = _run(tmp_path / "study" / "runs" / name, f"run.steps = {steps}")
        assert result.returncode == 0, result.stderr[-2000:]
    report = _command("benchmark.report", f"--results={tmp_path / 'study'}",
                      f"--out={tmp_path / 'report'}")
    assert report.returncode == 0, report.stderr[-3000:]
    assert "differ in bindings other than the seed (run.steps)" in report.stderr
    text = (tmp_path / "report" / "report.md").read_text()
    rows = [line for line in text.splitlines()
            if line.startswith("| beta_vae | dsprites | original |")]
    assert [row.split(" | ")[3:5] for row in rows] == [["run.steps=4", "1"],
                                                        ["run.steps=6", "1"]], rows


# R6 -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_r6_a_damaged_results_json_is_not_a_finished_run(tmp_path):
    run = tmp_path / "run"
    assert _run(run).returncode == 0
    first = json.loads((run / "results.json").read_text())
    text = (run / "results.json").read_text()
    (run / "results.json").write_text(text[: len(text) // 2])          # truncated
    again = _run(run)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "is complete" not in again.stderr
    assert "moved aside to results.json.damaged" in again.stderr
    assert (run / "results.json.damaged").read_text() == text[: len(text) // 2]
    assert json.loads((run / "results.json").read_text())["scalars"] == first["scalars"]
    # a results.json of another configuration copied in: not finished either
    other = dict(first, fingerprint="0" * 64)
    (run / "results.json").write_text(json.dumps(other))
    copied = _run(run)
    assert copied.returncode == 0 and "records the configuration fingerprint 000000000000" \
        in copied.stderr, copied.stderr[-3000:]
    # and a study counts such a run as unfinished
    out = tmp_path / "study"
    args = _study(out, "study.models = {'beta_vae': 'models/beta_vae.gin'}")
    assert _command("benchmark.study", *args).returncode == 0
    done = out / "runs" / "beta_vae_dsprites_original_seed0" / "results.json"
    done.write_text(done.read_text()[:100])
    dry = _command("benchmark.study", *args, "--dry_run")
    assert "to run    beta_vae_dsprites_original_seed0" in dry.stdout, dry.stdout


# R9 -----------------------------------------------------------------------------------

# tests/test_faults.py::test_d2_overwrite_removes_only_what_the_suite_wrote, which
# trains the run R9 needs anyway.


# R8 -----------------------------------------------------------------------------------

def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _processes_writing(directory, parent: int | None = None) -> list[int]:
    """pids of live processes whose command line names `directory` (children of `parent`
    only, when given: another job's processes on the machine are not this test's)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                args = handle.read().decode(errors="replace")
            with open(f"/proc/{entry}/stat") as handle:
                zombie = handle.read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            continue
        if str(directory) in args and not zombie and (
                parent is None or _parent(int(entry)) == parent):
            found.append(int(entry))
    return found


@pytest.mark.slow
def test_r8_a_killed_pipeline_ends_its_study_and_runs(tmp_path):
    pool = (tmp_path / "pool").resolve()
    tiny = [*TINY, "run.steps = 1000", "run.checkpoint_every = 25"]
    bindings = {"restarts_dsprites": [f"study.output_dir = '{pool}'", "study.seeds = [0]",
                                      f"study.bindings = {tiny!r}"]}
    args = [sys.executable, "-m", "benchmark.pipeline",
            "--gin_file=pipelines/zietlow2021_paper.gin", "--stages=restarts_dsprites",
            f"--gin_bindings=pipeline.stage_bindings = {bindings!r}"]
    pipeline = subprocess.Popen(args, cwd=ROOT, env=environment(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run_dir = pool / "runs" / "beta_vae_dsprites_original_seed0"
    deadline = time.time() + 300
    while time.time() < deadline and not (run_dir / "checkpoints" / "checkpoint").exists():
        time.sleep(0.2)
    assert (run_dir / "checkpoints" / "checkpoint").exists(), "the run never started"
    assert len(_processes_writing(pool)) >= 2                # the study and its run
    pipeline.kill()                                          # kill -9 the pipeline alone
    pipeline.wait()
    deadline = time.time() + 90
    while time.time() < deadline and _processes_writing(pool):
        time.sleep(0.5)
    assert _processes_writing(pool) == [], "the pipeline's children outlived it"
    again = subprocess.run(args, cwd=ROOT, env=environment(), capture_output=True,
                           text=True, timeout=900)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-3000:]
    assert "being written by another process" not in again.stderr
    assert json.loads((run_dir / "results.json").read_text())["resumed_from"] > 0


# R7 -----------------------------------------------------------------------------------

def _run_refused(tmp_path, output_dir, *bindings):
    return _command("benchmark.run", "--gin_file=models/beta_vae.gin",
                    "--gin_file=datasets/dsprites.gin",
                    *[f"--gin_bindings={b}" for b in (*TINY, *bindings)],
                    f"--output_dir={output_dir}")


#: what each bad output path or setting must say
R7_WORDS = {"seed_2_64": "run.seed must be an integer in [0, 4294967295]",
            "no_metrics": "run.metrics is empty", "not_utf8": "UTF-8",
            "a_file": "a file, not a directory, is there",
            "under_a_file": "a file, not a directory, is there",
            "loop": "Too many levels of symbolic links", "too_long": "File name too long",
            "proc": "cannot make the output directory"}
R7_BINDINGS = {"seed_2_64": ["run.seed = 18446744073709551616"],
               "no_metrics": ["run.metrics = []"]}


def _r7_output(tmp_path, case):
    (tmp_path / "a_file").write_text("mine")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "empty.gin").write_text("")
    return {"too_long": tmp_path / ("x" * 300), "a_file": tmp_path / "a_file",
            "under_a_file": tmp_path / "a_file" / "run", "proc": "/proc/x/run",
            "loop": tmp_path / "loop" / "run",
            "not_utf8": os.fsdecode(bytes(tmp_path / "run") + b"\xff\xfe")}.get(
                case, tmp_path / "run")


@pytest.mark.parametrize("case", ["too_long", "under_a_file", "proc", "loop", "seed_2_64",
                                  "no_metrics"])
def test_r7_bad_output_paths_and_settings_are_a_one_line_user_error(tmp_path, case):
    """The cases the command's own path shows below, through its main in this process: a
    UserError of one line (printed as `error: ...`, exit 2), nothing written."""
    from benchmark.core.errors import UserError, user_message
    from tests.benchmark_core.test_run import _run_here
    output = _r7_output(tmp_path, case)
    before = _files(tmp_path)
    with pytest.raises(UserError) as raised:
        _run_here(pathlib.Path(output), *R7_BINDINGS.get(case, []))
    message = user_message(raised.value)
    assert "\n" not in message.strip() and R7_WORDS[case] in message, message
    assert _files(tmp_path) == before


@pytest.mark.slow
@pytest.mark.parametrize("case", ["a_file", "not_utf8", "empty_gin"])
def test_r7_bad_output_paths_and_settings_are_one_line_and_leave_nothing(tmp_path, case):
    output = _r7_output(tmp_path, case)
    before = _files(tmp_path)
    if case == "empty_gin":
        result = _command("benchmark.run", f"--gin_file={tmp_path / 'empty.gin'}",
                          f"--output_dir={output}")
        _one_line_error(result, "model.method is not set")
    else:
        result = _run_refused(tmp_path, output, *R7_BINDINGS.get(case, []))
        _one_line_error(result, R7_WORDS[case])
    assert _files(tmp_path) == before                       # nothing written, no .lock


@pytest.mark.slow
@pytest.mark.parametrize("command, args, words", [
    ("benchmark.study", ["--workers=-1"], "--workers"),
    ("benchmark.study", ["--workers=0"], "--workers"),
    ("benchmark.study", ["--gin_bindings=study.seeds = []"], "study.seeds is empty"),
])
def test_r7_study_settings_accepted_silently_before_are_refused(tmp_path, command, args,
                                                                 words):
    out = tmp_path / "study"
    result = _command(command, *_study(out), *args)
    _one_line_error(result, words)
    assert not out.exists()


def test_r7_an_export_manifest_without_seeds_is_one_line(tmp_path):
    from benchmark.studies import external
    (tmp_path / "manifest.json").write_text(json.dumps({
        "arms": {"original": {"images": 4}}, "seeds": [], "reference": "r"}))
    with pytest.raises(ValueError, match="expected 'seeds' as distinct seeds"):
        external.read_manifest(tmp_path)


# Issue 61 item 6: typed by hand (no TF_CPP_MIN_LOG_LEVEL), the first line is the error

@pytest.mark.parametrize("binding, words", [
    ("model.method = 'beta_vea'", "unknown model.method 'beta_vea'"),
    ("run.steps = 0", "run.steps must be an integer"),
])
def test_the_first_line_a_user_sees_is_the_error(tmp_path, binding, words):
    env = {k: v for k, v in environment().items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run([sys.executable, "-m", "benchmark.run",
                             "--gin_file=models/beta_vae.gin", f"--gin_bindings={binding}",
                             f"--output_dir={tmp_path / 'run'}"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and lines[0].startswith(f"error: {words}"), lines[:5]


@pytest.mark.slow
@pytest.mark.parametrize("case", ["complex", "timedelta", "too_large", "manifest_no_seeds"])
def test_r7_odd_codes_and_manifests_are_one_line(tmp_path, case):
    """As users met them: `metrics evaluate` on complex, timedelta or oversized codes
    (accepted before, the imaginary part dropped; 1.9 GB reached), `audit score` on a
    manifest without seeds (a traceback before)."""
    import numpy as np
    if case == "manifest_no_seeds":
        export = tmp_path / "export"
        export.mkdir()
        (export / "manifest.json").write_text(json.dumps({
            "arms": {"original": {"images": 4}}, "seeds": [], "reference": "r"}))
        result = _command("benchmark.audit", "score", f"--export={export}", "--name=m",
                          f"--output_dir={tmp_path / 'out'}")
        _one_line_error(result, "expected 'seeds' as distinct seeds")
        assert not (tmp_path / "out").exists()
        return
    factors = np.tile(np.arange(4), 256).reshape(1024, 1)
    codes = {"complex": np.ones((1024, 2)) * (1 + 1j),
             "timedelta": np.ones((1024, 2), dtype="timedelta64[s]"),
             "too_large": np.zeros((1024, 6000), dtype=np.float16)}[case]
    path = tmp_path / "codes.npz"
    np.savez(path, factors=factors, codes=codes)
    result = _command("benchmark.metrics", "evaluate", f"--codes={path}", "--metrics=mig",
                      BENCHMARK_MAX_CODE_VALUES="5000000")
    _one_line_error(result, "more than the limit" if case == "too_large"
                    else "expected numeric codes")


@pytest.mark.slow
def test_r3_a_worker_killed_by_a_signal_leaves_its_runs_unfinished_not_failed(tmp_path):
    out = tmp_path / "study"
    args = [*_study(out, "study.seeds = [0, 1]", steps=1000), "--runs_per_process=2"]
    study = subprocess.Popen([sys.executable, "-m", "benchmark.study", *args], cwd=ROOT,
                             env=environment(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    first = out / "runs" / "ae_dsprites_original_seed0"
    deadline = time.time() + 300
    while time.time() < deadline and not (first / "checkpoints" / "checkpoint").exists():
        time.sleep(0.2)
    workers = _processes_writing("benchmark.worker", parent=study.pid)
    assert len(workers) == 1, workers
    os.kill(workers[0], signal.SIGKILL)
    stdout, stderr = study.communicate(timeout=300)
    assert study.returncode == 1, stderr[-3000:]
    assert "2 stopped (rerun to resume)" in stdout, stdout
    assert not (out / "failed.json").exists() or json.loads(
        (out / "failed.json").read_text()) == {}
    # both are left to run (not failed, not busy: the worker's locks died with it), the
    # first from its checkpoint; a killed run resuming from it is
    # test_r3_a_study_run_killed_by_a_signal_is_resumed_by_the_next_study_command
    dry = _command("benchmark.study", *args, "--dry_run")
    assert dry.returncode == 0, dry.stderr[-3000:]
    for seed in (0, 1):
        assert f"to run    ae_dsprites_original_seed{seed}\n" in dry.stdout, dry.stdout
    assert (first / "checkpoints" / "checkpoint").exists()
    assert not (first / "results.json").exists()
