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

import pathlib
import re

from absl import app, flags

from benchmark.core.atomic import atomic_path
from benchmark.core.errors import cli_main
from benchmark.runs import results as results_lib
from benchmark.studies import mechanism
from benchmark.studies.report_data import (METRICS, ReportError, drop_rows, group,
                                           load_with_table, read_study, runs_table,
                                           summary_rows)
from benchmark.studies.report_figures import (curve_figure, drop_figure, eps_points,
                                              extreme_runs, sample_grids, setting_value, sweeps)
from benchmark.studies.report_sections import (arm_size_lines, arm_size_rows,
                                               artefact_warning_lines, compute_lines,
                                               compute_rows, drop_lines, headline,
                                               hypothesis_lines, hypothesis_rows, label_note,
                                               mechanism_lines, mechanism_rows,
                                               metric_settings_section, overpruning_lines,
                                               overpruning_rows, power_lines, power_rows,
                                               scale_line, table1, write_csv, write_latex)

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command, so that
    importing this module next to another command's flags never clashes)."""
    flags.DEFINE_string("results", None, "Study directory (searched for results.json files).")
    flags.DEFINE_string("out", None, "Report directory (default: <results>/report).")


def figure_name(column: str) -> str:
    """A metric column as a figure's file name: 'DCI-I readout' -> 'dci_i_readout' (no
    spaces, which would break the report's markdown links)."""
    return re.sub(r"[^0-9a-z]+", "_", column.replace(".", "").lower()).strip("_")


def write_report(results_dir, out=None) -> pathlib.Path:
    """Writes the report of a study directory; returns the report.md path."""
    results_dir = pathlib.Path(results_dir)
    out = pathlib.Path(out) if out else results_dir / "report"
    records, table = load_with_table(results_dir)
    if not records:
        raise ReportError(f"{results_dir}: no finished run (results.json) found")
    settings_lines = metric_settings_section(records)
    groups, excluded = group(records)
    summary = summary_rows(groups, excluded)
    drops = drop_rows(groups)
    pruning = overpruning_rows(groups, excluded)
    unknown_health = sum(not r.get("health_known", True) for r in records)
    study = read_study(results_dir)
    plane = ((study.get("settings") or {}).get("battery") or {}).get("plane")
    hypotheses = hypothesis_rows(study, groups if plane is None else group(
        mechanism.with_misalignment(records, plane, results_dir))[0])
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
             "(fewer dims with E[σ²] < 0.8 than factors, paper 002 sec. 5.3"
             + (f"; {unknown_health} of unknown health, codes without posterior variances: a "
                "deterministic encoder's, or codes scored from files"
                if unknown_health else "") + "). Cells are "
             "mean ± std over seeds (number of seeds; no std for one seed). "
             + label_note(records), ""]
    lines += artefact_warning_lines(records, table, study)
    lines += arm_size_lines(sizes, unmeasured)
    lines += hypothesis_lines(hypotheses, study)
    if "MIG" in metric_columns:
        lines += headline(summary, drops, "MIG") + power_lines(power_rows(drops, "MIG"))
    lines += overpruning_lines(pruning, unknown_health)
    lines += mechanism_lines(turns, ((study.get("settings") or {}).get("battery") or {}).get(
        "plane"))
    for column in metric_columns:
        lines += [f"## {column}", "", table1(summary, column), ""]
    lines += settings_lines
    lines += drop_lines(drops)
    lines += compute_lines(compute_rows(records))
    lines += ["## Figures", ""]
    for column in metric_columns:
        name = figure_name(column)
        if drop_figure(drops, column, figures / f"drops_{name}.png", swept):
            lines.append(f"![drops of {column}](figures/drops_{name}.png)")
        if curve_figure(summary, column, setting_value, "primary hyperparameter",
                        figures / f"line_search_{name}.png"):
            lines.append(f"![line search, {column}](figures/line_search_{name}.png)")
        if curve_figure(summary, column, eps_points(swept), "perturbation strength eps",
                        figures / f"robustness_{name}.png"):
            lines.append(f"![robustness, {column}](figures/robustness_{name}.png)")
    lines += extreme_runs(records, figures) + sample_grids(results_dir, out, figures)
    report = out / "report.md"
    with atomic_path(report, ".md") as tmp:
        tmp.write_text("\n".join(lines) + "\n")
    return report


@cli_main                       # ReportError: one line, exit 2
def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    if not FLAGS.results:
        raise app.UsageError("--results is required")
    path = write_report(FLAGS.results, FLAGS.out)
    print(path)
