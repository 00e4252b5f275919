"""The geometry check before retraining (perturbations/geometry.py): known answers for the
axis arithmetic, the wave as the positive control and its texture and noise as negative
ones, and the command as a user calls it."""

import json

import numpy as np
import pytest

from perturbations import geometry
from tests.cli import python_m


@pytest.mark.parametrize("gram, axis", [([[1, 0], [0, 2]], 90.0), ([[2, 0], [0, 1]], 0.0),
                                        ([[1, 1], [1, 1]], 45.0), ([[1, -1], [-1, 1]], 135.0),
                                        ([[3, 1], [1, 3]], 45.0)])
def test_the_principal_axis_of_known_matrices(gram, axis):
    assert geometry.principal_axis_deg(gram) == pytest.approx(axis)


def test_misalignment_turn_and_anisotropy_fold_as_axes_do():
    assert geometry.misalignment_deg(135.0) == pytest.approx(45.0)
    assert geometry.misalignment_deg(71.3) == pytest.approx(18.7)
    assert geometry.misalignment_deg(90.0) == 0.0
    assert geometry.turn_deg(170.0, 10.0) == pytest.approx(20.0)
    assert geometry.turn_deg(90.0, 45.0) == pytest.approx(45.0)
    assert geometry.anisotropy(np.eye(2)) == 0.0
    assert geometry.anisotropy([[1, 0], [0, 3]]) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="2 x 2"):
        geometry.principal_axis_deg([[1, 0, 0]])


def test_the_wave_turns_the_ellipse_geometry_and_its_controls_do_not():
    """Positive control: the wave at 0.1 correlates the factor steps (0.19) and turns the
    principal axis 18.7° (the registered numbers, studies/geometry_cpu.gin); its fixed-phase
    texture and matched noise leave them nearly orthogonal and fail the check."""
    rows = {r["variant"]: r for r in geometry.wave_rows([0.1])}
    assert rows["original"]["correlation"] == pytest.approx(0.0, abs=1e-6)
    assert rows["original"]["axis_deg"] == pytest.approx(90.0)
    wave = rows["wave@0.1"]
    assert wave["passes"] and wave["correlation"] == pytest.approx(0.192, abs=0.002)
    assert wave["misalignment_deg"] == pytest.approx(18.7, abs=0.1)
    controls = [r for name, r in rows.items() if name.startswith(("wave_texture", "noisy"))]
    assert len(controls) == 2
    for control in controls:
        assert not control["passes"] and abs(control["correlation"]) < 0.05


def test_the_command_checks_waves_and_refuses_a_directory_that_is_no_artefact(tmp_path):
    out = tmp_path / "geometry.json"
    found = python_m("perturbations.geometry", "--waves=0.05,0.1", f"--out={out}")
    assert found.returncode == 0, found.stderr[-2000:]
    rows = json.loads(out.read_text())["rows"]
    assert [r["variant"] for r in rows][:3] == ["original", "wave@0.05", "wave@0.1"]
    assert [r["passes"] for r in rows[1:3]] == [False, True]
    assert "| wave (ellipse) | wave@0.1 | 0.192 |" in found.stdout
    empty = tmp_path / "not_an_artefact"
    empty.mkdir()
    refused = python_m("perturbations.geometry", str(empty))
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[0] == (
        f"error: expected an artefact directory with metadata.json (or a folder of them), "
        f"found none at {empty}")


def test_an_artefact_is_checked_on_its_own_dataset_with_its_texture(tmp_path):
    """An untrained m(w) of the ellipse: three rows (original, modified, its fixed texture),
    the texture's geometry measured against the same original."""
    from tests.perturbations.test_artefact import ELLIPSE, _reduced, _reduced_artefact
    out = _reduced_artefact(tmp_path / "art", _reduced(ELLIPSE), seed=0)
    rows = geometry.artefact_rows(out)
    assert [r["variant"] for r in rows] == ["original", "modified@0.3",
                                           "modified_texture@0.3"]
    assert rows[0]["axis_deg"] == pytest.approx(90.0)
    assert all(r["turn_deg"] is not None and r["name"] == "art" for r in rows[1:])
    assert all(isinstance(r["passes"], bool) for r in rows[1:])


def test_the_command_checks_the_rotated_sprite_and_refuses_a_turn_out_of_range():
    found = python_m("perturbations.geometry", "--rotations=5,10")
    assert found.returncode == 0, found.stderr[-2000:]
    assert "| rotated (ellipse) | rotated@5 | 0.420 |" in found.stdout
    assert "| rotated (ellipse) | rotated@10 | -0.049 |" in found.stdout
    assert "| rotated (ellipse) | noisy@0.3488 |" in found.stdout   # energy 166, as rotated@5
    for bad, message in (("--rotations=45", "is not a class"),
                         ("--rotations=2.5", "whole numbers")):
        refused = python_m("perturbations.geometry", bad)
        assert refused.returncode == 2 and message in refused.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("flag, strength, variant, bound, refused_strength", [
    ("shadings", 0.45, "shaded", 0.06, "1.5"),       # out of (0, 1]
    ("vignettes", 0.25, "vignetted", 0.01, "1"),     # a gain of 0 in the corners
])
def test_the_command_checks_a_control_beside_the_rotated_sprite(flag, strength, variant,
                                                                 bound, refused_strength):
    """--shadings, --vignettes: the control's rows follow the rotations' without a second
    original and keep the correlation near 0; a strength out of range is refused in one
    line."""
    found = python_m("perturbations.geometry", "--rotations=5", f"--{flag}={strength:g}")
    assert found.returncode == 0, found.stderr[-2000:]
    assert found.stdout.count("| original |") == 1
    row = next(line for line in found.stdout.splitlines()
               if f"| {variant}@{strength:g} |" in line)
    assert row.startswith(f"| {variant} (ellipse) |") and abs(float(row.split("|")[3])) < bound
    refused = python_m("perturbations.geometry", f"--{flag}={refused_strength}")
    assert refused.returncode == 2 and f"--{flag}" in refused.stderr.strip().splitlines()[-1]


