"""The objective check's reading: does the game's objective, measured by re-adaptation,
reward a perturbation built to favour the entangled reference over noise of the same
energy? Design and reading rules: results/objective_check_ellipse/DESIGN.md
(its amendment of 2026-11-27, made before the runs).

    python -m benchmark.readings objective_check results/objective_check_ellipse/readaptation_seeds.json

Reads the readaptation result (`python -m perturbations.readapt ... --out=FILE`: `runs`,
{seed: per-seed result}, and `across_seeds`, its paired tests) or, while seeds are still
running, the finished seeds of `FILE.partial.json` (the reading is then marked partial),
and computes, per finished seed and across them:
- each arm's size (eps, energy per image, mean |dx|, L-infinity: `arm_eps`, `arm_change`);
- each arm's advantage, (L_ent - L_dis) on the arm minus the same on `original`, at update
  0 (the fixed reference decoders) and after the last update;
- P1's difference advantage(naive@1) - advantage(noisy@matched) after the last update:
  mean, 90 % paired t interval, one-sided p (`benchmark.statistics.stats.paired`, the test
  `perturbations.readapt` runs), and the registered rule for "blind":

      "the objective is called *blind* to the naive move only if the 90 % interval of
      advantage(naive@1) - advantage(noisy) after 1,000 updates lies above -delta,
      delta = half the same difference at update 0 (what the fixed reference decoders
      see, before any re-adaptation: re-adaptation closed at least half of it);
      otherwise a non-rejection of P1 reads 'not shown to see the naive move at 3 seeds'"

- the paired power of that test at the observed difference and spread, and the seeds that
  power 0.8 needs (`benchmark.statistics.stats.pairs_needed`, as `python -m benchmark.power --paired`;
  the design's second stage when P1 is not rejected).
It prints the reading. Once every seed has finished it also writes, beside FILE,
`reading.json` (the above), `report.md` (the arms' sizes, P1 and P2 with Holm from
`across_seeds`, each arm's difference from noise as a share of the naive move's,
descriptive) and `advantage.png` (each arm's advantage over the updates, mean and range
over seeds), each atomically. Nothing here is a new test: P1 and P2 with Holm are
`across_seeds`' numbers in the input.
"""

from __future__ import annotations

import pathlib

import numpy as np

from benchmark.core.atomic import atomic_path, write_json
from benchmark.readings import ReadingError, read_json_object
from benchmark.statistics import stats

POSITIVE, CONTROL, BASE = "naive@1", "noisy@matched", "original"
ALPHA = 0.05
#: the power the second stage's seeds are chosen for, and the most seeds it would consider
TARGET_POWER, MOST_SEEDS = 0.8, 200
USAGE = ("usage: python -m benchmark.readings objective_check READAPTATION_JSON "
         "(e.g. results/objective_check_ellipse/readaptation_seeds.json)")


class ObjectiveCheckError(ReadingError):
    """The readaptation result is missing or not what `perturbations.readapt` writes."""


def read_json(path: pathlib.Path) -> dict:
    """The JSON object stored at `path`; ObjectiveCheckError if it is not one."""
    return read_json_object(path, "a readaptation result", ObjectiveCheckError)


def run_problem(seed, run) -> str | None:
    """What one stored seed's result lacks for a reading, or None: an integer seed, a dict
    with `steps`, `evaluations` (E update counts) and `arms` including `original`, each
    arm with a `gap` of E values (L_ent - L_dis at each evaluation)."""
    if not str(seed).lstrip("-").isdigit():
        return f"an integer seed, found {seed!r}"
    if not isinstance(run, dict) or "steps" not in run or "evaluations" not in run:
        return f"seed {seed}: 'steps' and 'evaluations', found " + (
            f"keys {sorted(run)}" if isinstance(run, dict) else type(run).__name__)
    arms = run.get("arms")
    if not isinstance(arms, dict) or BASE not in arms:
        return f"seed {seed}: 'arms' including {BASE!r}, found {arms!r:.80}"
    for arm, stored in arms.items():
        gap = stored.get("gap") if isinstance(stored, dict) else None
        if not isinstance(gap, list) or len(gap) != len(run["evaluations"]):
            return (f"seed {seed}, arm {arm!r}: a 'gap' of {len(run['evaluations'])} "
                    f"values (one an evaluation), found {gap!r:.80}")
    return None


