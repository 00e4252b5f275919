"""python -m benchmark.report --results=results/STUDY [--out=DIR]

Aggregates the finished runs of a study (every results.json under --results; a run
directory without one is unfinished and never reported) into DIR (default
<results>/report):
    report.md                 tables in the layout of paper 002 Table 1, drops, figures,
                              the metric settings of every column (one setting per column)
    runs.csv                  the tidy per-run table (benchmark/runs/results.py: identity,
                              hyperparameters, namespaced scores) of the reported runs, with
                              each run's table label, setting and over-pruning exclusion
    metrics.csv, metrics.tex  mean +- std over seeds per model x dataset x variant x setting
    drops.csv, drops.tex      original -> each other variant, per model and metric: the drop
                              of the mean, Welch's t-test p-value (two-sided, BH-adjusted per
                              metric, and one-sided for a drop), a 95 % CI of the drop (Welch
                              t interval; percentile bootstrap only from 20 runs a side, see
                              benchmark/statistics/stats.py), and the seeds on each side
    overpruning.csv           runs, over-pruned runs and rate per model x dataset x variant,
                              Fisher's exact p against the same model's original data
    hypotheses.csv            the study's pre-registered hypotheses and their outcomes
                              (when its study.json declares any; benchmark/statistics/hypotheses.py)
    mechanism.csv             per model x arm: MIG, DCI-D, DCI-I and the codes'
                              misalignment with 95 % t intervals, and its change from
                              original (when the study's battery names a plane;
                              benchmark/studies/mechanism.py)
    figures/                  drop bar charts, line-search curves (paper 002 Fig. 5),
                              metric-vs-eps robustness curves, traversals of the best and
                              worst run by MIG, variant sample grids (written by the study)
report.md opens with the pre-registered hypotheses (test, alpha, margin, outcome), then
the MIG headline, the power of its drops (seeds per arm needed at the observed spread) and
the over-pruning table. Runs flagged over-pruned (fewer active dims than factors, paper 002
sec. 5.3) are excluded from every other table and counted. The report reads result files
only; it imports no model.
"""

from __future__ import annotations

import csv
import io
import json
import math
import pathlib
import shutil
from collections import defaultdict

import numpy as np
import pandas as pd
from absl import app, flags

from benchmark.core.arm_label import ArmLabel, base_of
from benchmark.core.atomic import atomic_path
from benchmark.core.errors import UserError, cli_main
from benchmark.data import change
from benchmark.runs import results as results_lib
from benchmark.statistics import hypotheses as hypotheses_lib
from benchmark.statistics import stats
from benchmark.statistics.stats import drop_test
from benchmark.studies import mechanism
from perturbations.artefact import artefact_warnings

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command, so that
    importing this module next to another command's flags never clashes)."""
    flags.DEFINE_string("results", None, "Study directory (searched for results.json files).")
    flags.DEFINE_string("out", None, "Report directory (default: <results>/report).")

#: (column name, metric group, score key), in the order the tables show them
METRICS = [("MIG", "mig", "mig"), ("DCI-D", "dci", "dci_disentanglement"),
           ("DCI-C", "dci", "dci_completeness"), ("DCI-I", "dci", "dci_informativeness_test"),
           ("FactorVAE", "factor_vae_score", "factor_vae_score"), ("SAP", "sap", "sap"),
           ("InfoM", "infomec", "infom"), ("InfoE", "infomec", "infoe"),
           ("InfoC", "infomec", "infoc"), ("PSNR", "health", "psnr"),
           ("Recon.", "health", "reconstruction_loss")]
#: columns where lower is better; every other column is higher-is-better. A drop always
#: reads "how much worse on the variant": original − variant, or variant − original here.
LOWER_IS_BETTER = ("Recon.",)
#: power the report's planning numbers aim for (one-sided Welch at stats.ALPHA)
TARGET_POWER = 0.8


class ReportError(UserError, ValueError):
    """Results that cannot be reported; the message names the file and what was wrong."""


def load_runs(results_dir) -> list[dict]:
    """One record per finished run: model, dataset, variant (with eps), setting, seed,
    overpruned, {column: value}, run_dir, read through the tidy table of
    benchmark/runs/results.py (results.json of schema version 1 or 2). The study's line-searched
    parameter, when study.json names one, becomes the record's `setting` ('beta=8.0': the
    run's hyperparameter as gin writes it; '?' where the run does not bind it)."""
    return _load(results_dir)[0]


