"""The re-adaptation gate of a manipulation artefact (issue 14 item 5): its verdict on
known trajectories, and one clear error for artefacts it cannot re-adapt. The command runs
end to end in tests/perturbations/test_generate.py on a generated artefact."""

import json

import numpy as np
import pytest

from perturbations import artefact, manipulation, references
from perturbations.readapt import METHOD, gate, readaptation

STEPS = [0, 100, 200, 300, 400]


def test_gate_passes_only_a_lasting_advantage_of_the_modified_data():
    original = [5.0, 5.0, 5.0, 5.0, 5.0]
    # The entangled side gains 4 on the modified data and keeps gaining: passes.
    lasting = gate(STEPS, {"original": original, "modified": [4.0, 3.0, 2.0, 1.5, 1.0]})
    assert lasting["passes"] and lasting["advantage_end"] == pytest.approx(-4.0)
    assert lasting["advantage_rise_second_half"] == pytest.approx(-1.0)   # 1.0 - 2.0
    # The same advantage at the end, but closing over the second half: fails.
    closing = gate(STEPS, {"original": original, "modified": [-5.0, -5.0, -3.0, 0.0, 4.0]})
    assert closing["advantage_end"] < 0 and not closing["passes"]
    # A gap that is low on both arms alike is no advantage of the modified data.
    alike = gate(STEPS, {"original": [1.0] * 5, "modified": [1.0] * 5})
    assert alike["advantage_end"] == 0.0 and not alike["passes"]
    # The texture arm is compared when measured.
    with_texture = gate(STEPS, {"original": original, "modified": [1.0] * 5,
                                "modified_texture": [4.0] * 5})
    assert with_texture["arm_advantage_end"] == {"modified": pytest.approx(-4.0),
                                                 "modified_texture": pytest.approx(-1.0)}


def test_gate_fails_data_changed_by_less_than_a_grey_level():
    # The same lasting advantage passes on data changed by a grey level and fails below it:
    # arms that train on the same images up to rounding differ by numerical noise.
    gaps = {"original": [5.0] * 5, "modified": [4.0, 3.0, 2.0, 1.5, 1.0]}
    changed = gate(STEPS, gaps, modified_mean_abs=1.0 / 255.0)
    assert changed["passes"] and not changed["below_minimum_change"]
    unchanged = gate(STEPS, gaps, modified_mean_abs=1e-6)
    assert unchanged["below_minimum_change"] and not unchanged["passes"]
    assert unchanged["advantage_end"] == pytest.approx(-4.0)


def test_gate_refuses_trajectories_that_do_not_match_the_measurements():
    with pytest.raises(ValueError, match="needs 5 gaps of arm 'modified', found 4"):
        gate(STEPS, {"original": [0.0] * 5, "modified": [0.0] * 4})
    with pytest.raises(ValueError, match=">= 2 measurements"):
        gate([0], {"original": [0.0], "modified": [0.0]})


def _artefact(tmp_path, recorded):
    network = manipulation.manipulation_network(2)
    metadata = {"dataset": "dsprites", "source": "procedural", "factor_sizes": [32, 32],
                "factor_names": ["posX", "posY"], "eps": 0.1,
                "fixed_factors": {"shape": 1, "scale": 5, "orientation": 0}, **recorded}
    return artefact.save_manipulation(tmp_path / "art", network, metadata)


def test_an_artefact_without_its_references_is_refused_in_one_line(tmp_path):
    out = _artefact(tmp_path, {})
    with pytest.raises(artefact.ArtefactError, match="expected metadata references.entangled"):
        readaptation(out, steps=1)
    missing = {"references": {"entangled": [{"run_dir": str(tmp_path / "gone")}],
                              "disentangled": [{"run_dir": str(tmp_path / "gone2")}]}}
    out = _artefact(tmp_path, missing)
    with pytest.raises(references.ReferenceError, match="expected a finished run"):
        readaptation(out, steps=1)
    with pytest.raises(ValueError, match="expected 'original', 'modified'"):
        readaptation(out, steps=1, arms=("modified",))
    with pytest.raises(ValueError, match="arm 'noisy': expected 'original', 'modified', "
                                         "'modified_texture', naive@EPS, wave_entangled@EPS "
                                         "or VARIANT@EPS"):
        readaptation(out, steps=1, arms=("original", "modified", "noisy"))
    with pytest.raises(ValueError, match="expected VARIANT, VARIANT@EPS with a number"):
        readaptation(out, steps=1, arms=("original", "modified", "noisy@x"))
    for match_to in ("noisy@matched", "wave@0.1"):
        with pytest.raises(ValueError, match="match_to: expected one of the arms that is not "
                                             "itself '@matched'"):
            readaptation(out, steps=1, arms=("original", "modified", "noisy@matched"),
                         match_to=match_to)
    for bad in ("naive", "wave_entangled", "original@0.1", "original@matched", "odd@0.1"):
        with pytest.raises(ValueError, match=f"arm '{bad}': expected"):
            readaptation(out, steps=1, arms=("original", "modified", bad))


