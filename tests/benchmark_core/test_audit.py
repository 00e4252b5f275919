import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as sp

from benchmark.statistics import stats
from benchmark.studies import audit, audit_plan, audit_report, study, verdict
from perturbations import artefact, manipulation
from tests.benchmark_core.test_report import _result
from tests.benchmark_core.test_study import TINY_RUN

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _arms(original, modified=(), noisy=(), pruned=None):
    """Synthetic MIG arms in the form of verdict.arms."""
    pruned = pruned or {}
    return {v: {"kept": list(values), "overpruned": list(pruned.get(v, []))}
            for v, values in (("original", original), ("modified", modified), ("noisy", noisy))}


HIGH, LOW = [0.30, 0.32, 0.28, 0.31], [0.10, 0.12, 0.08, 0.11]
BETA_VAE = _arms(HIGH, LOW)                         # drop 0.2, significant: margin 0.1
AE_MIG = [0.05, 0.06, 0.04, 0.05]
AE = _arms(AE_MIG, AE_MIG)                          # at the floor, no drop of its own


def _one_sided(a, b):
    return sp.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue


def test_positive_control_comes_first():
    method = _arms(HIGH, LOW, [0.29, 0.30, 0.31, 0.30])           # would be DEPENDS
    weak = _arms([0.07, 0.06, 0.05], [0.01, 0.08, 0.06])
    result = verdict.verdict(method, weak, AE)
    assert result["label"] == "INCONCLUSIVE" and result["margin"] is None
    assert result["reason"].startswith("positive control failed")
    assert "0.23 → 0.07" in result["reason"] and "drop" not in result["tests"]
    original, modified = weak["original"]["kept"], weak["modified"]["kept"]
    assert result["tests"]["positive_control"]["p_drop"] == pytest.approx(
        _one_sided(original, modified))
    assert result["seeds_needed"] == stats.seeds_needed(
        np.mean(original) - np.mean(modified), stats.pooled_sd(original, modified))
    assert f"about {result['seeds_needed']} seeds per arm" in result["reason"]
    too_few = verdict.verdict(method, _arms(HIGH, [0.1]), AE)
    emptied = verdict.verdict(method, _arms(HIGH, pruned={"modified": [0.1, 0.1, 0.1]}), AE)
    for result in (too_few, emptied):
        assert result["label"] == "INCONCLUSIVE"
        assert result["reason"].startswith("positive control not testable")
    assert "3 over-pruned and excluded (rate 100%)" in emptied["reason"]
    passed, _, sentence = verdict.positive_control(BETA_VAE)
    assert passed and "drops significantly" in sentence


def test_floor_check_and_too_few_runs():
    flat = _arms([0.05, 0.07, 0.04, 0.06], LOW, LOW)
    result = verdict.verdict(flat, BETA_VAE, AE)
    assert result["label"] == "INCONCLUSIVE"
    assert result["reason"].startswith("does not disentangle at this scale")
    assert result["tests"]["floor"]["p"] == pytest.approx(
        _one_sided([0.05, 0.07, 0.04, 0.06], AE["original"]["kept"]))
    # the margin: half the share of its headroom above the AE the β-VAE loses, times the
    # method's own headroom (negative here: the floor check fails first)
    relative = 0.5 * (np.mean(HIGH) - np.mean(LOW)) / (np.mean(HIGH) - np.mean(AE_MIG))
    assert result["relative_margin"] == pytest.approx(relative)
    assert result["margin"] == pytest.approx(
        relative * (np.mean([0.05, 0.07, 0.04, 0.06]) - np.mean(AE_MIG)))
    result = verdict.verdict(_arms(HIGH, LOW, LOW), BETA_VAE, _arms([0.05]))
    assert result["label"] == "INCONCLUSIVE" and result["seeds_needed"] is None
    assert result["reason"].startswith("validity gate not testable: the reference AE's "
                                       "original arm has 1 run(s)")
    result = verdict.verdict(_arms([0.3], [0.1]), BETA_VAE, AE)
    assert result["label"] == "INCONCLUSIVE"
    assert "the method's original arm has 1 run(s)" in result["reason"]


def test_depends_needs_a_drop_larger_than_on_noise():
    noisy = [0.29, 0.30, 0.31, 0.30]
    result = verdict.verdict(_arms(HIGH, LOW, noisy), BETA_VAE, AE)
    assert result["label"] == "DEPENDS"
    assert result["tests"]["drop"]["p_drop"] == pytest.approx(_one_sided(HIGH, LOW))
    assert result["tests"]["differences"]["noisy"]["p"] == pytest.approx(
        _one_sided(noisy, LOW))
    # drops as much on noise (significantly) as on the manipulation: SENSITIVE, not DEPENDS
    for noisy in ([0.05, 0.06, 0.04, 0.05], [0.08, 0.16, 0.10, 0.14]):
        result = verdict.verdict(_arms(HIGH, LOW, noisy), BETA_VAE, AE)
        assert result["label"] == "SENSITIVE" and "hurt by noise, a control that keeps" in result["reason"]
        assert result["tests"]["control_drops"]["noisy"]["p_drop"] == pytest.approx(
            _one_sided(HIGH, noisy))
        assert result["seeds_needed"] is None
        # the reference beta-VAE has no noisy arm: its specificity is not shown
        assert result["reference_specific"] is False
        assert "as for the reference β-VAE at this scale" in result["reason"]
    # a smaller drop on noise that is neither significant nor significantly smaller than
    # the manipulation's: seeds for the difference
    wide = [0.15, 0.35, 0.10, 0.30]
    assert _one_sided(HIGH, wide) > 0.05 and _one_sided(wide, LOW) > 0.05
    result = verdict.verdict(_arms(HIGH, LOW, wide), BETA_VAE, AE)
    assert result["label"] == "INCONCLUSIVE" and result["seeds_needed"] == (
        stats.seeds_needed(np.mean(wide) - np.mean(LOW), stats.pooled_sd(LOW, wide)))
    result = verdict.verdict(_arms(HIGH, LOW), BETA_VAE, AE)
    assert result["label"] == "INCONCLUSIVE" and "noise sensitivity" in result["reason"]


