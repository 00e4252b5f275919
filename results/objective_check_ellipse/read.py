"""The objective check's reading, by the rules of DESIGN.md (its amendment of 2026-11-27).

    python results/objective_check_ellipse/read.py [readaptation_seeds.json]

Reads `readaptation_seeds.json` (or, while seeds are still running, the finished seeds of
`readaptation_seeds.json.partial.json`, marked as partial) and writes `reading.json`
beside it with, per finished seed and across them:
- each arm's size (eps, energy per image, mean |dx|, L-infinity: `arm_eps`, `arm_change`);
- each arm's advantage, (L_ent - L_dis) on the arm minus the same on `original`, at update
  0 (the fixed reference decoders) and after the last update;
- P1's difference advantage(naive@1) - advantage(noisy@matched) after the last update:
  mean, 90 % paired t interval, one-sided p (the test `perturbations.readapt` runs), and
  the rule for "blind": the interval lies above -delta, delta = half the mean of the same
  difference at update 0;
- the paired power of the test at the observed difference and spread, and the seeds that
  power 0.8 needs (the design's second stage when P1 is not rejected).
Once every seed has finished it also writes `report.md` (the arms' sizes, P1 and P2 with
Holm from `across_seeds`, each arm's difference from noise as a share of the naive move's,
descriptive) and `advantage.png` (each arm's advantage over the updates, mean and range
over seeds).
Nothing here is a new test: P1 and P2 with Holm are `across_seeds`' numbers in the input.
"""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np

from benchmark import stats

HERE = pathlib.Path(__file__).resolve().parent
POSITIVE, CONTROL, BASE = "naive@1", "noisy@matched", "original"
ALPHA = 0.05


def load(path: pathlib.Path) -> tuple[dict, dict | None]:
    """{seed: per-seed readaptation result} of the finished seeds, and `across_seeds`
    (None while partial)."""
    if path.exists():
        stored = json.loads(path.read_text())
        return ({int(s): r for s, r in stored["runs"].items()}, stored["across_seeds"])
    partial = pathlib.Path(f"{path}.partial.json")
    if not partial.exists():
        raise SystemExit(f"expected {path} or {partial}; found neither")
    runs = json.loads(partial.read_text())["runs"]
    return {int(s): r for s, r in runs.items()}, None


def advantage(run: dict, arm: str, at: int) -> float:
    """(L_ent - L_dis) on `arm` minus on original, at evaluation index `at` (0: update 0)."""
    return float(run["arms"][arm]["gap"][at] - run["arms"][BASE]["gap"][at])


def reading(runs: dict) -> dict:
    seeds = sorted(runs)
    first = runs[seeds[0]]
    arms = [a for a in first["arms"] if a != BASE]
    out = {"seeds": seeds, "steps": first["steps"], "arms": {}}
    for arm in arms:
        out["arms"][arm] = {
            "eps": first.get("arm_eps", {}).get(arm),
            "change": first.get("arm_change", {}).get(arm),
            "advantage_update0": [advantage(runs[s], arm, 0) for s in seeds],
            "advantage_end": [advantage(runs[s], arm, -1) for s in seeds]}
    if POSITIVE in arms and CONTROL in arms:
        start = [a - b for a, b in zip(out["arms"][POSITIVE]["advantage_update0"],
                                       out["arms"][CONTROL]["advantage_update0"])]
        delta = abs(float(np.mean(start))) / 2
        p1 = {"difference_update0": start, "delta": delta}
        if len(seeds) >= 2:
            test = stats.paired(out["arms"][POSITIVE]["advantage_end"],
                                out["arms"][CONTROL]["advantage_end"], "less",
                                1 - 2 * ALPHA)
            p1.update(test=test, blind=bool(test["ci_low"] > -delta))
            effect = -test["diff"]
            if effect > 0 and test["sd"] > 0:
                p1["power_at_observed"] = stats.paired_power(effect, test["sd"], len(seeds))
                n = len(seeds)
                while n < 200 and stats.paired_power(effect, test["sd"], n) < 0.8:
                    n += 1
                p1["seeds_for_power_0.8"] = n
        out["p1"] = p1
    return out


def lines(result: dict, partial: bool) -> list[str]:
    text = [f"seeds {result['seeds']}" + (" (partial: finished seeds only)" if partial else "")]
    for arm, a in result["arms"].items():
        change = a["change"] or {}
        text.append(f"  {arm}: eps {a['eps']}, energy {change.get('energy_per_image', 0):.2f}, "
                    f"mean|dx| {change.get('mean_abs', 0):.4f}, Linf {change.get('linf', 0):.3f}; "
                    f"advantage update 0 {np.round(a['advantage_update0'], 3).tolist()}, "
                    f"end {np.round(a['advantage_end'], 3).tolist()}")
    p1 = result.get("p1")
    if p1:
        text.append(f"  naive - noise at update 0: {np.round(p1['difference_update0'], 3).tolist()}"
                    f", delta {p1['delta']:.3f}")
        if "test" in p1:
            t = p1["test"]
            text.append(f"  P1 naive - noise at the end: {t['diff']:+.3f} [{t['ci_low']:+.3f}, "
                        f"{t['ci_high']:+.3f}] (90 %), one-sided p {t['p']:.3g}; blind: {p1['blind']}")
        if "seeds_for_power_0.8" in p1:
            text.append(f"  paired power at the observed difference: {p1['power_at_observed']:.2f}; "
                        f"seeds for 0.8: {p1['seeds_for_power_0.8']}")
    return text


