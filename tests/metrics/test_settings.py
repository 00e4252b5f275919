"""Issue 20: codes-level evaluation honours the gin-bound metric settings (flags, presets),
every output records the settings behind its scores, and a report refuses to put scores
of different settings in one column."""

import json
import os
import subprocess
import sys

import gin
import numpy as np
import pytest

from benchmark import metrics
from benchmark.metrics import dci, sap
from benchmark.metrics import settings as settings_lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: the five varying dSprites factors: sizes and values (REFERENCE.md, Datasets)
DSPRITES_VALUES = [np.array([1.0, 2.0, 3.0]), np.linspace(0.5, 1.0, 6),
                   np.linspace(0.0, 2 * np.pi, 40), np.linspace(0.0, 1.0, 32),
                   np.linspace(0.0, 1.0, 32)]


def _perfect_dsprites(n=10000, seed=0):
    """(factor classes (n, 5), the perfect code: the factor values (n, 5))."""
    rng = np.random.default_rng(seed)
    f = np.stack([rng.integers(0, len(v), n) for v in DSPRITES_VALUES], axis=1)
    return f, np.stack([v[f[:, j]] for j, v in enumerate(DSPRITES_VALUES)], axis=1)


def _small(n=600, seed=0):
    rng = np.random.default_rng(seed)
    f = np.stack([rng.integers(0, s, n) for s in (3, 4, 5)], axis=1)
    return f, f + rng.normal(0, 0.05, f.shape)


