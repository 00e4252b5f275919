"""The study report's text (benchmark/studies/report.py): its markdown sections, each from
its rows (headline, power, over-pruning, pre-registered hypotheses, artefact warnings,
arm sizes, mechanism, compute, drops, scale, metric settings, the Table 1 layout), and
the CSV and LaTeX files of its tables.
"""

from __future__ import annotations

import csv
import io
import json
import pathlib
from collections import defaultdict

import numpy as np
import pandas as pd

from benchmark.core.arm_label import base_of
from benchmark.core.atomic import atomic_path
from benchmark.data import change
from benchmark.runs import results as results_lib
from benchmark.statistics import hypotheses as hypotheses_lib
from benchmark.statistics import stats
from benchmark.studies import mechanism
from benchmark.statistics.hypotheses import HIGHER_IS_WORSE
from benchmark.studies.report_data import (LOWER_IS_BETTER, METRICS, ORACLE_ARMS, ReportError,
                                           group, is_finite, is_missing, nominal,
                                           variant_label, variant_rank)
from perturbations.artefact import artefact_warnings


#: power the report's planning numbers aim for (one-sided Welch at stats.ALPHA)
TARGET_POWER = 0.8


def label_note(records: list[dict]) -> str:
    """The sentence that names the arms `nominal` shows by their base name ('' when none),
    each with where its default strength comes from: "Labels: 'noisy' is noisy@0.1 on
    dsprites (the dataset's default strength, paper 002's)."."""
    shown = sorted(
        f"'{label}' is {variant} on {dataset} ("
        + ("the oracle control's default strength" if label in ORACLE_ARMS
           else "the dataset's default strength, paper 002's") + ")"
        for (dataset, variant), label in nominal(records).items())
    if not shown:
        return ""
    return f"Labels: {'; '.join(shown)}; other strengths keep their @eps."


