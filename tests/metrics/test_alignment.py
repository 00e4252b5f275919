"""benchmark.metrics.alignment: a code's angles in the plane of two factors."""

import json
import subprocess
import sys

import numpy as np
import pytest

from benchmark.metrics import alignment, codes


def _rotated(theta_deg, n=2000, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    factors = np.stack([rng.integers(0, 32, n), rng.integers(0, 32, n), rng.integers(0, 3, n)], 1)
    t = np.radians(theta_deg)
    rotation = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    z = factors[:, :2] @ rotation * 0.1 + noise * rng.normal(size=(n, 2))
    return factors, z


@pytest.mark.parametrize("theta", [0.0, 10.0, 30.0, 45.0])
def test_angles_of_a_rotated_code(theta):
    factors, z = _rotated(theta)
    out = alignment.linear_angles(factors, z)
    circular = (np.array(out["angle_deg"]) - [theta, theta + 90.0] + 90.0) % 180.0 - 90.0
    np.testing.assert_allclose(circular, 0.0, atol=1e-6)
    np.testing.assert_allclose(out["misalignment_deg"], [theta, theta], atol=1e-6)
    np.testing.assert_allclose(out["r2"], [1.0, 1.0], atol=1e-9)


def test_spread_angles_read_a_code_in_the_factors_spreads():
    """A latent mixing posX (11 classes) and posY (32) equally in units of their spreads
    reads about 19 deg off the posY axis in class steps and 45 deg in spreads; on a square
    grid the two agree."""
    rng = np.random.default_rng(0)
    factors = np.stack([rng.integers(0, 11, 4000), rng.integers(0, 32, 4000)], 1)
    spread = factors.std(axis=0)
    z = np.stack([factors[:, 0] / spread[0] + factors[:, 1] / spread[1],
                  factors[:, 0] / spread[0] - factors[:, 1] / spread[1]], 1)
    out = alignment.linear_angles(factors, z)
    np.testing.assert_allclose(out["spread_misalignment_deg"], [45.0, 45.0], atol=1e-6)
    np.testing.assert_allclose(out["misalignment_deg"], [19.0, 19.0], atol=0.3)
    row = {"misalignment_deg": out["misalignment_deg"], "r2": out["r2"],
           alignment.SPREAD_KEY: out["spread_misalignment_deg"]}
    assert alignment.row_misalignment(row, key=alignment.SPREAD_KEY) == pytest.approx(45.0)
    square, code = _rotated(30.0)
    same = alignment.linear_angles(square, code)
    np.testing.assert_allclose(same["spread_misalignment_deg"], same["misalignment_deg"],
                               atol=1.0)   # sample stds of a 32 x 32 draw


def test_class_shares_say_which_factor_a_nonlinear_latent_follows():
    """A latent that is a non-monotone function of posY alone (no linear fit) has share 1
    for posY and 0 for posX on a full grid; a linear mix of both shares them."""
    x, y = np.meshgrid(np.arange(11), np.arange(32), indexing="ij")
    factors = np.column_stack([x.ravel(), y.ravel()])
    z = np.column_stack([np.cos(factors[:, 1] / 5.0), factors[:, 0] + factors[:, 1]])
    shares = np.array(alignment.class_shares(factors, z))
    np.testing.assert_allclose(shares[0], [0.0, 1.0], atol=1e-9)
    assert shares[1].sum() == pytest.approx(1.0) and 0 < shares[1, 0] < shares[1, 1]
    assert alignment.linear_angles(factors, z)["r2"][0] < 0.5


def test_noise_lowers_r2_and_bad_input_is_one_error():
    factors, z = _rotated(20.0, noise=1.0)
    assert max(alignment.linear_angles(factors, z)["r2"]) < 0.8
    with pytest.raises(codes.MetricInputError, match="two factor columns"):
        alignment.linear_angles(factors, z, columns=(0,))


def test_cli_writes_alignment_json(tmp_path):
    factors, z = _rotated(30.0)
    (tmp_path / "runs" / "a").mkdir(parents=True)
    np.savez(tmp_path / "runs" / "a" / "eval_codes.npz", factors=factors, codes=z)
    out = subprocess.run([sys.executable, "-m", "benchmark.metrics.alignment", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    saved = json.loads((tmp_path / "alignment.json").read_text())
    assert saved["runs"][0]["run"] == "a"
    assert saved["runs"][0]["misalignment_deg"] == pytest.approx([30.0, 30.0])
    empty = subprocess.run([sys.executable, "-m", "benchmark.metrics.alignment",
                            str(tmp_path / "runs")], capture_output=True, text=True,
                           timeout=300)
    assert empty.returncode == 2 and "no runs/*/eval_codes.npz" in empty.stderr


def test_cli_keeps_rows_of_runs_whose_codes_are_gone(tmp_path):
    """eval_codes.npz is not in the repository: a rerun in a clone that has only the new
    runs' codes keeps the published rows of the others, and refuses another plane."""
    def call(*flags):
        return subprocess.run([sys.executable, "-m", "benchmark.metrics.alignment",
                               str(tmp_path), *flags], capture_output=True, text=True,
                              timeout=300)

    for name, theta in (("a", 30.0), ("b", 10.0)):
        (tmp_path / "runs" / name).mkdir(parents=True)
        factors, z = _rotated(theta)
        np.savez(tmp_path / "runs" / name / "eval_codes.npz", factors=factors, codes=z)
    assert call().returncode == 0
    (tmp_path / "runs" / "a" / "eval_codes.npz").unlink()
    factors, z = _rotated(20.0)
    np.savez(tmp_path / "runs" / "b" / "eval_codes.npz", factors=factors, codes=z)
    again = call()
    assert again.returncode == 0, again.stderr
    assert "kept 1 row(s)" in again.stdout
    rows = {r["run"]: r for r in json.loads((tmp_path / "alignment.json").read_text())["runs"]}
    assert rows["a"]["misalignment_deg"] == pytest.approx([30.0, 30.0])      # kept
    assert rows["b"]["misalignment_deg"] == pytest.approx([20.0, 20.0])      # recomputed
    before = (tmp_path / "alignment.json").read_text()
    other = call("--columns=0,2")
    assert other.returncode == 2 and "factor columns [0, 1]" in other.stderr
    assert (tmp_path / "alignment.json").read_text() == before
    (tmp_path / "alignment.json").write_text("{not json")
    broken = call()
    assert broken.returncode == 2 and "unreadable content" in broken.stderr


def test_code_misalignment_averages_the_latents_that_follow_the_plane(tmp_path):
    rng = np.random.default_rng(0)
    factors = rng.integers(0, 32, size=(500, 3))
    theta = np.radians(30.0)
    plane = factors[:, :2] - 15.5
    turned = plane @ np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    inactive = rng.normal(size=(500, 1))                      # R^2 ~ 0: left out
    code = np.hstack([turned, inactive])
    assert alignment.code_misalignment(factors, code) == pytest.approx(30.0, abs=1e-6)
    assert alignment.code_misalignment(factors, inactive) is None
    np.savez(tmp_path / "eval_codes.npz", factors=factors, codes=code)
    assert alignment.run_misalignment(tmp_path) == pytest.approx(30.0, abs=1e-6)
    assert alignment.run_misalignment(tmp_path / "absent") is None
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "eval_codes.npz").write_bytes(b"not an npz")
    with pytest.raises(codes.MetricInputError, match="expected an .npz"):
        alignment.run_misalignment(tmp_path / "bad")
