"""python -m benchmark.audit --gin_file=my_method.gin [--name=NAME] [--seeds=0,1,2,3,4]
[--strengths=0.05,0.1,0.2] [--reference=results/geometry_cpu] [--output_dir=runs/audit_NAME]
[--alpha=0.05] [--margin_fraction=0.5] [--dry_run]
python -m benchmark.audit export --out=DIR [--reference=...] [--seeds=...] [--strengths=...]
python -m benchmark.audit score --export=DIR --name=NAME [--output_dir=...]

Audits one method (any model of the suite, or the user's own: see models/registry.py and
docs/audit.md) for paper 002's question: does its disentanglement
depend on the local structure of the data that a factor-dependent perturbation removes?
The reference study's battery (benchmark/studies/battery.py; default the geometry battery,
results/geometry_cpu: the ellipse of dSprites, where a wave turns the images' local
geometry to the diagonal, with noise and a fixed-phase texture of the same energy as
controls and the wave at four strengths) says which arm is the manipulation and which are
its controls. A reference without a battery (results/zietlow2021_cpu) has paper 002's:
modified against noisy.
1. prints the plan (runs, and the time they take at the reference runs' measured
   cost), then trains the method on every arm of the reference's battery (original, the
   manipulation, its controls and the sweep; an arm outside it enters no verdict and is
   not trained) for several seeds, with the reference's settings (steps, metrics,
   artefacts, from its study.json), as a study in --output_dir (resumable; a run counts
   as finished only with the configuration fingerprint the audit asks for, see study.py);
2. tests its MIG (benchmark/statistics/stats.py: Welch's t-test, Welch t intervals, TOST, the
   difference of drops) beside the reference study's beta-VAE (known to exploit local
   structure), AE (no disentanglement: the floor) and PCL (the robust control);
3. writes audit.md and audit.json with a verdict, decided in this order (`verdict`):
   - positive control: the reference beta-VAE's MIG drop on the manipulated arm must
     itself be significant (one-sided Welch, p < alpha); else INCONCLUSIVE: the study
     does not show the exploitation it tests for. Its second half, whether that drop is
     larger than on every control (`reference_specificity`), is reported and named in
     the sentences below: without it the battery shows the manipulation's cost, not that
     the cost comes from the structure it removes;
   - validity gate: the reference beta-VAE's original MIG must be above the reference
     AE's (one-sided Welch); else INCONCLUSIVE, untestable at this scale (nothing to lose);
   - floor: the method's original MIG must be significantly above the reference AE's
     (one-sided Welch); else INCONCLUSIVE, "does not disentangle at this scale";
   - DEPENDS on local structure: a significant MIG drop on the manipulated arm (one-sided
     Welch), significantly larger than the drop on every control (stats.drop_difference),
     so it is not mere sensitivity to noise or texture of the same energy, *and* either a
     turn of the code (misalignment up on the manipulated arm, one-sided Welch, over the
     runs whose latents follow the battery's plane linearly) or a smaller share of its MIG
     kept than the reference AE keeps on that arm (stats.keeps_less);
   - LOSES INFORMATION: that specific drop without a turn or a share beyond the AE's: the
     manipulation costs the code information, as it costs any code;
   - ROBUST: original and manipulated MIG equivalent within ±margin (TOST at alpha), the
     margin being margin_fraction (default 0.5) of the share of its headroom above the AE
     floor the reference beta-VAE loses, times the method's own headroom, so a method
     with less disentanglement to lose is held to a proportionally smaller drop (a drop
     that is significant, but no larger than on a control and within the margin, is
     ROBUST too: it is smaller than the effect the audit looks for);
   - SENSITIVE: a significant drop on the manipulated arm that is not significantly
     larger than on a control, where the drop on that control is itself significant: the
     code is hurt by a perturbation of the same energy that keeps the removed structure,
     so a dependence on that structure is not separated from it (the pattern of the
     reference beta-VAE when its drop is not specific);
   - INCONCLUSIVE otherwise, with the seeds per arm (stats.seeds_needed, power 0.8 at the
     observed spread) that would decide the failing step.
   Both DEPENDS and ROBUST require each of their tests at alpha (intersection-union
   tests), so no multiplicity correction applies. Over-pruned runs (paper 002 sec. 5.3)
   are excluded from the tests and reported per arm as an outcome (count, rate, Fisher's
   p against original); an arm emptied by exclusions is named in the verdict, and when
   counting the method's over-pruned runs would change the verdict, the verdict says that
   the exclusions decide it.
   Beside the verdict: the battery, its scale and the power of the method's seeds; whether
   the reference PCL kept its MIG (`robust_control`, TOST at the same margin); MIG, DCI-D,
   DCI-I and the alignment angle per arm (benchmark/metrics/alignment.py), which tell a code
   that turned from one that lost information; and the dose-response over the sweep's
   strengths, as a table and dose_response.png, with the strength at which each code
   turns (benchmark/studies/battery.py).
A method trained in another framework (PyTorch, JAX) is audited with `export` (each arm's
images in the official file format and a manifest), codes written by the user, and
`score` (the same metrics and verdict): benchmark/studies/external.py.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

import gin
import numpy as np
from absl import app, flags, logging

from benchmark.core import config, machine
from benchmark.core.arm_label import ArmLabel, base_of
from benchmark.core.atomic import atomic_path, write_json
from benchmark.core.errors import UserError, cli_main, user_errors
from benchmark.statistics import stats
from benchmark.studies import battery as battery_lib
from benchmark.studies import external, mechanism, report, study
from perturbations.artefact import artefact_warnings

FLAGS = flags.FLAGS
ALPHA = stats.ALPHA
#: the equivalence margin of ROBUST, as a fraction of the share of its headroom above the
#: AE floor the reference beta-VAE loses, applied to the audited model's own headroom
#: (`relative_margin`)
MARGIN_FRACTION = 0.5
#: the geometry battery at CPU scale (gin_configs/studies/geometry_cpu.gin)
DEFAULT_REFERENCE = "results/geometry_cpu"
MIG_RANGE = battery_lib.MIG_RANGE
#: the verdict rule (module docstring): 2 added the validity gate, the headroom margin and
#: DEPENDS' need of a turn or of losing a larger share than the AE (LOSES INFORMATION
#: otherwise); audits
#: published before it (no 'rule_version' in audit.json) were decided by rule 1
RULE_VERSION = 2
#: seeds an arm needs before the audit states its power (below, the spread is a guess)
POWER_MIN_SEEDS = 3
DEFAULT_SEEDS = (0, 1, 2, 3, 4)
#: the arms of a reference study written before batteries (battery.LEGACY)
LEGACY_ARMS = ("original", "modified", "noisy")


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command)."""
    flags.DEFINE_string("gin_file", None, "The method's gin file (model.* bindings, and an "
                        "`import` line for a method of your own); not for export / score.")
    flags.DEFINE_string("name", None, "Name of the method in the audit (default: the gin "
                        "file's stem).")
    flags.DEFINE_list("seeds", [str(s) for s in DEFAULT_SEEDS], "Seeds per arm: more "
                      "seeds, more power and time. Given, every arm's verdict rests on these "
                      "seeds alone; by default the audit also counts the finished runs of "
                      "other seeds in its directory (a registered extension of an arm, named "
                      "in the verdict's scope).")
    flags.DEFINE_list("strengths", None, "Strengths of the reference's dose-response sweep to "
                      "train (default: all of them); the manipulated arm and its controls "
                      "are always trained. Fewer strengths, less time.")
    flags.DEFINE_string("reference", DEFAULT_REFERENCE, "Reference study directory (its "
                        "study.json fixes the scale and the arms; its beta_vae, ae and pcl "
                        "runs are the references).")
    flags.DEFINE_bool("dry_run", False, "Print the planned runs and the estimated time, "
                      "train nothing.")
    flags.DEFINE_string("out", None, "export: the directory to write each arm's images, "
                        "the manifest and (by you) the codes into.")
    flags.DEFINE_string("export", None, "score: the directory `export` wrote, with the "
                        "codes files written into it.")
    flags.DEFINE_string("output_dir", None, "Audit directory (default runs/audit_<name>; "
                        "publishing is an explicit copy into results/).")
    flags.DEFINE_integer("workers", 1, "Runs at a time.", lower_bound=1)
    flags.DEFINE_integer("runs_per_process", 1, "Runs one process trains in sequence "
                         "(TensorFlow's start paid once; the same numbers as alone).",
                         lower_bound=1)
    flags.DEFINE_float("alpha", ALPHA, "Level of every test of the verdict.")
    flags.DEFINE_float("margin_fraction", MARGIN_FRACTION, "Equivalence margin of ROBUST, as "
                       "a fraction of the share of its headroom above the AE's MIG the "
                       "reference beta-VAE loses on the manipulated arm, applied to each "
                       "model's own headroom.")


