"""A battery: the arms of an audit's reference study and what each means.

A reference study (benchmark/study.py) names its battery in `study.battery`:

    {'manipulated': 'wave@0.3',                          the arm whose effect is audited
     'controls': ['noisy@0.3675', 'wave_texture@0.3'],   same energy, no factor dependence
     'sweep': 'wave',                                    strengths of the dose-response
     'plane': [0, 1]}                                    factor columns of the angle

A study written before batteries (results/zietlow2021_cpu) has paper 002's arms:
'modified' against 'noisy' (`LEGACY`). This module reads a study's runs as the audit sees
them: MIG per arm (`arm_scores`), the mechanism per arm (MIG, DCI-D, DCI-I and the
alignment angle, `mechanism_rows`) and the dose-response over the sweep's strengths
(`dose_response`, `turning_strength`, `dose_figure`).
"""

from __future__ import annotations

import json
import math
import pathlib

import numpy as np
from scipy import stats as sp_stats

from benchmark import report, stats, study
from benchmark.metrics import alignment

#: paper 002's arms, for reference studies written before `study.battery`
LEGACY = {"manipulated": "modified", "controls": ["noisy"]}
LEGACY_VARIANTS = ["original", "modified", "noisy"]
#: the mean misalignment (degrees) past which a code counts as turned: halfway between the
#: factor axes (0) and the diagonal (45)
TURNED_DEG = 22.5
#: the columns of the mechanism table (report columns; 'misalignment' from the codes)
MECHANISM = ("MIG", "DCI-D", "DCI-I", "misalignment")


def battery_of(settings: dict) -> dict:
    """The battery of a reference study's settings (study.check_battery), or, for a study
    without one, paper 002's arms: its first 'modified' variant against its 'noisy' ones
    (ValueError when it has no modified arm)."""
    variants = settings.get("variants") or LEGACY_VARIANTS
    if settings.get("battery") is not None:
        return study.check_battery(settings["battery"], variants)
    modified = [v for v in variants if v.split("@")[0] == "modified"]
    if not modified:
        raise ValueError(f"the reference study has no study.battery and no 'modified' arm "
                         f"(variants {list(variants)}), so the audit does not know which arm "
                         "to test; use a study with a battery (results/geometry_cpu)")
    return study.check_battery({"manipulated": modified[0], "controls": [
        v for v in variants if v.split("@")[0] == "noisy"]}, variants)


def label(variant: str, dataset: str) -> str:
    """The report's label of a study variant (report.nominal, which formats eps with :g
    before comparing it with the default): the base name at its default strength
    ('modified@0.1' on dSprites -> 'modified'), else base@eps ('wave@0.30' -> 'wave@0.3').
    A variant without '@eps' is its base name (`arm_runs` finds its runs when they
    recorded another strength, an artefact's own)."""
    base, _, eps = variant.partition("@")
    if not eps:
        return base
    shown = f"{float(eps):g}"
    return base if float(shown) == report.default_eps(base, dataset) else f"{base}@{shown}"


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
        base, _, eps = v.partition("@")
        if sweep is not None and base == sweep:
            out.add((float(eps) if eps else report.default_eps(base, dataset),
                     label(v, dataset)))
    return sorted(out)


def arm_runs(records: list[dict], model: str, dataset: str, labels) -> dict:
    """{label: {'kept': [records], 'overpruned': [records]}} of `model` on `dataset`
    (report.load_runs records; runs without a line-search setting)."""
    kept, _ = report.group(records)
    pruned, _ = report.group([{**r, "overpruned": False} for r in records if r["overpruned"]])
    out = {}
    for v in labels:
        found = v
        if "@" not in v and (model, dataset, v, "") not in kept:
            # a variant named without its strength whose runs recorded one (an artefact's
            # own eps): its runs, when they have exactly one strength
            strengths = {key[2] for key in [*kept, *pruned] if key[0] == model
                         and key[1] == dataset and key[3] == "" and key[2].split("@")[0] == v}
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


