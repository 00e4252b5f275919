"""benchmark/readings/geometry_calibration.py on small studies it writes: codes that
follow the geometry give slope 1, codes that ignore it slope 0; other arms and runs with no
linear latent are counted, not used; a strength the geometry file lacks is one error."""

import json

import pytest

from benchmark.readings import ReadingError
from benchmark.readings import geometry_calibration as calibration
from tests.cli import python_m

GEOMETRY = {"rows": [
    {"name": "wave (ellipse)", "variant": "original", "misalignment_deg": 0.0},
    {"name": "wave (ellipse)", "variant": "wave@0.1", "misalignment_deg": 20.0},
    {"name": "wave (ellipse)", "variant": "wave@0.2", "misalignment_deg": 40.0},
    {"name": "wave (ellipse)", "variant": "wave_texture@0.2", "misalignment_deg": 5.0},
    {"name": "dsprites_ellipse_modified", "variant": "modified@0.3", "misalignment_deg": 0.2}]}


def _study(root, observed_of, extra_runs=()):
    """A study whose beta-VAE runs (3 seeds of original, wave@0.1, wave@0.2) lie at
    observed_of(geometry angle, seed) degrees off the axes."""
    rows = []
    angles = {"original": 0.0, "wave@0.1": 20.0, "wave@0.2": 40.0}
    runs = [(f"beta_vae_{arm}_seed{seed}", "beta_vae", arm, observed_of(angle, seed), 0.9)
            for arm, angle in angles.items() for seed in range(3)]
    for name, model, arm, angle, r2 in [*runs, *extra_runs]:
        run = root / "runs" / name
        run.mkdir(parents=True)
        if arm == "wave@0.1p2":                 # the wave at 2 periods: another arm
            dataset = {"variant": "wave", "eps": 0.1, "wave_periods": 2.0}
        else:
            base, _, eps = arm.partition("@")
            dataset = {"variant": base, **({"eps": float(eps)} if eps else {})}
        (run / "results.json").write_text(json.dumps({"model": model, "dataset": dataset}))
        rows.append({"run": name, "misalignment_deg": [angle, angle], "r2": [r2, r2]})
    (root / "alignment.json").write_text(json.dumps({"columns": [0, 1], "runs": rows}))
    return root


def test_codes_that_follow_the_geometry_have_slope_one_and_others_slope_zero(tmp_path):
    (tmp_path / "g.json").write_text(json.dumps(GEOMETRY))
    angles = calibration.geometry_angles(tmp_path / "g.json")
    assert angles == {"original": 0.0, "wave@0.1": 20.0, "wave@0.2": 40.0}
    following = _study(tmp_path / "f", lambda angle, seed: angle + seed - 1.0, extra_runs=[
        ("beta_vae_noisy_seed0", "beta_vae", "noisy@0.3", 10.0, 0.9),
        ("beta_vae_p2_seed0", "beta_vae", "wave@0.1p2", 10.0, 0.9),
        ("beta_vae_lost_seed0", "beta_vae", "wave@0.2", 30.0, 0.1),
        ("ae_original_seed0", "ae", "original", 30.0, 0.9)])
    found, skipped = calibration.points([following], angles)
    assert skipped == {"other arm": 2, "no linear latent": 1, "not in alignment.json": 0}
    result = calibration.calibration(found)
    assert result["slope"] == pytest.approx(1.0) and result["intercept"] == pytest.approx(0.0)
    assert result["arms"]["wave@0.1"]["mean"] == pytest.approx(20.0)
    assert result["arms"]["wave@0.1"]["n"] == 3
    ignoring = _study(tmp_path / "i", lambda angle, seed: [5.0, 25.0, 15.0][seed])
    flat = calibration.calibration(calibration.points([ignoring], angles)[0])
    assert flat["slope"] == pytest.approx(0.0, abs=1e-9)
    assert flat["slope_ci"][0] < 0 < flat["slope_ci"][1]
    # the command writes both files and prints the table
    out = tmp_path / "out" / "calibration.json"
    shown = python_m("benchmark.readings", "geometry_calibration", str(tmp_path / "g.json"),
                     str(out), str(following), timeout=120)
    assert shown.returncode == 0, shown.stderr
    written = json.loads(out.read_text())
    assert written["slope"] == pytest.approx(1.0) and len(written["points"]) == 9
    assert "| wave@0.2 | 40.0 | 3 | 40.0 [" in out.with_suffix(".md").read_text()
    assert written["slope_ci"][0] < 1.0 < written["slope_ci"][1] < 1.1


def test_a_strength_without_geometry_or_an_unreadable_study_is_one_error(tmp_path):
    (tmp_path / "g.json").write_text(json.dumps({"rows": GEOMETRY["rows"][:2]}))
    study = _study(tmp_path / "s", lambda angle, seed: angle)
    with pytest.raises(ReadingError, match="its arm wave@0.2 has no row in the geometry"):
        calibration.points([study], calibration.geometry_angles(tmp_path / "g.json"))
    (tmp_path / "bad.json").write_text(json.dumps({"rows": []}))
    with pytest.raises(ReadingError, match="expected the wave's rows"):
        calibration.geometry_angles(tmp_path / "bad.json")
    (study / "alignment.json").write_text(json.dumps({"runs": [{"run": "x"}]}))
    with pytest.raises(ReadingError, match="expected runs with 'run', 'misalignment_deg'"):
        calibration.run_angles(study)
    shown = python_m("benchmark.readings", "geometry_calibration", "only_one", timeout=120)
    assert shown.returncode != 0 and "usage:" in shown.stderr