def reference_settings(reference_dir) -> dict:
    """The reference study's settings (study.json), which fix the audit's scale. study.json
    is data: its types are checked and its bindings may import only the suite's packages
    and include no file (config.check_untrusted_config), before anything runs."""
    path = pathlib.Path(reference_dir) / "study.json"
    if not path.is_file():
        raise FileNotFoundError(f"--reference: expected a study directory with study.json, "
                                f"found none at {path}")
    try:
        settings = json.loads(path.read_text()).get("settings")
    except (ValueError, AttributeError) as error:
        raise ValueError(f"{path}: expected a study's JSON object with 'settings', found "
                         f"unreadable content ({error})") from None
    expected = {"bindings": list, "datasets": list, "artefacts": dict}
    if not isinstance(settings, dict) or any(
            not isinstance(settings.get(k), kind) for k, kind in expected.items()):
        raise ValueError(f"{path}: expected 'settings' with a list 'bindings', a list "
                         f"'datasets' and an object 'artefacts', found {settings!r:.200}")
    if not all(isinstance(b, str) for b in settings["bindings"]):
        raise ValueError(f"{path}: expected settings.bindings to be gin binding strings")
    config.check_untrusted_config("\n".join(settings["bindings"]),
                                  f"{path} (settings.bindings)")
    return settings


def audit_settings(gin_file: str, name: str, seeds, reference: dict, output_dir: str,
                   strengths=None) -> dict:
    """Study settings of the audit: the reference study's scale and its battery's arms,
    this one method. strengths: the sweep strengths to train (None: every one the
    reference has); the manipulated arm and its controls are always trained, the
    reference's arms outside the battery never."""
    dataset = "dsprites" if "dsprites" in reference["datasets"] else reference["datasets"][0]
    battery = battery_lib.battery_of(reference)
    variants = list(reference.get("variants") or battery_lib.LEGACY_VARIANTS)
    if strengths is not None:
        wanted = {float(s) for s in strengths}
        offered = {eps for eps, _ in battery_lib.sweep_of(battery, dataset, variants)}
        if not battery.get("sweep") or not wanted <= offered:
            raise ValueError(f"--strengths: expected strengths of the reference's sweep "
                             f"({sorted(offered) or 'none: it has no sweep'}), found "
                             f"{sorted(wanted)}")
        fixed = {"original", battery["manipulated"], *battery["controls"]}
        strength = {battery_lib.label(v, dataset): v for v in variants}
        eps_of = {strength[arm]: eps for eps, arm in battery_lib.sweep_of(battery, dataset,
                                                                          variants)}
        variants = [v for v in variants if v in fixed or v not in eps_of
                    or eps_of[v] in wanted]
    # the battery's arms only: a reference's other arms (paper 002's L-inf noise beside the
    # energy-matched one, say) enter no verdict and would cost a run per seed each
    variants = battery_variants(battery, variants)
    return study.study_settings(
        name=f"audit_{name}", output_dir=output_dir, models={name: str(gin_file)},
        datasets=[dataset], variants=variants,
        artefacts={dataset: reference["artefacts"].get(dataset, {})}, seeds=list(seeds),
        bindings=reference["bindings"], source=reference.get("source", "auto"),
        battery=battery)


def arms(records: list[dict], model: str, dataset: str, labels=LEGACY_ARMS) -> dict:
    """MIG of `model` on `dataset` per arm: {label: {'kept': [MIG of the runs kept],
    'overpruned': [MIG of the over-pruned runs]}} for the arm labels (the report's variant
    labels, battery.label; runs without a line-search setting). records: the output of
    report.load_runs."""
    return battery_lib.arm_scores(battery_lib.arm_runs(records, model, dataset, labels))


def mig_drops(model_arms: dict) -> dict:
    """{'original_mean', 'seeds_original', label: drop record for every other arm} of the
    kept runs (stats.drop_test; an arm is absent without runs on both sides)."""
    original = model_arms["original"]["kept"]
    out = {"original_mean": float(np.mean(original)) if original else None,
           "seeds_original": len(original)}
    for variant, arm in model_arms.items():
        if variant != "original" and original and arm["kept"]:
            out[variant] = stats.drop_test(original, arm["kept"], score_range=MIG_RANGE)
    return out


def overpruning(model_arms: dict) -> dict:
    """Over-pruning as an outcome per arm: {variant: {'runs', 'overpruned', 'rate' (None
    without runs), 'p_fisher' (vs original; None for original)}}."""
    counts = {v: (len(a["overpruned"]), len(a["kept"]) + len(a["overpruned"]))
              for v, a in model_arms.items()}
    return {v: {"runs": runs, "overpruned": pruned,
                "rate": pruned / runs if runs else None,
                "p_fisher": (None if v == "original" else
                             stats.overpruning_test(*counts["original"], pruned, runs))}
            for v, (pruned, runs) in counts.items()}


def _evidence(drop: dict) -> str:
    return (f"{drop['drop']:.3f}, one-sided p = {drop['p_drop']:.3g}, 95 % CI "
            f"[{drop['ci_low']:.3f}, {drop['ci_high']:.3f}], n {drop['n_original']}/"
            f"{drop['n_other']}")


def _short_arm(who: str, model_arms: dict, variants, include: bool = False) -> str | None:
    """Why an arm of `variants` cannot be tested (fewer than 2 runs), naming over-pruning
    when exclusions emptied it; None when all can."""
    for v in variants:
        arm = model_arms.get(v, {"kept": [], "overpruned": []})
        used = len(arm["kept"]) + (len(arm["overpruned"]) if include else 0)
        if used >= 2:
            continue
        runs = len(arm["kept"]) + len(arm["overpruned"])
        if arm["overpruned"] and not include:
            return (f"{who}'s {v} arm has {used} run(s) left of {runs}: "
                    f"{len(arm['overpruned'])} over-pruned and excluded (rate "
                    f"{len(arm['overpruned']) / runs:.0%}), so over-pruning is the outcome "
                    "there and the test needs at least 2 runs")
        return f"{who}'s {v} arm has {runs} run(s); the test needs at least 2"
    return None


def _values(arm: dict, include: bool) -> list:
    return arm["kept"] + (arm["overpruned"] if include else [])


def positive_control(beta_vae: dict, alpha: float = ALPHA, manipulated: str = "modified",
                     flagged: bool = False) -> tuple[bool, dict | None, str]:
    """(passed, drop record or None, one sentence): does the reference study's beta-VAE
    (arms as `arms`) show the exploitation the battery tests for, i.e. a significant MIG
    drop on the manipulated arm (one-sided Welch at alpha, unadjusted: a study's own
    Holm-adjusted hypothesis on the same drop can differ; paper 002 Table 1 reports
    0.23 -> 0.07 on modified dSprites, not named when the artefact is `flagged` by its own
    evidence)? Without it no method can be judged against the reference."""
    paper = base_of(manipulated) == "modified" and not flagged
    short = _short_arm("the reference β-VAE", beta_vae, ("original", manipulated))
    if short:
        return False, None, (f"Positive control not testable: {short}; the study does not "
                             "show the exploitation it tests for.")
    drop = stats.drop_test(beta_vae["original"]["kept"], beta_vae[manipulated]["kept"],
                           score_range=MIG_RANGE)
    if drop["p_drop"] < alpha:
        return True, drop, (f"Positive control passed: the reference β-VAE's MIG drops "
                            f"significantly on {manipulated} data ({_evidence(drop)}; "
                            f"α {alpha:g}, unadjusted)"
                            + (", as in paper 002 Table 1." if paper else "."))
    return False, drop, (f"Positive control failed: at this scale the reference β-VAE's MIG "
                         f"drop on {manipulated} data is not significant ({_evidence(drop)}"
                         + ("; paper 002 Table 1, at 300k steps and 10 seeds: 0.23 → 0.07 on "
                            "dSprites" if paper else "")
                         + "), so the study does not show the exploitation it tests for; "
                         "train longer or with more seeds for a decision.")