def test_the_command_checks_the_rotated_sprite_on_a_strided_plane():
    """--factor_strides: posY at stride 2 has anisotropy 0.576 on the original, and
    rotated@5 turns its axis 25.1 deg off the axes (the tenth battery pilot's numbers)."""
    found = python_m("perturbations.geometry", "--rotations=5",
                     "--factor_strides={'posY': 2}")
    assert found.returncode == 0, found.stderr[-2000:]
    assert "| rotated (ellipse, posY stride 2) | original | 0.000 | 0.576 | 90.0 |" in found.stdout
    assert "| rotated (ellipse, posY stride 2) | rotated@5 | 0.366 | 0.456 | 64.9 | 25.1 |" \
        in found.stdout
    refused = python_m("perturbations.geometry", "--rotations=5", "--factor_strides=posY")
    assert refused.returncode == 2
    assert "--factor_strides: expected a dict literal" in refused.stderr.strip().splitlines()[-1]


def test_the_command_checks_the_rotated_sprite_on_a_window_of_posx():
    """--factor_ranges: posX classes 10-20 keep the per-class anisotropy near the plain
    plane's (0.267) while in the factors' spreads it is 0.873."""
    found = python_m("perturbations.geometry", "--rotations=5",
                     "--factor_ranges={'posX': (10, 21)}")
    assert found.returncode == 0, found.stderr[-2000:]
    assert ("| rotated (ellipse, posX 10-20) | original | 0.000 | 0.267 | 90.0 | 0.0 | "
            "0.873 (90) |") in found.stdout
    refused = python_m("perturbations.geometry", "--rotations=5",
                       "--factor_ranges={'posX': (10, 11)}")
    assert refused.returncode == 2
    assert "at least 3 classes" in refused.stderr.strip().splitlines()[-1]


def test_the_command_checks_the_wave_on_the_scale_x_posx_plane():
    """--fixed_factors and --plane: on the ellipse with posY fixed, scale x posX has no
    correlation on the original (a posX step is antisymmetric left-right, a scale step
    symmetric); the wave moving in that plane at 0.3 (2 periods) correlates the steps 0.452,
    its fixed-phase texture 0.032; a plane naming a fixed factor is one error."""
    fixed = "--fixed_factors={'shape': 1, 'posY': 16, 'orientation': 0}"
    found = python_m("perturbations.geometry", "--waves=0.3", fixed, "--plane=posX,scale",
                     "--wave_periods=2")
    assert found.returncode == 0, found.stderr[-2000:]
    name = "wave (ellipse, posX x scale, shape 1, posY 16, orientation 0, 2 periods)"
    assert f"| {name} | original | 0.000 | 0.334 | 90.0 | 0.0 | 0.872 (0) |" in found.stdout
    assert f"| {name} | wave@0.3 | 0.452 | 0.541 | 64.1 | 25.9 |" in found.stdout
    assert f"| {name} | wave_texture@0.3 | 0.032 |" in found.stdout
    refused = python_m("perturbations.geometry", "--waves=0.3", fixed, "--plane=posX,posY")
    assert refused.returncode == 2
    assert "missing ['posY']" in refused.stderr.strip().splitlines()[-1]


def test_at_steps_of_one_period_the_8_period_wave_no_longer_turns_and_4_periods_does():
    """The wave's phase turns 8 times over posX's 32 classes: differences over 2 classes
    either way span one period (4 classes), so the wave's change cancels and the axis stays
    within 1 deg of the original's; with 4 periods (8 classes) it still turns > 8 deg. The
    scale a beta-64 posterior reaches (1.1-2.0 class steps) is about that step."""
    eight = {r["variant"]: r for r in geometry.wave_rows([0.1], step=2)}
    four = {r["variant"]: r for r in geometry.wave_rows([0.1], periods=4, step=2)}
    assert abs(eight["wave@0.1"]["turn_deg"]) < 1.0
    assert abs(four["wave@0.1"]["turn_deg"]) > 8.0


@pytest.mark.slow
def test_the_command_reads_the_geometry_over_larger_steps_and_refuses_step_0():
    found = python_m("perturbations.geometry", "--waves=0.1", "--wave_periods=4", "--step=2")
    assert found.returncode == 0, found.stderr[-2000:]
    assert "| wave (ellipse, 4 periods, steps of 2) | wave@0.1 | 0.103 |" in found.stdout
    refused = python_m("perturbations.geometry", "--waves=0.1", "--step=0")
    assert refused.returncode != 0 and "step" in refused.stderr.strip().splitlines()[-1]