def report(result: dict, summary: dict) -> str:
    """report.md: the reading and `across_seeds`' tests as tables (markdown)."""
    level = f"{100 * (1 - 2 * summary.get('alpha', ALPHA)):g} %"
    n = len(result["seeds"])
    text = [f"# The objective's positive control on the ellipse: report",
            "",
            f"Written by `python results/objective_check_ellipse/read.py` from "
            f"`readaptation_seeds.json` (seeds {result['seeds']}, {result['steps']} decoder "
            "updates an arm). Design, tests and reading rules: `DESIGN.md`. Advantage = "
            "(L_ent − L_dis) on the arm minus the same on `original`, squared error summed "
            "over pixels, mean over the 1,024 images; negative = the objective rewards the "
            "arm. Sizes per image: energy = Σ (x′ − x)², mean |Δx|, L∞.",
            "",
            f"| arm | eps | energy | mean abs Δx | L∞ | advantage at update 0 (mean) | "
            f"advantage at the end, mean [{level} t CI] |",
            "|---|---|---|---|---|---|---|"]
    for arm, a in result["arms"].items():
        change, end = a["change"] or {}, summary["arms"][arm]
        eps = "—" if a["eps"] is None else f"{a['eps']:.4f}"
        text.append(f"| `{arm}` | {eps} | {change.get('energy_per_image', float('nan')):.2f} | "
                    f"{change.get('mean_abs', float('nan')):.4f} | "
                    f"{change.get('linf', float('nan')):.3f} | "
                    f"{np.mean(a['advantage_update0']):+.2f} | {end['mean']:+.2f} "
                    f"[{end['ci_low']:+.2f}, {end['ci_high']:+.2f}] |")
    naive = summary["preferred"].get(POSITIVE, {}).get(CONTROL)
    text += ["", f"Paired one-sided t-tests across the {n} seeds that the objective prefers "
             f"the arm to `{CONTROL}` (arm − control < 0), Holm within each family; the last "
             "column is the arm's difference as a share of the naive move's (descriptive, "
             "not a test).", "",
             f"| arm − {CONTROL} | family | difference [{level} CI] | p | Holm p | "
             "preferred | share of naive's |", "|---|---|---|---|---|---|---|"]
    for arm, tests in summary["preferred"].items():
        t = tests[CONTROL]
        share = f"{t['diff'] / naive['diff']:.1%}" if naive else "—"
        text.append(f"| `{arm}` | {t['family']} | {t['diff']:+.3f} [{t['ci_low']:+.3f}, "
                    f"{t['ci_high']:+.3f}] | {t['p']:.3g} | {t['p_holm']:.3g} | "
                    f"{'yes' if t['preferred'] else 'no'} | {share} |")
    p1 = result.get("p1", {})
    if "blind" in p1:
        text += ["", f"Blind rule (DESIGN.md amendment): naive − noise at update 0 has mean "
                 f"{np.mean(p1['difference_update0']):+.3f}, so δ = {p1['delta']:.3f}; the "
                 f"objective is called blind only if the {level} interval after the last "
                 f"update lies above −δ: [{p1['test']['ci_low']:+.3f}, "
                 f"{p1['test']['ci_high']:+.3f}] → blind: {'yes' if p1['blind'] else 'no'}."]
    text += ["", "Every interval is conditional on the one reference pair (the published "
             "stand-ins), the one noise realisation, the naive deltas and the waves' "
             "directions: the seeds vary only the decoders' batches and latent noise.",
             "", "![advantage over updates](advantage.png)", ""]
    return "\n".join(text)


def figure(runs: dict, target: pathlib.Path) -> None:
    """Each arm's advantage over the evaluations: mean over seeds, band min to max."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seeds = sorted(runs)
    updates = runs[seeds[0]]["evaluations"]
    fig, ax = plt.subplots(figsize=(7, 4))
    for arm in runs[seeds[0]]["arms"]:
        if arm == BASE:
            continue
        values = np.array([[advantage(runs[s], arm, i) for i in range(len(updates))]
                           for s in seeds])
        line, = ax.plot(updates, values.mean(0), label=arm)
        ax.fill_between(updates, values.min(0), values.max(0), color=line.get_color(),
                        alpha=0.2)
    ax.axhline(0, color="black", linewidth=0.5)
    ax.set_xlabel("decoder updates")
    ax.set_ylabel("advantage (L_ent − L_dis, arm − original)")
    ax.set_title(f"re-adaptation on the ellipse, {len(seeds)} seeds (band: min–max)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    tmp = target.with_name(target.stem + ".tmp.png")
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    tmp.replace(target)


def write_text(target: pathlib.Path, text: str) -> None:
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(target)
    print(f"wrote {target}")


def main(argv: list[str]) -> None:
    path = pathlib.Path(argv[1]) if len(argv) > 1 else HERE / "readaptation_seeds.json"
    runs, summary = load(path)
    if not runs:
        raise SystemExit(f"{path}: no finished seed yet")
    partial = summary is None
    result = {**reading(runs), "partial": partial}
    print("\n".join(lines(result, partial)))
    if not partial:
        write_text(path.parent / "reading.json", json.dumps(result, indent=1) + "\n")
        write_text(path.parent / "report.md", report(result, summary))
        figure(runs, path.parent / "advantage.png")
        print(f"wrote {path.parent / 'advantage.png'}")


if __name__ == "__main__":
    main(sys.argv)