def validity_gate(beta_vae: dict, ae: dict, alpha: float = ALPHA
                  ) -> tuple[bool, dict | None, str]:
    """(passed, Welch record or None, one sentence): is the reference beta-VAE's original
    MIG above the reference AE's (one-sided Welch at alpha)? A battery whose disentangling
    reference is at the AE floor has nothing to lose: its drops cannot be read as a loss of
    disentanglement, and every verdict is untestable at its scale."""
    short = (_short_arm("the reference β-VAE", beta_vae, ("original",))
             or _short_arm("the reference AE", ae, ("original",)))
    if short:
        return False, None, (f"Validity gate not testable: {short}; the battery is "
                             "untestable at this scale.")
    gate = stats.welch(beta_vae["original"]["kept"], ae["original"]["kept"], "greater")
    said = (f"the reference β-VAE's original MIG {np.mean(beta_vae['original']['kept']):.3f} "
            f"against the reference AE's {np.mean(ae['original']['kept']):.3f}, one-sided "
            f"Welch p = {gate['p']:.3g}")
    if gate["p"] < alpha:
        return True, gate, f"Validity gate passed: {said}."
    return False, gate, (f"Validity gate failed: {said}: the disentangling reference is not "
                         "above the AE floor, so it has nothing to lose and the battery is "
                         "untestable at this scale.")


def reference_specificity(beta_vae: dict, alpha: float, manipulated: str, controls
                          ) -> tuple[bool, dict, str]:
    """(specific, {control: stats.drop_difference record}, one sentence): is the reference
    beta-VAE's drop on the manipulated arm significantly larger than on every control of the
    same energy (one-sided Welch on the difference of drops at alpha)? The second half of
    the positive control: without it the battery shows what the manipulation costs a
    disentangling model, not that the cost comes from the structure it removes, so a method
    whose drop is no larger than on a control cannot be told apart from the beta-VAE."""
    records, short = {}, []
    for c in controls:
        if _short_arm("the reference β-VAE", beta_vae, (c,)):
            short.append(c)
            continue
        records[c] = stats.drop_difference(beta_vae[manipulated]["kept"],
                                           beta_vae[c]["kept"])
    shown = "; ".join(f"{c}: {d['diff']:.3f}, one-sided Welch p = {d['p']:.3g}"
                      for c, d in records.items())
    failed = [c for c, d in records.items() if not d["p"] < alpha] + short
    if not failed:
        return True, records, (f"Its drop is specific: significantly larger than on every "
                               f"control of the same energy (difference of drops, {shown}).")
    return False, records, (
        "Its drop is not shown to be specific: not significantly larger than on "
        + ", ".join(f"{c} data" for c in failed)
        + (f" (difference of drops, {shown})" if shown else "")
        + (f"; too few runs on {', '.join(short)}" if short else "")
        + ", so at this scale the battery shows what the manipulation costs a disentangling "
        "model, not that the cost comes from the structure it removes.")


def _inconclusive(reason: str, tests: dict, effect=None, spread=None, alpha=ALPHA,
                  what: str = "") -> dict:
    """An INCONCLUSIVE decision with the seeds per arm that would detect `effect` (`what`)
    at `spread` (one-sided Welch at alpha, power 0.8), when both are known; when the
    observed effect is not positive, the reason says that seeds alone will not decide."""
    seeds = None
    if effect is not None and spread is not None:
        seeds = stats.seeds_needed(effect, spread, alpha)
        if seeds is not None:
            reason += (f"; about {seeds} seeds per arm would detect {what} ({effect:.3f}) "
                       f"at the observed spread {spread:.3f} (one-sided Welch, α = {alpha:g}, "
                       "power 0.8)")
        elif effect <= 0:
            reason += (f"; the observed value ({effect:.3f}) is not positive, so more seeds "
                       "alone are unlikely to decide it")
    return {"label": "INCONCLUSIVE", "reason": reason, "tests": tests, "seeds_needed": seeds}


def _control_kind(control: str) -> str:
    """'noise', 'the texture' or the control's own name."""
    base = base_of(control)
    return ("noise" if base == "noisy" else "the texture" if base.endswith("texture")
            else control)


def _sensitivity(control: str) -> str:
    """What a drop as large as on `control` data would show: 'noise sensitivity', ..."""
    return _control_kind(control).removeprefix("the ") + " sensitivity"


def headroom(model: dict, ae: dict) -> float:
    """A model's mean original MIG above the reference AE's (kept runs): the
    disentanglement it has to lose (the AE's MIG is what a code with none scores)."""
    return float(np.mean(model["original"]["kept"]) - np.mean(ae["original"]["kept"]))


def relative_margin(beta_vae: dict, ae: dict, drop: float, margin_fraction: float) -> float:
    """The share of its headroom above the AE floor (`headroom`) a model may lose and still
    count as equivalent: margin_fraction x the share of its own headroom the reference
    beta-VAE loses (its drop over its headroom, at most 1). A method's margin is this times
    its own headroom, so a method with little disentanglement to lose is held to a
    proportionally small drop; an absolute margin (a fraction of the beta-VAE's drop) called
    FastICA robust while it lost 64 % of its MIG. Needs the beta-VAE above the floor."""
    return margin_fraction * min(1.0, drop / headroom(beta_vae, ae))