def _fmt(value, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _p(value) -> str:
    return "n/a" if value is None else (f"{value:.3f}" if value >= 0.001 else f"{value:.1e}")


def table1(rows: list[dict], column: str) -> str:
    """Markdown: models x (dataset, variant), cells mean +- std (seeds), paper 002 Table 1."""
    cells = [(r["dataset"], r["variant"]) for r in rows]
    columns = sorted(set(cells), key=lambda c: (c[0], *variant_rank(c[1])))
    lines = ["| model | " + " | ".join(f"{d} {v}" for d, v in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for model, setting in sorted({(r["model"], r["setting"]) for r in rows}):
        label = model + (f" ({setting})" if setting else "")
        out = []
        for d, v in columns:
            match = [r for r in rows if (r["model"], r["setting"], r["dataset"],
                                         r["variant"]) == (model, setting, d, v)]
            r = match[0] if match else None
            if r is None or f"{column} mean" not in r:
                out.append("—")
            else:
                spread = f" ± {r[f'{column} std']:.2f}" if r["seeds"] > 1 else ""
                out.append(f"{r[f'{column} mean']:.2f}{spread} ({r['seeds']})")
        lines.append(f"| {label} | " + " | ".join(out) + " |")
    return "\n".join(lines)


def write_csv(path: pathlib.Path, rows: list[dict]) -> None:
    fields = list(dict.fromkeys(k for r in rows for k in r))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields)
    writer.writeheader()
    writer.writerows(rows)
    with atomic_path(path, ".csv") as tmp:
        tmp.write_text(buffer.getvalue())


def write_latex(path: pathlib.Path, rows: list[dict], columns: list[str]) -> None:
    """A booktabs tabular of the given row keys (numbers to 3 decimals)."""
    def cell(v):
        if isinstance(v, float):
            return f"{v:.3f}"
        return "--" if v is None else str(v).replace("_", r"\_")
    lines = [r"\begin{tabular}{" + "l" * len(columns) + "}", r"\toprule",
             " & ".join(cell(c) for c in columns) + r" \\", r"\midrule"]
    lines += [" & ".join(cell(r.get(c)) for c in columns) + r" \\" for r in rows]
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    with atomic_path(path, ".tex") as tmp:
        tmp.write_text("\n".join(lines))


def _mean_cell(row: dict | None, column: str) -> str:
    pruned = f"{row['excluded_overpruned']} over-pruned" if row and row[
        "excluded_overpruned"] else ""
    if row is None or f"{column} mean" not in row:
        return f"— ({pruned})" if pruned else "—"
    spread = f" ± {row[f'{column} std']:.3f}" if row["seeds"] > 1 else ""
    return (f"{row[f'{column} mean']:.3f}{spread} ({row['seeds']}"
            + (f"; {pruned} excluded)" if pruned else ")"))


def _drop_cell(drop: dict | None) -> str:
    if drop is None:
        return "—"
    return f"{drop['drop']:+.3f} (p {_p(drop['p_welch'])})"


def headline(rows: list[dict], drops: list[dict], column: str = "MIG") -> list[str]:
    """Markdown lines: per model and dataset, `column` on the original data and on every
    other variant the study ran without a line-search setting (at any strength, e.g.
    'modified@0.3', 'noisy@0.0788'; original / modified / noisy when it ran none), the drops
    with Welch's p, and paper 002 Table 1's MIG where the paper has the cell (plain
    variants). Empty when no model has original data."""
    from benchmark.studies.paper_tables import PAPER002_TABLE1_MIG
    by_key = {(r["model"], r["dataset"], r["variant"]): r for r in rows if not r["setting"]}
    drop_of = {(d["model"], d["dataset"], d["variant"]): d for d in drops
               if d["metric"] == column and not d["setting"]}
    cells = sorted({(m, d) for m, d, v in by_key if v == "original"})
    if not cells:
        return []
    others = sorted({v for _, _, v in by_key if v != "original"}, key=variant_rank)
    others = others or ["modified", "noisy"]
    paper_note = column == "MIG"
    lines = [f"## {column}: original, each variant and the drops", "",
             "Mean ± std over seeds (number of seeds); drop = mean(original) − mean(variant), "
             "p from Welch's t-test (n/a with fewer than 2 seeds a side)"
             + ("; paper 002 Table 1: 10 seeds at dlib's 300k steps — compare the direction "
                "of the drops more than the levels when this study ran at another scale."
                if paper_note else "."), "",
             "| model | dataset | original | " + " | ".join(others) + " | "
             + " | ".join(f"drop → {v}" for v in others)
             + (" | paper 002: original / modified / noisy |" if paper_note else " |"),
             "|---|---|" + "---|" * (1 + 2 * len(others)) + ("---|" if paper_note else "")]
    for model, dataset in cells:
        line = (f"| {model} | {dataset} | "
                + " | ".join(_mean_cell(by_key.get((model, dataset, v)), column)
                             for v in ["original", *others]) + " | "
                + " | ".join(_drop_cell(drop_of.get((model, dataset, v))) for v in others))
        if paper_note:
            paper = [PAPER002_TABLE1_MIG.get((model, dataset, v))
                     for v in ("original", "modified", "noisy")]
            line += " | " + " / ".join("—" if c is None else f"{c[0]:.2f} ± {c[1]:.2f}"
                                       for c in paper)
        lines.append(line + " |")
    return lines + [""]


def overpruning_rows(groups: dict, excluded: dict) -> list[dict]:
    """Over-pruning as an outcome, per (model, dataset, variant, setting): 'runs' (kept +
    over-pruned), 'overpruned', 'rate' in [0, 1], and 'p_fisher': Fisher's exact p of
    equal rates in this arm and the same model's original arm (None for original arms
    and where that arm has no runs)."""
    keys = sorted(set(groups) | set(excluded),
                  key=lambda k: (k[0], k[1], k[3], *variant_rank(k[2])))
    counts = {k: (excluded.get(k, 0), len(groups.get(k, [])) + excluded.get(k, 0))
              for k in keys}
    rows = []
    for key in keys:
        pruned, runs = counts[key]
        base = (key[0], key[1], "original", key[3])
        p = None
        if key[2] != "original" and base in counts:
            p = stats.overpruning_test(*counts[base], pruned, runs)
        rows.append({"model": key[0], "dataset": key[1], "variant": key[2],
                     "setting": key[3], "runs": runs, "overpruned": pruned,
                     "rate": pruned / runs, "p_fisher": p})
    return rows


def overpruning_lines(rows: list[dict], unknown_health: int = 0) -> list[str]:
    """Markdown section of `overpruning_rows` (one sentence when no run is over-pruned).
    unknown_health: runs whose health was not measured (a deterministic encoder's codes and
    codes scored from files carry no posterior variances); they are named, never counted as
    "not over-pruned"."""
    unknown = ([f"Over-pruning is unknown for {unknown_health} run(s): their codes carry no "
                "posterior variances (a deterministic encoder, such as the AE, or codes scored "
                "from files), so they are kept in every table."]
               if unknown_health else [])
    if not any(r["overpruned"] for r in rows):
        known = "No run whose health was measured" if unknown_health else "No run"
        return ["## Over-pruning", "", " ".join([f"{known} is over-pruned (fewer active "
                                                  "dims than factors, paper 002 sec. 5.3)."]
                                                 + unknown), ""]
    lines = ["## Over-pruning", "", *unknown, *([""] if unknown else []),
             "Runs with fewer active dims (E[σ²] < 0.8) than factors are over-pruned (paper "
             "002 sec. 5.3) and excluded from the other tables; the rate is an outcome of its "
             "own: p from Fisher's exact test against the same model's original data.", "",
             "| model | dataset | variant | setting | runs | over-pruned | rate | p (Fisher, "
             "vs original) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['dataset']} | {r['variant']} | {r['setting']} | "
                     f"{r['runs']} | {r['overpruned']} | {r['rate']:.0%} | "
                     f"{_p(r['p_fisher'])} |")
    return lines + [""]


def power_rows(drops: list[dict], column: str = "MIG", alpha: float = stats.ALPHA,
               target: float = TARGET_POWER) -> list[dict]:
    """For each headline drop of `column` (original → each other variant, no line-search
    setting, ≥ 2 runs a side): the power the present seeds have for a true drop equal to
    the observed one at the observed spreads ('power_now', one-sided Welch at alpha), and
    the seeds per arm that would reach `target` ('seeds_needed'; None when the observed
    drop is ≤ 0 or needs over 10000)."""
    rows = []
    for d in drops:
        if (d["metric"] != column or d["setting"] or d["variant"] == "original"
                or d["p_welch"] is None):
            continue
        sd, sd_other = d["sd_original"], d["sd_other"]
        rows.append({**{k: d[k] for k in ("model", "dataset", "variant", "drop",
                                          "n_original", "n_other")},
                     "sd_original": sd, "sd_other": sd_other,
                     "power_now": (stats.power(d["drop"], sd, d["n_original"], alpha, sd_other,
                                               d["n_other"]) if d["drop"] > 0 else None),
                     "seeds_needed": stats.seeds_needed(d["drop"], sd, alpha, target,
                                                        sd_other)})
    return rows


def power_lines(rows: list[dict], column: str = "MIG") -> list[str]:
    """Markdown section of `power_rows` (empty without rows)."""
    if not rows:
        return []
    lines = [f"## Power of the {column} drops", "",
             f"Seeds per arm a one-sided Welch test (α = {stats.ALPHA}) needs to detect each "
             f"drop with power {TARGET_POWER}, were the true drop and spreads the observed "
             "ones (planning numbers for a next study; `python -m benchmark.power`), and the "
             "power the present seeds have for such a drop. — : no drop observed.", "",
             "| model | dataset | variant | drop | sd original / variant | seeds | power now | "
             f"seeds per arm for power {TARGET_POWER} |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        needed = "—" if r["seeds_needed"] is None else r["seeds_needed"]
        now = "—" if r["power_now"] is None else f"{r['power_now']:.2f}"
        lines.append(f"| {r['model']} | {r['dataset']} | {r['variant']} | {r['drop']:+.3f} | "
                     f"{r['sd_original']:.3f} / {r['sd_other']:.3f} | "
                     f"{r['n_original']} / {r['n_other']} | {now} | {needed} |")
    return lines + [""]


def hypothesis_rows(study: dict, groups: dict) -> list[dict]:
    """The study's pre-registered hypotheses (study.json settings.hypotheses) tested on the
    kept runs of `groups` (benchmark/statistics/hypotheses.py); [] when it declares none.
    A hypothesis on 'misalignment' needs runs whose values hold it
    (`mechanism.with_misalignment`, as `write_report` groups them for a study whose
    battery names a plane); scores of HIGHER_IS_WORSE columns are read negated."""
    declared = study.get("settings", {}).get("hypotheses") or []
    if not declared:
        return []
    try:
        declared = hypotheses_lib.normalise(declared)
    except ValueError as error:
        raise ReportError(f"study.json: {error}") from None

    def values(model, dataset, variant, setting, metric, seeds: bool = False):
        variant = variant_label(variant, dataset)    # the label `group` gives ('noisy@0.1')
        key = (model, dataset, variant, setting)
        if key not in groups:
            # A hypothesis names a variant by its base ('wave'); a study that ran it at one
            # strength other than the default holds it as 'wave@0.3'.
            strengths = [k for k in groups if k[:2] == (model, dataset) and k[3] == setting
                         and base_of(k[2]) == variant]
            if len(strengths) == 1:
                key = strengths[0]
        sign = -1.0 if metric in HIGHER_IS_WORSE else 1.0
        kept = [r for r in groups.get(key, []) if metric in r["values"]]
        if not seeds:
            return [sign * r["values"][metric] for r in kept]
        by_seed = {}
        for r in kept:
            if r["seed"] in by_seed:
                raise ReportError(f"a paired hypothesis on {model} / {variant}: two kept "
                                  f"runs of seed {r['seed']} ({setting or 'no setting'}); "
                                  "pairs need one run a seed")
            by_seed[r["seed"]] = sign * r["values"][metric]
        return by_seed
    return hypotheses_lib.evaluate(declared, values)


def hypothesis_lines(rows: list[dict], study: dict) -> list[str]:
    """Markdown section of `hypothesis_rows`, first in the report (empty without rows).
    Says so when study.json's earlier settings held other hypotheses (amended after the
    study started)."""
    if not rows:
        return []
    current = study["settings"]["hypotheses"]
    amended = any(old.get("hypotheses") != current
                  for old in study.get("previous_settings", []))
    lines = ["## Pre-registered hypotheses", "",
             "Declared in the study's configuration (`study.hypotheses`) and recorded in its "
             "study.json before its runs trained; tested on the kept (not over-pruned) runs. "
             "Estimate: the drop (original − variant), or the difference of drops "
             "(variant − versus)"
             + (f"; for {', '.join(HIGHER_IS_WORSE)} (higher is worse) the drop is the rise "
                "(variant − original), its scores read negated"
                if any(row["metric"] in HIGHER_IS_WORSE for row in rows) else "")
             + (", or the difference of two methods' means (greater: model − versus model)"
                if any(row["test"] == "greater" for row in rows) else "")
             + ", with its (1 − 2α) Welch t interval"
             + (" (a paired hypothesis: the paired t interval over the seeds both arms "
                "have)" if any(row.get("paired") for row in rows) else "")
             + " (90 % at α 0.05: each test is "
             "one-sided, or two one-sided for equivalence, so the interval clears 0"
             + (", lies below the margin (non-inferiority)"
                if any(row["test"] == "noninferiority" for row in rows) else "")
             + " or lies inside ±margin (equivalence) exactly when p < α before Holm); "
             "p (Holm): adjusted over every hypothesis registered in its family, one that "
             "cannot be tested counted as p = 1; supported when it is below α.", ""]
    if amended:
        lines += ["**Amended:** study.json's earlier settings (`previous_settings`) hold other "
                  "hypotheses than these, so they were changed after the study started; "
                  "read them as post hoc.", ""]
    lines += ["| id | hypothesis | test | family | α | margin | estimate [CI] | seeds | p | "
              "p (Holm) | outcome |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        estimate = "—" if r["estimate"] is None else (
            f"{r['estimate']:+.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]")
        margin = "—" if r["margin"] is None else (
            f"< {r['margin']:.3f}" if r["test"] == "noninferiority" else f"±{r['margin']:.3f}")
        lines.append(f"| {r['id']} | {r['claim']} | {r['test_name']} | {r['family']} | "
                     f"{r['alpha']:g} | {margin} | {estimate} | {r['n'] or '—'} | "
                     f"{_p(r['p'])} | {_p(r['p_holm'])} | {r['outcome']} |")
    return lines + [""] + gate_lines(rows)


def gate_lines(rows: list[dict]) -> list[str]:
    """One line per validity gate the hypotheses share (model, dataset, setting, floor,
    metric, alpha: what `hypotheses._floor_gate` computes it from): how far the model's
    original mean lies beyond the floor's in the metric's good direction (above for MIG,
    below for misalignment), its one-sided Welch p and whether it passed, with the ids it
    gates; [] when no hypothesis has a floor."""
    gates: dict[tuple, list[dict]] = {}
    for r in rows:
        if r.get("floor"):
            key = (r["model"], r["dataset"], r.get("setting") or "", r["floor"], r["metric"],
                   r["alpha"])
            gates.setdefault(key, []).append(r)
    several = len({key[1:3] for key in gates}) > 1
    lines = []
    for (model, dataset, setting, floor, metric, alpha), gated in gates.items():
        if several:         # which dataset and setting, only where the gates differ in them
            model = f"{model} on {dataset}" + (f" ({setting})" if setting else "")
        first = gated[0]
        ids = ", ".join(r["id"] for r in gated)
        if first.get("floor_p") is None:
            lines.append(f"- Validity gate of {ids}: {model} {metric} on original against the "
                         f"{floor} floor could not be computed ({first['outcome']}).")
            continue
        sign = -1.0 if metric in HIGHER_IS_WORSE else 1.0
        passed = first["floor_p"] < alpha
        lines.append(f"- Validity gate of {ids}: {model} {metric} on original "
                     f"{'below' if sign < 0 else 'above'} the {floor} floor by "
                     f"{first['floor_estimate']:+.3f} (one-sided Welch p "
                     f"{_p(first['floor_p'])}, α {alpha:g}): "
                     + ("passed, so these hypotheses could be tested." if passed else
                        "not passed: 'untestable at this scale'."))
    return lines + [""] if lines else []


def artefact_warning_lines(records: list[dict], table, study: dict) -> list[str]:
    """A section that opens the report when an artefact the study used is flagged by its
    own evidence: what its runs recorded when they loaded it (the table's
    `artefact_warnings`), and what the artefact's evidence.json says now (study.json's
    artefacts: runs written before the warnings were recorded)."""
    found = {}
    if "artefact_warnings" in table:
        for record, text in zip(records, table["artefact_warnings"]):
            if isinstance(text, str) and text:
                found.setdefault(record["variant"], set()).update(text.split("; "))
    for dataset, variants in study.get("settings", {}).get("artefacts", {}).items():
        for variant, directory in (variants or {}).items():
            for warning in artefact_warnings(directory) if isinstance(directory, str) else []:
                found.setdefault(f"{variant} ({directory})", set()).add(warning)
    if not found:
        return []
    lines = ["## Warning: a flagged artefact", "",
             "These arms read an artefact whose own evidence argues against it; read their "
             "drops as the effect of this artefact as it is, not of the factor-dependent "
             "manipulation it was meant to be:", ""]
    lines += [f"- **{arm}**: {'; '.join(sorted(warnings))}" for arm, warnings in
              sorted(found.items())]
    return lines + [""]


def arm_size_rows(results_dir: pathlib.Path, study: dict) -> tuple[list[dict], list[str]]:
    """(one row per measured arm: dataset, variant, eps, linf, mean_abs, energy_per_image,
    images, from the study's samples/DATASET_VARIANT.change.json; the study's arms other
    than original with no such file), rows sorted by dataset and variant."""
    settings = study.get("settings", {})
    wanted = [f"{d}_{v}" for d in settings.get("datasets", [])
              for v in settings.get("variants", []) if base_of(v) != "original"]
    rows, missing = [], []
    for stem in wanted or sorted(p.name.removesuffix(".change.json") for p in
                                 (results_dir / "samples").glob("*.change.json")):
        path = results_dir / "samples" / f"{stem}.change.json"
        if not path.is_file():
            missing.append(stem)
            continue
        try:
            found = json.loads(path.read_text())
            rows.append({key: found[key] for key in ("dataset", "variant", "eps", "linf",
                                                     "mean_abs", "energy_per_image",
                                                     "images")})
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise ReportError(f"{path}: expected the JSON `python -m benchmark.data "
                              f"preview` writes (dataset, variant, eps, linf, mean_abs, "
                              f"energy_per_image, images), found {error!r}") from None
    return rows, missing


def arm_size_lines(rows: list[dict], missing: list[str]) -> list[str]:
    """The report's section on how much each arm changes the images."""
    if not rows and not missing:
        return []
    lines = ["## How much each arm changes the images", "",
             "Against the original images: L∞ (what paper 002 matched its noise control "
             "in), mean |x′ − x| and energy per image (Σ over its pixels of (x′ − x)², what a "
             "squared-error objective sees), on every image of a dataset of at most "
             f"{change.SAMPLE_ABOVE:,}, else a seeded sample of {change.SAMPLE:,} "
             "(`benchmark/data/change.py`). Arms equal in one "
             "of them can differ several-fold in another.", ""]
    if rows:
        lines += ["| dataset | variant | eps | L∞ | mean abs(x′ − x) | energy per image | "
                  "images |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {r['dataset']} | {r['variant']} | {_fmt(r['eps'], 4)} | "
                  f"{r['linf']:.4f} | {r['mean_abs']:.4f} | {r['energy_per_image']:.1f} | "
                  f"{r['images']:,} |" for r in rows]
        lines.append("")
    if missing:
        lines += [f"Not measured: {', '.join(missing)} (rerun the study's command: it "
                  "writes what is missing and retrains nothing that finished).", ""]
    return lines


def mechanism_rows(results_dir, records: list[dict], study: dict) -> list[dict]:
    """benchmark/studies/mechanism.py's rows (MIG, DCI-D, DCI-I, misalignment, the turn from
    original) of every model over the study's arms, when its battery names a plane (the
    factor columns of the alignment angle); [] otherwise. A model is named 'model
    (dataset)' in a study of several datasets; line-searched runs are left out."""
    battery = (study.get("settings") or {}).get("battery") or {}
    if battery.get("plane") is None:
        return []
    groups, _ = group(mechanism.with_misalignment(records, battery["plane"], results_dir))
    several = len({key[1] for key in groups}) > 1
    runs_by_model: dict = {}
    for (model, dataset, variant, setting), kept in sorted(groups.items()):
        if not setting:
            name = f"{model} ({dataset})" if several else model
            runs_by_model.setdefault(name, {})[variant] = {"kept": kept}
    labels = sorted({key[2] for key in groups}, key=variant_rank)
    return mechanism.mechanism_rows(runs_by_model, labels)


def mechanism_lines(rows: list[dict], plane) -> list[str]:
    """The report's mechanism section of `mechanism_rows` (none without rows); plane: the
    battery's two factor columns."""
    if not rows:
        return []
    return ["## Mechanism: turned or lost?", "",
            f"Per model and arm, in the plane of factor columns {list(plane)} "
            f"({mechanism.READING}). Misalignment comes from each run's evaluation codes or "
            "the study's alignment.json (`python -m benchmark.metrics.alignment`); its n can "
            "be smaller than the arm's where codes were not kept.", "",
            *mechanism.table_lines(rows), ""]


def compute_rows(records: list[dict]) -> list[dict]:
    """What the runs cost, per model, from each results.json: {'model', 'runs', 'resumed'
    (runs that resumed from a checkpoint: their times cover only the last part and are
    left out of the means), 'wall_minutes', 'cpu_minutes' (None where no run recorded its
    `machine`), 'timed' (how many did), 'cpus' (CPU models named)}."""
    by_model = defaultdict(list)
    for r in records:
        try:
            payload = json.loads((pathlib.Path(r["run_dir"]) / "results.json").read_text())
        except (OSError, ValueError):
            continue
        by_model[r["model"]].append(payload if isinstance(payload, dict) else {})
    rows = []
    for model, payloads in sorted(by_model.items()):
        whole = [p for p in payloads if not p.get("resumed_from")]
        walls = [p["wall_seconds"] for p in whole if is_finite(p.get("wall_seconds"))]
        ran_on = [p["machine"] for p in whole if isinstance(p.get("machine"), dict)]
        cpu = [m["cpu_seconds"] for m in ran_on if is_finite(m.get("cpu_seconds"))]
        rows.append({"model": model, "runs": len(payloads),
                     "resumed": len(payloads) - len(whole),
                     "wall_minutes": float(np.mean(walls)) / 60 if walls else None,
                     "cpu_minutes": float(np.mean(cpu)) / 60 if cpu else None,
                     "timed": len(cpu),
                     "cpus": sorted({str(m.get("cpu")) for m in ran_on if m.get("cpu")})})
    return rows


def compute_lines(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    lines = ["## Compute", "",
             "What a run cost, as the runs recorded it: wall time includes whatever shared "
             "the cores (two runs side by side on two cores take about twice as long each); "
             "CPU time is the run's own work (recorded by runs since 2026-11-27). Runs "
             "resumed from a checkpoint timed only their last part and are left out of the "
             "means.", "",
             "| model | runs (resumed) | wall min / run | CPU min / run (runs timed) | CPU |",
             "|---|---|---|---|---|"]
    for r in rows:
        cpu = ("not recorded" if r["cpu_minutes"] is None
               else f"{r['cpu_minutes']:.1f} ({r['timed']})")
        wall = "—" if r["wall_minutes"] is None else f"{r['wall_minutes']:.1f}"
        lines.append(f"| {r['model']} | {r['runs']} ({r['resumed']}) | {wall} | {cpu} | "
                     f"{', '.join(r['cpus']) or 'not recorded'} |")
    return lines + [""]


def drop_lines(drops: list[dict]) -> list[str]:
    """The report's table of every drop (original → variant) of `drop_rows`: drop,
    Welch's p, BH-adjusted p, 95 % CI and seeds a side."""
    lines = ["## Drops (original → variant)", "",
             "Drop = how much worse the variant is, in the metric's units: mean(original) − "
             "mean(variant) for every metric (all higher-is-better) but "
             f"{', '.join(LOWER_IS_BETTER)} (lower-is-better: mean(variant) − "
             "mean(original)); positive = worse on the variant. p from Welch's t-test "
             "(two-sided); "
             "p (BH): Benjamini-Hochberg adjusted over all drops of the same metric in this "
             "report (read it when scanning many rows); 95 % CI: Welch–Satterthwaite t "
             f"interval (a percentile bootstrap only with ≥ {stats.BOOTSTRAP_MIN_N} runs a "
             "side, marked; below that it under-covers, see benchmark/statistics/stats.py); "
             "n/a with fewer than 2 runs on a side.", "",
             "| model | dataset | variant | setting | metric | drop | p (Welch) | p (BH) | "
             "95 % CI | seeds |", "|---|---|---|---|---|---|---|---|---|---|"]
    for d in drops:
        ci = ("n/a" if d["ci_low"] is None else f"[{d['ci_low']:.3f}, {d['ci_high']:.3f}]"
              + (" (bootstrap)" if d["ci_method"] == "bootstrap" else ""))
        lines.append(f"| {d['model']} | {d['dataset']} | {d['variant']} | {d['setting']} | "
                     f"{d['metric']} | {d['drop']:.3f} | {_p(d['p_welch'])} | "
                     f"{_p(d['p_bh'])} | {ci} | "
                     f"{d['n_original']} / {d['n_other']} |")
    return lines + [""]


def _span(values) -> str:
    values = sorted({int(v) for v in values if not is_missing(v)})
    if not values:
        return "?"
    return f"{values[0]:,}" if len(values) == 1 else f"{values[0]:,}-{values[-1]:,}"


def scale_line(table: pd.DataFrame, groups: dict, excluded: dict | None = None) -> str:
    """The study's scale in one line: training steps and batch size per run, seeds per
    group, over-pruned runs included (a CPU-scale study reads differently from the
    papers' 300k steps). groups: {key: kept runs}; excluded: {key: over-pruned count}."""
    batch = table.get(results_lib.CONFIG + "run.batch_size", pd.Series(dtype=object))
    batch_text = _span(batch) if batch.notna().any() else "64 (default)"
    excluded = excluded or {}
    seeds = [len(groups.get(key, [])) + excluded.get(key, 0)
             for key in set(groups) | set(excluded)]
    return (f"**Scale:** {_span(table['steps'])} training steps per run at batch "
            f"{batch_text}; {_span(seeds)} seed{'' if _span(seeds) == '1' else 's'} per "
            "group (model × dataset × variant × "
            "setting).")


def metric_settings_section(records: list[dict]) -> list[str]:
    """The report's metric-settings table; a ReportError when one column would mix scores
    computed with different settings (benchmark/metrics/settings.py; legacy results
    without recorded settings are counted, never refused)."""
    from benchmark.metrics import settings as metric_settings
    try:
        return metric_settings.report_section(
            [r["run_dir"] for r in records if not r["overpruned"]], METRICS)
    except metric_settings.SettingsMismatch as error:
        raise ReportError(f"{error}") from None