def _load(results_dir):
    """(records kept by `deduplicate`, their rows of the tidy table, in the same order)."""
    results_dir = pathlib.Path(results_dir)
    if not results_dir.is_dir():
        raise ReportError(f"--results: expected a directory, found {results_dir}")
    line_search = read_study(results_dir).get("settings", {}).get("line_search", {})
    try:
        table = results_lib.load(results_dir)
    except results_lib.ResultsError as error:
        raise ReportError(str(error)) from None
    records = []
    for row in table.to_dict("records"):
        variant = row["variant"]
        if variant != "original" and not math.isnan(row["eps"]):
            variant = f"{variant}@{row['eps']:g}"
        setting = ""
        if row["model"] in line_search:
            param = line_search[row["model"]][0]
            value = row.get(results_lib.CONFIG + param)
            shown = "?" if _missing(value) else results_lib.gin_text(value)
            setting = f"{param.split('.')[-1]}={shown}"
        values = {column: float(row[key]) for column, key in _score_columns()
                  if _finite(row.get(key))}
        overpruned = row.get("health/overpruned")
        records.append({"model": row["model"], "dataset": row["dataset"], "variant": variant,
                        "setting": setting, "seed": row["seed"],
                        "overpruned": False if _missing(overpruned) else bool(overpruned),
                        "health_known": not _missing(overpruned),
                        "values": values, "run_dir": row["run_dir"]})
    kept = {id(r) for r in separate_configurations(deduplicate(records))}
    rows = [i for i, r in enumerate(records) if id(r) in kept]
    return [records[i] for i in rows], table.iloc[rows].reset_index(drop=True)


def _score_columns() -> list[tuple[str, str]]:
    """(report column, namespaced key of the tidy table) of every METRICS column."""
    return [(column, results_lib.metric_key(group, key)) for column, group, key in METRICS]


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _finite(value) -> bool:
    return (isinstance(value, (int, float, np.integer, np.floating))
            and not isinstance(value, (bool, np.bool_)) and math.isfinite(value))


def read_study(results_dir) -> dict:
    """The study.json of a study directory ({} when there is none)."""
    path = pathlib.Path(results_dir) / "study.json"
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ReportError(f"{path}: expected the study's JSON, found unreadable content "
                          f"({error})") from None


def deduplicate(records: list[dict]) -> list[dict]:
    """One record per (configuration fingerprint, seed), the first in path order: a copied
    run directory is the same run, not another seed (benchmark/runs/fingerprint.py; runs from
    before fingerprints are identified by their results.json gin_config; a results.json
    without any gin binding is never merged). Each dropped copy is logged as a warning
    naming both directories."""
    from absl import logging

    from benchmark.runs import fingerprint
    kept, first = [], {}
    for record in records:
        try:
            ident = fingerprint.recorded(record["run_dir"])
        except ValueError:
            ident = None
        identified = ident is not None and ident["bindings"]    # hand-written: no config
        key = (ident["fingerprint"] if identified else record["run_dir"], record["seed"],
               record["model"], record["dataset"], record["variant"], record["setting"])
        if key in first:
            logging.warning("report: %s is the same run as %s (configuration fingerprint "
                            "%s, seed %s); counted once", record["run_dir"], first[key],
                            str(key[0])[:12], record["seed"])
            continue
        first[key] = record["run_dir"]
        kept.append(record)
    return kept


def _binding_text(value) -> str:
    """A canonical binding value (benchmark/runs/fingerprint.py: JSON text) as a label shows it."""
    if value is None:
        return "unset"
    try:
        decoded = json.loads(value)
    except (TypeError, ValueError):
        return str(value)
    if isinstance(decoded, str):
        return decoded
    if isinstance(decoded, dict) and list(decoded) == ["dict"]:     # gin dict, canonical
        return "{" + ",".join(f"{k}:{_binding_text(json.dumps(v))}"
                              for k, v in decoded["dict"]) + "}"
    return json.dumps(decoded, separators=(",", ":"))