def _decide(method: dict, ae: dict, relative: float, alpha: float, include: bool,
            tests: dict, manipulated: str, controls, reference_specific: bool = True,
            turns: dict | None = None) -> dict:
    """The method's verdict once the positive control has passed (the steps after it in
    the module docstring); relative: `relative_margin`, the equivalence margin being it
    times the method's headroom above the AE floor; include: count the method's over-pruned
    runs too; reference_specific: whether the reference beta-VAE's drop was larger than on
    every control (`reference_specificity`), which SENSITIVE's sentence states; turns: the
    method's misalignment per arm (degrees, in the form of `arms`; None without a plane)."""
    tests = dict(tests)
    short = _short_arm("the method", method, ("original", manipulated), include)
    if short:
        return _inconclusive(short, tests)
    original = _values(method["original"], include)
    modified = _values(method[manipulated], include)
    short = _short_arm("the reference AE", ae, ("original",))
    if short:
        return _inconclusive(f"no floor check: {short}", tests)
    baseline = ae["original"]["kept"]
    floor = stats.welch(original, baseline, "greater")
    tests["floor"] = floor
    if not floor["p"] < alpha:
        return _inconclusive(
            f"does not disentangle at this scale: its original MIG {np.mean(original):.3f} is "
            f"not significantly above the reference AE's {np.mean(baseline):.3f} (one-sided "
            f"Welch p = {floor['p']:.3g}), so it has no disentanglement to lose", tests,
            floor["diff"], stats.pooled_sd(original, baseline), alpha,
            "such a lead over the AE")
    margin = relative * (float(np.mean(original)) - float(np.mean(baseline)))
    drop = stats.drop_test(original, modified, score_range=MIG_RANGE)
    tests["drop"] = drop
    equivalence = stats.tost(original, modified, margin, alpha)
    tests["equivalence"] = equivalence
    if drop["p_drop"] < alpha:
        for control in controls:
            short = _short_arm("the method", method, (control,), include)
            if short:
                return _inconclusive(f"MIG drops on {manipulated} data ({_evidence(drop)}), "
                                     f"but {short}, so {_sensitivity(control)} cannot be "
                                     "ruled out", tests)
        differences = {c: stats.drop_difference(modified, _values(method[c], include))
                       for c in controls}
        tests["differences"] = differences
        failed = [c for c, d in differences.items() if not d["p"] < alpha]
        shown = "; ".join(f"{c}: {d['diff']:.3f}, one-sided Welch p = {d['p']:.3g}"
                          for c, d in differences.items())
        if not failed:
            return _depends_or_loses(method, ae, turns, alpha, include, tests, manipulated,
                                     f"MIG drops on {manipulated} data ({_evidence(drop)}), "
                                     "significantly more than on every control of the same "
                                     f"energy (difference of drops, {shown})",
                                     reference_specific)
        if not equivalence["equivalent"]:
            worst = max(failed, key=lambda c: differences[c]["p"])
            control_drops = {c: stats.drop_test(original, _values(method[c], include),
                                                 score_range=MIG_RANGE)
                             for c in failed}
            tests["control_drops"] = control_drops
            hurt = [c for c in failed if control_drops[c]["p_drop"] < alpha]
            if hurt:
                return {"label": "SENSITIVE", "reason": (
                    f"MIG drops on {manipulated} data ({_evidence(drop)}) and also on "
                    + "; ".join(f"{c} data ({_evidence(control_drops[c])})" for c in hurt)
                    + f", not significantly less (difference of drops, {shown}): its code "
                    f"is hurt by {' and '.join(_control_kind(c) for c in hurt)} of the same "
                    "energy, which keeps the structure the manipulation removes, so a "
                    "dependence on that structure is not separated from it"
                    + (" (as for the reference β-VAE at this scale, whose drop is not "
                       "specific either)" if not reference_specific else
                       " (the reference β-VAE's drop is specific at this scale; this "
                       "method's is not shown to be)")),
                    "tests": tests, "seeds_needed": None}
            return _inconclusive(
                f"MIG drops on {manipulated} data ({_evidence(drop)}) but not significantly "
                f"more than on {', '.join(f'{c} data' for c in failed)} (difference of "
                f"drops, {shown}): {_sensitivity(worst)}, not shown to be a dependence on "
                "the removed structure", tests, differences[worst]["diff"],
                stats.pooled_sd(modified, _values(method[worst], include)), alpha,
                "such a difference of drops")
    if equivalence["equivalent"]:
        return {"label": "ROBUST", "reason": (
            f"MIG on {manipulated} data is equivalent to MIG on original data within "
            f"±{margin:.3f} (the equivalence margin: {relative:.0%} of its headroom above "
            f"the AE floor, a fraction of the share of its headroom the reference β-VAE "
            f"loses): drop "
            f"{equivalence['diff']:.3f}, {100 * (1 - 2 * alpha):g} % CI "
            f"[{equivalence['ci_low']:.3f}, {equivalence['ci_high']:.3f}], TOST p = "
            f"{equivalence['p']:.3g}"), "tests": tests, "seeds_needed": None}
    return _inconclusive(
        f"neither a significant MIG drop on {manipulated} data ({_evidence(drop)}) nor "
        f"equivalence within ±{margin:.3f} (TOST p = {equivalence['p']:.3g}, "
        f"{100 * (1 - 2 * alpha):g} % CI [{equivalence['ci_low']:.3f}, "
        f"{equivalence['ci_high']:.3f}])", tests, margin,
        stats.pooled_sd(original, modified), alpha, "a drop the size of the margin")


def _depends_or_loses(method: dict, ae: dict, turns: dict | None, alpha: float,
                      include: bool, tests: dict, manipulated: str, said: str,
                      reference_specific: bool) -> dict:
    """DEPENDS or LOSES INFORMATION for a drop already shown specific (`said`, its
    sentence): DEPENDS needs, beside it, evidence that the code turned (its misalignment
    higher on the manipulated arm than on original, one-sided Welch at alpha, over the runs
    whose codes follow the plane linearly) or a smaller share of its MIG kept than the
    reference AE keeps on that arm (stats.keeps_less at alpha; shares, since an absolute
    drop favours any model with more to lose): a drop that neither turns the code nor
    exceeds, in share, what the manipulation costs a code with no disentanglement is the
    loss of information any code suffers, LOSES INFORMATION."""
    evidence = []
    if turns is not None:
        before, after = (_values(turns.get(v, {"kept": [], "overpruned": []}), include)
                         for v in ("original", manipulated))
        if len(before) >= 2 and len(after) >= 2:
            turn = stats.welch(after, before, "greater")
            tests["turn"] = turn
            evidence.append((turn["p"] < alpha,
                             f"its code turned: misalignment {np.mean(before):.1f}° → "
                             f"{np.mean(after):.1f}° (one-sided Welch p = {turn['p']:.3g})"
                             if turn["p"] < alpha else
                             f"its code is not shown to turn (misalignment "
                             f"{np.mean(before):.1f}° → {np.mean(after):.1f}°, one-sided "
                             f"Welch p = {turn['p']:.3g})"))
        else:
            read = [turns.get(v, {}).get("read") for v in ("original", manipulated)]
            kept = ("" if None in read else
                    f" (of {read[1]} and {read[0]} runs whose codes are kept)")
            evidence.append((False, f"its turn is not measurable: {len(after)} code(s) on "
                                    f"{manipulated} and {len(before)} on original follow the "
                                    f"factors' plane linearly{kept}; 2 a side are needed"))
    else:
        evidence.append((False, "the battery names no plane, so a turn is not measured"))
    if not _short_arm("the reference AE", ae, ("original", manipulated)):
        mine = (_values(method["original"], include), _values(method[manipulated], include))
        less = stats.keeps_less(*mine, ae["original"]["kept"], ae[manipulated]["kept"])
        tests["keeps_less_than_ae"] = less
        evidence.append((less["p"] < alpha,
                         f"it keeps {'' if less['p'] < alpha else 'not significantly '}"
                         f"less of its MIG than the reference AE keeps there ({less['kept']:.0%}"
                         f" against {less['kept_other']:.0%}, one-sided delta-method Welch "
                         f"p = {less['p']:.3g})"))
    else:
        evidence.append((False, "the reference AE has no runs on that arm to compare"))
    shown = [text for ok, text in evidence if ok]
    if shown:
        return {"label": "DEPENDS", "reason": (
            f"{said}, and {' and '.join(shown)}"
            + ("" if reference_specific else
               "; a dependence shown for this method although the reference β-VAE's "
               "is not at this scale")), "tests": tests, "seeds_needed": None}
    return {"label": "LOSES INFORMATION", "reason": (
        f"{said}, but {'; '.join(text for _, text in evidence)}: the manipulation costs this "
        "code information rather than turning it, so a dependence on the local structure "
        "is not shown"), "tests": tests, "seeds_needed": None}


