import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import gin
import numpy as np
import pytest

from benchmark.core import machine

ROOT = pathlib.Path(__file__).resolve().parents[2]
TINY_BINDINGS = ["run.steps = 4", "run.batch_size = 8", "run.metric_points = 300",
                 "run.metrics = ['mig']", "run.health_points = 64", "run.checkpoint_every = 2",
                 "model.num_latents = 3", "data.source = 'procedural'"]
TINY = [f"--gin_bindings={b}" for b in TINY_BINDINGS]
BETA_VAE = ["--gin_file=models/beta_vae.gin", "--gin_file=datasets/dsprites.gin"]


def _env():
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3",
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def _run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "benchmark.run", *args], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=600)


def _run_here(out, *bindings, overwrite=False):
    """benchmark.run in this process (tiny beta-VAE; later bindings win), with the artefact
    loader the command passes."""
    from benchmark.core import config
    from benchmark.runs import run
    from perturbations.artefact import load_variant
    gin.clear_config()
    try:
        config.parse_config(["models/beta_vae.gin", "datasets/dsprites.gin"],
                            [*TINY_BINDINGS, "run.figures = False", *bindings])
        return run.run(out, overwrite, artefact_loader=load_variant)
    finally:
        gin.clear_config()


@pytest.mark.slow
def test_run_writes_a_complete_run_directory_and_skips_it_next_time(tmp_path):
    out = tmp_path / "run"
    args = ["--gin_file=models/beta_vae.gin", "--gin_file=datasets/dsprites.gin", *TINY,
            f"--output_dir={out}"]
    first = _run(*args)
    assert first.returncode == 0, first.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    assert results["schema_version"] == 2 and results["steps"] == 4
    assert results["dataset"]["name"] == "dsprites" and results["model"] == "beta_vae"
    scalars = results["scalars"]
    assert 0.0 <= scalars["metric/mig"] <= 1.0
    assert {"loss/loss", "loss/reconstruction", "loss/kl"} <= set(scalars)
    # hyperparameters: the operative bindings, flat and JSON-typed
    hyper = results["hyperparameters"]
    assert hyper["beta_vae.beta"] == 1.0 and hyper["run.steps"] == 4
    assert hyper["run.metrics"] == ["mig"] and hyper["data.source"] == "procedural"
    assert (out / "operative_config.gin").read_text().count("beta_vae.beta") == 1
    assert (out / "eval_codes.npz").exists() and list((out / "tb").iterdir())
    assert 0 <= scalars["health/active_units"] <= 3
    assert scalars["health/overpruned"] == (scalars["health/active_units"] < 5)
    assert scalars["health/psnr"] > 0 and scalars["health/reconstruction_loss"] > 0
    with np.load(out / "arrays.npz", allow_pickle=False) as arrays:
        assert arrays["health/mean_posterior_variance"].shape == (3,)
        assert arrays["metric/mig/per_factor"].shape == (5,)
    assert results["arrays"] == {"health/mean_posterior_variance": [3],
                                 "metric/mig/per_factor": [5]}
    assert "arrays.npz" in json.loads((out / "run_manifest.json").read_text())
    ran_on = results["machine"]          # what the run's timings were measured on
    assert ran_on["cpu"] == machine.cpu_description()["model"] and ran_on["threads"] == 2
    assert 0 < ran_on["cpu_seconds"] <= ran_on["cores"] * results["wall_seconds"] * 1.05
    for name in ("reconstructions.png", "traversals.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert results["fingerprint"] == json.loads((out / "fingerprint.json").read_text())[
        "fingerprint"]
    # run.metric_points = 300 caps the sample, and the settings record the cap
    assert results["metric_settings"] == {"mig": {"num_train": 300, "batch_size": 16,
                                                  "num_bins": 20, "level": "data", "seed": 0,
                                                  "sample": "shared"}}
    # eval_codes.npz holds the first rows of the sample the metrics read (issue 17 item 4):
    # its factors are the ones the shared sample's generator draws
    from benchmark import metrics as metrics_lib
    from benchmark.data import dsprites
    factors, _ = metrics_lib.draw_shared_sample(
        dsprites.DSprites(source="procedural"), lambda x: np.zeros((len(x), 1)), 300, seed=0)
    with np.load(out / "eval_codes.npz", allow_pickle=False) as saved:
        np.testing.assert_array_equal(saved["factors"], factors)
    stamp = (out / "results.json").stat().st_mtime_ns
    again = _run(*args)
    assert again.returncode == 0 and (out / "results.json").stat().st_mtime_ns == stamp


