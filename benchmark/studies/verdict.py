"""The audit's verdict rules: what a verdict means and its thresholds. From the MIG of
the audited method and of the reference study's beta-VAE, AE and PCL per arm of the battery
(`arms`), the steps of the audit's decision in their order (`verdict`): the positive control
and its specificity, the validity gate, the floor, then DEPENDS, LOSES INFORMATION, ROBUST,
SENSITIVE or INCONCLUSIVE, with the reference PCL's robust control and the warning of seeds
that barely differ beside it. The command's help (benchmark/studies/audit.py's docstring,
step 3) states the rules for a user; a change of a rule changes both and bumps
RULE_VERSION. The statistics are benchmark/statistics/stats.py's, the report's own.
"""

from __future__ import annotations

import numpy as np

from benchmark.core.arm_label import base_of
from benchmark.statistics import stats
from benchmark.studies import battery as battery_lib

ALPHA = stats.ALPHA
#: the equivalence margin of ROBUST, as a fraction of the share of its headroom above the
#: AE floor the reference beta-VAE loses, applied to the audited model's own headroom
#: (`relative_margin`)
MARGIN_FRACTION = 0.5
MIG_RANGE = battery_lib.MIG_RANGE
#: the verdict rule (the audit's docstring, benchmark/studies/audit.py): 2 added the
#: validity gate, the headroom margin and DEPENDS' need of a turn or of losing a larger
#: share than the AE (LOSES INFORMATION otherwise); audits published before it (no
#: 'rule_version' in audit.json) were decided by rule 1
RULE_VERSION = 2
#: the arms of a reference study written before batteries (battery.LEGACY)
LEGACY_ARMS = ("original", "modified", "noisy")


def arms(records: list[dict], model: str, dataset: str, labels=LEGACY_ARMS) -> dict:
    """MIG of `model` on `dataset` per arm: {label: {'kept': [MIG of the runs kept],
    'overpruned': [MIG of the over-pruned runs]}} for the arm labels (the report's variant
    labels, battery.label; runs without a line-search setting). records: the output of
    report_data.load_runs."""
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
    beta-VAE's drop on the manipulated arm significantly larger than on every control
    (one-sided Welch on the difference of drops at alpha)? The second half of the positive
    control: without it the battery shows what the manipulation costs a
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
    not_larger = [c for c, d in records.items() if not d["p"] < alpha]
    if not not_larger and not short:
        return True, records, (f"Its drop is specific: significantly larger than on every "
                               f"control (difference of drops, {shown}).")
    why = ([f"not significantly larger than on {', '.join(f'{c} data' for c in not_larger)}"]
           if not_larger else [])
    if short:
        why.append(f"too few runs left on {', '.join(short)} to compare with")
    return False, records, (
        "Its drop is not shown to be specific: " + "; ".join(why)
        + (f" (difference of drops, {shown})" if shown else "")
        + ", so at this scale the battery shows what the manipulation costs a disentangling "
        "model, not that the cost comes from the structure it removes.")


def _turn_size(mean_after: float) -> str:
    """A warning for a turn that is significant but smaller than the angle at which the
    dose-response table calls a code turned (battery.TURNED_DEG); '' when it reaches it.
    It names the difference between the two readings and changes no step of the rule."""
    if mean_after >= battery_lib.TURNED_DEG:
        return ""
    return (f", though its mean stays below the {battery_lib.TURNED_DEG:g}° at which the "
            "dose-response table calls a code turned: the rule's turn test has no size, so "
            "on seeds that barely differ a small rise is significant")


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
    """'noise', 'the texture', 'the vignette' or the control's own name."""
    base = base_of(control)
    return ("noise" if base == "noisy" else "the texture" if base.endswith("texture")
            else "the vignette" if base == "vignetted" else control)


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
    the audit's docstring); relative: `relative_margin`, the equivalence margin being it
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
                                     "significantly more than on every control "
                                     f"(difference of drops, {shown})",
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
                    f"is hurt by {' and '.join(_control_kind(c) for c in hurt)}, "
                    + ("a control that keeps" if len(hurt) == 1 else "controls that keep")
                    + " the structure the manipulation removes, so a dependence on that "
                    "structure is not separated from it"
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
                             + _turn_size(np.mean(after))
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
            controls=("noisy",), flagged: bool = False, turns: dict | None = None,
            reference_alpha: float | None = None) -> dict:
    """The audit's decision (the audit's docstring) from MIG arms (each as `arms`: the method's,
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
    label; the reason then says so)}. reference_alpha: the level of the reference's own
    tests (positive control, its specificity, the validity gate) where it differs from the
    method's (a sequential design that spends less than alpha at each look on the method's
    tests); None: alpha."""
    controls = list(controls)
    reference_alpha = alpha if reference_alpha is None else reference_alpha
    passed, control, sentence = positive_control(beta_vae, reference_alpha, manipulated,
                                                 flagged)
    tests = {"positive_control": control} if control else {}
    gated = False
    if passed:
        passed, gate, said = validity_gate(beta_vae, ae, reference_alpha)
        tests["validity_gate"] = gate
        gated = not passed
        sentence = said if gated else sentence + " " + said
    specific = None
    if passed and controls:
        specific, records, said = reference_specificity(beta_vae, reference_alpha,
                                                        manipulated, controls)
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
            control["drop"] if control else None, spread, reference_alpha,
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