def verdict(method: dict, beta_vae: dict, ae: dict, alpha: float = ALPHA,
            margin_fraction: float = MARGIN_FRACTION, manipulated: str = "modified",
            controls=("noisy",), flagged: bool = False, turns: dict | None = None) -> dict:
    """The audit's decision (module docstring) from MIG arms (each as `arms`: the method's,
    the reference beta-VAE's and the reference AE's; `manipulated` and `controls` name the
    battery's arms; flagged: the manipulated arm's artefact is flagged by its own
    evidence, so the positive control does not cite paper 002's Table 1).
    Returns {'label': DEPENDS | LOSES INFORMATION | ROBUST | SENSITIVE | INCONCLUSIVE,
    'reason': one sentence,
    'tests': {name: record} of the tests run ('positive_control',
    'positive_control_specificity': {control: record}, 'floor', 'drop', 'equivalence',
    'differences': {control: record}, 'control_drops': {control: record}; when the
    positive control fails, 'floor' is still run and recorded, descriptive), 'margin' (the
    method's equivalence margin in MIG; None before the positive control passes),
    'relative_margin' (`relative_margin`), 'positive_control' (its sentences),
    'reference_specific' (None before the positive control passes, else whether the
    reference beta-VAE's drop is larger than on every control), 'seeds_needed'
    (INCONCLUSIVE: seeds per arm that would decide the failing step, where computable),
    'overpruning' (the method's, per arm),
    'exclusions_decide' (True when counting the method's over-pruned runs would change the
    label; the reason then says so)}."""
    controls = list(controls)
    passed, control, sentence = positive_control(beta_vae, alpha, manipulated, flagged)
    tests = {"positive_control": control} if control else {}
    gated = False
    if passed:
        passed, gate, said = validity_gate(beta_vae, ae, alpha)
        tests["validity_gate"] = gate
        gated = not passed
        sentence = said if gated else sentence + " " + said
    specific = None
    if passed and controls:
        specific, records, said = reference_specificity(beta_vae, alpha, manipulated,
                                                        controls)
        tests["positive_control_specificity"] = records
        sentence += " " + said
    out = {"margin": None, "relative_margin": None, "overpruning": overpruning(method),
           "exclusions_decide": False,
           "positive_control": sentence, "reference_specific": specific}
    if not passed:
        if len(method["original"]["kept"]) >= 2 and len(ae["original"]["kept"]) >= 2:
            tests["floor"] = stats.welch(method["original"]["kept"], ae["original"]["kept"],
                                         "greater")
        if gated:            # the reference's seeds are not what is short
            return {**out, **_inconclusive(sentence[0].lower() + sentence[1:].rstrip("."),
                                           tests)}
        spread = (stats.pooled_sd(beta_vae["original"]["kept"],
                                  beta_vae[manipulated]["kept"]) if control else None)
        return {**out, **_inconclusive(
            sentence[0].lower() + sentence[1:].rstrip("."), tests,
            control["drop"] if control else None, spread, alpha,
            "such a drop of the reference β-VAE")}
    relative = relative_margin(beta_vae, ae, control["drop"], margin_fraction)
    decided = _decide(method, ae, relative, alpha, False, tests, manipulated, controls,
                      specific is not False, turns)
    out["relative_margin"] = relative
    kept = method["original"]["kept"]
    out["margin"] = relative * headroom(method, ae) if kept else None
    pruned = sum(len(a["overpruned"]) for a in method.values())
    if pruned:
        counted = _decide(method, ae, relative, alpha, True, tests, manipulated, controls,
                          specific is not False, turns)
        if counted["label"] != decided["label"]:
            out["exclusions_decide"] = True
            decided["reason"] += (f"; the exclusion of {pruned} over-pruned run(s) decides "
                                  f"this verdict: counting them, it would be "
                                  f"{counted['label']}")
    return {**out, **decided}


def robust_control(pcl: dict, ae: dict, relative: float | None, alpha: float,
                   manipulated: str) -> tuple[str, dict | None]:
    """(one sentence, TOST record or None): does the reference PCL (arms as `arms`) keep
    its MIG on the manipulated arm, equivalent within the audit's margin (TOST at alpha;
    relative: `relative_margin`, times PCL's own headroom above the reference AE: the
    audit's relative margin, not a margin a reference study registered for PCL)?"""
    if relative is None:
        return "Robust control not tested (no margin: the positive control did not pass).", None
    short = (_short_arm("the reference PCL", pcl, ("original", manipulated))
             or _short_arm("the reference AE", ae, ("original",)))
    if short:
        return f"Robust control not testable: {short}.", None
    if headroom(pcl, ae) <= 0:
        return (f"Robust control not testable: the reference PCL's original MIG "
                f"{np.mean(pcl['original']['kept']):.3f} is not above the reference AE's "
                f"{np.mean(ae['original']['kept']):.3f}, so it has nothing to keep."), None
    margin = relative * headroom(pcl, ae)
    test = stats.tost(pcl["original"]["kept"], pcl[manipulated]["kept"], margin, alpha)
    span = (f"drop {test['diff']:.3f}, {100 * (1 - 2 * alpha):g} % CI [{test['ci_low']:.3f}, "
            f"{test['ci_high']:.3f}], TOST p = {test['p']:.3g}")
    if test["equivalent"]:
        return (f"Robust control held: the reference PCL's MIG on {manipulated} data is "
                f"equivalent to its original MIG within ±{margin:.3f}, the audit's relative "
                f"margin on PCL's headroom above the AE ({span}).", test)
    return (f"Robust control not shown: the reference PCL's MIG on {manipulated} data is not "
            f"shown equivalent to its original within ±{margin:.3f}, the audit's relative "
            f"margin on PCL's headroom above the AE ({span}); a ROBUST "
            "verdict then rests on the method's own test alone.", test)


def _cell(d: dict | None) -> str:
    if d is None:
        return "—"
    ci = "n/a" if d["ci_low"] is None else f"[{d['ci_low']:.3f}, {d['ci_high']:.3f}]"
    p = "n/a" if d["p_drop"] is None else f"{d['p_drop']:.3g}"
    return f"{d['drop']:.3f} (p {p}, CI {ci}, n {d['n_original']}/{d['n_other']})"


def _row(label: str, drops: dict, compared) -> str:
    original = drops.get("original_mean")
    return (f"| {label} | {'—' if original is None else f'{original:.3f}'} | "
            + " | ".join(_cell(drops.get(v)) for v in compared) + " |")


def _pruning_lines(label: str, pruning: dict, labels) -> list[str]:
    cells = []
    for v in labels:
        arm = pruning.get(v, {"runs": 0})
        if not arm["runs"]:
            cells.append("—")
            continue
        p = "" if arm["p_fisher"] is None else f", Fisher p {arm['p_fisher']:.3g}"
        cells.append(f"{arm['overpruned']}/{arm['runs']} ({arm['rate']:.0%}{p})")
    return [f"| {label} | " + " | ".join(cells) + " |"]


REFERENCES = (("beta_vae", "β-VAE (reference: exploits local structure)"),
              ("ae", "AE (reference: the floor, no disentanglement)"),
              ("pcl", "PCL (reference: robust)"))


def battery_variants(battery: dict, variants) -> list[str]:
    """The study variants an audit trains and reads: original, the manipulation, its
    controls and the sweep's strengths, in the order of `variants`."""
    fixed = {"original", battery["manipulated"], *battery["controls"]}
    sweep = battery.get("sweep")
    return [v for v in variants
            if v in fixed or (sweep is not None and base_of(v) == sweep)]


def reference_artefact_warnings(reference: dict, battery: dict, dataset: str
                                ) -> dict[str, list[str]]:
    """{'variant (directory)': sentences} for each artefact that an arm of the battery
    reads on `dataset` and that its own evidence.json flags
    (perturbations.artefact.artefact_warnings); {} when none is."""
    bases = {base_of(v) for v in battery_variants(
        battery, reference.get("variants") or battery_lib.LEGACY_VARIANTS)}
    found = {}
    for variant, directory in ((reference.get("artefacts") or {}).get(dataset) or {}).items():
        warnings = (artefact_warnings(directory)
                    if variant in bases and isinstance(directory, str) else [])
        if warnings:
            found[f"{variant} ({directory})"] = warnings
    return found


def reference_completeness(reference: dict, battery: dict, dataset: str,
                           reference_runs: list[dict]) -> dict | None:
    """{'registered', 'finished': counts of the reference models' runs on the battery's
    arms (`battery_variants`, the sweep's included), 'missing': {'model on arm': count}}:
    the reference study's grid
    (study.expand) against its finished runs (report.load_runs records), so that an audit
    of a reference with failed or unfinished runs says so; None when its study.json does
    not hold a whole grid (no 'models', say), so that nothing can be counted."""
    arms = battery_variants(battery, reference.get("variants") or
                            battery_lib.LEGACY_VARIANTS)
    tags = {ArmLabel.parse(arm).shown(): arm for arm in arms}
    finished = {pathlib.Path(r["run_dir"]).name for r in reference_runs}
    out = {"registered": 0, "finished": 0, "missing": {}}
    try:
        specs = study.expand({"line_search": {}, **reference})
    except (KeyError, TypeError, ValueError):
        return None
    for spec in specs:
        model, _, rest = spec.name.partition(f"_{dataset}_")
        tag = rest.rpartition("_seed")[0]
        if model not in dict(REFERENCES) or tag not in tags:
            continue
        out["registered"] += 1
        if spec.name in finished:
            out["finished"] += 1
        else:
            key = f"{model} on {tags[tag]}"
            out["missing"][key] = out["missing"].get(key, 0) + 1
    return out