def test_sensitive_names_the_vignette_and_every_control_that_hurts():
    """The vignette battery's pattern for a pixel-linear code: a small drop on the turned
    sprite, a larger one on the vignette, none on the others."""
    names = ("original", "rotated@5", "noisy@0.0811", "rotated@10", "vignetted@0.25")

    def arms(*values):
        return {n: {"kept": list(v), "overpruned": []} for n, v in zip(names, values)}
    battery = dict(manipulated="rotated@5",
                   controls=["noisy@0.0811", "rotated@10", "vignetted@0.25"])
    beta_vae = arms(HIGH, LOW, HIGH, HIGH, HIGH)
    ae = arms(*[AE_MIG] * 5)
    ica = [0.28, 0.29, 0.28, 0.285]
    turned, lost = [0.18, 0.175, 0.185, 0.18], [0.03, 0.035, 0.03, 0.032]
    result = verdict.verdict(arms(ica, turned, ica, ica, lost), beta_vae, ae, **battery)
    assert result["label"] == "SENSITIVE"
    assert "hurt by the vignette, a control that keeps" in result["reason"]
    assert set(result["tests"]["control_drops"]) == {"vignetted@0.25"}
    assert "of the same energy" not in result["reason"]
    # hurt by two controls at once: both named, in the plural
    result = verdict.verdict(arms(ica, turned, lost, ica, lost), beta_vae, ae, **battery)
    assert result["label"] == "SENSITIVE"
    assert "hurt by noise and the vignette, controls that keep" in result["reason"]
    # another control is named as itself
    result = verdict.verdict(arms(ica, turned, ica, lost, ica), beta_vae, ae, **battery)
    assert "hurt by rotated@10, a control that keeps" in result["reason"]


def test_depends_needs_a_larger_drop_than_on_every_control():
    def arms(original, wave, noisy, texture):
        return {"original": {"kept": original, "overpruned": []},
                "wave@0.3": {"kept": wave, "overpruned": []},
                "noisy@0.37": {"kept": noisy, "overpruned": []},
                "wave_texture@0.3": {"kept": texture, "overpruned": []}}
    beta_vae = arms(HIGH, LOW, HIGH, HIGH)
    AE = arms(AE_MIG, AE_MIG, AE_MIG, AE_MIG)       # noqa: N806 (the module's AE, these arms)
    battery = dict(manipulated="wave@0.3", controls=["noisy@0.37", "wave_texture@0.3"])
    flat = [0.29, 0.30, 0.31, 0.30]
    result = verdict.verdict(arms(HIGH, LOW, flat, flat), beta_vae, AE, **battery)
    assert result["label"] == "DEPENDS" and set(result["tests"]["differences"]) == {
        "noisy@0.37", "wave_texture@0.3"}
    assert "wave@0.3 data" in result["reason"]
    assert result["reference_specific"] is True
    assert set(result["tests"]["positive_control_specificity"]) == {
        "noisy@0.37", "wave_texture@0.3"}
    assert "Its drop is specific" in result["positive_control"]
    # as large a drop on the texture control: texture sensitivity, not DEPENDS
    result = verdict.verdict(arms(HIGH, LOW, flat, LOW), beta_vae, AE, **battery)
    assert result["label"] == "SENSITIVE" and "hurt by the texture, a control that keeps" in result["reason"]
    assert "wave_texture@0.3 data" in result["reason"]
    assert "the reference β-VAE's drop is specific at this scale" in result["reason"]
    # a reference beta-VAE that drops as much on its texture: its drop is not specific,
    # a method's DEPENDS still stands on its own tests and says so
    not_specific = arms(HIGH, LOW, HIGH, LOW)
    result = verdict.verdict(arms(HIGH, LOW, flat, LOW), not_specific, AE, **battery)
    assert result["label"] == "SENSITIVE" and result["reference_specific"] is False
    assert "not shown to be specific: not significantly larger than on wave_texture@0.3" \
        in result["positive_control"]
    assert "whose drop is not specific either" in result["reason"]
    # a control whose reference runs are all over-pruned is named as untested, not as one
    # the drop was compared with and failed
    pruned = arms(HIGH, LOW, HIGH, HIGH)
    pruned["noisy@0.37"] = {"kept": [], "overpruned": HIGH}
    result = verdict.verdict(arms(HIGH, LOW, flat, flat), pruned, AE, **battery)
    assert result["reference_specific"] is False
    assert ("not shown to be specific: too few runs left on noisy@0.37 to compare with "
            "(difference of drops, wave_texture@0.3: ") in result["positive_control"]
    result = verdict.verdict(arms(HIGH, LOW, flat, flat), not_specific, AE, **battery)
    assert result["label"] == "DEPENDS"
    assert "although the reference β-VAE's is not at this scale" in result["reason"]
    # the positive control is read on the manipulated arm
    result = verdict.verdict(arms(HIGH, LOW, flat, flat), arms(HIGH, HIGH, LOW, LOW), AE,
                             **battery)
    assert result["reason"].startswith("positive control failed")
    assert "paper 002" not in result["reason"]


