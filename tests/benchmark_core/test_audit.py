import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as sp

from benchmark import audit, stats
from perturbations import artefact, manipulation
from tests.benchmark_core.test_report import _result
from tests.benchmark_core.test_study import TINY_RUN

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _arms(original, modified=(), noisy=(), pruned=None):
    """Synthetic MIG arms in the form of audit.arms."""
    pruned = pruned or {}
    return {v: {"kept": list(values), "overpruned": list(pruned.get(v, []))}
            for v, values in (("original", original), ("modified", modified), ("noisy", noisy))}


HIGH, LOW = [0.30, 0.32, 0.28, 0.31], [0.10, 0.12, 0.08, 0.11]
BETA_VAE = _arms(HIGH, LOW)                         # drop 0.2, significant: margin 0.1
AE = _arms([0.05, 0.06, 0.04, 0.05])


def _one_sided(a, b):
    return sp.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue


def test_positive_control_comes_first():
    method = _arms(HIGH, LOW, [0.29, 0.30, 0.31, 0.30])           # would be DEPENDS
    weak = _arms([0.07, 0.06, 0.05], [0.01, 0.08, 0.06])
    result = audit.verdict(method, weak, AE)
    assert result["label"] == "INCONCLUSIVE" and result["margin"] is None
    assert result["reason"].startswith("positive control failed")
    assert "0.23 → 0.07" in result["reason"] and "drop" not in result["tests"]
    original, modified = weak["original"]["kept"], weak["modified"]["kept"]
    assert result["tests"]["positive_control"]["p_drop"] == pytest.approx(
        _one_sided(original, modified))
    assert result["seeds_needed"] == stats.seeds_needed(
        np.mean(original) - np.mean(modified), stats.pooled_sd(original, modified))
    assert f"about {result['seeds_needed']} seeds per arm" in result["reason"]
    too_few = audit.verdict(method, _arms(HIGH, [0.1]), AE)
    emptied = audit.verdict(method, _arms(HIGH, pruned={"modified": [0.1, 0.1, 0.1]}), AE)
    for result in (too_few, emptied):
        assert result["label"] == "INCONCLUSIVE"
        assert result["reason"].startswith("positive control not testable")
    assert "3 over-pruned and excluded (rate 100%)" in emptied["reason"]
    passed, _, sentence = audit.positive_control(BETA_VAE)
    assert passed and "drops significantly" in sentence


def test_floor_check_and_too_few_runs():
    flat = _arms([0.05, 0.07, 0.04, 0.06], LOW, LOW)
    result = audit.verdict(flat, BETA_VAE, AE)
    assert result["label"] == "INCONCLUSIVE"
    assert result["reason"].startswith("does not disentangle at this scale")
    assert result["tests"]["floor"]["p"] == pytest.approx(
        _one_sided([0.05, 0.07, 0.04, 0.06], AE["original"]["kept"]))
    assert result["margin"] == pytest.approx(0.1)
    result = audit.verdict(_arms(HIGH, LOW, LOW), BETA_VAE, _arms([0.05]))
    assert result["label"] == "INCONCLUSIVE" and "no floor check" in result["reason"]
    result = audit.verdict(_arms([0.3], [0.1]), BETA_VAE, AE)
    assert result["label"] == "INCONCLUSIVE"
    assert "the method's original arm has 1 run(s)" in result["reason"]


def test_depends_needs_a_drop_larger_than_on_noise():
    noisy = [0.29, 0.30, 0.31, 0.30]
    result = audit.verdict(_arms(HIGH, LOW, noisy), BETA_VAE, AE)
    assert result["label"] == "DEPENDS"
    assert result["tests"]["drop"]["p_drop"] == pytest.approx(_one_sided(HIGH, LOW))
    assert result["tests"]["difference"]["p"] == pytest.approx(_one_sided(noisy, LOW))
    # drops as much on noise as on the manipulation: not evidence of local structure
    result = audit.verdict(_arms(HIGH, LOW, [0.05, 0.06, 0.04, 0.05]), BETA_VAE, AE)
    assert result["label"] == "INCONCLUSIVE" and "noisy" in result["reason"]
    assert "not positive" in result["reason"] and result["seeds_needed"] is None
    # a smaller drop on noise, but not significantly smaller: seeds for the difference
    close = [0.08, 0.16, 0.10, 0.14]
    result = audit.verdict(_arms(HIGH, LOW, close), BETA_VAE, AE)
    assert result["label"] == "INCONCLUSIVE" and result["seeds_needed"] == (
        stats.seeds_needed(np.mean(close) - np.mean(LOW), stats.pooled_sd(LOW, close)))
    result = audit.verdict(_arms(HIGH, LOW), BETA_VAE, AE)
    assert result["label"] == "INCONCLUSIVE" and "noise sensitivity" in result["reason"]