def reference_cost(reference_runs: list[dict]) -> dict | None:
    """What a reference run cost, from the finished runs' results.json: {'runs' (how many
    were read), 'cpu_seconds' (mean CPU seconds a run used, from its `machine` record;
    None where no run recorded it), 'threads', 'cpu' (the reference's CPU model or None),
    'wall_seconds' (mean wall time)}; None when no run recorded a time. Runs resumed from a
    checkpoint timed only their last part and are left out when others are complete."""
    records = []
    for r in reference_runs:
        try:
            payload = json.loads((pathlib.Path(r["run_dir"]) / "results.json").read_text())
            records.append((float(payload["wall_seconds"]), payload.get("machine") or {},
                            payload.get("resumed_from")))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    whole = [rec for rec in records if rec[2] is None]
    records = whole or records
    if not records:
        return None
    measured = [m for _, m, _ in records if isinstance(m.get("cpu_seconds"), (int, float))]
    return {"runs": len(records), "wall_seconds": float(np.mean([w for w, _, _ in records])),
            "cpu_seconds": (float(np.mean([m["cpu_seconds"] for m in measured]))
                            if measured else None),
            "measured": len(measured),
            "threads": int(np.median([m.get("threads") or machine.DEFAULT_THREADS
                                      for m in measured])) if measured else None,
            "cpu": measured[0].get("cpu") if measured else None}


def _minutes(seconds: float) -> str:
    return "under a minute" if seconds < 60 else f"{seconds / 60:.0f} min"


def plan(settings: dict, reference_runs: list[dict], workers: int = 1) -> dict:
    """{'runs', 'finished', 'to_run', 'seconds_per_run' (None unknown), 'estimate_seconds'
    (None unknown), 'text'}: what the audit will train and about how long it takes.

    Where the reference's runs recorded their CPU time (results.json `machine`), the
    estimate is that work spread over min(this machine's cores, workers x the runs'
    threads): it holds whatever shared the cores while the reference trained, on a CPU
    like the reference's. Older references give only their mean wall time, which runs that
    shared their cores inflate: the plan then says it is an upper bound."""
    specs = study.expand(settings)
    done, _, _ = study.run_states(pathlib.Path(settings["output_dir"]), specs)
    to_run = len(specs) - len(done)
    workers = max(1, int(workers))
    cost = reference_cost(reference_runs)
    text = (f"audit plan: {len(specs)} runs ({len(settings['variants'])} arms × "
            f"{len(settings['seeds'])} seeds), {len(done)} finished, {to_run} to train")
    per_run = estimate = None
    if to_run == 0:
        text += "; nothing to train"
    elif cost and cost["cpu_seconds"] is not None:
        cores = os.cpu_count() or 1
        parallel = min(cores, workers * cost["threads"])
        per_run = cost["cpu_seconds"] / min(cores, cost["threads"])
        estimate = to_run * cost["cpu_seconds"] / parallel
        text += (f"; about {_minutes(estimate)}: a reference run used "
                 f"{cost['cpu_seconds'] / 60:.1f} CPU-min ({cost['measured']} runs measured"
                 f"{', ' + cost['cpu'] if cost['cpu'] else ''}), spread over {parallel:g} of "
                 f"this machine's {cores} cores ({workers} worker(s) × {cost['threads']} "
                 "threads; a VAE-sized method)")
    elif cost:
        per_run = cost["wall_seconds"]
        estimate = to_run * per_run / workers
        text += (f"; at most about {_minutes(estimate)} at the reference runs' mean wall "
                 f"time, {per_run / 60:.1f} min, on {workers} worker(s) (their CPU time was "
                 "not recorded, and runs that shared their cores took longer than alone: "
                 "an upper bound; a VAE-sized method)")
    return {"runs": len(specs), "finished": len(done), "to_run": to_run,
            "seconds_per_run": per_run, "estimate_seconds": estimate, "text": text}


def _steps(bindings) -> str:
    for b in bindings:
        key, _, value = b.partition("=")
        if key.strip() == "run.steps":
            return value.strip()
    return "the default number of"


#: a method whose seed-to-seed MIG spread is below this share of the reference beta-VAE's
#: has seeds that barely differ (`seeds_alike`)
SEEDS_ALIKE_SHARE = 0.1


def seeds_alike(method: dict, beta_vae: dict, manipulated: str) -> str | None:
    """A warning when the method's seeds barely differ: its pooled MIG spread on original
    and the manipulated arm is below SEEDS_ALIKE_SHARE of the reference beta-VAE's (a
    deterministic encoder, a pixel-linear fit whose seeds change little). The tests then
    rest on almost no variation: their p-values say how these codes differ, not how the
    verdict would vary with another training or data sample. None otherwise."""
    arms = [method[v]["kept"] for v in ("original", manipulated) if v in method]
    reference = [beta_vae[v]["kept"] for v in ("original", manipulated) if v in beta_vae]
    mine, theirs = stats.pooled_sd(*arms), stats.pooled_sd(*reference)
    if mine is None or not theirs or mine >= SEEDS_ALIKE_SHARE * theirs:
        return None
    return (f"Warning: the method's seeds barely differ (MIG spread {mine:.4f} against the "
            f"reference β-VAE's {theirs:.4f}): its tests rest on almost no seed-to-seed "
            "variation, so their p-values describe these codes, not how the verdict would "
            "vary with another training or data sample.")


def _scope(reference: dict, reference_dir, battery: dict, seeds, power: float | None,
           effect: float | None, runs_per_arm: dict | None = None) -> str:
    """The sentence that says what the verdict rests on: battery, scale, power.
    runs_per_arm: {arm: the method's runs there}; arms with another count than `seeds`
    (runs of other seeds found in the audit directory, e.g. a registered extension of
    one arm) are named."""
    other = {a: n for a, n in (runs_per_arm or {}).items() if n and n != len(seeds)}
    extra = (f" ({', '.join(f'{n} on {a}' for a, n in other.items())})" if other else "")
    sentence = (f"Battery: {reference.get('name', pathlib.Path(reference_dir).name)} "
                f"(`{reference_dir}`), whose reference models trained "
                f"{_steps(reference['bindings'])} steps; the method's "
                f"{len(seeds)} seed(s) per arm{extra}; the manipulation "
                f"{battery['manipulated']} "
                f"against its controls {', '.join(battery['controls'])}.")
    if power is not None:
        sentence += (f" Power: {power:.2f} to detect a MIG drop of the reference β-VAE's "
                     f"relative size on the method's own MIG ({effect:.3f}) with these seeds "
                     "at the 80 % upper confidence bound of the method's seed-to-seed "
                     "spread (one-sided Welch).")
    elif len(seeds) < POWER_MIN_SEEDS:
        sentence += (f" Power: not estimated (fewer than {POWER_MIN_SEEDS} seeds an arm: "
                     "their spread cannot say how far the verdict could move).")
    return sentence


def _dose_cell(row: dict) -> str:
    """'MIG mean [95 % CI] / misalignment mean° (n)'."""
    mig, angle = row["mig"], row["misalignment"]
    text = "—" if mig["mean"] is None else f"{mig['mean']:.3f}"
    if mig["ci_low"] is not None:
        text += f" [{mig['ci_low']:.2f}, {mig['ci_high']:.2f}]"
    if angle["mean"] is not None:
        text += f" / {angle['mean']:.0f}°"
    return text + f" (n {mig['n']})"


def _dose_lines(rows: list[dict], models, alpha: float) -> list[str]:
    strengths = sorted({r["strength"] for r in rows})
    lines = ["| model | " + " | ".join("original" if s == 0 else f"ε {s:g}" for s in strengths)
             + " | code turns at | MIG drop significant from |",
             "|---|" + "---|" * (len(strengths) + 2)]
    for model in models:
        cells = []
        for s in strengths:
            row = next((r for r in rows if r["model"] == model and r["strength"] == s), None)
            cells.append("—" if row is None else _dose_cell(row))
        turn = battery_lib.turning_strength(rows, model, alpha)
        turns = ("not aligned on original" if turn["aligned"] is False else
                 "unmeasured" if turn["aligned"] is None else
                 "does not turn" if turn["turns_at"] is None else f"ε {turn['turns_at']:g}")
        drops = "none" if turn["drops_at"] is None else f"ε {turn['drops_at']:g}"
        lines.append(f"| {model} | " + " | ".join(cells) + f" | {turns} | {drops} |")
    return lines