def test_battery_labels_sweep_and_dose_response(tmp_path):
    from benchmark.studies import battery, study
    variants = ["original", "wave@0.3", "noisy@0.3675", "wave_texture@0.3", "wave@0.05",
                "wave@0.1"]
    spec = study.check_battery({"manipulated": "wave@0.3", "controls": [
        "noisy@0.3675", "wave_texture@0.3"], "sweep": "wave", "plane": [0, 1]}, variants)
    assert battery.arms_of(spec, "dsprites") == ["original", "wave@0.3", "noisy@0.3675",
                                                  "wave_texture@0.3"]
    assert battery.sweep_of(spec, "dsprites", variants) == [
        (0.05, "wave@0.05"), (0.1, "wave@0.1"), (0.3, "wave@0.3")]
    assert battery.label("modified@0.1", "dsprites") == "modified"
    assert battery.battery_of({"datasets": ["dsprites"]}) == battery.LEGACY
    for bad, match in (({"manipulated": "wave@0.2", "controls": []}, "among the study's"),
                       ({"manipulated": "wave@0.3", "controls": "noisy"}, "list of variants"),
                       ({"manipulated": "wave@0.3", "sweep": "odd"}, "base name"),
                       ({"manipulated": "wave@0.3", "plane": [0]}, "two factor columns"),
                       ({"manipulated": "wave@0.3", "plane": [1, 1]}, "different ones"),
                       ({"manipulated": "wave@0.3", "extra": 1}, "unknown keys")):
        with pytest.raises(ValueError, match=match):
            study.check_battery(bad, variants)

    def run(mig, angle):
        return {"values": {"MIG": mig, "misalignment": angle}}
    aligned, turned = [run(0.5, 3.0), run(0.45, 5.0), run(0.55, 4.0)], \
        [run(0.05, 40.0), run(0.1, 38.0), run(0.02, 44.0)]
    half = [run(0.4, 10.0), run(0.35, 12.0), run(0.42, 9.0)]
    runs = {"beta_vae": {"original": {"kept": aligned}, "wave@0.05": {"kept": aligned},
                         "wave@0.1": {"kept": half}, "wave@0.3": {"kept": turned}},
            "ae": {"original": {"kept": turned}, "wave@0.3": {"kept": turned}}}
    sweep = [(0.05, "wave@0.05"), (0.1, "wave@0.1"), (0.3, "wave@0.3")]
    rows = battery.dose_response(runs, sweep)
    assert [(r["model"], r["strength"]) for r in rows] == [
        ("beta_vae", 0.0), ("beta_vae", 0.05), ("beta_vae", 0.1), ("beta_vae", 0.3),
        ("ae", 0.0), ("ae", 0.3)]
    first = rows[0]["mig"]
    assert first["mean"] == pytest.approx(0.5) and first["ci_low"] < 0.5 < first["ci_high"]
    assert first["ci_high"] - first["mean"] == pytest.approx(
        sp.t.ppf(0.975, 2) * 0.05 / np.sqrt(3))
    assert battery.turning_strength(rows, "beta_vae") == {
        "aligned": True, "turns_at": 0.3, "drops_at": 0.1}
    assert battery.turning_strength(rows, "ae")["aligned"] is False
    path = battery.dose_figure(rows, tmp_path / "dose.png", {0.05: 5.1, 0.1: 20.5, 0.3: 184})
    assert path.stat().st_size > 1000


def test_strengths_select_the_sweep_and_keep_the_controls(tmp_path):
    reference = {"datasets": ["dsprites"], "artefacts": {}, "bindings": [],
                 "source": "procedural", "variants": [
                     "original", "wave@0.3", "noisy@0.3675", "wave_texture@0.3", "wave@0.05",
                     "wave@0.1"],
                 "battery": {"manipulated": "wave@0.3", "controls": ["noisy@0.3675",
                                                                     "wave_texture@0.3"],
                             "sweep": "wave"}}
    settings = audit.audit_settings("models/ae.gin", "ae", [0], reference, str(tmp_path),
                                    strengths=[0.1])
    assert settings.variants == ("original", "wave@0.3", "noisy@0.3675",
                                   "wave_texture@0.3", "wave@0.1")
    assert settings.battery["manipulated"] == "wave@0.3"
    with pytest.raises(ValueError, match="strengths of the reference's sweep"):
        audit.audit_settings("models/ae.gin", "ae", [0], reference, str(tmp_path),
                             strengths=[0.2])


def _timed_runs(root, timings):
    """Reference run dirs whose results.json holds only the timing fields plan() reads."""
    runs = []
    for i, (wall, ran_on, resumed) in enumerate(timings):
        run_dir = root / f"run{i}"
        run_dir.mkdir(parents=True)
        (run_dir / "results.json").write_text(json.dumps(
            {"wall_seconds": wall, "machine": ran_on, "resumed_from": resumed}))
        runs.append({"run_dir": str(run_dir)})
    return runs


def test_the_plan_estimates_from_cpu_time_not_from_wall_time_that_shared_cores(
        tmp_path, monkeypatch):
    """Two reference runs trained side by side on 2 cores took 1,500 s each but used 780
    CPU-seconds: alone on the 2 cores a run takes ~390 s, not 1,500 (the 2-core EPYC's
    first ellipse3 audit plan said 781 min for what is ~6 h)."""
    reference = {"datasets": ["dsprites"], "artefacts": {}, "bindings": [],
                 "source": "procedural", "variants": ["original", "wave@0.3"],
                 "battery": {"manipulated": "wave@0.3", "controls": []}}
    settings = audit.audit_settings("models/ae.gin", "ae", [0, 1, 2, 3, 4], reference,
                                    str(tmp_path / "audit"))
    monkeypatch.setattr(audit_plan.os, "cpu_count", lambda: 2)
    # nothing trained yet: no run directory, so no run_states (a process that parses
    # every run, a TensorFlow import); run_states itself is tested with the study
    def no_states(out, specs):
        raise AssertionError("a fresh audit needs no fingerprints")
    monkeypatch.setattr(audit_plan.study, "run_states", no_states)
    shared = {"cpu": "Test CPU", "threads": 2, "cpu_seconds": 780.0}
    runs = _timed_runs(tmp_path / "ref", [(1500.0, shared, None), (1500.0, shared, None),
                                          (300.0, {**shared, "cpu_seconds": 100.0}, 5000)])
    planned = audit_plan.plan(settings, runs, workers=1)
    assert planned["to_run"] == 10
    assert planned["estimate_seconds"] == pytest.approx(10 * 780.0 / 2)   # resumed left out
    assert planned["seconds_per_run"] == pytest.approx(390.0)
    assert "13.0 CPU-min (2 runs measured, Test CPU)" in planned["text"]
    assert "2 of this machine's 2 cores" in planned["text"]
    # two workers on 2 cores do not halve it: the cores are the limit
    assert audit_plan.plan(settings, runs, workers=2)["estimate_seconds"] == pytest.approx(3900.0)
    # runs from before the machine record: wall time, said to be an upper bound
    legacy = _timed_runs(tmp_path / "old", [(1500.0, None, None), (1700.0, None, None)])
    old = audit_plan.plan(settings, legacy, workers=1)
    assert old["estimate_seconds"] == pytest.approx(10 * 1600.0)
    assert "at most about 267 min" in old["text"] and "upper bound" in old["text"]
    assert audit_plan.plan(settings, [], workers=1)["estimate_seconds"] is None
    # everything finished: no "about 0 min" (issue 61 item 7)
    for spec in study.expand(settings):
        (tmp_path / "audit" / "runs" / spec.name).mkdir(parents=True)
    monkeypatch.setattr(audit_plan.study, "run_states",
                        lambda out, specs: ({s.name for s in specs}, {}, {}))
    finished = audit_plan.plan(settings, legacy, workers=1)
    assert finished["to_run"] == 0 and finished["text"].endswith("; nothing to train")