def separate_configurations(records: list[dict]) -> list[dict]:
    """`records` with the runs of one group (model, dataset, variant, setting) that differ
    in any binding other than the seed made separate groups: their `setting` gains the
    differing bindings ('run.steps=300'), so a 100-step and a 300-step run of seed 0 are
    two groups of one seed, never one of "2 seeds". Each split is logged as a warning
    naming the bindings. A run without a readable configuration stays in its group."""
    from absl import logging

    from benchmark.runs import fingerprint
    groups = defaultdict(list)
    for record in records:
        groups[(record["model"], record["dataset"], record["variant"],
                record["setting"])].append(record)
    for (model, dataset, variant, _), members in groups.items():
        configs = []
        for record in members:
            try:
                ident = fingerprint.recorded(record["run_dir"])
            except ValueError:
                ident = None
            bindings = dict(ident["bindings"]) if ident else {}
            bindings.pop("run.seed", None)
            configs.append(bindings if ident else None)
        known = [c for c in configs if c is not None]
        differing = sorted(key for key in set().union(*known, set())
                           if len({c.get(key) for c in known}) > 1)
        if not differing:
            continue
        for record, bindings in zip(members, configs):
            if bindings is None:
                continue
            label = ", ".join(f"{key}={_binding_text(bindings.get(key))}" for key in differing)
            record["setting"] = ", ".join(filter(None, [record["setting"], label]))
        logging.warning("report: runs of %s / %s / %s differ in bindings other than the "
                        "seed (%s); reported as separate groups, labelled by those bindings",
                        model, dataset, variant, ", ".join(differing))
    return records


#: arms whose default strength is the oracle control's (benchmark/data/oracle.py)
ORACLE_ARMS = ("oracle", "texture", "wave", "wave_texture")


def default_eps(base: str, dataset: str) -> float | None:
    """The strength a variant has when none is given: paper 002's per dataset, or the
    oracle control's (benchmark/data/oracle.py) for its arms."""
    from benchmark.data.oracle import ORACLE_EPS
    from benchmark.data.variants import DEFAULT_EPS
    return ORACLE_EPS if base in ORACLE_ARMS else DEFAULT_EPS.get(dataset)


def nominal(records: list[dict]) -> dict[str, str]:
    """The variant label of each dataset's default strength: 'modified@0.1' -> 'modified'
    when it is the only or the paper's strength, so the tables read like Table 1
    ({(dataset, variant): label} of the relabelled ones, `variant_label`)."""
    labels = {}
    for r in records:
        shown = variant_label(r["variant"], r["dataset"])
        if shown != r["variant"]:
            labels[(r["dataset"], r["variant"])] = shown
    return labels


def variant_label(variant: str, dataset: str) -> str:
    """The label of a variant: its base name at its default strength (`default_eps`:
    'modified@0.1' on dSprites -> 'modified', 'wave@0.3' -> 'wave'), else base@eps with eps
    as :g writes it ('wave@0.30' -> 'wave@0.3'); a variant without '@eps' unchanged."""
    arm = ArmLabel.parse(variant)
    if not arm.strength:
        return variant
    return arm.base if float(f"{arm.eps:g}") == default_eps(arm.base, dataset) else arm.shown()


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


#: the columns a report groups runs by
KEY = ["model", "dataset", "variant", "setting"]


def group(records: list[dict]) -> tuple[dict, dict]:
    """({(model, dataset, variant, setting): [records kept]}, {same key: excluded count});
    variants at their dataset's default strength under their `nominal` label."""
    labels = nominal(records)
    runs = [{**r, "variant": labels.get((r["dataset"], r["variant"]), r["variant"])}
            for r in records]
    if not runs:
        return {}, {}
    table = pd.DataFrame(runs, columns=[*KEY, "overpruned"])
    pruned = table["overpruned"].astype(bool)
    kept = {key: [runs[i] for i in index]
            for key, index in table[~pruned].groupby(KEY).groups.items()}
    excluded = {key: int(n) for key, n in table[pruned].groupby(KEY).size().items()}
    return kept, excluded


def _mean(values: pd.Series) -> float:
    values = values.dropna().to_numpy(dtype=float)
    return float(np.mean(values)) if len(values) else math.nan


def _std(values: pd.Series) -> float:
    """Sample std (ddof 1), 0 for one value."""
    values = values.dropna().to_numpy(dtype=float)
    return (float(np.std(values, ddof=1)) if len(values) > 1 else 0.0 if len(values)
            else math.nan)