def check_runs(runs, path: pathlib.Path) -> dict:
    """{seed (int): run} from the stored `runs` ({str(seed): run}); ObjectiveCheckError
    naming the first seed that `run_problem` finds wanting, or whose arms differ from
    another seed's."""
    if not isinstance(runs, dict):
        raise ObjectiveCheckError(f"{path}: expected 'runs' as {{seed: result}}, found "
                                  f"{type(runs).__name__}")
    for seed, run in runs.items():
        problem = run_problem(seed, run)
        if problem:
            raise ObjectiveCheckError(f"{path}: expected {problem}")
    arms = {seed: sorted(run["arms"]) for seed, run in runs.items()}
    if len({tuple(a) for a in arms.values()}) > 1:
        raise ObjectiveCheckError(f"{path}: expected the same arms in every seed, found "
                                  f"{arms}")
    return {int(seed): run for seed, run in runs.items()}


def load(path) -> tuple[dict, dict | None]:
    """({seed: per-seed readaptation result} of the finished seeds, `across_seeds`) from
    `path`, or from `path`.partial.json while seeds are running (`across_seeds` None)."""
    path = pathlib.Path(path)
    partial = pathlib.Path(f"{path}.partial.json")
    if path.exists():
        stored = read_json(path)
        if not isinstance(stored.get("across_seeds"), dict) or not all(
                key in stored["across_seeds"] for key in ("arms", "preferred")):
            raise ObjectiveCheckError(f"{path}: expected 'across_seeds' with 'arms' and "
                                      f"'preferred', found keys {sorted(stored)}")
        return check_runs(stored.get("runs"), path), stored["across_seeds"]
    if not partial.exists():
        raise ObjectiveCheckError(f"expected {path} or {partial}; found neither")
    return check_runs(read_json(partial).get("runs"), partial), None


def advantage(run: dict, arm: str, at: int) -> float:
    """(L_ent - L_dis) on `arm` minus on original, at evaluation index `at` (0: update 0,
    -1: after the last update), from one seed's result."""
    return float(run["arms"][arm]["gap"][at] - run["arms"][BASE]["gap"][at])


def arm_readings(runs: dict) -> dict:
    """{arm: {'eps', 'change' (the first seed's size of the arm, None if unrecorded),
    'advantage_update0', 'advantage_end' (one value per seed, in seed order)}} for every
    arm but original."""
    seeds = sorted(runs)
    first = runs[seeds[0]]
    return {arm: {"eps": first.get("arm_eps", {}).get(arm),
                  "change": first.get("arm_change", {}).get(arm),
                  "advantage_update0": [advantage(runs[s], arm, 0) for s in seeds],
                  "advantage_end": [advantage(runs[s], arm, -1) for s in seeds]}
            for arm in first["arms"] if arm != BASE}


def seeds_for_power(effect: float, sd: float, seeds: int) -> int | None:
    """Seeds (pairs) a one-sided paired t-test at ALPHA needs for power TARGET_POWER at a
    true mean difference `effect` > 0 with per-seed differences spreading `sd`: never
    fewer than the `seeds` already run; None beyond MOST_SEEDS."""
    needed = stats.pairs_needed(effect, sd, ALPHA, TARGET_POWER, max_pairs=MOST_SEEDS)
    return None if needed is None else max(seeds, needed)


def p1_reading(arms: dict) -> dict:
    """P1 and the blind rule from `arm_readings`' POSITIVE and CONTROL arms (n seeds each):
    {'difference_update0': n values, 'delta': |mean of them| / 2} and, with n >= 2,
    'test' (`stats.paired` of the end advantages, alternative 'less', 90 % interval),
    'blind' (the interval's low end above -delta) and, when the observed difference is
    negative with spread, 'power_at_observed' and 'seeds_for_power_0.8'."""
    positive, control = arms[POSITIVE], arms[CONTROL]
    start = [a - b for a, b in zip(positive["advantage_update0"],
                                   control["advantage_update0"])]
    out = {"difference_update0": start, "delta": abs(float(np.mean(start))) / 2}
    n = len(start)
    if n < 2:
        return out
    test = stats.paired(positive["advantage_end"], control["advantage_end"], "less",
                        1 - 2 * ALPHA)
    out.update(test=test, blind=bool(test["ci_low"] > -out["delta"]))
    effect = -test["diff"]
    if effect > 0 and test["sd"] > 0:
        out["power_at_observed"] = stats.paired_power(effect, test["sd"], n, ALPHA)
        out["seeds_for_power_0.8"] = seeds_for_power(effect, test["sd"], n)
    return out