def test_robust_is_equivalence_within_the_margin():
    same = [0.30, 0.31, 0.29, 0.31]
    result = verdict.verdict(_arms(HIGH, same, same), BETA_VAE, AE)
    assert result["label"] == "ROBUST"
    margin = 0.5 * (np.mean(HIGH) - np.mean(LOW))
    assert result["margin"] == pytest.approx(margin)
    assert result["tests"]["equivalence"]["p"] == pytest.approx(max(
        _one_sided(np.add(HIGH, margin), same), _one_sided(same, np.subtract(HIGH, margin))))
    # a significant drop, no larger than on noise and well within the margin: ROBUST too
    smaller = list(np.subtract(HIGH, 0.03))
    result = verdict.verdict(_arms(HIGH, smaller, smaller), BETA_VAE, AE)
    assert result["tests"]["drop"]["p_drop"] < 0.05 and result["label"] == "ROBUST"
    # a margin of a twentieth of the reference drop is too tight for these seeds
    result = verdict.verdict(_arms(HIGH, same, same), BETA_VAE, AE, margin_fraction=0.05)
    assert result["label"] == "INCONCLUSIVE"
    # not significant, but too spread to rule out a drop of the margin's size
    original, modified = [0.30, 0.20, 0.40, 0.25, 0.35], [0.26, 0.15, 0.36, 0.20, 0.30]
    result = verdict.verdict(_arms(original, modified, modified), BETA_VAE, AE)
    assert result["label"] == "INCONCLUSIVE" and result["reason"].startswith("neither")
    assert result["seeds_needed"] == stats.seeds_needed(
        margin, stats.pooled_sd(original, modified))
    # the margin scales with the method's own MIG: a method with a third of the β-VAE's
    # MIG that loses 60 % of it is not ROBUST, although its drop (0.06) is inside the
    # absolute margin of half the β-VAE's drop (0.1) (FastICA on the geometry battery
    # was called ROBUST that way: 0.278 -> 0.099)
    third, lost = [0.100, 0.101, 0.099, 0.100], [0.040, 0.041, 0.039, 0.040]
    result = verdict.verdict(_arms(third, lost, third), BETA_VAE, AE)
    assert result["margin"] == pytest.approx(
        margin / (np.mean(HIGH) - np.mean(AE_MIG)) * (np.mean(third) - np.mean(AE_MIG)))
    assert not result["tests"]["equivalence"]["equivalent"]
    assert result["label"] == "DEPENDS"


def test_overpruning_is_reported_and_said_when_it_decides():
    method = _arms(HIGH, [0.10], [0.29, 0.30, 0.31, 0.30],
                   pruned={"modified": [0.10, 0.12]})
    result = verdict.verdict(method, BETA_VAE, AE)
    assert result["label"] == "INCONCLUSIVE" and result["exclusions_decide"]
    assert "modified arm has 1 run(s) left of 3: 2 over-pruned" in result["reason"]
    assert "counting them, it would be DEPENDS" in result["reason"]
    arm = result["overpruning"]["modified"]
    assert (arm["runs"], arm["overpruned"]) == (3, 2) and arm["rate"] == pytest.approx(2 / 3)
    assert arm["p_fisher"] == pytest.approx(sp.fisher_exact([[0, 4], [2, 1]]).pvalue)
    # exclusions that do not change the label are reported, not flagged
    method = _arms(HIGH, LOW, [0.29, 0.30, 0.31, 0.30], pruned={"modified": [0.09]})
    result = verdict.verdict(method, BETA_VAE, AE)
    assert result["label"] == "DEPENDS" and not result["exclusions_decide"]
    assert result["overpruning"]["modified"]["overpruned"] == 1


def _codes(path, angle_deg, seed):
    """eval_codes.npz of a 2-latent code rotated by angle_deg from the factor axes."""
    rng = np.random.default_rng(seed)
    factors = rng.integers(0, 32, size=(400, 2))
    theta = np.radians(angle_deg)
    rotation = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    np.savez(path / "eval_codes.npz", factors=factors, codes=(factors - 15.5) @ rotation)


GEOMETRY = ["original", "wave@0.3", "noisy@0.3675", "wave_texture@0.3", "wave@0.1"]


def _geometry_reference(root) -> pathlib.Path:
    """A battery reference in the form of results/geometry_cpu at tiny settings: beta-VAE
    aligned on original and turned on the wave, PCL aligned on both, the AE a floor."""
    root.mkdir()
    (root / "study.json").write_text(json.dumps({"settings": {
        "name": "geometry_tiny", "datasets": ["dsprites"], "artefacts": {},
        "variants": GEOMETRY, "bindings": [*TINY_RUN, "model.num_latents = 2",
                                            "data.fixed_factors = {'shape': 1, 'scale': 5, "
                                            "'orientation': 0}"],
        "source": "procedural",
        "battery": {"manipulated": "wave@0.3", "controls": ["noisy@0.3675",
                                                            "wave_texture@0.3"],
                    "sweep": "wave", "plane": [0, 1]}}}))
    cells = {("beta_vae", "original"): (0.4, 3), ("beta_vae", "wave@0.3"): (0.05, 40),
             ("beta_vae", "noisy@0.3675"): (0.35, 5), ("beta_vae", "wave_texture@0.3"): (0.3, 6),
             ("beta_vae", "wave@0.1"): (0.3, 12), ("pcl", "original"): (0.5, 2),
             ("pcl", "wave@0.3"): (0.5, 3), ("ae", "original"): (0.05, 30)}
    for (model, variant), (mig, angle) in cells.items():
        base, _, eps = variant.partition("@")
        for i in range(3):
            run = root / "runs" / f"{model}_{variant}_{i}"
            _result(run, model, base, i, mig + 0.01 * i, 0.5, eps=float(eps) if eps else None)
            _codes(run, angle + i, i)
    return root