def test_misspelt_binding_fails_before_training(tmp_path):
    """gin refuses it as it parses (the command's one line for a parse error:
    tests/test_faults.py::test_d5_d6_a_bad_setting_is_one_line_before_any_work)."""
    with pytest.raises(ValueError, match="doesn't have a parameter named 'betta'"):
        _run_here(tmp_path / "run", "beta_vae.betta = 3")
    assert not (tmp_path / "run").exists()


def test_unknown_method_is_a_clear_error():
    from models.registry import make_model
    with pytest.raises(ValueError, match="unknown model.method"):
        make_model((64, 64, 1), method="vae2")


def test_model_health_of_every_method():
    import numpy as np

    from benchmark.runs.run import model_health
    from models.registry import METHODS, MODELS, make_model
    images = np.random.default_rng(0).uniform(0, 1, (6, 64, 64, 1)).astype(np.float32)
    for method in METHODS:
        health = model_health(make_model((64, 64, 1), method=method, num_latents=3), images, 5,
                              batch_size=4)
        assert ("active_units" in health) == MODELS[method].variational, method
        assert ("psnr" in health) == (method != "pcl"), method


def _wait_for_checkpoint(out: pathlib.Path, process, after: int = 0) -> int:
    """Waits until the checkpoint state names a checkpoint numbered above `after` (its
    files complete: the state file is written after them); returns its number."""
    import tensorflow as tf
    deadline = time.time() + 300
    while time.time() < deadline and process.poll() is None:
        latest = tf.train.latest_checkpoint(str(out / "checkpoints"))
        if latest and int(latest.rsplit("-", 1)[1]) > after:
            return int(latest.rsplit("-", 1)[1])
        time.sleep(0.02)
    raise AssertionError(f"no checkpoint after step {after} appeared (exit {process.poll()})")


def _final_weights(out: pathlib.Path) -> dict:
    import tensorflow as tf
    reader = tf.train.load_checkpoint(str(out / "checkpoints"))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if "/.ATTRIBUTES/VARIABLE_VALUE" in name and "save_counter" not in name
            and not name.startswith("terms/")}


