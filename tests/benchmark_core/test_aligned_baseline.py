"""The aligned-baseline rule of the battery's original-only pilots
(benchmark/studies/aligned_baseline.py), on codes whose angles are known."""

import json

import numpy as np
import pytest

from benchmark.core.errors import UserError
from benchmark.metrics import alignment
from benchmark.runs import results
from benchmark.studies import aligned_baseline
from tests.cli import python_m


def _plane(sizes=(32, 32)):
    x, y = np.meshgrid(np.arange(sizes[0]), np.arange(sizes[1]), indexing="ij")
    return np.column_stack([x.ravel(), y.ravel()])


def _code(factors, angle_deg, spread_units=True, drop_second=False):
    """Two latents: the factors (in spread units, or class steps) rotated by angle_deg; the
    second replaced by noise when drop_second (one factor lost)."""
    f = factors - factors.mean(0)
    if spread_units:
        f = f / f.std(0)
    a = np.radians(angle_deg)
    z = f @ np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    if drop_second:
        z[:, 1] = np.random.default_rng(0).normal(size=len(z))
    return z


def test_run_measures_read_angles_in_the_units_asked_and_tell_a_lost_factor():
    window = _plane((11, 32))
    turned = alignment.linear_angles(window, _code(window, 30.0))
    spread = aligned_baseline.run_measures(turned, "spread")
    classes = aligned_baseline.run_measures(turned, "classes")
    assert spread["misalignment"] == pytest.approx(30.0, abs=1e-6)
    assert spread["both_kept"] is True
    assert classes["misalignment"] == pytest.approx(20.9, abs=0.1)   # 11.2 and 30.7 deg
    one = aligned_baseline.run_measures(
        alignment.linear_angles(window, _code(window, 2.0, drop_second=True)), "spread")
    assert one["misalignment"] == pytest.approx(2.0, abs=1e-6) and one["both_kept"] is False
    with pytest.raises(Exception, match="spread_angle_deg"):
        aligned_baseline.run_measures({"angle_deg": [0, 90], "misalignment_deg": [0, 0],
                                       "r2": [1, 1]}, "spread")


def _runs(angles, mig, kept=True):
    return [{"run": f"r{i}", "seed": i, "MIG": m, "misalignment": a, "better": a,
             "both_kept": kept} for i, (a, m) in enumerate(zip(angles, mig))]


def test_decide_holds_only_where_every_criterion_does():
    floor = _runs([20, 25, 18, 30, 22], [0.10, 0.12, 0.08, 0.15, 0.11])
    aligned = _runs([2, 3, 5, 4, 6, 3, 2, 8, 5, 4], [0.5] * 5 + [0.6] * 5)
    good = aligned_baseline.decide(aligned, floor, both_factors=True)
    assert good["holds"] and good["criteria"]["c_gate"]["p"] < 0.05
    assert good["below_floor_p"] < 0.05
    rotated = _runs([2, 3, 30, 4, 28, 3, 25, 8, 35, 4], [0.5] * 10)   # (a) 14.2, (b) 6 of 10
    bad = aligned_baseline.decide(rotated, floor)
    assert not bad["criteria"]["a_mean"]["holds"] and not bad["criteria"]["b_runs_within"]["holds"]
    lost = aligned_baseline.decide(_runs([2] * 10, [0.5] * 10, kept=False), floor,
                                   both_factors=True)
    assert not lost["holds"] and not lost["criteria"]["d_both_factors"]["holds"]
    assert lost["criteria"]["a_mean"]["holds"]           # one latent of one factor: aligned
    floor_level = aligned_baseline.decide(_runs([2] * 10, [0.1, 0.12] * 5), floor)
    assert not floor_level["criteria"]["c_gate"]["holds"]
    assert "The rule fails." in aligned_baseline.table_lines(floor_level)[-1]
    with pytest.raises(UserError, match="at least 2 runs.*--floor=none"):
        aligned_baseline.decide(aligned, floor[:1])


