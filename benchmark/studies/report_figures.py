"""The study report's figures (benchmark/studies/report.py), on matplotlib's Figure (no
pyplot): drop bar charts, line-search curves, metric-vs-eps robustness curves of swept
variants, and the traversals and sample grids it copies next to them.
"""

from __future__ import annotations

import pathlib
import shutil
from collections import defaultdict

import numpy as np

from benchmark.core.arm_label import ArmLabel, base_of
from benchmark.core.atomic import atomic_path
from benchmark.studies.report_data import LOWER_IS_BETTER, default_eps, variant_rank


def _figure(figsize):
    """(figure, axes) on matplotlib's Figure, no pyplot: the caller's backend is kept."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=figsize)
    return fig, fig.subplots()


def save(fig, path: pathlib.Path) -> None:
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
    variants = sorted({d["variant"] for d in rows}, key=variant_rank)
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
    save(fig, path)
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
    save(fig, path)
    return True


def setting_value(row):
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


def extreme_runs(records: list[dict], figures: pathlib.Path) -> list[str]:
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


def sample_grids(results_dir: pathlib.Path, out: pathlib.Path, figures: pathlib.Path
                 ) -> list[str]:
    lines = []
    for grid in sorted((results_dir / "samples").glob("*.png")):
        shutil.copyfile(grid, figures / f"samples_{grid.name}")
        lines.append(f"![{grid.stem}](figures/samples_{grid.name})")
    return lines