def summary_rows(groups: dict, excluded: dict) -> list[dict]:
    """Mean and sample std (ddof 1; 0 for one seed) of every column per group (a column
    without a value in the group is left out of its row)."""
    kept = pd.DataFrame([{**{k: r[k] for k in KEY}, **r["values"]}
                         for runs in groups.values() for r in runs],
                        columns=KEY + [c for c, _, _ in METRICS])
    statistics = {}
    if len(kept):
        statistics = kept.groupby(KEY).agg(**{
            f"{column} {name}": (column, fn) for column, _, _ in METRICS
            for name, fn in (("mean", _mean), ("std", _std))}).to_dict("index")
    rows = []
    for key in sorted(set(groups) | set(excluded)):
        row = {"model": key[0], "dataset": key[1], "variant": key[2], "setting": key[3],
               "seeds": len(groups.get(key, [])), "excluded_overpruned": excluded.get(key, 0)}
        row.update({k: v for k, v in statistics.get(key, {}).items() if not math.isnan(v)})
        rows.append(row)
    return rows


def runs_table(records: list[dict], table: pd.DataFrame) -> pd.DataFrame:
    """The tidy table of the reported runs (benchmark/runs/results.py; `table`, one row per
    record) with the report's view of each: 'report/variant' (the label of its tables),
    'report/setting' (its line-search setting) and 'report/excluded' (over-pruned, left
    out of the tables)."""
    labels = nominal(records)
    out = table.copy()
    position = list(out.columns).index("run_dir") + 1
    for offset, (name, values) in enumerate([
            ("report/variant", [labels.get((r["dataset"], r["variant"]), r["variant"])
                                for r in records]),
            ("report/setting", [r["setting"] for r in records]),
            ("report/excluded", [r["overpruned"] for r in records])]):
        out.insert(position + offset, name, values)
    return out


def drop_rows(groups: dict) -> list[dict]:
    """Original -> every other variant of the same model, dataset and setting; the drop is
    signed so that positive means worse on the variant for every column (LOWER_IS_BETTER
    columns are negated before the test)."""
    rows = []
    for (model, dataset, variant, setting), runs in sorted(groups.items()):
        if variant == "original":
            continue
        originals = groups.get((model, dataset, "original", setting))
        if not originals:
            continue
        for column, _, _ in METRICS:
            sign = -1.0 if column in LOWER_IS_BETTER else 1.0
            a = [sign * r["values"][column] for r in originals if column in r["values"]]
            b = [sign * r["values"][column] for r in runs if column in r["values"]]
            if a and b:
                rows.append({"model": model, "dataset": dataset, "variant": variant,
                             "setting": setting, "metric": column, **drop_test(a, b)})
    _adjust_per_metric(rows)
    return rows


def _adjust_per_metric(rows: list[dict]) -> None:
    """Adds 'p_bh': Benjamini-Hochberg adjusted p over every tested drop of the same metric
    (all models, datasets, variants, settings), since a report tests many drops at once."""
    for column, _, _ in METRICS:
        family = [r for r in rows if r["metric"] == column]
        for r, p in zip(family, stats.adjust([r["p_welch"] for r in family], "bh")):
            r["p_bh"] = p