@pytest.mark.slow
def test_audit_end_to_end_on_tiny_settings(tmp_path):
    reference = _geometry_reference(tmp_path / "reference")
    out = tmp_path / "audit"
    # its 5 runs in one process (--runs_per_process); a process per run, the default, is
    # test_custom_model_runs_through_the_audit's and every study command's
    command = [sys.executable, "-m", "benchmark.audit", "--gin_file=examples/sparse_vae.gin",
               "--seeds=0", f"--reference={reference}", f"--output_dir={out}",
               "--runs_per_process=5"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")])}
    # as a user calls it (issue 29: an in-process test once hid a crash of every audit)
    called = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=900)
    assert called.returncode == 0, called.stderr[-3000:]
    path = out / "audit.md"
    assert called.stdout.splitlines()[0].startswith(
        "audit plan: 5 runs (5 arms × 1 seeds), 0 finished, 5 to train")
    assert (out / "runs" / "sparse_vae_dsprites_wave_texture@0.3_seed0" / "results.json"
            ).is_file()
    assert called.stdout.strip().splitlines()[-1] == str(path)
    result = json.loads((out / "audit.json").read_text())
    assert result["verdict"] == "INCONCLUSIVE"          # one seed cannot test a drop
    assert "the method's original arm has" in result["reason"]   # 1 run, or 0 kept
    reference = result["reference_drops"]["beta_vae"]
    floor = result["reference_drops"]["ae"]["original_mean"]
    assert result["rule_version"] == verdict.RULE_VERSION
    assert result["relative_margin"] == pytest.approx(0.5 * min(
        1.0, result["tests"]["positive_control"]["drop"] / (reference["original_mean"] - floor)))
    own = result["method_drops"]["original_mean"]         # None when no original run is kept
    assert result["margin"] == (None if own is None else
                                pytest.approx(result["relative_margin"] * (own - floor)))
    assert result["arms"] == ["original", "wave@0.3", "noisy@0.3675", "wave_texture@0.3"]
    assert result["robust_control"].startswith("Robust control held")
    assert result["model_name"] == "sparse_vae" and not result["failed_runs"]
    assert result["reference_drops"]["beta_vae"]["wave@0.3"]["drop"] == pytest.approx(0.35)
    assert result["turning"]["beta_vae"] == {"aligned": True, "turns_at": 0.3,
                                             "drops_at": 0.1}
    assert result["turning"]["pcl"]["turns_at"] is None
    mechanism = {(r["model"], r["arm"]): r for r in result["mechanism"]}
    assert mechanism[("beta_vae", "wave@0.3")]["misalignment"]["mean"] == pytest.approx(41.0)
    assert ("pcl", "wave@0.3") in mechanism and ("ae", "wave@0.3") not in mechanism
    assert sorted(p.parent.name for p in (out / "runs").glob("*/results.json")) == sorted(
        f"sparse_vae_dsprites_{v}_seed0" for v in GEOMETRY)
    text = path.read_text()
    assert "Verdict: INCONCLUSIVE" in text and "β-VAE (reference" in text
    assert "Battery: geometry_tiny" in text and "1 seed(s) per arm" in text
    assert "reference β-VAE's MIG drops significantly on wave@0.3 data" in text
    assert "drop → wave_texture@0.3" in text and "| code turns at |" in text
    assert "![dose-response](dose_response.png)" in text
    assert (out / "dose_response.png").stat().st_size > 1000
    assert "Over-pruned runs per arm" in text
    # the tiny reference's study.json names no models: its completeness cannot be counted
    assert result["reference_completeness"] is None and "holds no whole grid" in text
    assert result["artefact_warnings"] == {} and "is flagged" not in text
    assert (out / "report" / "report.md").exists()
    with pytest.raises(FileNotFoundError, match="study.json"):
        audit.run_audit("examples/sparse_vae.gin", "x", [0], tmp_path / "none", out)


def _audited_beta_vae(tmp_path, seeds: int):
    """A geometry reference and, in tmp_path/a, an audited beta-VAE's finished runs of seeds
    0..seeds-1 on every arm (MIG 0.45 + 0.01 seed, 0.3 more from seed 3), audit settings
    for seeds 0-2."""
    reference = _geometry_reference(tmp_path / "reference")
    settings = audit.audit_settings("models/beta_vae.gin", "beta_vae", [0, 1, 2],
                                    audit_plan.reference_settings(reference),
                                    str(tmp_path / "a"))
    for variant in GEOMETRY:
        base, _, eps = variant.partition("@")
        for i in range(seeds):
            run = tmp_path / "a" / "runs" / f"beta_vae_dsprites_{variant}_seed{i}"
            _result(run, "beta_vae", base, i, 0.45 + 0.01 * i + (0.3 if i > 2 else 0), 0.5,
                    eps=float(eps) if eps else None)
            _codes(run, 2.0 + i, i)
    return reference, settings


def test_an_audit_of_a_reference_model_keeps_the_two_apart(tmp_path):
    """write_audit on runs already there (no training): the audited beta-VAE (here one
    that keeps its alignment) is not merged with the reference beta-VAE."""
    reference, settings = _audited_beta_vae(tmp_path, 3)
    path = audit_report.write_audit("beta_vae", [0, 1, 2],
                                    audit_plan.reference_settings(reference), reference,
                                    settings, tmp_path / "a", 0.05, 0.5, failed=[])
    result = json.loads((tmp_path / "a" / "audit.json").read_text())
    assert result["verdict"] == "ROBUST" and result["method_runs"] == 15
    assert result["method_drops"]["original_mean"] == pytest.approx(0.46)
    assert result["reference_drops"]["beta_vae"]["original_mean"] == pytest.approx(0.41)
    assert "beta_vae (audited)" in result["turning"] and "beta_vae" in result["turning"]
    assert "Verdict: ROBUST" in path.read_text()


