"""`benchmark.readings.magnitude` on small studies written here: S1 rejected and not, S3
testable and not, incomplete or malformed runs, and the command."""

import json
import pathlib

import pytest

from benchmark.core.errors import UserError
from benchmark.readings import magnitude
from tests.cli import python_m

#: the published study's counts (results/shapes3d_magnitude_cpu, seeds 0-4)
PUBLISHED = {"original": [6, 5, 6, 4, 6], "modified": [3, 3, 3, 3, 3],
             "noisy@0.2787": [3, 3, 3, 4, 3], "noisy@0.175": [3, 3, 3, 3, 3],
             "noisy@0.2627": [4, 4, 3, 4, 3]}


def dataset(arm: str) -> dict:
    """A results.json `dataset` of `arm` ('original' written the older way, no variant)."""
    if arm == "original":
        return {"name": "shapes3d"}
    variant, _, eps = arm.partition("@")
    return {"name": "shapes3d", "variant": variant, **({"eps": float(eps)} if eps else {})}


def write_study(root: pathlib.Path, dims: dict) -> pathlib.Path:
    """A study directory with runs/NAME/results.json for every (arm, seed) of `dims`
    ({arm: [active dims of seeds 0, 1, ...]})."""
    for arm, counts in dims.items():
        for seed, count in enumerate(counts):
            run = root / "runs" / f"beta_vae_shapes3d_{arm}_seed{seed}"
            run.mkdir(parents=True)
            (run / "results.json").write_text(json.dumps({
                "dataset": dataset(arm), "seed": seed,
                "scalars": {"health/active_units": count}}))
    return root


def test_s1_rejects_when_noise_separates_from_original_and_s2_does_not():
    """The published counts: noise 3s against original 4-6 separate completely (exact
    p 1/252 = 0.004, Holm 0.008); modified and noise are tied (p 0.58)."""
    tests = magnitude.analysis(PUBLISHED)["tests"]
    assert tests["S1"]["p"] == pytest.approx(1 / 252)
    assert tests["S1"]["p_holm"] == pytest.approx(2 / 252)
    assert tests["S1"]["supported"] is True
    assert tests["S2"]["supported"] is False and tests["S2"]["p"] > 0.5
    assert tests["S1"]["claim"] == "fewer active dims on noisy@0.175 than on original"


def test_s1_does_not_reject_when_noise_keeps_the_original_dims():
    tests = magnitude.analysis({**PUBLISHED, "noisy@0.175": [6, 5, 6, 4, 6]})["tests"]
    assert tests["S1"]["p"] > 0.4 and tests["S1"]["supported"] is False
    assert tests["S2"]["p"] == pytest.approx(1 / 252) and tests["S2"]["supported"] is True


def test_s3_tost_within_one_dim_and_not_testable_when_constant():
    s3 = magnitude.s3(PUBLISHED)
    assert s3["testable"] is True and s3["supported"] is False
    assert s3["diff"] == pytest.approx(-0.6) and "equivalent" not in s3
    close = magnitude.s3({**PUBLISHED, "noisy@0.2627": [3, 3, 3, 4, 3]})
    assert close["supported"] is True and close["p"] < 0.05
    constant = magnitude.s3({**PUBLISHED, "noisy@0.2627": [3] * 5})
    assert constant == {"claim": "modified and noisy@0.2627 equivalent in mean active dims "
                                 "within ±1", "test": "TOST (two one-sided Welch)",
                        "margin": 1.0, "testable": False, "supported": False,
                        "why": "both arms are constant: a t-based test needs spread"}


def test_active_dims_reads_the_runs_and_ignores_other_arms(tmp_path):
    study = write_study(tmp_path, {**PUBLISHED, "noisy@0.5": [1, 1]})
    assert magnitude.active_dims(study) == PUBLISHED
    assert magnitude.arm_of({"variant": "noisy", "eps": 0.2627}) == "noisy@0.2627"
    assert magnitude.arm_of({}) == "original"


def test_lines():
    text = magnitude.lines(magnitude.analysis(PUBLISHED))
    assert text[0] == "original: active dims [6, 5, 6, 4, 6]"
    assert text[5].startswith("S1 (fewer active dims on noisy@0.175 than on original): "
                              "p 0.00397, Holm 0.00794; supported: True")
    assert "90 % CI [-1.12, -0.0778], TOST p 0.0889; supported: False" in text[7]


def test_an_arm_with_missing_seeds_is_one_user_error_line(tmp_path):
    study = write_study(tmp_path, {**PUBLISHED, "modified": [3, 3, 3, 3]})
    with pytest.raises(UserError) as raised:
        magnitude.main([str(study)])
    assert str(raised.value) == (f"{study}: modified: expected the finished runs of seeds "
                                 "0-4 in runs/*/results.json, found seeds [0, 1, 2, 3]")
    assert not (study / "analysis.json").exists()


def test_malformed_results_and_a_missing_folder_are_one_user_error_line(tmp_path):
    study = write_study(tmp_path / "study", PUBLISHED)
    path = study / "runs" / "beta_vae_shapes3d_modified_seed2" / "results.json"
    path.write_text('{"dataset": {"variant": "modified"}, "seed": 2, "scalars": {}}')
    with pytest.raises(UserError) as raised:
        magnitude.main([str(study)])
    assert str(raised.value).startswith(f"{path}: expected a run's results.json with "
                                        "dataset, seed and scalars['health/active_units'], "
                                        "found KeyError")
    with pytest.raises(UserError, match="found no directory"):
        magnitude.main([str(tmp_path / "none")])


@pytest.mark.slow
def test_the_command_writes_the_analysis(tmp_path):
    study = write_study(tmp_path / "study", PUBLISHED)
    shown = python_m("benchmark.readings", "magnitude", "study", cwd=tmp_path, timeout=300)
    assert shown.returncode == 0, shown.stderr
    assert sorted(p.name for p in study.iterdir()) == ["analysis.json", "runs"]
    written = json.loads((study / "analysis.json").read_text())
    assert written["active_dims"] == PUBLISHED and written["alpha"] == 0.05
    assert [written["tests"][k]["supported"] for k in ("S1", "S2", "S3")] == [
        True, False, False]
    assert "S2 (fewer active dims on modified than on noisy@0.175)" in shown.stdout
