"""The known-answer scorer (benchmark/studies/known_answers.py): rows of the reference's own
runs decided as the audit decides, the sequential look rule, audit rows checked against
their registration, and the command as a user calls it."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from benchmark.statistics import stats
from benchmark.studies import audit, audit_plan, audit_report, known_answers
from tests.benchmark_core.test_audit import _codes
from tests.benchmark_core.test_report import _result
from tests.benchmark_core.test_study import TINY_RUN

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARMS = ["original", "rotated@5", "noisy@0.3488", "rotated@10"]
#: seed-to-seed offsets, sd 0.079 (x scale)
JITTER = [-0.1, -0.05, 0.0, 0.05, 0.1]
STAGE_A, STAGE_B = list(range(5)), list(range(10))
#: MIG mean and code angle per (model, arm) of the reference: the beta-VAE turns and drops
#: on rotated@5 only, the AE is a floor
BASE = {("beta_vae", "original"): (0.50, 3), ("beta_vae", "rotated@5"): (0.15, 40),
        ("beta_vae", "noisy@0.3488"): (0.48, 4), ("beta_vae", "rotated@10"): (0.47, 4),
        ("ae", "original"): (0.05, 30), ("ae", "rotated@5"): (0.05, 30)}


def _run(root, model, arm, seed, mig, angle):
    base, _, eps = arm.partition("@")
    run = root / "runs" / f"{model}_dsprites_{arm}_seed{seed}"
    _result(run, model, base, seed, mig, 0.5, eps=float(eps) if eps else None)
    _codes(run, angle, seed)


def _reference(root, pcl=None, seeds=STAGE_A, base=BASE, scale=0.2):
    """A reference study in the form of results/known_answers_rotated_cpu: beta_vae on 4
    arms, ae and pcl on 2; pcl: {arm: (mean, jitter scale)} for seeds `seeds` (every seed
    of STAGE_B offset by JITTER[seed % 5])."""
    root.mkdir(exist_ok=True)
    (root / "study.json").write_text(json.dumps({"settings": {
        "name": "known_tiny", "datasets": ["dsprites"], "artefacts": {}, "variants": ARMS,
        "bindings": [*TINY_RUN, "model.num_latents = 2"], "source": "procedural",
        "seeds": list(STAGE_A), "model_variants": {"ae": ARMS[:2], "pcl": ARMS[:2]},
        "battery": {"manipulated": "rotated@5", "controls": ["noisy@0.3488", "rotated@10"],
                    "sweep": "rotated", "plane": [0, 1]}}}))
    if not (root / "runs").exists():
        for (model, arm), (mig, angle) in base.items():
            for s in STAGE_A:
                _run(root, model, arm, s, mig + scale * JITTER[s], angle + s % 3)
    for arm, (mig, jitter) in (pcl or {}).items():
        for s in seeds:
            if not (root / "runs" / f"pcl_dsprites_{arm}_seed{s}").exists():
                _run(root, "pcl", arm, s, mig + jitter * JITTER[(s * 3) % 5], 3 + s % 3)
    return root


def _row(**overrides):
    row = {"method": "PCL", "model": "pcl", "expected": "ROBUST",
           "looks": [STAGE_A, STAGE_B], "alpha": 0.0294, "untestable_sd": 0.2}
    return known_answers.check_row({**row, **overrides}, 0)


def _score(root, *rows):
    table = known_answers.known_answer_table(reference=str(root), rows=list(rows))
    return known_answers.score_table(table)


def test_the_beta_vae_row_is_decided_as_the_audit_decides(tmp_path):
    root = _reference(tmp_path / "ref")
    row = known_answers.check_row({"method": "beta-VAE", "model": "beta_vae",
                                   "expected": "DEPENDS", "seeds": STAGE_A}, 0)
    scored = _score(root, row)
    beta = scored["rows"][0]
    assert beta["status"] == known_answers.MATCHES and beta["outcome"] == "DEPENDS"
    assert beta["tests"]["drop"]["drop"] == pytest.approx(0.35)
    assert "its code turned" in beta["reason"] and scored["all_match"]
    # the same runs, registered as ROBUST: a single-look row that does not match
    wrong = known_answers.check_row({**row, "method": "b", "expected": "ROBUST"}, 1)
    assert _score(root, wrong)["rows"][0]["status"] == known_answers.MISMATCH


def test_a_drop_on_noise_as_large_makes_the_beta_vae_sensitive_not_dependent(tmp_path):
    base = {**BASE, ("beta_vae", "noisy@0.3488"): (0.15, 4)}
    root = _reference(tmp_path / "ref", base=base)
    row = known_answers.check_row({"method": "beta-VAE", "model": "beta_vae",
                                   "expected": "DEPENDS", "seeds": STAGE_A}, 0)
    scored = _score(root, row)
    assert scored["rows"][0]["outcome"] == "SENSITIVE"
    assert scored["rows"][0]["status"] == known_answers.MISMATCH and not scored["all_match"]
    assert "does not match: 1" in scored["summary"]


def test_pcl_equivalent_at_the_first_look_matches_and_stops(tmp_path):
    root = _reference(tmp_path / "ref", {"original": (0.40, 0.2), "rotated@5": (0.40, 0.2)})
    pcl = _score(root, _row())["rows"][0]
    assert pcl["status"] == known_answers.MATCHES and pcl["look"] == 1
    assert pcl["tests"]["equivalence"]["p"] < 0.0294


def test_pcl_whose_mig_drops_at_the_first_look_does_not_match(tmp_path):
    root = _reference(tmp_path / "ref", {"original": (0.40, 0.2), "rotated@5": (0.22, 0.2)})
    pcl = _score(root, _row())["rows"][0]
    assert pcl["status"] == known_answers.MISMATCH and pcl["look"] == 1
    assert "which stops the row" in pcl["reason"]


def test_an_undecided_first_look_waits_for_the_second_or_is_untestable(tmp_path):
    """Drop 0.06 at spread about 0.08: neither the drop nor equivalence within the margin
    at 5 seeds. Below the registered spread bound the row waits for look 2's runs, and is
    decided there once they finish; above it, it is untestable at this scale."""
    arms = {"original": (0.40, 1.0), "rotated@5": (0.34, 1.0)}
    root = _reference(tmp_path / "ref", arms)
    first = _score(root, _row())["rows"][0]
    assert first["status"] == known_answers.PENDING and first["look"] is None
    assert "look 2 of 2 (seeds 0-9) waits" in first["reason"]
    tight = _score(root, _row(untestable_sd=0.05))["rows"][0]
    assert tight["status"] == known_answers.UNTESTABLE and tight["look"] == 1
    assert tight["spread"] > 0.05
    _reference(root, {"original": (0.40, 1.0), "rotated@5": (0.40, 1.0)}, seeds=STAGE_B)
    second = _score(root, _row())["rows"][0]
    assert second["look"] == 2 and second["seeds"] == STAGE_B
    original = [0.40 + JITTER[(s * 3) % 5] for s in STAGE_B]
    turned = [(0.34 if s < 5 else 0.40) + JITTER[(s * 3) % 5] for s in STAGE_B]
    expected = stats.tost(original, turned, second["margin"], 0.0294)["equivalent"]
    assert second["status"] == (known_answers.MATCHES if expected else known_answers.MISMATCH)


def test_an_unfinished_reference_leaves_its_rows_pending(tmp_path):
    root = _reference(tmp_path / "ref", {"original": (0.40, 0.2), "rotated@5": (0.40, 0.2)})
    (root / "runs" / "ae_dsprites_rotated@5_seed4" / "results.json").unlink()
    pcl = _score(root, _row())["rows"][0]
    assert pcl["status"] == known_answers.PENDING
    assert "ae on rotated@5, seed(s) 4" in pcl["reason"]


def test_a_reference_model_with_fewer_seeds_is_complete_at_its_own_seeds(tmp_path):
    """study.cell_seeds gives the AE seeds 0-3 of the study's 0-4: the rows are decided
    once those have finished, and a missing one of them still leaves the rows pending."""
    root = _reference(tmp_path / "ref", {"original": (0.40, 0.2), "rotated@5": (0.40, 0.2)})
    study = json.loads((root / "study.json").read_text())
    study["settings"]["cell_seeds"] = {"ae": [0, 1, 2, 3]}
    (root / "study.json").write_text(json.dumps(study))
    for arm in ARMS[:2]:
        for name in ("results.json", "eval_codes.npz"):
            (root / "runs" / f"ae_dsprites_{arm}_seed4" / name).unlink(missing_ok=True)
    pcl = _score(root, _row())["rows"][0]
    assert pcl["status"] != known_answers.PENDING, pcl["reason"]
    (root / "runs" / "ae_dsprites_original_seed3" / "results.json").unlink()
    pcl = _score(root, _row())["rows"][0]
    assert pcl["status"] == known_answers.PENDING
    assert "ae on original, seed(s) 3" in pcl["reason"] and "seed(s) 3-4" not in pcl["reason"]


def _floor_audit(tmp_path, root, seeds=(0, 1, 2)):
    """An audit of a method at the AE floor, written by the audit's own report."""
    out = tmp_path / "audit_ae"
    settings = audit.audit_settings("models/ae.gin", "ae", list(seeds),
                                    audit_plan.reference_settings(root), str(out))
    for arm in ARMS:
        for s in seeds:
            _run(out, "ae", arm, s, 0.05 + 0.01 * JITTER[s], 30)
    audit_report.write_audit("ae", list(seeds), audit_plan.reference_settings(root), root,
                             settings, out, 0.05, 0.5, failed=[])
    return out