def test_across_seeds_tests_which_arm_the_objective_prefers():
    """Issue 28 step 4: per arm, the advantage at the end with its t interval; per arm
    against the noise control, the paired test (same seed, same batches) that the
    objective prefers it."""
    from scipy import stats as sp

    from perturbations.readapt import across_lines, across_seeds

    def run(modified, naive, noisy):
        return {"gate": {"arm_advantage_end": {"modified": modified, "naive@matched": naive,
                                               "noisy@matched": noisy}}}
    runs = {0: run(-1.0, -9.0, -0.5), 1: run(0.8, -7.5, 0.3), 2: run(-0.9, -8.1, -0.6)}
    summary = across_seeds(runs)
    assert summary["compare_to"] == ["noisy@matched"] and summary["seeds"] == [0, 1, 2]
    naive = summary["preferred"]["naive@matched"]["noisy@matched"]
    assert naive["preferred"] and naive["p"] == pytest.approx(
        sp.ttest_rel([-9.0, -7.5, -8.1], [-0.5, 0.3, -0.6], alternative="less").pvalue)
    modified = summary["preferred"]["modified"]["noisy@matched"]
    assert not modified["preferred"] and modified["diff"] == pytest.approx(-0.1)
    assert summary["arms"]["naive@matched"]["mean"] == pytest.approx(-8.2)
    # the (1 - 2 alpha) interval matches the one-sided test: its top is below 0 iff p < alpha
    difference = np.subtract([-9.0, -7.5, -8.1], [-0.5, 0.3, -0.6])
    low, high = sp.ttest_1samp(difference, 0.0).confidence_interval(0.90)
    assert (naive["ci_low"], naive["ci_high"]) == pytest.approx((low, high))
    assert any("90 % t CI" in line for line in across_lines(summary))
    assert summary["arms"]["naive@matched"]["p_below_zero"] < 0.01
    assert "noisy@matched" not in summary["preferred"]
    assert any("naive@matched vs noisy@matched" in line and "preferred by the objective"
               in line for line in across_lines(summary))
    # Holm within each family: the positive control alone in 'control', the others in 'arms'
    assert (naive["family"], naive["p_holm"]) == ("control", naive["p"])
    waved = {s: {"gate": {"arm_advantage_end": {**r["gate"]["arm_advantage_end"],
                                                "wave@matched": w}}}
             for (s, r), w in zip(runs.items(), (-3.0, -2.0, -2.5))}
    two = across_seeds(waved)["preferred"]
    p_wave, p_modified = two["wave@matched"]["noisy@matched"]["p"], two["modified"][
        "noisy@matched"]["p"]
    assert two["wave@matched"]["noisy@matched"]["p_holm"] == pytest.approx(
        min(1.0, 2 * p_wave)) and p_wave < p_modified
    assert two["modified"]["noisy@matched"]["p_holm"] == pytest.approx(
        max(min(1.0, 2 * p_wave), p_modified))
    assert two["naive@matched"]["noisy@matched"]["p_holm"] == pytest.approx(naive["p"])
    # a seed resumed from its kept arms lists them in another order: the same test
    reordered = {**runs, 1: {"gate": {"arm_advantage_end": dict(
        reversed(runs[1]["gate"]["arm_advantage_end"].items()))}}}
    assert across_seeds(reordered)["preferred"] == summary["preferred"]
    with pytest.raises(ValueError, match=r"seed 1: expected the arms \['modified', "
                                         r"'naive@matched', 'noisy@matched'\], found"):
        across_seeds({**runs, 1: run(0.8, -7.5, 0.3) | {"gate": {"arm_advantage_end": {
            "modified": 0.8, "noisy@matched": 0.3}}}})
    with pytest.raises(ValueError, match="not arms of this re-adaptation"):
        across_seeds(runs, ["wave@matched"])
    with pytest.raises(ValueError, match=">= 2 seeds"):
        across_seeds({0: runs[0]})


def test_seeds_flag_mistakes_are_one_line(tmp_path):
    from tests.cli import python_m

    for args, expected in ((["--seeds=0"], "at least 2 distinct seeds"),
                           (["--seeds=0,1", "--publish"], "--publish records one"),
                           (["--seeds=0,1", "--compare_to=noisy@0.1"], "not in --arms")):
        result = python_m("perturbations.readapt", str(tmp_path), *args)
        assert result.returncode == 2, result.stderr[-2000:]
        assert expected in result.stderr.strip().splitlines()[-1]