def test_the_verdict_rests_on_exactly_the_seeds_it_names(tmp_path):
    """An output directory holding runs of seeds 0-4 audited with seeds 0, 1, 2: the runs
    of seeds 3 and 4 are left out of every count and test (issue 61 item 3)."""
    reference, settings = _audited_beta_vae(tmp_path, 5)
    audit_report.write_audit("beta_vae", [0, 1, 2], audit_plan.reference_settings(reference),
                             reference, settings, tmp_path / "a", 0.05, 0.5, failed=[])
    result = json.loads((tmp_path / "a" / "audit.json").read_text())
    assert result["method_runs"] == 15
    assert result["method_drops"]["original_mean"] == pytest.approx(0.46)
    assert result["method_drops"]["wave@0.3"]["n_original"] == 3


def test_arms_are_found_as_the_report_labels_them():
    from benchmark.studies import battery, report_data
    assert battery.label("noisy@0.1000001", "dsprites") == report_data.nominal([{
        "dataset": "dsprites", "variant": "noisy@0.1"}])[("dsprites", "noisy@0.1")] == "noisy"
    legacy = battery.battery_of({"variants": ["original", "modified", "noisy@0.2787"]})
    assert legacy == {"manipulated": "modified", "controls": ["noisy@0.2787"]}
    with pytest.raises(ValueError, match="no study.battery and no 'modified' arm"):
        battery.battery_of({"variants": ["original", "noisy"]})
    # a variant named without its strength finds runs that recorded the artefact's eps
    records = [{"model": "beta_vae", "dataset": "dsprites", "variant": "modified@0.3",
                "setting": "", "seed": i, "overpruned": False, "values": {"MIG": 0.1},
                "run_dir": f"r{i}"} for i in range(2)]
    arms = battery.arm_runs(records, "beta_vae", "dsprites", ["original", "modified"])
    assert len(arms["modified"]["kept"]) == 2 and arms["original"]["kept"] == []


def test_the_verdict_names_the_control_that_is_short_of_runs():
    arms = {"original": {"kept": HIGH, "overpruned": []},
            "wave@0.3": {"kept": LOW, "overpruned": []},
            "noisy@0.37": {"kept": HIGH, "overpruned": []},
            "wave_texture@0.3": {"kept": [0.3], "overpruned": []}}
    reference = {**arms, "wave_texture@0.3": {"kept": HIGH, "overpruned": []}}
    result = verdict.verdict(arms, reference, AE, manipulated="wave@0.3",
                             controls=["noisy@0.37", "wave_texture@0.3"])
    assert "texture sensitivity cannot be ruled out" in result["reason"]


def test_the_scope_names_arms_with_runs_of_other_seeds():
    """An arm extended with more seeds (a registered floor check, say) is named in the
    scope sentence rather than hidden behind the per-arm seed count."""
    from benchmark.studies.audit_report import _scope

    reference = {"name": "geometry_tiny", "bindings": ["run.steps = 800"]}
    battery = {"manipulated": "wave@0.3", "controls": ["noisy@0.3675"]}
    even = _scope(reference, "ref", battery, [0, 1, 2], None, None,
                  {"original": 3, "wave@0.3": 3})
    assert "trained 800 steps; the method's 3 seed(s) per arm; the manipulation wave@0.3" in even
    extended = _scope(reference, "ref", battery, [0, 1, 2], None, None,
                      {"original": 13, "wave@0.3": 3})
    assert "3 seed(s) per arm (13 on original);" in extended
    assert "Power" not in even
    two = _scope(reference, "ref", battery, [0, 1], None, None)
    assert "Power: not estimated (fewer than 3 seeds an arm" in two
    stated = _scope(reference, "ref", battery, [0, 1, 2], 0.8, 0.2)
    assert "Power: 0.80" in stated and "80 % upper confidence bound" in stated


def test_a_failed_positive_control_still_records_the_floor_and_names_no_paper_when_flagged():
    method = _arms(HIGH, LOW, [0.29, 0.30, 0.31, 0.30])
    weak = _arms([0.07, 0.06, 0.05], [0.01, 0.08, 0.06])
    result = verdict.verdict(method, weak, AE)
    assert result["label"] == "INCONCLUSIVE" and "drop" not in result["tests"]
    assert result["tests"]["floor"]["p"] == pytest.approx(_one_sided(HIGH, AE["original"]["kept"]))
    _, _, plain = verdict.positive_control(BETA_VAE)
    _, _, flagged = verdict.positive_control(BETA_VAE, flagged=True)
    assert "paper 002 Table 1" in plain and "paper 002" not in flagged
    assert "unadjusted" in plain


def test_the_audit_trains_the_battery_arms_only_and_counts_the_reference(tmp_path):
    """manipulation_ellipse3_cpu has paper 002's L-inf noise (noisy@0.1) beside its
    battery: the audit does not train it (it enters no verdict); the reference's finished
    runs on the battery's arms are counted against its registered grid."""
    reference = {"name": "ref", "datasets": ["dsprites"], "artefacts": {},
                 "models": {"beta_vae": "models/beta_vae.gin", "ae": "models/ae.gin",
                            "pcl": "models/pcl.gin"},
                 "variants": ["original", "wave@0.3", "noisy@0.3675", "noisy@0.1"],
                 "model_variants": {"pcl": ["original", "wave@0.3"], "ae": ["original"]},
                 "seeds": [0, 1], "bindings": [], "source": "procedural", "line_search": {},
                 "battery": {"manipulated": "wave@0.3", "controls": ["noisy@0.3675"]}}
    settings = audit.audit_settings("examples/sparse_vae.gin", "sv", [0], reference,
                                    str(tmp_path / "out"))
    assert settings.variants == ("original", "wave@0.3", "noisy@0.3675")
    battery = reference["battery"]
    finished = [{"run_dir": str(tmp_path / n)} for n in (
        "beta_vae_dsprites_original_seed0", "beta_vae_dsprites_original_seed1",
        "beta_vae_dsprites_wave@0.3_seed0", "beta_vae_dsprites_noisy@0.3675_seed0",
        "beta_vae_dsprites_noisy@0.1_seed0", "ae_dsprites_original_seed0",
        "ae_dsprites_original_seed1", "pcl_dsprites_original_seed0")]
    count = audit_plan.reference_completeness(reference, battery, "dsprites", finished)
    # registered on the battery's arms: beta_vae 3 arms x 2 + ae 2 + pcl 2 x 2 = 12
    assert (count["registered"], count["finished"]) == (12, 7)
    assert count["missing"] == {"beta_vae on wave@0.3": 1, "beta_vae on noisy@0.3675": 1,
                                "pcl on original": 1, "pcl on wave@0.3": 2}
    assert audit_plan.reference_completeness({"datasets": ["dsprites"]}, battery,
                                             "dsprites", finished) is None