def test_an_audit_row_reads_its_verdict_and_checks_its_registration(tmp_path):
    root = _reference(tmp_path / "ref")
    out = _floor_audit(tmp_path, root)
    row = {"method": "AE", "audit": str(out), "expected": "FLOOR", "seeds": [0, 1, 2]}
    ae = _score(root, known_answers.check_row(row, 0))["rows"][0]
    assert ae["label"] == "INCONCLUSIVE" and ae["outcome"] == "FLOOR"
    assert ae["status"] == known_answers.MATCHES
    assert "does not disentangle" in ae["reason"]
    other = _score(root, known_answers.check_row({**row, "seeds": [0, 1, 2, 3]}, 0))
    assert other["rows"][0]["status"] == known_answers.UNREGISTERED
    assert "its runs are of seeds 0-2, not 0-3" in other["rows"][0]["reason"]
    alpha = _score(root, known_answers.check_row({**row, "alpha": 0.01}, 0))["rows"][0]
    assert alpha["status"] == known_answers.UNREGISTERED and "alpha" in alpha["reason"]
    elsewhere = _reference(tmp_path / "ref2")
    moved = _score(elsewhere, known_answers.check_row(row, 0))["rows"][0]
    assert moved["status"] == known_answers.UNREGISTERED and "its reference is" in moved["reason"]
    written = json.loads((out / "audit.json").read_text())
    written["reference_completeness"] = {"registered": 30, "finished": 29,
                                         "missing": {"ae on original": 1}}
    (out / "audit.json").write_text(json.dumps(written))
    early = _score(root, known_answers.check_row(row, 0))["rows"][0]
    assert early["status"] == known_answers.UNREGISTERED and "29 of 30" in early["reason"]
    missing = _score(root, known_answers.check_row({**row, "audit": str(tmp_path / "no")}, 0))
    assert missing["rows"][0]["status"] == known_answers.PENDING