def run_audit(gin_file: str, name: str, seeds, reference_dir, output_dir, workers: int = 1,
              alpha: float = ALPHA, margin_fraction: float = MARGIN_FRACTION,
              strengths=None, announce=print, only_seeds: bool = True,
              runs_per_process: int = 1) -> pathlib.Path:
    """Trains what is missing, writes audit.md / audit.json (and dose_response.png with a
    sweep); returns audit.md. announce: called with the plan's text before any training."""
    reference = reference_settings(reference_dir)
    settings = audit_settings(gin_file, name, seeds, reference, str(output_dir), strengths)
    announce(plan(settings, report.load_runs(reference_dir), workers)["text"])
    summary = study.execute(settings, workers=workers, runs_per_process=runs_per_process)
    if summary["stopped"]:
        raise UserError(f"{len(summary['stopped'])} run(s) were stopped before they finished "
                        f"({', '.join(summary['stopped'][:3])}); no verdict was written on "
                        "fewer seeds than planned: the same command resumes them")
    return write_audit(name, seeds, reference, reference_dir, settings, output_dir, alpha,
                       margin_fraction, summary["failed"], only_seeds=only_seeds)


def write_audit(name: str, seeds, reference: dict, reference_dir, settings: dict,
                output_dir, alpha: float, margin_fraction: float, failed,
                only_seeds: bool = True) -> pathlib.Path:
    """Decides the verdict on the method's finished runs in output_dir/runs (trained by
    the audit, or scored from codes written elsewhere: benchmark/studies/external.py) and writes
    audit.md, audit.json, dose_response.png and the report; returns audit.md. only_seeds:
    the runs of `seeds` alone (the user named them); False: every finished run there (a
    registered extension of an arm to more seeds included, named in the scope)."""
    battery = settings["battery"]
    reference_runs = report.load_runs(reference_dir)
    dataset = settings["datasets"][0]
    compared = battery_lib.arms_of(battery, dataset)
    manipulated, controls = compared[1], compared[2:]
    sweep = battery_lib.sweep_of(battery, dataset, settings["variants"])
    labels = list(dict.fromkeys([*compared, *(arm for _, arm in sweep)]))
    found = report.load_runs(output_dir)
    runs = [r for r in found if not only_seeds or int(r["seed"]) in {int(s) for s in seeds}]
    if len(runs) < len(found):       # a verdict on exactly the seeds it names
        logging.info("audit: %d run(s) in %s of seeds other than %s left out", len(found) -
                     len(runs), output_dir, sorted(int(s) for s in seeds))
    runs = mechanism.with_misalignment(runs, battery.get("plane"), output_dir)
    method_names = sorted({r["model"] for r in runs})
    method_model = method_names[0] if len(method_names) == 1 else name
    reference_runs = mechanism.with_misalignment(reference_runs, battery.get("plane"),
                                                 reference_dir)
    # the audited method keeps its own key beside a reference of the same name (an audit of
    # the suite's beta_vae, say)
    method_key = (f"{method_model} (audited)" if method_model in dict(REFERENCES)
                  else method_model)
    runs_by_model = {method_key: battery_lib.arm_runs(runs, method_model, dataset, labels)}
    for model, _ in REFERENCES:
        runs_by_model[model] = battery_lib.arm_runs(reference_runs, model, dataset, labels)
    scores = {m: battery_lib.arm_scores(r) for m, r in runs_by_model.items()}
    method = {v: scores[method_key][v] for v in compared}
    references = {m: {v: scores[m][v] for v in compared} for m, _ in REFERENCES}
    flagged = reference_artefact_warnings(reference, battery, dataset)
    complete = reference_completeness(reference, battery, dataset, reference_runs)
    turns = None
    if battery.get("plane") is not None:
        angles = battery_lib.arm_scores(runs_by_model[method_key], "misalignment")
        turns = {v: {**angles[v], "read": sum(r.get("codes_read", False)
                                              for k in ("kept", "overpruned")
                                              for r in runs_by_model[method_key][v][k])}
                 for v in compared}
    decision = verdict(method, references["beta_vae"], references["ae"], alpha,
                       margin_fraction, manipulated, controls, flagged=bool(flagged),
                       turns=turns)
    robust, robust_test = robust_control(references["pcl"], references["ae"],
                                         decision["relative_margin"], alpha, manipulated)
    control = decision["tests"].get("positive_control")
    own = sum(len(arm["kept"]) + len(arm["overpruned"])
              for arm in runs_by_model[method_key].values())
    power = effect = None
    if control and len(seeds) >= POWER_MIN_SEEDS \
            and len(method["original"]["kept"]) >= POWER_MIN_SEEDS \
            and len(method[manipulated]["kept"]) >= POWER_MIN_SEEDS and control["drop"] > 0:
        # the beta-VAE's relative drop on the method's own MIG (as the margin), at the 80 %
        # upper bound of the method's spread: two or three seeds' spread alone said 1.00
        effect = (control["drop"] / float(np.mean(references["beta_vae"]["original"]["kept"]))
                  * float(np.mean(method["original"]["kept"])))
        spread = stats.spread_upper_bound(method["original"]["kept"],
                                          method[manipulated]["kept"])
        power = stats.power(effect, spread, len(seeds)) if spread and effect > 0 else None
    scope = _scope(reference, reference_dir, battery, seeds, power, effect,
                   {arm: len(r["kept"]) + len(r["overpruned"])
                    for arm, r in runs_by_model[method_key].items()})
    alike = seeds_alike(method, references["beta_vae"], manipulated)
    if alike:
        scope += " " + alike
    dose = battery_lib.dose_response(runs_by_model, sweep) if sweep else []
    health_known = any(r.get("health_known", True) for arm in runs_by_model[method_key].values()
                       for r in arm["kept"] + arm["overpruned"])
    pruning = {m: overpruning({v: scores[key][v] for v in compared})
               for m, key in [("method", method_key), *((m, m) for m, _ in REFERENCES)]}
    payload = {"method": name, "model_name": method_model, "dataset": dataset,
               "rule_version": RULE_VERSION,
               "verdict": decision["label"], "reason": decision["reason"], "alpha": alpha,
               "margin_fraction": margin_fraction, "margin": decision["margin"],
               "relative_margin": decision["relative_margin"],
               "tests": decision["tests"], "seeds_needed": decision["seeds_needed"],
               "exclusions_decide": decision["exclusions_decide"],
               "positive_control": decision["positive_control"],
               "reference_specific": decision["reference_specific"],
               "robust_control": robust, "robust_test": robust_test, "scope": scope,
               "seeds_alike": bool(alike),
               "power": power, "battery": battery, "arms": compared,
               "method_drops": mig_drops(method),
               "reference_drops": {m: mig_drops(a) for m, a in references.items()},
               "mechanism": mechanism.mechanism_rows(runs_by_model, labels),
               "dose_response": dose,
               "turning": {m: battery_lib.turning_strength(dose, m, alpha)
                           for m in runs_by_model} if dose else {},
               "overpruning": pruning if health_known else {**pruning, "method": None},
               "reference_study": str(reference_dir),
               "failed_runs": list(failed), "method_runs": own,
               "artefact_warnings": flagged, "reference_completeness": complete,
               "excluded_overpruned": sum(a["overpruned"] for a in pruning["method"].values())}
    out = pathlib.Path(output_dir)
    write_json(out / "audit.json", payload)
    margin = decision["margin"]
    head = ([] if decision["reason"].startswith("positive control")
            else [decision["positive_control"], ""])
    warned = []
    if flagged:
        warned += ["**The reference's artefact is flagged by its own evidence:** "
                   + "; ".join(f"{arm}: {'; '.join(w)}" for arm, w in flagged.items())
                   + ". Every drop on it below is the effect of this artefact as it is, not "
                   "of the factor-dependent manipulation it was meant to be.", ""]
    if complete is None:
        warned += ["The reference's study.json holds no whole grid, so whether all of its "
                   "registered runs finished is not checked.", ""]
    elif complete["missing"]:
        warned += [f"**The reference is incomplete:** {complete['finished']} of its "
                   f"{complete['registered']} registered runs on the battery's arms "
                   "finished (missing: " + ", ".join(f"{k} ×{n}" for k, n in
                                                     complete["missing"].items())
                   + "); its tests rest on the runs it has.", ""]
    floor = decision["tests"].get("floor")
    if decision["relative_margin"] is None and floor is not None:
        head += [f"Floor (descriptive; the verdict stopped at the positive control): the "
                 f"method's original MIG exceeds the reference AE's by {floor['diff']:+.3f} "
                 f"(one-sided Welch p = {floor['p']:.3g}).", ""]
    lines = [f"# Audit of {name}", "", *warned, f"**Verdict: {decision['label']}** — "
             f"{decision['reason']}.", "", scope, "", *head, robust, "",
             f"MIG on {dataset}, original → {manipulated} and its controls (drop = original − "
             f"arm; one-sided Welch p of a drop, α = {alpha:g}; 95 % Welch t CI; n = kept "
             "seeds original/arm). Equivalence margin (ROBUST): "
             + ("none, the positive control did not pass"
                if decision["relative_margin"] is None else
                "none, the method has no original runs" if margin is None else
                f"±{margin:.3f} = {margin_fraction:g} × the reference β-VAE's relative drop "
                f"× the method's original MIG ({decision['relative_margin']:.0%} of it; the "
                "reference PCL's at the same share of its own)")
             + f". Scale and arms of the reference study `{reference_dir}`.", "",
             "| method | MIG original | " + " | ".join(f"drop → {v}" for v in compared[1:])
             + " |", "|---|" + "---|" * len(compared),
             _row(f"**{name}**", payload["method_drops"], compared[1:])]
    lines += [_row(text, payload["reference_drops"][m], compared[1:])
              for m, text in REFERENCES]
    lines += ["", f"Mechanism per arm ({mechanism.READING}):", "",
              *mechanism.table_lines(payload["mechanism"])]
    if dose:
        figure = battery_lib.dose_figure(dose, out / "dose_response.png",
                                         highlight=method_key)
        lines += ["", f"Dose-response: {battery['sweep']} at the strengths trained "
                  f"(the code turns where its mean misalignment reaches "
                  f"{battery_lib.TURNED_DEG:g}°; MIG drop: one-sided Welch against original "
                  f"at α = {alpha:g}, not adjusted across strengths). Cells: MIG mean "
                  "[95 % t CI] / mean misalignment, n kept runs.", "",
                  *_dose_lines(dose, list(runs_by_model), alpha), "",
                  f"![dose-response]({figure.name})"]
    lines += ["", "Over-pruned runs per arm (fewer active dims than factors; excluded from "
              "the tests above, an outcome of their own; Fisher's exact p against original):",
              "", "| method | " + " | ".join(compared) + " |",
              "|---|" + "---|" * len(compared)]
    for label, key in ((f"**{name}**", "method"), ("β-VAE (reference)", "beta_vae"),
                       ("AE (reference)", "ae"), ("PCL (reference)", "pcl")):
        if key == "method" and not health_known:
            lines.append(f"| {label} | " + " | ".join(
                ["unknown: codes scored from files carry no posterior variances"]
                + ["unknown"] * (len(compared) - 1)) + " |")
            continue
        lines += _pruning_lines(label, pruning[key], compared)
    lines.append("")
    if failed:
        lines.append(f"Failed runs (see {out / 'failed.json'}): {', '.join(failed)}")
    report.write_report(out, out / "report")
    lines.append("Full tables and figures: [report/report.md](report/report.md)")
    path = out / "audit.md"
    with atomic_path(path, ".md") as tmp:
        tmp.write_text("\n".join(lines) + "\n")
    return path