def _fmt(value, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _p(value) -> str:
    return "n/a" if value is None else (f"{value:.3f}" if value >= 0.001 else f"{value:.1e}")


def _variant_rank(variant: str) -> tuple:
    """Sort key: original, modified, noisy, then strengths ('modified@0.3') by name."""
    return {"original": 0, "modified": 1, "noisy": 2}.get(variant, 3), variant


def table1(rows: list[dict], column: str) -> str:
    """Markdown: models x (dataset, variant), cells mean +- std (seeds), paper 002 Table 1."""
    cells = [(r["dataset"], r["variant"]) for r in rows]
    columns = sorted(set(cells), key=lambda c: (c[0], *_variant_rank(c[1])))
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


def _figure(figsize):
    """(figure, axes) on matplotlib's Figure, no pyplot: the caller's backend is kept."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=figsize)
    return fig, fig.subplots()


def _save(fig, path: pathlib.Path) -> None:
    with atomic_path(path, ".png") as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")


def sweeps(records: list[dict]) -> set[tuple[str, str, str]]:
    """(model, dataset, base variant) that were run at two or more strengths eps (an eps
    sweep, drawn as a curve; a single strength is a bar of the drop chart)."""
    strengths = defaultdict(set)
    for r in records:
        arm = ArmLabel.parse(r["variant"])
        if arm.base != "original":
            strengths[(r["model"], r["dataset"], arm.base)].add(
                arm.eps if arm.strength else default_eps(arm.base, r["dataset"]))
    return {key for key, values in strengths.items() if len(values) > 1}


def variant_eps(variant: str, dataset: str) -> float | None:
    """The strength eps of a variant label ('noisy@0.2' -> 0.2; 'noisy' -> the default)."""
    arm = ArmLabel.parse(variant)
    return arm.eps if arm.strength else default_eps(arm.base, dataset)


def drop_figure(drops: list[dict], column: str, path: pathlib.Path,
                swept: set = frozenset()) -> bool:
    """Bar chart of the drop of `column` per model and variant, with 95 % CIs: each variant
    at its default strength, and at its one strength where it was not swept (the other
    strengths of a swept variant, `sweeps`, are its curve), eps in the legend; positive =
    worse on the variant (LOWER_IS_BETTER sign rule)."""
    rows = [d for d in drops if d["metric"] == column
            and ("@" not in d["variant"]
                 or (d["model"], d["dataset"], base_of(d["variant"])) not in swept)]
    if not rows:
        return False
    labels = sorted({(d["dataset"], d["model"], d["setting"]) for d in rows})
    variants = sorted({d["variant"] for d in rows}, key=_variant_rank)
    fig, ax = _figure((max(5, 1.1 * len(labels)), 3.5))
    width = 0.8 / len(variants)
    for i, variant in enumerate(variants):
        xs, ys, err = [], [], [[], []]
        for j, label in enumerate(labels):
            match = [d for d in rows if (d["dataset"], d["model"], d["setting"]) == label
                     and d["variant"] == variant]
            if match:
                d = match[0]
                xs.append(j + i * width)
                ys.append(d["drop"])
                # no error bar (not a zero-width one) where a side has < 2 runs
                low = d["drop"] - d["ci_low"] if d["ci_low"] is not None else np.nan
                high = d["ci_high"] - d["drop"] if d["ci_high"] is not None else np.nan
                err[0].append(low)
                err[1].append(high)
        strengths = sorted({f"{d['dataset']} {variant_eps(variant, d['dataset']):g}"
                            for d in rows if d["variant"] == variant
                            and variant_eps(variant, d["dataset"]) is not None})
        shown = f" (ε: {', '.join(strengths)})" if strengths else ""
        ax.bar(xs, ys, width, yerr=err, capsize=3,
               label=f"original → {base_of(variant)}{shown}")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(labels))],
                  [f"{m}\n{d}" + (f"\n{s}" if s else "") for d, m, s in labels], fontsize=8)
    worse = ("variant − original" if column in LOWER_IS_BETTER
             else "original − variant")
    any_interval = any(d["ci_low"] is not None for d in rows)
    ax.set_ylabel(f"drop of {column}\n({worse}; mean"
                  + (", 95% CI where both sides have 2+ runs)" if any_interval
                     else "; one run a side: no interval)"), fontsize=8)
    ax.legend(fontsize=7)
    _save(fig, path)
    return True


def curve_figure(rows: list[dict], column: str, x_of, xlabel: str, path: pathlib.Path
                 ) -> bool:
    """Mean +- std of `column` against x_of(row) -> [(x, series), ...] (empty: the row is on
    no curve), one line per (model, dataset, series)."""
    points = defaultdict(list)
    for r in rows:
        if f"{column} mean" not in r:
            continue
        for x, series in x_of(r):
            points[(r["model"], r["dataset"], series)].append(
                (x, r[f"{column} mean"], r[f"{column} std"]))
    points = {k: sorted(v) for k, v in points.items() if len(v) > 1}
    if not points:
        return False
    fig, ax = _figure((5.5, 3.5))
    for (model, dataset, series), pts in sorted(points.items()):
        xs, ys, sd = zip(*pts)
        ax.errorbar(xs, ys, yerr=sd, marker="o", capsize=3,
                    label=f"{model} {dataset} {series}".strip())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(column)
    ax.legend(fontsize=7)
    _save(fig, path)
    return True


def _setting_value(row):
    if not row["setting"]:
        return []
    try:
        return [(float(row["setting"].split("=", 1)[1]), row["variant"])]
    except ValueError:
        return []


def eps_points(swept: set):
    """x_of for `curve_figure`: a row's (eps, base variant) on the curve of a swept variant
    (`sweeps`); original data sits at eps 0 of each of its model's swept curves; rows of
    unswept variants are on no curve (the drop chart shows them)."""
    def points(row):
        if row["setting"]:
            return []
        base = base_of(row["variant"])
        if base == "original":
            return [(0.0, b) for m, d, b in sorted(swept)
                    if (m, d) == (row["model"], row["dataset"])]
        if (row["model"], row["dataset"], base) not in swept:
            return []
        eps = variant_eps(row["variant"], row["dataset"])
        return [(float("nan") if eps is None else eps, base)]
    return points


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
    others = sorted({v for _, _, v in by_key if v != "original"}, key=_variant_rank)
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
                  key=lambda k: (k[0], k[1], k[3], *_variant_rank(k[2])))
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


def overpruning_lines(rows: list[dict]) -> list[str]:
    """Markdown section of `overpruning_rows` (one sentence when no run is over-pruned)."""
    if not any(r["overpruned"] for r in rows):
        return ["## Over-pruning", "", "No run is over-pruned (fewer active dims than "
                "factors, paper 002 sec. 5.3).", ""]
    lines = ["## Over-pruning", "",
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
    kept runs of `groups` (benchmark/statistics/hypotheses.py); [] when it declares none."""
    declared = study.get("settings", {}).get("hypotheses") or []
    if not declared:
        return []
    try:
        declared = hypotheses_lib.normalise(declared)
    except ValueError as error:
        raise ReportError(f"study.json: {error}") from None

    def values(model, dataset, variant, setting, metric):
        variant = variant_label(variant, dataset)    # the label `group` gives ('noisy@0.1')
        key = (model, dataset, variant, setting)
        if key not in groups:
            # A hypothesis names a variant by its base ('wave'); a study that ran it at one
            # strength other than the default holds it as 'wave@0.3'.
            strengths = [k for k in groups if k[:2] == (model, dataset) and k[3] == setting
                         and base_of(k[2]) == variant]
            if len(strengths) == 1:
                key = strengths[0]
        return [r["values"][metric] for r in groups.get(key, []) if metric in r["values"]]
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
             + (", or the difference of two methods' means (greater: model − versus model)"
                if any(row["test"] == "greater" for row in rows) else "")
             + ", with its (1 − 2α) Welch t interval (90 % at α 0.05: each test is "
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
    return lines + [""]


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
    labels = sorted({key[2] for key in groups}, key=_variant_rank)
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
        walls = [p["wall_seconds"] for p in whole if _finite(p.get("wall_seconds"))]
        ran_on = [p["machine"] for p in whole if isinstance(p.get("machine"), dict)]
        cpu = [m["cpu_seconds"] for m in ran_on if _finite(m.get("cpu_seconds"))]
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


def write_report(results_dir, out=None) -> pathlib.Path:
    """Writes the report of a study directory; returns the report.md path."""
    results_dir = pathlib.Path(results_dir)
    out = pathlib.Path(out) if out else results_dir / "report"
    records, table = _load(results_dir)
    if not records:
        raise ReportError(f"{results_dir}: no finished run (results.json) found")
    settings_lines = _metric_settings_section(records)
    groups, excluded = group(records)
    summary = summary_rows(groups, excluded)
    drops = drop_rows(groups)
    pruning = overpruning_rows(groups, excluded)
    study = read_study(results_dir)
    hypotheses = hypothesis_rows(study, groups)
    figures = out / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    results_lib.write_csv(runs_table(records, table), out / "runs.csv")
    write_csv(out / "metrics.csv", summary)
    write_csv(out / "drops.csv", drops or [{"note": "no original/other pair of groups"}])
    write_csv(out / "overpruning.csv", pruning)
    if hypotheses:
        write_csv(out / "hypotheses.csv", hypotheses)
    turns = mechanism_rows(results_dir, records, study)
    if turns:
        write_csv(out / "mechanism.csv", mechanism.csv_rows(turns))
    sizes, unmeasured = arm_size_rows(results_dir, study)
    if sizes:
        write_csv(out / "arm_sizes.csv", sizes)
    metric_columns = [c for c, _, _ in METRICS if any(f"{c} mean" in r for r in summary)]
    write_latex(out / "metrics.tex", summary, ["model", "dataset", "variant", "setting",
                                               "seeds"] + [f"{c} mean" for c in metric_columns])
    write_latex(out / "drops.tex", drops, ["model", "dataset", "variant", "setting", "metric",
                                           "drop", "p_welch", "p_bh", "ci_low", "ci_high",
                                           "ci_method", "n_original", "n_other"])
    swept = sweeps(records)
    scope = study.get("settings", {}).get("scope")
    lines = [f"# Report: {results_dir}", "",
             *([f"**What this study can show:** {scope}", ""] if isinstance(scope, str)
               and scope else []),
             scale_line(table, groups, excluded), "",
             f"{len(records)} finished runs; {sum(excluded.values())} excluded as over-pruned "
             "(fewer dims with E[σ²] < 0.8 than factors, paper 002 sec. 5.3). Cells are "
             "mean ± std over seeds (number of seeds; no std for one seed). "
             + label_note(records), ""]
    lines += artefact_warning_lines(records, table, study)
    lines += arm_size_lines(sizes, unmeasured)
    lines += hypothesis_lines(hypotheses, study)
    if "MIG" in metric_columns:
        lines += headline(summary, drops, "MIG") + power_lines(power_rows(drops, "MIG"))
    lines += overpruning_lines(pruning)
    lines += mechanism_lines(turns, ((study.get("settings") or {}).get("battery") or {}).get(
        "plane"))
    for column in metric_columns:
        lines += [f"## {column}", "", table1(summary, column), ""]
    lines += settings_lines
    lines += ["## Drops (original → variant)", "",
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
    lines += [""] + compute_lines(compute_rows(records))
    lines += ["## Figures", ""]
    for column in metric_columns:
        name = column.replace(".", "").replace("-", "_").lower()
        if drop_figure(drops, column, figures / f"drops_{name}.png", swept):
            lines.append(f"![drops of {column}](figures/drops_{name}.png)")
        if curve_figure(summary, column, _setting_value, "primary hyperparameter",
                        figures / f"line_search_{name}.png"):
            lines.append(f"![line search, {column}](figures/line_search_{name}.png)")
        if curve_figure(summary, column, eps_points(swept), "perturbation strength eps",
                        figures / f"robustness_{name}.png"):
            lines.append(f"![robustness, {column}](figures/robustness_{name}.png)")
    lines += _extreme_runs(records, figures) + _sample_grids(results_dir, out, figures)
    report = out / "report.md"
    with atomic_path(report, ".md") as tmp:
        tmp.write_text("\n".join(lines) + "\n")
    return report


def _span(values) -> str:
    values = sorted({int(v) for v in values if not _missing(v)})
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


def _metric_settings_section(records: list[dict]) -> list[str]:
    """The report's metric-settings table; a ReportError when one column would mix scores
    computed with different settings (benchmark/metrics/settings.py; legacy results
    without recorded settings are counted, never refused)."""
    from benchmark.metrics import settings as metric_settings
    try:
        return metric_settings.report_section(
            [r["run_dir"] for r in records if not r["overpruned"]], METRICS)
    except metric_settings.SettingsMismatch as error:
        raise ReportError(f"{error}") from None


def _extreme_runs(records: list[dict], figures: pathlib.Path) -> list[str]:
    """Traversals of the best and worst kept run by MIG (those that wrote traversals)."""
    ranked = sorted((r for r in records if not r["overpruned"] and "MIG" in r["values"]
                     and (pathlib.Path(r["run_dir"]) / "traversals.png").is_file()),
                    key=lambda r: r["values"]["MIG"])
    lines = []
    for which, r in (("worst", ranked[0] if ranked else None),
                     ("best", ranked[-1] if ranked else None)):
        if r is None:
            continue
        shutil.copyfile(pathlib.Path(r["run_dir"]) / "traversals.png",
                        figures / f"traversals_{which}.png")
        lines.append(f"{which.capitalize()} run by MIG: `{pathlib.Path(r['run_dir']).name}` "
                     f"(MIG {r['values']['MIG']:.3f})\n\n"
                     f"![{which} traversals](figures/traversals_{which}.png)\n")
    return lines


def _sample_grids(results_dir: pathlib.Path, out: pathlib.Path, figures: pathlib.Path
                  ) -> list[str]:
    lines = []
    for grid in sorted((results_dir / "samples").glob("*.png")):
        shutil.copyfile(grid, figures / f"samples_{grid.name}")
        lines.append(f"![{grid.stem}](figures/samples_{grid.name})")
    return lines


@cli_main                       # ReportError: one line, exit 2
def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    if not FLAGS.results:
        raise app.UsageError("--results is required")
    path = write_report(FLAGS.results, FLAGS.out)
    print(path)