@pytest.mark.slow
def test_same_seed_same_run_in_another_process_also_after_ctrl_c_and_kill(tmp_path):
    """Issue 19.1, 19.2, 19.10 and 17.7: the seed fixes the initial weights; a run
    interrupted by Ctrl-C (one line naming the last checkpoint) and then killed with -9
    resumes, in new processes, to the uninterrupted run's weights, losses and metrics."""
    args = [*BETA_VAE, *TINY, "--gin_bindings=run.steps = 150",
            "--gin_bindings=run.checkpoint_every = 10", "--gin_bindings=run.log_every = 50",
            "--gin_bindings=run.figures = False"]
    straight = tmp_path / "straight"
    first = _run(*args, f"--output_dir={straight}")
    assert first.returncode == 0, first.stderr[-2000:]

    out = tmp_path / "interrupted"
    command = [sys.executable, "-m", "benchmark.run", *args, f"--output_dir={out}"]
    process = subprocess.Popen(command, cwd=ROOT, env=_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    step = _wait_for_checkpoint(out, process)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 130, stderr[-2000:]
    last = stderr.strip().splitlines()[-1]
    assert "Traceback" not in stderr and "interrupted: the last checkpoint is" in last
    assert "ckpt-" in last and "rerun the same command to resume" in last

    process = subprocess.Popen(command, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    _wait_for_checkpoint(out, process, after=step)
    process.kill()                                      # kill -9
    process.wait()
    assert not (out / "results.json").exists()
    stale = out / ".results.json.kill9_ab.json"        # what a kill during a write leaves
    stale.write_text("{")
    resumed = _run(*args, f"--output_dir={out}")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert not stale.exists()

    a = json.loads((straight / "results.json").read_text())
    b = json.loads((out / "results.json").read_text())
    assert a["resumed_from"] == 0 and b["resumed_from"] > 0 and b["steps"] == 150
    assert a["fingerprint"] == b["fingerprint"]
    losses_a, losses_b = ({k: v for k, v in r["scalars"].items() if k.startswith("loss/")}
                          for r in (a, b))
    assert set(losses_a) >= {"loss/loss", "loss/kl"}
    assert losses_b == pytest.approx(losses_a, rel=1e-5)
    with np.load(straight / "arrays.npz") as arrays_a, np.load(out / "arrays.npz") as arrays_b:
        np.testing.assert_allclose(arrays_b["metric/mig/per_factor"],
                                   arrays_a["metric/mig/per_factor"], rtol=1e-4, atol=1e-6)
    weights_a, weights_b = _final_weights(straight), _final_weights(out)
    assert len(weights_a) > 10 and weights_a.keys() == weights_b.keys()
    for name, value in weights_a.items():
        np.testing.assert_allclose(weights_b[name], value, rtol=1e-5, atol=1e-7,
                                   err_msg=name)
    codes_a, codes_b = np.load(straight / "eval_codes.npz"), np.load(out / "eval_codes.npz")
    np.testing.assert_allclose(codes_b["codes"], codes_a["codes"], rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_configurations_never_share_a_run_and_overwrite_keeps_foreign_files(tmp_path,
                                                                             monkeypatch):
    """Issue 17.1, 19.2, 19.4, 19.5, 19.10."""
    from benchmark.runs import fingerprint, run
    monkeypatch.chdir(tmp_path)
    one = _run_here(None, "beta_vae.beta = 1")
    eight = _run_here(None, "beta_vae.beta = 8")
    assert one != eight and one.parent == eight.parent == pathlib.Path("runs")
    assert one.name.startswith("beta_vae_dsprites_original_seed0_")
    for path in (one, eight):
        assert (path / "results.json").exists()

    # another configuration into a finished run's directory: refused, naming the binding
    with pytest.raises(fingerprint.ConfigMismatch, match=r"beta_vae\.beta: 1 -> 8.*--overwrite"):
        _run_here(one, "beta_vae.beta = 8")
    # ... and into an interrupted one (checkpoints, no results.json): resume refused
    first = json.loads((eight / "results.json").read_text())
    (eight / "results.json").unlink()
    with pytest.raises(fingerprint.ConfigMismatch, match=r"run\.steps: 4 -> 6"):
        _run_here(eight, "beta_vae.beta = 8", "run.steps = 6")

    # same configuration: resumes at its last step, keeps final_losses, cleans temp files
    temporaries = [eight / ".results.json.x1y2z3w4.json", eight / "checkpoints" / "ckpt-9_temp",
                   eight / "checkpoints" / "checkpoint.tmp0123abcd"]
    temporaries[0].write_text("{")
    temporaries[1].mkdir()
    (temporaries[1] / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"x")
    temporaries[2].write_text("partial")
    _run_here(eight, "beta_vae.beta = 8")
    again = json.loads((eight / "results.json").read_text())
    losses = [{k: v for k, v in r["scalars"].items() if k.startswith("loss/")}
              for r in (first, again)]
    assert again["resumed_from"] == 4 and losses[1] == losses[0]
    assert losses[0] and not any(p.exists() for p in temporaries)

    # --overwrite: replaces the run, removes what it wrote, never a foreign file
    (one / "notes.txt").write_text("mine")
    (one / "mine").mkdir()
    _run_here(one, "beta_vae.beta = 8", overwrite=True)
    replaced = json.loads((one / "results.json").read_text())
    assert replaced["resumed_from"] == 0 and replaced["fingerprint"] == first["fingerprint"]
    assert (one / "notes.txt").read_text() == "mine" and (one / "mine").is_dir()
    manifest = json.loads((one / run.MANIFEST).read_text())
    assert "results.json" in manifest and "notes.txt" not in manifest


def test_published_run_without_fingerprint_is_identified_by_its_gin_config(tmp_path):
    from benchmark.runs import fingerprint
    published = ROOT / "results" / "zietlow2021_cpu" / "runs" / "ae_dsprites_original_seed0"
    result = json.loads((published / "results.json").read_text())
    assert "fingerprint" not in result
    ident = fingerprint.recorded(published)
    assert ident["bindings"]["run.steps"] == "2000"
    assert ident == fingerprint.identity((published / "operative_config.gin").read_text())


@pytest.mark.parametrize("binding, message", [
    ("run.checkpoint_every = 0", "run.checkpoint_every must be an integer >= 1, found 0"),
    ("run.log_every = 0", "run.log_every must be an integer >= 1, found 0"),
    ("run.steps = -5", r"run.steps must be an integer in \[1, 100000000\], found -5"),
    ("run.steps = 100000000000000000000000", r"run.steps must be an integer in \[1, 100000000\], found 1"),
    ("run.threads = 0", r"run.threads must be an integer in \[1, 1024\], found 0"),
    ("run.batch_size = 2.5", "run.batch_size must be an integer >= 1, found 2.5"),
    ("run.metrics = ['mig', 'dcii']", r"run.metrics: unknown metric\(s\) \['dcii'\]"),
    ("run.metrics = 'mig'", "run.metrics must be a list of metric names"),
    ("run.seed = True", r"run.seed must be an integer in \[0, 4294967295\], found True"),
    ("run.shared_eval_sample = 1", "run.shared_eval_sample must be True or False, found 1"),
    ("run.eval_every = 3", r"run.eval_every must be a multiple of run.checkpoint_every \(2\)"),
])
def test_bad_run_settings_fail_before_any_work(tmp_path, binding, message):
    from benchmark.runs import run
    with pytest.raises(run.RunError, match=message):
        _run_here(tmp_path / "run", binding)
    assert not (tmp_path / "run").exists()


def test_bad_metric_setting_fails_before_any_work(tmp_path):
    from benchmark.runs import run
    with pytest.raises(run.RunError, match="metric settings: sap.classifier must be one of "
                                           "'threshold', 'linear_svm', found 'svm'"):
        _run_here(tmp_path / "run", "run.metrics = ['sap']", "sap.classifier = 'svm'")
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_quantised_models_are_scored_as_discrete_codes(tmp_path):
    """Issue 15 item 6: the runner reads the model's `code_is_discrete` and InfoMEC uses the
    discrete estimator on it; the settings say so."""
    from benchmark.core import config
    from benchmark.runs import run
    from models.factorqvae import DiscreteLatentVAE
    from models.quantized import QuantizedAE
    from models.tripod import Tripod
    from models.vae import VAE
    assert QuantizedAE.code_is_discrete and DiscreteLatentVAE.code_is_discrete
    assert Tripod.code_is_discrete and not getattr(VAE, "code_is_discrete", False)
    gin.clear_config()
    try:
        config.parse_config(["models/qlae.gin", "datasets/dsprites.gin"],
                            [*TINY_BINDINGS, "run.figures = False",
                             "run.metrics = ['infomec']", "run.shared_eval_sample = False"])
        out = run.run(tmp_path / "qlae", False)
    finally:
        gin.clear_config()
    results = json.loads((out / "results.json").read_text())
    assert results["metric_settings"]["infomec"]["discrete"] is True
    assert results["metric_settings"]["infomec"]["sample"] == "own"
    assert results["metric_settings"]["infomec"]["prune_fraction"] == pytest.approx(1 / 20)
    assert "metric/infomec/infom" in results["scalars"] or "infomec" in results["errors"]


def test_second_writer_is_refused_naming_the_holder(tmp_path):
    from benchmark.core.lock import DirectoryLocked, directory_lock
    out = tmp_path / "run"
    with directory_lock(out, "the first writer"):
        with pytest.raises(DirectoryLocked, match=rf"pid {os.getpid()} .*the first writer"):
            _run_here(out)
    assert not (out / "checkpoints").exists()


def test_metric_points_caps_every_evaluation_sample():
    """Issue 30 item 4: a smoke test in seconds. run.metric_points caps every metric's
    sample sizes (recorded as its settings) and the evaluation / health samples."""
    from benchmark import metrics
    from benchmark.core import config
    from benchmark.runs import run
    gin.clear_config()
    try:
        config.parse_config([], ["run.metric_points = 300"])
        settings = run.run_settings()
    finally:
        gin.clear_config()
    assert (settings.metric_points, settings.eval_points,
            settings.health_points) == (300, 300, 300)
    capped = metrics.resolve_settings(["mig", "dci", "factor_vae_score", "infomec"], 0,
                                      max_points=300)
    full = metrics.resolve_settings(["mig", "dci", "factor_vae_score", "infomec"], 0)
    assert capped["mig"]["num_train"] == 300 and full["mig"]["num_train"] == 10000
    assert (capped["dci"]["num_train"], capped["dci"]["num_test"]) == (300, 300)
    assert capped["factor_vae_score"]["pool_size"] == 300
    assert capped["factor_vae_score"]["num_train"] == 300
    assert capped["mig"]["batch_size"] == full["mig"]["batch_size"]     # not a size
    assert metrics.shared_rows({k: {**v, "sample": "shared"} for k, v in capped.items()
                                if k != "factor_vae_score"}) == 600


def test_a_learning_curve_leaves_training_unchanged_and_is_resumable(tmp_path):
    """run.eval_every scores the run at checkpoints (curves.json, TensorBoard 'eval/'), and
    the run's final numbers are those of the same run without a curve (the same
    fingerprint)."""
    from benchmark.runs import fingerprint, run
    plain = _run_here(tmp_path / "plain")
    curved = _run_here(tmp_path / "curved", "run.eval_every = 2")
    points = json.loads((curved / run.CURVES).read_text())["points"]
    assert [p["step"] for p in points] == [2, 4]
    assert all(0.0 <= p["metric/mig"] <= 1.0 and "health/active_units" in p for p in points)
    final = json.loads((curved / "results.json").read_text())["scalars"]
    assert points[-1]["metric/mig"] == pytest.approx(final["metric/mig"])
    assert final == json.loads((plain / "results.json").read_text())["scalars"]
    assert fingerprint.recorded(curved)["fingerprint"] == \
        fingerprint.recorded(plain)["fingerprint"]


def test_a_run_started_from_a_shorter_run_equals_the_longer_run(tmp_path):
    """run.start_from: a 4-step run trained on from a 2-step run of the same configuration
    ends where a 4-step run from scratch ends (a resume), with the same fingerprint, the
    shorter run's curve point kept and where it started recorded; a source of another
    configuration, or one past run.steps, is refused before anything is trained."""
    from benchmark.runs import fingerprint, run
    short = _run_here(tmp_path / "short", "run.steps = 2", "run.eval_every = 2")
    scratch = _run_here(tmp_path / "scratch", "run.eval_every = 2")
    started = _run_here(tmp_path / "started", "run.eval_every = 2",
                        f"run.start_from = '{short}'")
    ours = json.loads((started / "results.json").read_text())
    theirs = json.loads((scratch / "results.json").read_text())
    assert ours["resumed_from"] == 2 and ours["steps"] == 4
    for key, value in theirs["scalars"].items():
        if isinstance(value, float):
            assert ours["scalars"][key] == pytest.approx(value, rel=1e-4, abs=1e-6), key
    assert fingerprint.recorded(started)["fingerprint"] == \
        fingerprint.recorded(scratch)["fingerprint"]
    points = json.loads((started / run.CURVES).read_text())["points"]
    assert [p["step"] for p in points] == [2, 4]
    assert points[0] == json.loads((short / run.CURVES).read_text())["points"][0]
    record = json.loads((started / run.STARTED_FROM).read_text())
    assert record["step"] == 2 and record["run_dir"] == str(short.resolve())
    assert run.STARTED_FROM in json.loads((started / run.MANIFEST).read_text())
    with pytest.raises(run.RunError, match="differs in beta_vae.beta"):
        _run_here(tmp_path / "other", "beta_vae.beta = 2.0", f"run.start_from = '{short}'")
    with pytest.raises(run.RunError, match="past this run's run.steps = 1"):
        _run_here(tmp_path / "shorter", "run.steps = 1", f"run.start_from = '{short}'")
    assert not (tmp_path / "other" / "checkpoints").exists()