def test_a_flagged_reference_artefact_is_named(tmp_path):
    art = tmp_path / "art"
    art.mkdir()
    (art / "evidence.json").write_text(json.dumps({"below_minimum_effect": True}))
    reference = {"variants": ["original", "modified", "noisy@0.07", "modified_texture@0.1"],
                 "artefacts": {"dsprites": {"modified": str(art),
                                            "modified_texture": str(art)}}}
    battery = {"manipulated": "modified", "controls": ["noisy@0.07", "modified_texture@0.1"]}
    found = audit_plan.reference_artefact_warnings(reference, battery, "dsprites")
    assert list(found) == [f"modified ({art})", f"modified_texture ({art})"]
    assert "below the minimum effect" in found[f"modified ({art})"][0]
    # an artefact that no arm of the battery reads, or of another dataset, is not named
    narrow = {"manipulated": "modified", "controls": ["noisy@0.07"]}
    assert list(audit_plan.reference_artefact_warnings(reference, narrow, "dsprites")) == [
        f"modified ({art})"]
    assert audit_plan.reference_artefact_warnings(reference, battery, "shapes3d") == {}
    assert audit_plan.reference_artefact_warnings({"artefacts": {}}, battery, "dsprites") == {}


@pytest.mark.slow
def test_a_missing_gin_file_is_refused_before_any_plan_and_the_default_output_is_under_runs(
        tmp_path):
    """A missing --gin_file is one line and exit 2, also with --dry_run (which printed a
    plan and exited 0); the audit's default directory is runs/audit_<name>, never results/."""
    from tests.cli import python_m
    missing = python_m("benchmark.audit", "--gin_file=examples/no_such_method.gin",
                       "--dry_run")
    assert missing.returncode == 2 and "audit plan" not in missing.stdout
    assert missing.stderr.strip().splitlines()[-1] == (
        "error: --gin_file: expected a gin file, found none at examples/no_such_method.gin "
        f"(nor under {ROOT / 'gin_configs'})")
    planned = python_m("benchmark.audit", "--gin_file=examples/sparse_vae.gin",
                       "--seeds=0,1", "--dry_run", "--name=probe_default_dir")
    assert planned.returncode == 0, planned.stderr[-2000:]
    assert "audit plan" in planned.stdout
    assert "output directory: runs/audit_probe_default_dir\n" in planned.stdout
    assert "  probe_default_dir_dsprites_original_seed1\n" in planned.stdout  # its runs
    assert not (ROOT / "runs" / "audit_probe_default_dir").exists()     # and none trained
    # from a subdirectory: the default reference is the repository's published battery
    below = python_m("benchmark.audit", f"--gin_file={ROOT / 'examples' / 'sparse_vae.gin'}",
                     "--seeds=0,1", "--dry_run", cwd=ROOT / "docs")
    assert below.returncode == 0, below.stderr[-2000:]
    assert below.stdout.splitlines()[0] == planned.stdout.splitlines()[0]


@pytest.mark.slow
def test_a_method_gin_that_cannot_run_is_refused_before_the_plan(tmp_path):
    """A method gin file importing a module Python cannot find, or binding an unknown method,
    is one line on the first line of stderr and exit 2, with --dry_run too (it printed a
    35-run plan and exited 0; the real audit failed in every run, minutes later)."""
    from tests.cli import python_m
    unimportable = tmp_path / "mine.gin"
    unimportable.write_text("import no_such_package_of_methods\nmodel.method = 'vae'\n")
    unknown = tmp_path / "unknown.gin"
    unknown.write_text("model.method = 'no_such_method'\n")
    for gin_file, expected in ((unimportable, "No module named 'no_such_package_of_methods'"),
                               (unknown, "unknown model.method 'no_such_method'")):
        found = python_m("benchmark.audit", f"--gin_file={gin_file}", "--dry_run")
        assert found.returncode == 2 and "audit plan" not in found.stdout, found.stdout
        first = found.stderr.strip().splitlines()[0]
        assert first.startswith("error: ") and expected in first, found.stderr[-2000:]
        assert gin_file == unknown or "add that directory to PYTHONPATH" in found.stderr


def test_a_reference_at_the_ae_floor_makes_every_verdict_untestable():
    """Validity gate (rule 2): a β-VAE whose original MIG is not above the AE's has nothing
    to lose, so even a clear drop of its own and of the method is no verdict."""
    at_floor = _arms([0.05, 0.07, 0.05, 0.06], [0.01, 0.02, 0.01, 0.02])
    result = verdict.verdict(_arms(HIGH, LOW, HIGH), at_floor, AE)
    assert result["label"] == "INCONCLUSIVE" and result["margin"] is None
    assert result["reason"].startswith("validity gate failed")
    assert "untestable at this scale" in result["reason"]
    assert result["tests"]["validity_gate"]["p"] == pytest.approx(
        _one_sided(at_floor["original"]["kept"], AE["original"]["kept"]))
    assert "Validity gate passed" in verdict.verdict(_arms(HIGH, LOW, HIGH), BETA_VAE,
                                                     AE)["positive_control"]


