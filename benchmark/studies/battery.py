"""A battery: the arms of an audit's reference study and what each means.

A reference study (benchmark/studies/study.py) names its battery in `study.battery`:

    {'manipulated': 'wave@0.3',                          the arm whose effect is audited
     'controls': ['noisy@0.3675', 'wave_texture@0.3'],   keep what the manipulation removes
     'sweep': 'wave',                                    strengths of the dose-response
     'plane': [0, 1]}                                    factor columns of the angle

A study written before batteries (results/zietlow2021_cpu) has paper 002's arms:
'modified' against 'noisy' (`LEGACY`). This module reads a study's runs as the audit sees
them: MIG per arm (`arm_scores`), the runs per arm that benchmark/studies/mechanism.py summarises
(MIG, DCI-D, DCI-I and the alignment angle) and the dose-response over the sweep's strengths
(`dose_response`, `turning_strength`, `dose_figure`).
"""

from __future__ import annotations

import pathlib

from benchmark.core.arm_label import ArmLabel, base_of
from benchmark.statistics import stats
from benchmark.studies import mechanism, report_data, report_figures, study

#: paper 002's arms, for reference studies written before `study.battery`
LEGACY = {"manipulated": "modified", "controls": ["noisy"]}
LEGACY_VARIANTS = ["original", "modified", "noisy"]
#: the mean misalignment (degrees) past which a code counts as turned: halfway between the
#: factor axes (0) and the diagonal (45)
TURNED_DEG = 22.5
#: the range a MIG lies in: its intervals are cut to it (stats.clip_interval)
MIG_RANGE = (0.0, 1.0)


def battery_of(settings: dict) -> dict:
    """The battery of a reference study's settings (study.check_battery), or, for a study
    without one, paper 002's arms: its first 'modified' variant against its 'noisy' ones
    (ValueError when it has no modified arm)."""
    variants = settings.get("variants") or LEGACY_VARIANTS
    if settings.get("battery") is not None:
        return study.check_battery(settings["battery"], variants)
    modified = [v for v in variants if base_of(v) == "modified"]
    if not modified:
        raise ValueError(f"the reference study has no study.battery and no 'modified' arm "
                         f"(variants {list(variants)}), so the audit does not know which arm "
                         "to test; use a study with a battery (results/geometry_cpu)")
    return study.check_battery({"manipulated": modified[0], "controls": [
        v for v in variants if base_of(v) == "noisy"]}, variants)


def label(variant: str, dataset: str) -> str:
    """The report's label of a study variant (report_data.variant_label): the base name at its
    default strength ('modified@0.1' on dSprites -> 'modified'), else base@eps ('wave@0.30'
    -> 'wave@0.3'). A variant without '@eps' is its base name (`arm_runs` finds its runs
    when they recorded another strength, an artefact's own)."""
    return report_data.variant_label(variant, dataset)


def arms_of(battery: dict, dataset: str) -> list[str]:
    """The labels an audit compares: original, the manipulation, its controls."""
    return ["original", *(label(v, dataset) for v in [battery["manipulated"],
                                                       *battery["controls"]])]


def sweep_of(battery: dict, dataset: str, variants) -> list[tuple[float, str]]:
    """(strength, label) of the sweep's variants in `variants`, by strength; [] without a
    sweep. A sweep variant without '@eps' has its default strength."""
    sweep = battery.get("sweep")
    out = set()
    for v in variants:
        arm = ArmLabel.parse(v)
        if sweep is not None and arm.base == sweep:
            out.add((arm.eps if arm.strength else report_data.default_eps(arm.base, dataset),
                     label(v, dataset)))
    return sorted(out)


def arm_runs(records: list[dict], model: str, dataset: str, labels) -> dict:
    """{label: {'kept': [records], 'overpruned': [records]}} of `model` on `dataset`
    (report_data.load_runs records; runs without a line-search setting)."""
    kept, _ = report_data.group(records)
    pruned, _ = report_data.group([{**r, "overpruned": False} for r in records if r["overpruned"]])
    out = {}
    for v in labels:
        found = v
        if "@" not in v and (model, dataset, v, "") not in kept:
            # a variant named without its strength whose runs recorded one (an artefact's
            # own eps): its runs, when they have exactly one strength
            strengths = {key[2] for key in [*kept, *pruned] if key[0] == model
                         and key[1] == dataset and key[3] == "" and base_of(key[2]) == v}
            if len(strengths) == 1:
                found = strengths.pop()
        out[v] = {"kept": kept.get((model, dataset, found, ""), []),
                  "overpruned": pruned.get((model, dataset, found, ""), [])}
    return out


def arm_scores(runs: dict, column: str = "MIG") -> dict:
    """`arm_runs` with each record replaced by its `column` score (runs without it left
    out): {label: {'kept': [floats], 'overpruned': [floats]}}, the audit's verdict input."""
    return {v: {k: [r["values"][column] for r in arm[k] if column in r["values"]]
                for k in ("kept", "overpruned")} for v, arm in runs.items()}