def reading(runs: dict) -> dict:
    """{'seeds', 'steps', 'arms' (`arm_readings`), 'p1' (`p1_reading`, when both its arms
    ran)} of the finished seeds' results {seed: run}."""
    seeds = sorted(runs)
    out = {"seeds": seeds, "steps": runs[seeds[0]]["steps"], "arms": arm_readings(runs)}
    if POSITIVE in out["arms"] and CONTROL in out["arms"]:
        out["p1"] = p1_reading(out["arms"])
    return out


def arm_line(arm: str, a: dict) -> str:
    """One console line of an arm of `arm_readings`: its size and advantages."""
    change = a["change"] or {}
    return (f"  {arm}: eps {a['eps']}, energy {change.get('energy_per_image', 0):.2f}, "
            f"mean|dx| {change.get('mean_abs', 0):.4f}, Linf {change.get('linf', 0):.3f}; "
            f"advantage update 0 {np.round(a['advantage_update0'], 3).tolist()}, "
            f"end {np.round(a['advantage_end'], 3).tolist()}")


def p1_lines(p1: dict) -> list[str]:
    """The console lines of `p1_reading`: update 0, the test and rule, the power."""
    text = [f"  naive - noise at update 0: {np.round(p1['difference_update0'], 3).tolist()}"
            f", delta {p1['delta']:.3f}"]
    if "test" in p1:
        t = p1["test"]
        text.append(f"  P1 naive - noise at the end: {t['diff']:+.3f} [{t['ci_low']:+.3f}, "
                    f"{t['ci_high']:+.3f}] (90 %), one-sided p {t['p']:.3g}; "
                    f"blind: {p1['blind']}")
    if "seeds_for_power_0.8" in p1:
        text.append(f"  paired power at the observed difference: "
                    f"{p1['power_at_observed']:.2f}; seeds for 0.8: "
                    f"{p1['seeds_for_power_0.8']}")
    return text


def lines(result: dict) -> list[str]:
    """The reading as console lines: the seeds, one line an arm, then P1's."""
    text = [f"seeds {result['seeds']}" +
            (" (partial: finished seeds only)" if result.get("partial") else "")]
    text += [arm_line(arm, a) for arm, a in result["arms"].items()]
    return text + (p1_lines(result["p1"]) if result.get("p1") else [])


def interval_level(summary: dict) -> str:
    """The two-sided level of `across_seeds`' intervals, (1 - 2 alpha), as '90 %'."""
    return f"{100 * (1 - 2 * summary.get('alpha', ALPHA)):g} %"


def arms_table(result: dict, summary: dict) -> list[str]:
    """Markdown rows of the arms: size, mean advantage at update 0, at the end with
    `across_seeds`' t interval."""
    text = [f"| arm | eps | energy | mean abs Δx | L∞ | advantage at update 0 (mean) | "
            f"advantage at the end, mean [{interval_level(summary)} t CI] |",
            "|---|---|---|---|---|---|---|"]
    for arm, a in result["arms"].items():
        change, end = a["change"] or {}, summary["arms"][arm]
        eps = "—" if a["eps"] is None else f"{a['eps']:.4f}"
        text.append(f"| `{arm}` | {eps} | {change.get('energy_per_image', float('nan')):.2f} | "
                    f"{change.get('mean_abs', float('nan')):.4f} | "
                    f"{change.get('linf', float('nan')):.3f} | "
                    f"{np.mean(a['advantage_update0']):+.2f} | {end['mean']:+.2f} "
                    f"[{end['ci_low']:+.2f}, {end['ci_high']:+.2f}] |")
    return text