def test_depends_needs_a_turn_or_a_larger_share_lost_than_the_ae_else_it_loses_information():
    """Rule 2: a specific drop is DEPENDS only with a turn of the code (misalignment up,
    one-sided Welch) or a smaller share of its MIG kept than the AE keeps on that arm; else
    LOSES INFORMATION, with what was missing named."""
    noisy = [0.29, 0.30, 0.31, 0.30]
    method = _arms(HIGH, LOW, noisy)
    ae_keeps = AE                                   # keeps all its MIG (0.05)
    ae_loses_all = _arms([0.25, 0.26, 0.24, 0.25], [0.02, 0.06, 0.04, 0.04])
    aligned = _arms([3.0, 5.0, 4.0, 2.0], [4.0, 3.0, 5.0, 6.0])
    turned = _arms([3.0, 5.0, 4.0, 2.0], [30.0, 35.0, 25.0, 40.0])
    # the AE loses a larger share (84 %, the method 66 %): no turn, no share beyond it
    result = verdict.verdict(method, BETA_VAE, ae_loses_all, turns=aligned)
    assert result["label"] == "LOSES INFORMATION"
    assert "its code is not shown to turn" in result["reason"]
    assert "it keeps not significantly less of its MIG than the reference AE keeps there " \
        "(34% against 16%" in result["reason"]
    assert result["tests"]["keeps_less_than_ae"]["p"] > 0.05
    assert result["tests"]["turn"]["p"] > 0.05
    # the same drop with a turn: DEPENDS, on the turn
    result = verdict.verdict(method, BETA_VAE, ae_loses_all, turns=turned)
    assert result["label"] == "DEPENDS" and "its code turned: misalignment 3.5° → 32.5°" \
        in result["reason"]
    assert result["tests"]["turn"]["p"] == pytest.approx(_one_sided(
        turned["modified"]["kept"], turned["original"]["kept"]))
    assert "dose-response table calls a code turned" not in result["reason"]
    # a significant rise of 1.8 degrees on seeds that barely differ: still DEPENDS (the rule
    # has no size), and the verdict says the dose-response table would not call it a turn
    nudged = _arms([0.40, 0.41, 0.39, 0.40], [2.2, 2.3, 2.1, 2.2])
    result = verdict.verdict(method, BETA_VAE, ae_loses_all, turns=nudged)
    assert result["label"] == "DEPENDS"
    assert ("though its mean stays below the 22.5° at which the dose-response table calls a "
            "code turned") in result["reason"]
    # no turn, but it keeps 34 % of its MIG where the AE keeps all of its own: DEPENDS
    result = verdict.verdict(method, BETA_VAE, ae_keeps, turns=aligned)
    assert result["label"] == "DEPENDS" and "it keeps less of its MIG than the reference AE " \
        "keeps there (34% against 100%" in result["reason"]
    # codes that no longer follow the plane: the turn is not measurable
    nonlinear = {"original": {**aligned["original"], "read": 4},
                 "modified": {"kept": [12.0], "overpruned": [], "read": 4}}
    result = verdict.verdict(method, BETA_VAE, ae_loses_all, turns=nonlinear)
    assert result["label"] == "LOSES INFORMATION"
    assert ("1 code(s) on modified and 4 on original follow the factors' plane linearly (of "
            "4 and 4 runs whose codes are kept)") in result["reason"]
    # no plane and no AE runs on that arm: nothing shows a dependence
    result = verdict.verdict(method, BETA_VAE, _arms(AE_MIG))
    assert result["label"] == "LOSES INFORMATION"
    assert "the battery names no plane" in result["reason"]
    assert "the reference AE has no runs on that arm" in result["reason"]


def test_robust_margins_follow_the_headroom_above_the_ae():
    """Rule 2: the equivalence margin is the method's headroom above the AE floor times half
    the share of its headroom the β-VAE loses; the same drop is ROBUST for a method with
    much headroom and not for one with little; the PCL control uses its own headroom."""
    relative = 0.5 * (np.mean(HIGH) - np.mean(LOW)) / (np.mean(HIGH) - np.mean(AE_MIG))
    much = [0.60, 0.61, 0.59, 0.60]
    result = verdict.verdict(_arms(much, np.subtract(much, 0.05), np.subtract(much, 0.05)),
                             BETA_VAE, AE)
    assert result["margin"] == pytest.approx(relative * (0.6 - np.mean(AE_MIG)))
    assert result["label"] == "ROBUST"
    little = [0.12, 0.13, 0.11, 0.12]
    result = verdict.verdict(_arms(little, np.subtract(little, 0.05),
                                   np.subtract(little, 0.05)), BETA_VAE, AE)
    assert result["margin"] == pytest.approx(relative * (0.12 - np.mean(AE_MIG)))
    assert result["label"] != "ROBUST"
    said, test = verdict.robust_control(_arms(much, much), AE, relative, 0.05, "modified")
    assert test["equivalent"] and f"±{relative * (0.6 - np.mean(AE_MIG)):.3f}" in said
    said, test = verdict.robust_control(_arms(AE_MIG, AE_MIG), AE, relative, 0.05, "modified")
    assert test is None and "not above the reference AE's" in said


def test_seeds_that_barely_differ_are_named():
    """Identical codes in every seed (an invariant encoder) or a spread a tenth of the
    β-VAE's: the scope warns that the p-values rest on almost no variation."""
    same = [0.8, 0.8, 0.8, 0.8]
    warning = verdict.seeds_alike(_arms(same, same), BETA_VAE, "modified")
    assert warning.startswith("Warning: the method's seeds barely differ (MIG spread 0.0000")
    assert verdict.seeds_alike(_arms(HIGH, LOW), BETA_VAE, "modified") is None
    assert verdict.seeds_alike(_arms([0.8]), BETA_VAE, "modified") is None


def test_the_reference_tests_can_run_at_their_own_level():
    """A sequential design spends alpha 0.0294 on the method's tests at each look while the
    reference's positive control stays at 0.05: a drop of p 0.040 passes it there."""
    original = [0.5, 0.6, 0.4, 0.55, 0.45]
    beta_vae = _arms(original, [x - 0.1 for x in original], original)
    assert 0.0294 < stats.drop_test(original, beta_vae["modified"]["kept"])["p_drop"] < 0.05
    method = _arms([0.30, 0.32, 0.28, 0.31], [0.30, 0.31, 0.29, 0.31], [0.3, 0.3, 0.31, 0.3])
    alone = verdict.verdict(method, beta_vae, AE, 0.0294)
    assert alone["label"] == "INCONCLUSIVE"
    assert alone["reason"].startswith("positive control failed")
    apart = verdict.verdict(method, beta_vae, AE, 0.0294, reference_alpha=0.05)
    assert apart["label"] == "ROBUST" and apart["tests"]["equivalence"]["p"] < 0.0294
    assert "α 0.05" in apart["positive_control"]