def _cli(*args):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run([sys.executable, "-m", "benchmark.metrics", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def clean_gin():
    gin.clear_config()
    yield
    gin.clear_config()


def test_codes_level_honours_gin_bindings(clean_gin):
    f, z = _small()
    default = metrics.evaluate_codes(f, z, seed=1, names=["sap"])["sap"]
    gin.parse_config(["sap.classifier = 'linear_svm'"])
    bound = metrics.evaluate_codes(f, z, seed=1, names=["sap"])["sap"]
    direct = sap.sap_from_codes(f[:400], z[:400], f[400:], z[400:], "linear_svm",
                                seed=int(metrics.metric_rng(1, "sap").integers(2**31 - 1)))
    assert bound == direct and bound["sap"] != default["sap"]
    settings = metrics.resolve_settings(["sap", "dci_random_forest"], 1)
    assert settings["sap"]["classifier"] == "linear_svm" and settings["sap"]["seed"] == 1
    assert settings["dci_random_forest"]["classifier"] == "random_forest"    # fixed
    codes_level = metrics.codes_settings(settings, 600)["sap"]
    assert codes_level["num_train"] == 400 and codes_level["num_test"] == 200
    assert codes_level["level"] == "codes" and "batch_size" not in codes_level  # encode batch
    gin.parse_config(["sap.classifier = 'svm'"])
    with pytest.raises(ValueError, match="sap.classifier must be one of 'threshold', "
                                         "'linear_svm', found 'svm'"):
        metrics.resolve_settings(["sap"], 0)


def test_evaluate_linear_svm_binding_gives_dlibs_sap_and_the_default_the_threshold_value(
        tmp_path):
    f, z = _perfect_dsprites()
    path = tmp_path / "perfect.npz"
    np.savez(path, factors=f, codes=z)
    out = tmp_path / "dlib.json"
    result = _cli("evaluate", f"--codes={path}", "--metrics=sap", f"--out={out}",
                  "--gin_bindings=sap.classifier = 'linear_svm'")
    assert result.returncode == 0, result.stderr
    scores = json.loads(out.read_text())
    assert scores["metrics"]["sap"]["sap"] == pytest.approx(0.18, abs=0.01)   # dlib: 0.182
    assert scores["metric_settings"]["sap"]["classifier"] == "linear_svm"
    assert scores["gin_bindings"] == ["sap.classifier = 'linear_svm'"]
    assert "settings: " in result.stdout and "classifier=linear_svm" in result.stdout
    default = tmp_path / "suite.json"
    assert _cli("evaluate", f"--codes={path}", "--metrics=sap", f"--out={default}"
                ).returncode == 0
    scores = json.loads(default.read_text())
    threshold = np.mean([1 - 1 / len(v) for v in DSPRITES_VALUES])           # 0.88
    assert scores["metrics"]["sap"]["sap"] == pytest.approx(threshold, abs=0.01)
    assert scores["metric_settings"]["sap"] == {
        "classifier": "threshold", "level": "codes", "seed": 0,
        "num_train": 6667, "num_test": 3333, "train_fraction": 2 / 3}


@pytest.mark.slow
def test_preset_dlib_changes_dcis_classifier_and_records_every_setting(tmp_path):
    f, z = _small()
    path = tmp_path / "codes.npz"
    np.savez(path, factors=f, codes=z)
    outs = {}
    for preset in ("dlib", "suite"):
        outs[preset] = tmp_path / f"{preset}.json"
        result = _cli("evaluate", f"--codes={path}", "--metrics=dci,factor_vae_score",
                      f"--preset={preset}", f"--out={outs[preset]}", "--seed=3")
        assert result.returncode == 0, result.stderr
    dlib, suite = (json.loads(outs[p].read_text()) for p in ("dlib", "suite"))
    assert dlib["preset"] == "dlib" and dlib["gin_files"] == ["metrics/dlib.gin"]
    assert dlib["metric_settings"]["dci"]["classifier"] == "gbt"
    assert suite["metric_settings"]["dci"]["classifier"] == "hist_gbt"
    direct = dci.dci_from_codes(f[:400], z[:400], f[400:], z[400:],
                                metrics.metric_rng(3, "dci"), "gbt")
    assert dlib["metrics"]["dci"] == direct                      # scored with exact GBT
    fv = dlib["metric_settings"]["factor_vae_score"]
    assert (fv["prune_threshold"], fv["prune_relative"], fv["num_variance_estimate"],
            fv["batch_size"], fv["num_train"], fv["num_eval"], fv["seed"]) == (
        0.05, False, 10000, 64, 10000, 5000, 3)


def test_a_misspelt_binding_or_bad_value_exits_2_before_any_work(tmp_path):
    missing = tmp_path / "never_read.npz"          # reading it would be another error
    result = _cli("evaluate", f"--codes={missing}", "--metrics=sap",
                  "--gin_bindings=sap.clasifier = 'linear_svm'")
    assert result.returncode == 2 and "clasifier" in result.stderr
    assert "never_read" not in result.stderr and "Traceback" not in result.stderr
    result = _cli("evaluate", f"--codes={missing}", "--metrics=sap",
                  "--gin_bindings=sap.classifier = 'svm'")
    assert result.returncode == 2 and "sap.classifier must be one of" in result.stderr
    assert "never_read" not in result.stderr
    result = _cli("evaluate", f"--codes={missing}", "--preset=dlb")
    assert result.returncode != 0 and "preset" in result.stderr


def _run_result(path, seed, settings, sap_value=0.5):
    path.mkdir(parents=True)
    payload = {"schema_version": 1, "model": "beta_vae", "seed": seed,
               "dataset": {"name": "dsprites", "variant": "original"},
               "metrics": {"sap": {"sap": sap_value}, "mig": {"mig": 0.3},
                           "health": {"overpruned": False}},
               "gin_config": f"run.seed = {seed}"}
    if settings is not None:
        payload["metric_settings"] = settings
    (path / "results.json").write_text(json.dumps(payload))


def _settings(seed, classifier="threshold", discrete=False, batch_size=16):
    return {"sap": {"batch_size": batch_size, "classifier": classifier, "num_test": 5000,
                    "num_train": 10000, "level": "data", "seed": seed},
            "mig": {"batch_size": 16, "num_bins": 20, "num_train": 10000, "level": "data",
                    "seed": seed},
            "infomec": {"discrete": discrete, "n_neighbors": 3, "level": "data",
                        "seed": seed}}


def test_report_refuses_a_column_of_different_settings_and_accepts_legacy(tmp_path):
    from benchmark.studies import report, report_data
    root = tmp_path / "study"
    _run_result(root / "runs" / "a", 0, _settings(0))
    _run_result(root / "runs" / "b", 1, _settings(1, discrete=True, batch_size=64))
    _run_result(root / "runs" / "legacy", 2, None)          # published results: no settings
    path = report.write_report(root, tmp_path / "out")      # seeds, code kind may differ
    text = path.read_text()
    assert "## Metric settings" in text
    assert "| SAP | `sap` | classifier=threshold, num_test=5000, num_train=10000 | 2 | 1 |" in text
    _run_result(root / "runs" / "c", 3, _settings(3, classifier="linear_svm"))
    with pytest.raises(report_data.ReportError) as error:
        report.write_report(root, tmp_path / "out2")
    message = str(error.value)
    assert "SAP" in message and "sap.classifier = 'threshold' in 2 run(s) vs 'linear_svm' " \
                                 "in 1 run(s)" in message and "runs/c" in message
    assert "num_bins" not in message                        # only the differing setting
    assert not (tmp_path / "out2" / "report.md").exists()


def test_only_legacy_runs_report_unknown_settings():
    summary = settings_lib.check_columns([("x", None), ("y", None)],
                                         [("SAP", "sap", "sap"), ("PSNR", "health", "psnr")])
    assert summary == {"sap": {"columns": ["SAP"], "settings": None, "recorded": 0,
                               "legacy": 2}}


def test_only_the_gin_layer_of_metrics_imports_gin(clean_gin):
    """Gin at the edges: the metric modules are plain functions; configurables.py
    registers each under its gin name and the registry reads the bindings."""
    import ast
    import pathlib
    importing = []
    for path in sorted((pathlib.Path(ROOT) / "benchmark" / "metrics").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "gin" for n in names):
                importing.append(path.name)
    assert sorted(set(importing)) == ["__init__.py", "configurables.py"]
    gin.parse_config(["mig.num_bins = 30", "dci.classifier = 'gbt'",
                      "infomec.discrete = True"])
    assert gin.get_bindings(metrics.METRICS["mig"].configurable) == {"num_bins": 30}
    found = metrics.resolve_settings(["mig", "dci", "infomec"], 0)
    assert (found["mig"]["num_bins"], found["dci"]["classifier"],
            found["infomec"]["discrete"]) == (30, "gbt", True)
    for name, entry in metrics.METRICS.items():
        assert entry.gin_name == ("dci" if name in ("dci_random_forest", "dci_readout")
                                  else name)