def with_misalignment(records: list[dict], plane, study_dir=None) -> list[dict]:
    """records with values['misalignment'] (degrees, alignment.code_misalignment in the
    factor columns `plane`) where some latent follows the two factors linearly: from the
    run's evaluation codes (eval_codes.npz), or, for a published study whose codes are not
    in the repository, from STUDY_DIR/alignment.json (written by `python -m
    benchmark.metrics.alignment STUDY_DIR` in the same plane). Records unchanged without a
    plane."""
    if plane is None:
        return records
    saved = _saved_alignment(study_dir, plane)
    out = []
    for r in records:
        angle = alignment.run_misalignment(r["run_dir"], plane)
        row = saved.get(pathlib.Path(r["run_dir"]).name)
        if angle is None and row is not None:
            try:
                kept = [m for m, r2 in zip(row["misalignment_deg"], row["r2"])
                        if r2 >= alignment.MIN_R2]
            except (KeyError, TypeError) as error:
                raise ValueError(f"{study_dir}/alignment.json: expected rows with "
                                 f"'misalignment_deg' and 'r2', found {row!r:.120} "
                                 f"({error})") from None
            angle = float(np.mean(kept)) if kept else None
        values = r["values"] if angle is None else {**r["values"], "misalignment": angle}
        out.append({**r, "values": values})
    return out


def _saved_alignment(study_dir, plane) -> dict:
    """{run name: row} of STUDY_DIR/alignment.json when it was measured in `plane`."""
    path = None if study_dir is None else pathlib.Path(study_dir) / "alignment.json"
    if path is None or not path.is_file():
        return {}
    try:
        content = json.loads(path.read_text())
        if list(content["columns"]) != list(plane):
            return {}
        return {row["run"]: row for row in content["runs"]}
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: expected the JSON that benchmark.metrics.alignment "
                         f"writes, found unreadable content ({error})") from None


def _summary(values: list[float]) -> dict:
    """{'n', 'mean', 'sd', 'ci_low', 'ci_high'}: the 95 % t interval of the mean (None
    below 2 values; mean None without values)."""
    x = np.asarray(values, float)
    out = {"n": len(x), "mean": float(x.mean()) if len(x) else None, "sd": None,
           "ci_low": None, "ci_high": None}
    if len(x) >= 2:
        sd = float(x.std(ddof=1))
        half = float(sp_stats.t.ppf(0.5 + stats.CONFIDENCE / 2, len(x) - 1)) * sd / math.sqrt(
            len(x))
        out.update(sd=sd, ci_low=out["mean"] - half, ci_high=out["mean"] + half)
    return out


def mechanism_rows(runs_by_model: dict, labels) -> list[dict]:
    """One row per model and arm: {'model', 'arm', column: `_summary` of the kept runs for
    each MECHANISM column}; runs_by_model: {model: `arm_runs`}."""
    rows = []
    for model, runs in runs_by_model.items():
        for arm in labels:
            kept = runs.get(arm, {}).get("kept", [])
            if not kept:
                continue
            rows.append({"model": model, "arm": arm, **{
                c: _summary([r["values"][c] for r in kept if c in r["values"]])
                for c in MECHANISM}})
    return rows


def dose_response(runs_by_model: dict, sweep: list[tuple[float, str]]) -> list[dict]:
    """One row per model and strength (0 = original, then the sweep's): {'model',
    'strength', 'arm', 'mig': _summary, 'misalignment': _summary, 'drop': stats.drop_test of
    MIG original -> arm (None at strength 0)}."""
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
                "model": model, "strength": strength, "arm": arm, "mig": _summary(mig),
                "misalignment": _summary([r["values"]["misalignment"] for r in kept
                                          if "misalignment" in r["values"]]),
                "drop": (stats.drop_test(original, mig)
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
    report._save(fig, path)
    return path
