"""benchmark/studies/mechanism.py: turned or lost, per arm; and its section of the study report."""

import csv
import json
import logging
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as sp

from benchmark.studies import mechanism, report
from tests.benchmark_core.test_audit import _codes
from tests.benchmark_core.test_report import _result


def test_misalignment_from_codes_or_from_a_published_alignment_json(tmp_path, caplog):
    (tmp_path / "runs" / "a").mkdir(parents=True)
    (tmp_path / "runs" / "b").mkdir()
    _codes(tmp_path / "runs" / "a", 20.0, 0)
    (tmp_path / "alignment.json").write_text(json.dumps({"columns": [0, 1], "runs": [
        {"run": "b", "angle_deg": [10.0, 100.0, 50.0], "misalignment_deg": [10.0, 10.0, 40.0],
         "r2": [0.9, 0.8, 0.1]}]}))
    records = [{"run_dir": str(tmp_path / "runs" / n), "values": {"MIG": 0.1}}
               for n in ("a", "b")]
    out = mechanism.with_misalignment(records, [0, 1], tmp_path)
    assert out[0]["values"]["misalignment"] == pytest.approx(20.0, abs=1e-6)
    assert out[1]["values"]["misalignment"] == pytest.approx(10.0)    # R^2 0.1 left out
    with caplog.at_level(logging.WARNING):
        other = mechanism.with_misalignment(records, [1, 0], tmp_path)
    assert "misalignment" not in other[1]["values"]                   # another plane,
    assert "not the plane [1, 0]" in caplog.text                       # and said so
    assert mechanism.with_misalignment(records, None, tmp_path) == records
    (tmp_path / "alignment.json").write_text("{")
    with pytest.raises(ValueError, match="alignment.json: expected the JSON"):
        mechanism.with_misalignment(records, [0, 1], tmp_path)


def test_the_turn_is_the_welch_interval_of_arm_minus_original():
    original, arm = [2.0, 3.0, 4.5], [30.0, 41.0, 38.0, 35.0]
    t = mechanism.turn(original, arm)
    assert t["diff"] == pytest.approx(np.mean(arm) - np.mean(original))
    va, vo = np.var(arm, ddof=1) / 4, np.var(original, ddof=1) / 3
    df = (va + vo) ** 2 / (va ** 2 / 3 + vo ** 2 / 2)
    half = sp.t.ppf(0.975, df) * np.sqrt(va + vo)
    assert (t["ci_low"], t["ci_high"]) == pytest.approx((t["diff"] - half, t["diff"] + half))
    one = mechanism.turn([2.0], arm)                 # no interval from one run, never made up
    assert one["diff"] == pytest.approx(np.mean(arm) - 2.0) and one["ci_low"] is None
    assert mechanism.turn([], arm)["diff"] is None


def test_rows_summarise_the_kept_runs_and_their_turn_from_original():
    def runs(angles, mig):
        return {"kept": [{"values": {"MIG": mig, "misalignment": a}} for a in angles]}
    rows = mechanism.mechanism_rows(
        {"beta_vae": {"original": runs([1.0, 3.0], 0.4), "modified": runs([40.0, 44.0], 0.1)},
         "pcl": {"original": runs([5.0], 0.5)}}, ["original", "modified", "noisy"])
    by = {(r["model"], r["arm"]): r for r in rows}
    assert set(by) == {("beta_vae", "original"), ("beta_vae", "modified"), ("pcl", "original")}
    assert by[("beta_vae", "original")]["turn"] is None
    assert by[("beta_vae", "modified")]["turn"]["diff"] == pytest.approx(40.0)
    assert by[("beta_vae", "modified")]["misalignment"]["mean"] == pytest.approx(42.0)
    assert by[("beta_vae", "modified")]["DCI-I"]["n"] == 0      # not measured: no number
    table = "\n".join(mechanism.table_lines(rows))
    assert "| beta_vae | modified | 0.100 [0.100, 0.100] (n 2) | — | — |" in table
    assert "+40.0 [" in table
    flat = mechanism.csv_rows(rows)
    assert flat[1]["turn diff"] == pytest.approx(40.0) and flat[0]["turn diff"] is None


def _plane_study(root, plane):
    """beta-VAE runs aligned on original (1-3 degrees), turned on modified (38-40)."""
    for i in range(3):
        for variant, angle, mig in (("original", 1.0 + i, 0.3), ("modified", 38.0 + i, 0.1)):
            run = root / "runs" / f"beta_vae_{variant}_seed{i}"
            _result(run, "beta_vae", variant, i, mig + 0.01 * i, 0.5,
                    eps=None if variant == "original" else 0.1)
            _codes(run, angle, i)
    settings = {"name": "tiny", "datasets": ["dsprites"],
                "variants": ["original", "modified"]}
    if plane is not None:
        settings["battery"] = {"manipulated": "modified", "controls": [], "plane": plane}
    (root / "study.json").write_text(json.dumps({"settings": settings}))


def test_a_study_report_says_whether_the_code_turned_or_lost(tmp_path):
    _plane_study(tmp_path / "study", [0, 1])
    done = subprocess.run([sys.executable, "-m", "benchmark.report",
                           f"--results={tmp_path / 'study'}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    text = (tmp_path / "study" / "report" / "report.md").read_text()
    assert "## Mechanism: turned or lost?" in text and "factor columns [0, 1]" in text
    rows = list(csv.DictReader((tmp_path / "study" / "report" / "mechanism.csv").open()))
    by = {r["arm"]: r for r in rows}
    assert float(by["original"]["misalignment mean"]) == pytest.approx(2.0, abs=1e-3)
    assert float(by["modified"]["misalignment mean"]) == pytest.approx(39.0, abs=1e-3)
    assert float(by["modified"]["turn diff"]) == pytest.approx(37.0, abs=1e-3)
    assert float(by["modified"]["turn ci_low"]) > 30


def test_a_study_without_a_plane_has_no_mechanism_section(tmp_path):
    _plane_study(tmp_path / "study", None)
    out = report.write_report(tmp_path / "study")
    assert "Mechanism" not in out.read_text()
    assert not (out.parent / "mechanism.csv").exists()