def test_an_interrupted_seeds_run_resumes_from_its_finished_seeds(tmp_path):
    """--seeds with --out keeps each finished seed (and arm) in OUT.partial.json: a rerun
    with the same flags reuses them (here every seed, so nothing loads or trains; the kept
    arm of an unfinished seed: tests/perturbations/test_generate.py), and one with other
    flags is refused in one line rather than pooled."""
    import json

    from tests.cli import python_m

    from perturbations.readapt import partial_record

    def run(modified, noisy):
        return {"arms": {}, "gate": {"arm_advantage_end": {"modified": modified,
                                                           "noisy@matched": noisy}}}
    out = tmp_path / "seeds.json"
    arms = "--arms=original,modified,noisy@matched"
    settings = {"artefact": str(tmp_path / "art"), "steps": 5, "batch_size": 64,
                "eval_every": 100, "eval_images": 1024, "source": None,
                "arms": ["original", "modified", "noisy@matched"], "match_to": "modified",
                "method": METHOD}
    partial = tmp_path / "seeds.json.partial.json"
    partial.write_text(json.dumps(partial_record(settings, {
        "0": run(-1.0, -0.5), "1": run(-0.8, 0.3), "2": run(-0.9, -0.6), "7": run(9, 9)})))
    result = python_m("perturbations.readapt", tmp_path / "art", "--steps=5", arms,
                      "--seeds=0,1,2", f"--out={out}")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.count("reused from") == 3
    written = json.loads(out.read_text())
    assert sorted(written["runs"]) == ["0", "1", "2"] and written["across_seeds"]["seeds"] == [
        0, 1, 2]
    assert not partial.exists()
    partial.write_text(json.dumps(partial_record(settings, {"0": run(-1.0, -0.5)})))
    refused = python_m("perturbations.readapt", tmp_path / "art", "--steps=6", arms,
                       "--seeds=0,1", f"--out={out}")
    assert refused.returncode == 2
    assert "other settings (['steps']: [5] there, [6] now)" in refused.stderr.splitlines()[-1]
    partial.write_text("{not json")
    broken = python_m("perturbations.readapt", tmp_path / "art", "--steps=5", arms,
                      "--seeds=0,1", f"--out={out}")
    assert broken.returncode == 2 and "unreadable JSON" in broken.stderr.splitlines()[-1]
    # damaged, edited or fabricated files: one line each, never taken as results
    genuine = partial_record(settings, {"0": run(-1.0, -0.5), "1": run(-0.8, 0.3)})
    edited = json.loads(json.dumps(genuine))
    edited["runs"]["1"]["gate"]["arm_advantage_end"]["modified"] = -9.0
    fabricated = {"settings": settings, "runs": genuine["runs"]}         # no checksum
    for content, words in ((edited, "does not match its SHA-256"),
                           (fabricated, "does not match its SHA-256"),
                           ([1, 2], "an object with 'settings'"),
                           ({"settings": 3}, "an object with 'settings'"),
                           (partial_record(settings, {"x": run(0, 0)}), "'runs' as {seed"),
                           (partial_record(settings, {"0": {"gate": 5}}), "seed 0: expected"),
                           (partial_record(settings, {"0": run(0, "a")}), "seed 0: expected"),
                           (partial_record(settings, {}, {"seed": "0"}), "'in_progress'")):
        partial.write_text(json.dumps(content))
        tampered = python_m("perturbations.readapt", tmp_path / "art", "--steps=5", arms,
                            "--seeds=0,1", f"--out={out}")
        assert tampered.returncode == 2 and "Traceback" not in tampered.stderr, \
            tampered.stderr[-2000:]
        assert words in tampered.stderr.splitlines()[-1], (words, tampered.stderr[-500:])
        assert not out.exists() or "-9.0" not in out.read_text()


def test_the_evaluation_sample_is_the_grid_or_distinct_images():
    """The gap is measured on the whole grid when it is small (the ellipse's 1,024), else on
    distinct images: a draw with replacement weighted some images twice (637 distinct of
    1,024 for seed 0)."""
    from benchmark.data import dsprites
    from benchmark.data.oracle import ORACLE_FIXED_FACTORS
    from benchmark.data.subset import FactorSubset
    from perturbations.readapt import evaluation_factors

    data = FactorSubset(dsprites.DSprites(source="procedural"), ORACLE_FIXED_FACTORS)
    grid = evaluation_factors(data, 1024, seed=0)
    assert len(grid) == data.num_images == 1024
    assert len({tuple(f) for f in grid}) == 1024
    np.testing.assert_array_equal(grid, evaluation_factors(data, 5000, seed=3))
    drawn = evaluation_factors(data, 300, seed=1)
    assert len({tuple(f) for f in drawn}) == 300
    np.testing.assert_array_equal(drawn, evaluation_factors(data, 300, seed=1))
    assert not np.array_equal(drawn, evaluation_factors(data, 300, seed=2))


def test_a_partial_run_of_an_earlier_readapt_version_is_named_as_such(tmp_path):
    from perturbations.readapt import finished_seeds, partial_record

    settings = {"artefact": "a", "steps": 5, "method": METHOD}
    partial = tmp_path / "seeds.json.partial.json"
    partial.write_text(json.dumps(partial_record({**settings, "method": None}, {})))
    with pytest.raises(ValueError, match="another version of readapt"):
        finished_seeds(partial, settings)
    partial.write_text(json.dumps(partial_record({**settings, "steps": 9}, {})))
    with pytest.raises(ValueError, match="rerun with those flags"):
        finished_seeds(partial, settings)