@pytest.mark.parametrize("row, message", [
    ({"method": "m", "model": "x", "expected": "GOOD", "seeds": [0, 1]}, "expected 'expected'"),
    ({"method": "m", "model": "x", "expected": "ROBUST", "seeds": [0, 1], "seed": 3},
     "unknown key"),
    ({"method": "m", "model": "x", "audit": "d", "expected": "ROBUST", "seeds": [0, 1]},
     "exactly one of"),
    ({"method": "m", "model": "x", "expected": "ROBUST", "looks": [[0, 1], [2, 3]]},
     "contain the"),
    ({"method": "m", "model": "x", "expected": "ROBUST", "seeds": [0]}, "at least 2"),
    ({"method": "m", "model": "x", "expected": "ROBUST", "seeds": [0, 1], "alpha": 5.0},
     "0 < alpha < 1"),
    ({"method": "m", "audit": "d", "expected": "ROBUST", "looks": [[0, 1]]}, "not 'looks'"),
])
def test_a_wrong_row_is_refused_with_what_was_expected(row, message):
    with pytest.raises(ValueError, match=message):
        known_answers.check_row(row, 0)


def test_the_command_as_a_user_calls_it(tmp_path):
    root = _reference(tmp_path / "ref", {"original": (0.40, 0.2), "rotated@5": (0.40, 0.2)})
    table = tmp_path / "table.gin"
    table.write_text(f"known_answer_table.reference = '{root}'\nknown_answer_table.rows = ["
                     "{'method': 'PCL', 'model': 'pcl', 'expected': 'ROBUST', 'alpha': 0.0294,"
                     " 'looks': [[0, 1, 2, 3, 4], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]]},"
                     f"{{'method': 'AE', 'audit': '{tmp_path / 'none'}', 'expected': 'FLOOR',"
                     " 'seeds': [0, 1, 2]}]\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")])}
    command = [sys.executable, "-m", "benchmark.known_answers", f"--gin_file={table}"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == str(root / "known_answers.md")
    scored = json.loads((root / "known_answers.json").read_text())
    assert [r["status"] for r in scored["rows"]] == ["matches", "pending"]
    assert not scored["all_match"] and "matches: 1, pending: 1" in scored["summary"]
    assert "| PCL |" in (root / "known_answers.md").read_text()
    table.write_text("known_answer_table.reference = 'x'\nknown_answer_table.rows = "
                     "[{'method': 'm', 'model': 'pcl', 'expected': 'BEST', 'seeds': [0, 1]}]\n")
    wrong = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=300)
    assert wrong.returncode == 2 and "expected 'expected' in" in wrong.stderr
    assert "Traceback" not in wrong.stderr