def code_turns(runs: dict, labels) -> dict:
    """The misalignment (degrees) of `arm_runs`' runs per arm of `labels`, the verdict's
    `turns`: {label: {'kept': [floats], 'overpruned': [floats], 'read': runs whose codes
    (or their saved angles) were there to measure}}; runs whose latents do not follow the
    plane linearly carry no angle and are left out (mechanism.with_misalignment)."""
    angles = arm_scores(runs, "misalignment")
    return {v: {**angles[v], "read": sum(r.get("codes_read", False)
                                         for k in ("kept", "overpruned") for r in runs[v][k])}
            for v in labels}


def dose_response(runs_by_model: dict, sweep: list[tuple[float, str]]) -> list[dict]:
    """One row per model and strength (0 = original, then the sweep's): {'model',
    'strength', 'arm', 'mig' and 'misalignment': mechanism.summary, 'drop': stats.drop_test
    of MIG original -> arm (None at strength 0)}."""
    rows = []
    for model, runs in runs_by_model.items():
        original = [r["values"]["MIG"] for r in runs.get("original", {}).get("kept", [])
                    if "MIG" in r["values"]]
        for strength, arm in [(0.0, "original"), *sweep]:
            kept = runs.get(arm, {}).get("kept", [])
            if not kept:
                continue
            mig = [r["values"]["MIG"] for r in kept if "MIG" in r["values"]]
            rows.append({
                "model": model, "strength": strength, "arm": arm, "mig": mechanism.summary(mig, MIG_RANGE),
                "misalignment": mechanism.summary([r["values"]["misalignment"]
                                                   for r in kept
                                                   if "misalignment" in r["values"]]),
                "drop": (stats.drop_test(original, mig, score_range=MIG_RANGE)
                         if arm != "original" and original and mig else None)})
    return rows


def turning_strength(rows: list[dict], model: str, alpha: float = stats.ALPHA) -> dict:
    """Where `model`'s code turns, from `dose_response` rows: {'aligned' (mean
    misalignment on original below TURNED_DEG; None unmeasured), 'turns_at' (the smallest
    strength whose mean misalignment reaches TURNED_DEG; None if none does or the code was
    not aligned), 'drops_at' (the smallest strength whose MIG drop is significant,
    one-sided Welch at alpha, unadjusted; None if none)}."""
    own = sorted((r for r in rows if r["model"] == model), key=lambda r: r["strength"])
    base = next((r for r in own if r["strength"] == 0.0), None)
    angle = None if base is None else base["misalignment"]["mean"]
    aligned = None if angle is None else angle < TURNED_DEG
    turns = next((r["strength"] for r in own if r["strength"] > 0 and aligned
                  and r["misalignment"]["mean"] is not None
                  and r["misalignment"]["mean"] >= TURNED_DEG), None)
    drops = next((r["strength"] for r in own if r["drop"] and r["drop"]["p_drop"] is not None
                  and r["drop"]["p_drop"] < alpha), None)
    return {"aligned": aligned, "turns_at": turns, "drops_at": drops}


def dose_figure(rows: list[dict], path: pathlib.Path, energies: dict | None = None,
                highlight: str | None = None) -> pathlib.Path:
    """Two panels against strength (0 = original): MIG and mean misalignment (degrees),
    each model a line with 95 % t intervals (`highlight`, the audited method, in black);
    the turned line at TURNED_DEG. energies: {strength: energy per image}, shown on the
    axis labels when given."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(9, 3.6))
    mig_ax, angle_ax = fig.subplots(1, 2)
    for model in dict.fromkeys(r["model"] for r in rows):
        own = sorted((r for r in rows if r["model"] == model), key=lambda r: r["strength"])
        for ax, key in ((mig_ax, "mig"), (angle_ax, "misalignment")):
            points = [(r["strength"], r[key]) for r in own if r[key]["mean"] is not None]
            if not points:
                continue
            x = [p for p, _ in points]
            y = [s["mean"] for _, s in points]
            err = [[0 if s["ci_low"] is None else s["mean"] - s["ci_low"] for _, s in points],
                   [0 if s["ci_high"] is None else s["ci_high"] - s["mean"] for _, s in points]]
            style = ({"color": "black", "linewidth": 2.2, "zorder": 3}
                     if model == highlight else {})
            ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=model, **style)
    angle_ax.axhline(TURNED_DEG, color="grey", linestyle=":", linewidth=1)
    mig_ax.set_ylabel("MIG (mean, 95 % t CI)")
    angle_ax.set_ylabel("misalignment (degrees; 45 = diagonal)")
    strengths = sorted({r["strength"] for r in rows})
    for ax in (mig_ax, angle_ax):
        ax.set_xticks(strengths)
        if energies:
            ax.set_xticklabels([f"{s:g}\n{energies.get(s, 0):.0f}" for s in strengths])
            ax.set_xlabel("strength eps / energy per image")
        else:
            ax.set_xlabel("strength eps (0 = original)")
    mig_ax.legend(fontsize=8)
    fig.tight_layout()
    report_figures.save(fig, path)
    return path