def _external_settings(reference_dir, seeds, strengths) -> tuple[dict, dict]:
    """(reference settings, audit settings) for codes trained elsewhere
    (benchmark/studies/external.py): the reference's arms, a placeholder method."""
    reference = reference_settings(reference_dir)
    return reference, audit_settings(external.PLACEHOLDER_GIN, "external", seeds, reference,
                                     "unused", strengths)


def check_method_config(settings: dict) -> None:
    """Parses the first planned run's gin files and bindings as its run will, and checks its
    model.method: a module the method's gin file cannot import (with config.parse_config's
    hint), a misspelt binding or an unknown method fails here in one line, before the plan
    is printed or any run starts (not once in every run, minutes later)."""
    from benchmark.runs import run  # noqa: F401  (registers every configurable a run binds)
    from models.configurables import check_bound_method
    spec = study.expand(settings)[0]
    try:
        config.parse_config(list(spec.gin_files), list(spec.bindings))
        check_bound_method()
    finally:
        gin.clear_config()


@cli_main
def main(argv):
    command = argv[1] if len(argv) > 1 else None
    if len(argv) > 2 or command not in (None, "export", "score"):
        raise app.UsageError(f"expected no argument (train and audit), 'export' or 'score', "
                             f"found {' '.join(argv[1:])}")
    # ValueError includes fingerprint.ConfigMismatch: the audit directory holds runs of
    # another configuration (benchmark/studies/study.py); DirectoryLocked is a UserError
    with user_errors(FileNotFoundError, ValueError):
        seeds = [int(s) for s in FLAGS.seeds]
        if not seeds or len(set(seeds)) != len(seeds) or not all(0 <= s < 2**32
                                                                 for s in seeds):
            raise ValueError(f"--seeds: expected distinct seeds in [0, 2**32), at least one, "
                             f"found {FLAGS.seeds}")
        if not (0 < FLAGS.alpha < 1 and FLAGS.margin_fraction > 0):
            raise ValueError(f"expected 0 < --alpha < 1 and --margin_fraction > 0, found "
                             f"{FLAGS.alpha} and {FLAGS.margin_fraction}")
        strengths = (None if FLAGS.strengths is None
                     else [float(s) for s in FLAGS.strengths])
        reference_dir = config.find_published(FLAGS.reference)
        if command == "export":
            if not FLAGS.out:
                raise app.UsageError("export needs --out (the directory to write)")
            reference, settings = _external_settings(reference_dir, seeds, strengths)
            print(external.export(reference_dir, reference, settings, FLAGS.out,
                                  strengths))
            if len(seeds) < 2:
                print(f"note: --seeds={','.join(map(str, seeds))}: a verdict needs at least "
                      "2 seeds an arm (it tests drops across seeds); export with more to "
                      "score a verdict", file=sys.stderr)
            return
        if command == "score":
            if not (FLAGS.export and FLAGS.name):
                raise app.UsageError("score needs --export (the export's directory) and "
                                     "--name (the method's name)")
            config.check_path_name(FLAGS.name, "--name")
            alpha, fraction = FLAGS.alpha, FLAGS.margin_fraction
            path = external.score(
                FLAGS.export, FLAGS.name, FLAGS.output_dir or f"runs/audit_{FLAGS.name}",
                _external_settings,
                lambda *args: write_audit(*args, alpha, fraction, failed=[]))
            print(path.read_text().split("\n")[2])
            print(path)
            return
        if not FLAGS.gin_file:
            raise app.UsageError("--gin_file is required")
        gin_path = pathlib.Path(FLAGS.gin_file)
        if config.find_gin_file(FLAGS.gin_file) is None:     # before any plan or training
            raise FileNotFoundError(f"--gin_file: expected a gin file, found none at "
                                    f"{FLAGS.gin_file} (nor under {config.GIN_SEARCH_PATH})")
        name = config.check_path_name(FLAGS.name or gin_path.stem,
                                      "--name" if FLAGS.name else "--name (from --gin_file)")
        output_dir = FLAGS.output_dir or f"runs/audit_{name}"
        reference = reference_settings(reference_dir)
        settings = audit_settings(str(gin_path), name, seeds, reference, output_dir,
                                  strengths)
        check_method_config(settings)              # a dry run too: before any plan
        if FLAGS.dry_run:
            print(plan(settings, report.load_runs(reference_dir), FLAGS.workers)["text"])
            print(f"output directory: {output_dir}")
            for spec in study.expand(settings):
                print(f"  {spec.name}")
            return
        path = run_audit(str(gin_path), name, seeds, reference_dir, output_dir,
                         FLAGS.workers, FLAGS.alpha, FLAGS.margin_fraction, strengths,
                         only_seeds=FLAGS["seeds"].present > 0,
                         runs_per_process=FLAGS.runs_per_process)
    print(path.read_text().split("\n")[2])
    print(path)