def test_robust_is_equivalence_within_the_margin():
    same = [0.30, 0.31, 0.29, 0.31]
    result = audit.verdict(_arms(HIGH, same, same), BETA_VAE, AE)
    assert result["label"] == "ROBUST"
    margin = 0.5 * (np.mean(HIGH) - np.mean(LOW))
    assert result["margin"] == pytest.approx(margin)
    assert result["tests"]["equivalence"]["p"] == pytest.approx(max(
        _one_sided(np.add(HIGH, margin), same), _one_sided(same, np.subtract(HIGH, margin))))
    # a significant drop, no larger than on noise and well within the margin: ROBUST too
    smaller = list(np.subtract(HIGH, 0.03))
    result = audit.verdict(_arms(HIGH, smaller, smaller), BETA_VAE, AE)
    assert result["tests"]["drop"]["p_drop"] < 0.05 and result["label"] == "ROBUST"
    # a margin of a twentieth of the reference drop is too tight for these seeds
    result = audit.verdict(_arms(HIGH, same, same), BETA_VAE, AE, margin_fraction=0.05)
    assert result["label"] == "INCONCLUSIVE"
    # not significant, but too spread to rule out a drop of the margin's size
    original, modified = [0.30, 0.20, 0.40, 0.25, 0.35], [0.26, 0.15, 0.36, 0.20, 0.30]
    result = audit.verdict(_arms(original, modified, modified), BETA_VAE, AE)
    assert result["label"] == "INCONCLUSIVE" and result["reason"].startswith("neither")
    assert result["seeds_needed"] == stats.seeds_needed(
        margin, stats.pooled_sd(original, modified))


def test_overpruning_is_reported_and_said_when_it_decides():
    method = _arms(HIGH, [0.10], [0.29, 0.30, 0.31, 0.30],
                   pruned={"modified": [0.10, 0.12]})
    result = audit.verdict(method, BETA_VAE, AE)
    assert result["label"] == "INCONCLUSIVE" and result["exclusions_decide"]
    assert "modified arm has 1 run(s) left of 3: 2 over-pruned" in result["reason"]
    assert "counting them, it would be DEPENDS" in result["reason"]
    arm = result["overpruning"]["modified"]
    assert (arm["runs"], arm["overpruned"]) == (3, 2) and arm["rate"] == pytest.approx(2 / 3)
    assert arm["p_fisher"] == pytest.approx(sp.fisher_exact([[0, 4], [2, 1]]).pvalue)
    # exclusions that do not change the label are reported, not flagged
    method = _arms(HIGH, LOW, [0.29, 0.30, 0.31, 0.30], pruned={"modified": [0.09]})
    result = audit.verdict(method, BETA_VAE, AE)
    assert result["label"] == "DEPENDS" and not result["exclusions_decide"]
    assert result["overpruning"]["modified"]["overpruned"] == 1


@pytest.mark.slow
def test_audit_end_to_end_on_tiny_settings(tmp_path):
    art = artefact.save_manipulation(tmp_path / "art", manipulation.manipulation_network(5), {
        "dataset": "dsprites", "factor_sizes": [3, 6, 40, 32, 32], "eps": 0.1})
    reference = tmp_path / "reference"
    reference.mkdir()
    (reference / "study.json").write_text(json.dumps({"settings": {
        "datasets": ["dsprites"], "artefacts": {"dsprites": {"modified": str(art)}},
        "bindings": TINY_RUN, "source": "procedural"}}))
    for i, (o, m) in enumerate([(0.3, 0.1), (0.32, 0.12), (0.28, 0.09)]):
        _result(reference / "runs" / f"b_o{i}", "beta_vae", "original", i, o, 0.5)
        _result(reference / "runs" / f"b_m{i}", "beta_vae", "modified", i, m, 0.5, eps=0.1)
        _result(reference / "runs" / f"p_o{i}", "pcl", "original", i, 0.2, 0.5)
        _result(reference / "runs" / f"p_m{i}", "pcl", "modified", i, 0.21, 0.5, eps=0.1)
    out = tmp_path / "audit"
    # as a user calls it (issue 29: an in-process test once hid a crash of every audit)
    called = subprocess.run(
        [sys.executable, "-m", "benchmark.audit", "--gin_file=examples/sparse_vae.gin",
         "--seeds=0", f"--reference={reference}", f"--output_dir={out}"], cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
            "PYTHONPATH", "")])}, capture_output=True, text=True, timeout=900)
    assert called.returncode == 0, called.stderr[-3000:]
    path = out / "audit.md"
    assert called.stdout.strip().splitlines()[-1] == str(path)
    result = json.loads((out / "audit.json").read_text())
    assert result["verdict"] == "INCONCLUSIVE"          # one seed cannot test a drop
    assert "the method's original arm has" in result["reason"]   # 1 run, or 0 kept
    assert result["margin"] == pytest.approx(0.5 * result["tests"]["positive_control"]["drop"])
    assert result["overpruning"]["method"]["modified"]["runs"] == 1
    assert result["model_name"] == "sparse_vae" and not result["failed_runs"]
    assert result["reference_drops"]["beta_vae"]["modified"]["drop"] == pytest.approx(
        (0.3 + 0.32 + 0.28) / 3 - (0.1 + 0.12 + 0.09) / 3)
    assert sorted(p.parent.name for p in (out / "runs").glob("*/results.json")) == [
        "sparse_vae_dsprites_modified_seed0", "sparse_vae_dsprites_noisy_seed0",
        "sparse_vae_dsprites_original_seed0"]
    text = path.read_text()
    assert "Verdict: INCONCLUSIVE" in text and "β-VAE (reference" in text
    assert "reference β-VAE's MIG drops significantly" in text and "AE (reference" in text
    assert "Over-pruned runs per arm" in text
    assert (out / "report" / "report.md").exists()
    with pytest.raises(FileNotFoundError, match="study.json"):
        audit.run_audit("examples/sparse_vae.gin", "x", [0], tmp_path / "none", out)