def tests_table(result: dict, summary: dict) -> list[str]:
    """Markdown paragraph and rows of `across_seeds`' paired tests of each arm against
    CONTROL (P1, P2 with Holm) and each difference as a share of the naive move's."""
    level, n = interval_level(summary), len(result["seeds"])
    naive = summary["preferred"].get(POSITIVE, {}).get(CONTROL)
    text = [f"Paired one-sided t-tests across the {n} seeds that the objective prefers "
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
    return text


def blind_paragraph(p1: dict, level: str) -> list[str]:
    """The blind rule's markdown paragraph, applied to `p1_reading` (empty without test)."""
    if "blind" not in p1:
        return []
    return ["", f"Blind rule (the design's amendment of 2026-11-27): naive − noise at "
            f"update 0 has mean {np.mean(p1['difference_update0']):+.3f}, so "
            f"δ = {p1['delta']:.3f}; the objective is called blind only if the {level} "
            f"interval after the last update lies above −δ: [{p1['test']['ci_low']:+.3f}, "
            f"{p1['test']['ci_high']:+.3f}] → blind: {'yes' if p1['blind'] else 'no'}."]


def report(result: dict, summary: dict, source: str) -> str:
    """report.md (markdown): the reading and `across_seeds`' tests as tables; `source` is
    the input's path as the command was given it."""
    text = ["# The objective's positive control on the ellipse: report", "",
            f"Written by `python -m benchmark.readings objective_check {source}` (seeds "
            f"{result['seeds']}, {result['steps']} decoder updates an arm). Design, tests "
            "and reading rules: `results/objective_check_ellipse/DESIGN.md`. Advantage "
            "= (L_ent − L_dis) on the arm minus the same on `original`, squared error summed "
            "over pixels, mean over the 1,024 images; negative = the objective rewards the "
            "arm. Sizes per image: energy = Σ (x′ − x)², mean |Δx|, L∞.", ""]
    text += arms_table(result, summary) + [""] + tests_table(result, summary)
    text += blind_paragraph(result.get("p1", {}), interval_level(summary))
    text += ["", "Every interval is conditional on the one reference pair (the published "
             "stand-ins), the one noise realisation, the naive deltas and the waves' "
             "directions: the seeds vary only the decoders' batches and latent noise.",
             "", "![advantage over updates](advantage.png)", ""]
    return "\n".join(text)


def advantage_curves(runs: dict) -> dict:
    """{arm: array (seeds, E) of the arm's advantage at each evaluation} for every arm but
    original (seeds in order, E the number of evaluations)."""
    seeds = sorted(runs)
    evaluations = len(runs[seeds[0]]["evaluations"])
    return {arm: np.array([[advantage(runs[s], arm, i) for i in range(evaluations)]
                           for s in seeds])
            for arm in runs[seeds[0]]["arms"] if arm != BASE}


def figure(runs: dict, target) -> pathlib.Path:
    """advantage.png at `target`: each arm's advantage against the decoder updates, mean
    over seeds, band min to max (written atomically)."""
    from matplotlib.figure import Figure

    updates = runs[min(runs)]["evaluations"]
    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    for arm, values in advantage_curves(runs).items():
        line, = ax.plot(updates, values.mean(0), label=arm)
        ax.fill_between(updates, values.min(0), values.max(0), color=line.get_color(),
                        alpha=0.2)
    ax.axhline(0, color="black", linewidth=0.5)
    ax.set_xlabel("decoder updates")
    ax.set_ylabel("advantage (L_ent − L_dis, arm − original)")
    ax.set_title(f"re-adaptation on the ellipse, {len(runs)} seeds (band: min–max)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(target, ".png") as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    return pathlib.Path(target)


def write_text(target, text: str) -> pathlib.Path:
    """`text` written to `target` atomically; returns the path."""
    with atomic_path(target) as tmp:
        tmp.write_text(text)
    return pathlib.Path(target)


def write_outputs(result: dict, summary: dict, runs: dict, source) -> list[pathlib.Path]:
    """reading.json, report.md and advantage.png beside `source` (the input's path)."""
    source = pathlib.Path(source)
    return [write_json(source.parent / "reading.json", result, indent=1, sort_keys=False),
            write_text(source.parent / "report.md", report(result, summary, str(source))),
            figure(runs, source.parent / "advantage.png")]


def main(args: list[str]) -> None:
    """`python -m benchmark.readings objective_check FILE`: prints the reading of FILE
    (or of FILE.partial.json) and, once every seed has finished, writes its outputs."""
    if len(args) != 1:
        raise ObjectiveCheckError(f"{USAGE}; found {len(args)} arguments {args}")
    runs, summary = load(args[0])
    if not runs:
        raise ObjectiveCheckError(f"{args[0]}: expected at least one finished seed, "
                                  "found none")
    result = {**reading(runs), "partial": summary is None}
    print("\n".join(lines(result)))
    if summary is not None:
        for path in write_outputs(result, summary, runs, args[0]):
            print(f"wrote {path}")