def test_without_a_floor_the_gate_is_not_read_and_each_run_says_whether_it_passes():
    """A screen (no floor model): (c) not read, 'holds' None, and the per-run pass is
    within 12 deg and (with both_factors) both factors kept."""
    mixed = _runs([2, 3, 30, 4], [0.5] * 4)
    mixed[3]["both_kept"] = False
    screen = aligned_baseline.decide(mixed, None, both_factors=True)
    assert screen["holds"] is None and screen["criteria"]["c_gate"]["holds"] is None
    assert [r["passes"] for r in screen["runs"]] == [True, True, False, False]
    assert screen["runs_passing"] == 2 and screen["read_criteria_hold"] is False
    lines = aligned_baseline.table_lines(screen)
    assert "| 0.500, no floor | not read |" in "\n".join(lines)
    assert "2 of 4 runs pass on their own (within 12°, both factors kept)." in lines
    assert lines[-1] == ("The rule is not decided: (c) not read (no floor); the criteria "
                         "read fail.")
    aligned = aligned_baseline.decide(_runs([2, 3, 4, 5, 1], [0.5] * 5), None)
    assert aligned["holds"] is None and aligned["read_criteria_hold"] is True
    assert aligned["runs_passing"] == 5


def _study(directory, angles, sizes=(11, 32)):
    """A study of beta_vae runs whose codes are the plane turned by the given angles (in
    spread units) and AE runs turned by 40 degrees; MIG 0.5 and 0.1 (+ seed / 100)."""
    directory.mkdir()
    (directory / "study.json").write_text(json.dumps({"settings": {
        "variants": ["original"], "datasets": ["dsprites"]}}))
    factors = _plane(sizes)
    for model, turns, mig in (("beta_vae", angles, 0.5), ("ae", [40, 35, 30], 0.1)):
        for seed, angle in enumerate(turns):
            run = directory / "runs" / f"{model}_dsprites_original_seed{seed}"
            run.mkdir(parents=True)
            np.savez(run / "eval_codes.npz", factors=factors, codes=_code(factors, angle))
            results.write(run, model=model, seed=seed,
                          dataset={"name": "dsprites", "variant": "original"},
                          scores={"mig": {"mig": mig + seed / 100},
                                  "dci": {"dci_informativeness_test": 0.95,
                                          "dci_disentanglement": 0.5,
                                          "dci_completeness": 0.5}},
                          final_losses={}, gin_config=f"run.seed = {seed}")
    return directory


def test_the_command_reads_a_windowed_pilot_in_spreads(tmp_path):
    """`python -m benchmark.aligned_baseline STUDY_DIR --units=spread --both_factors` on a
    windowed plane whose codes are turned 1-5 deg in spreads: the rule holds, with the AE's
    35 deg beside it; codes turned 28-32 deg fail it; a missing study is one error."""
    study = _study(tmp_path / "aligned", [1, 2, 3, 4, 5])
    found = python_m("benchmark.aligned_baseline", str(study), "--units=spread",
                     "--both_factors")
    assert found.returncode == 0, found.stderr[-3000:]
    assert "The rule holds." in found.stdout
    written = json.loads((study / aligned_baseline.FILE_NAME).read_text())
    assert written["holds"] and written["units"] == "spread"
    assert written["criteria"]["a_mean"]["found"] == pytest.approx(3.0, abs=1e-6)
    assert written["floor_misalignment"] == pytest.approx(35.0, abs=1e-6)
    turned = _study(tmp_path / "turned", [30, 28, 32, 29, 31])
    failed = python_m("benchmark.aligned_baseline", str(turned), "--units=spread",
                      f"--out={tmp_path / 'turned.json'}")
    assert failed.returncode == 0 and "The rule fails." in failed.stdout
    assert json.loads((tmp_path / "turned.json").read_text())["holds"] is False
    screen = python_m("benchmark.aligned_baseline", str(study), "--units=spread",
                      "--floor=none", f"--out={tmp_path / 'screen.json'}")
    assert screen.returncode == 0, screen.stderr[-3000:]
    assert "5 of 5 runs pass on their own" in screen.stdout
    assert "The rule is not decided" in screen.stdout
    assert json.loads((tmp_path / "screen.json").read_text())["holds"] is None
    refused = python_m("benchmark.aligned_baseline", str(tmp_path / "none"))
    assert refused.returncode == 2 and refused.stderr.strip().splitlines()[-1].startswith(
        "error: ")
