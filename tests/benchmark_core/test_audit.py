import json

import pytest

from benchmark import audit, report
from perturbations import artefact, manipulation
from tests.benchmark_core.test_report import _result
from tests.benchmark_core.test_study import TINY_RUN


def _drops(original, modified, noisy=None):
    out = {"modified": report.drop_test(original, modified)}
    if noisy is not None:
        out["noisy"] = report.drop_test(original, noisy)
    return out


def test_verdicts():
    beta_vae = _drops([0.3, 0.32, 0.28, 0.31], [0.1, 0.12, 0.08, 0.11])
    label, _ = audit.verdict(_drops([0.3, 0.32, 0.28, 0.31], [0.1, 0.12, 0.08, 0.11],
                                    [0.29, 0.3, 0.31, 0.3]), beta_vae)
    assert label == "DEPENDS"
    label, _ = audit.verdict(_drops([0.3, 0.32, 0.28, 0.31], [0.30, 0.31, 0.29, 0.31]),
                             beta_vae)
    assert label == "ROBUST"
    # Drops as much on noise as on the manipulation: not evidence of local structure.
    label, reason = audit.verdict(_drops([0.3, 0.32, 0.28, 0.31], [0.1, 0.12, 0.08, 0.11],
                                         [0.05, 0.06, 0.04, 0.05]), beta_vae)
    assert label == "INCONCLUSIVE" and "noisy" in reason
    label, _ = audit.verdict(_drops([0.3], [0.1]), beta_vae)
    assert label == "INCONCLUSIVE"
    label, reason = audit.verdict(_drops([0.3, 0.32, 0.28, 0.31], [0.30, 0.31, 0.29, 0.31]),
                                  None)
    assert label == "INCONCLUSIVE" and "no beta-VAE drop" in reason
    # Not significant, but too spread to rule out the reference's drop.
    label, reason = audit.verdict(_drops([0.3, 0.1, 0.5], [0.2, 0.35, 0.05]), beta_vae)
    assert label == "INCONCLUSIVE" and "reaches the beta-VAE reference's drop" in reason


def test_reference_check_says_whether_the_reference_shows_the_effect():
    shown = audit.reference_check(_drops([0.3, 0.32, 0.28, 0.31], [0.1, 0.12, 0.08, 0.11]))
    assert "drops significantly" in shown
    unclear = audit.reference_check(_drops([0.07, 0.06, 0.05], [0.01, 0.08, 0.06]))
    assert "not significant" in unclear and "0.23 → 0.07" in unclear
    assert "too few" in audit.reference_check(_drops([0.3], [0.1]))
    assert "too few" in audit.reference_check(None)


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
    path = audit.run_audit("examples/sparse_vae.gin", "sparse_vae", [0], reference, out)
    result = json.loads((out / "audit.json").read_text())
    assert result["verdict"] == "INCONCLUSIVE"          # one seed cannot test a drop
    assert result["model_name"] == "sparse_vae" and not result["failed_runs"]
    assert result["reference_drops"]["beta_vae"]["modified"]["drop"] == pytest.approx(
        (0.3 + 0.32 + 0.28) / 3 - (0.1 + 0.12 + 0.09) / 3)
    assert sorted(p.parent.name for p in (out / "runs").glob("*/results.json")) == [
        "sparse_vae_dsprites_modified_seed0", "sparse_vae_dsprites_noisy_seed0",
        "sparse_vae_dsprites_original_seed0"]
    text = path.read_text()
    assert "Verdict: INCONCLUSIVE" in text and "β-VAE (reference" in text
    assert "reference β-VAE's MIG drops significantly" in text
    assert (out / "report" / "report.md").exists()
    with pytest.raises(FileNotFoundError, match="study.json"):
        audit.run_audit("examples/sparse_vae.gin", "x", [0], tmp_path / "none", out)
