"""The audit's report: decides the verdict on the method's finished runs
(benchmark/studies/verdict.py) and writes audit.json, audit.md (the verdict and what it
rests on, the MIG drops, the mechanism per arm, the dose-response, over-pruning per arm),
dose_response.png and the study report. Used by the command (benchmark/studies/audit.py)
and by `score` (benchmark/studies/external.py).
"""

from __future__ import annotations

import pathlib

import numpy as np
from absl import logging

from benchmark.core.atomic import atomic_path, write_json
from benchmark.statistics import stats
from benchmark.studies import battery as battery_lib
from benchmark.studies import mechanism, report, report_data, study
from benchmark.studies.audit_plan import (REFERENCES, reference_artefact_warnings,
                                          reference_completeness)
from benchmark.studies.verdict import (RULE_VERSION, mig_drops, overpruning, robust_control,
                                       seeds_alike, verdict)

#: seeds an arm needs before the audit states its power (below, the spread is a guess)
POWER_MIN_SEEDS = 3


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


def _steps(bindings) -> str:
    for b in bindings:
        key, _, value = b.partition("=")
        if key.strip() == "run.steps":
            return value.strip()
    return "the default number of"


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


def write_audit(name: str, seeds, reference: dict, reference_dir,
                settings: study.StudySettings, output_dir, alpha: float, margin_fraction: float, failed,
                only_seeds: bool = True) -> pathlib.Path:
    """Decides the verdict on the method's finished runs in output_dir/runs (trained by
    the audit, or scored from codes written elsewhere: benchmark/studies/external.py) and writes
    audit.md, audit.json, dose_response.png and the report; returns audit.md. only_seeds:
    the runs of `seeds` alone (the user named them); False: every finished run there (a
    registered extension of an arm to more seeds included, named in the scope)."""
    battery = settings.battery
    reference_runs = report_data.load_runs(reference_dir)
    dataset = settings.datasets[0]
    compared = battery_lib.arms_of(battery, dataset)
    manipulated, controls = compared[1], compared[2:]
    sweep = battery_lib.sweep_of(battery, dataset, settings.variants)
    labels = list(dict.fromkeys([*compared, *(arm for _, arm in sweep)]))
    found = report_data.load_runs(output_dir)
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
    turns = (battery_lib.code_turns(runs_by_model[method_key], compared)
             if battery.get("plane") is not None else None)
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
