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


def load(path: pathlib.Path) -> tuple[dict, bool]:
    """{seed: per-seed readaptation result} of the finished seeds, and whether partial."""
    if path.exists():
        return {int(s): r for s, r in json.loads(path.read_text())["runs"].items()}, False
    partial = pathlib.Path(f"{path}.partial.json")
    if not partial.exists():
        raise SystemExit(f"expected {path} or {partial}; found neither")
    runs = json.loads(partial.read_text())["runs"]
    return {int(s): r for s, r in runs.items()}, True


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


def main(argv: list[str]) -> None:
    path = pathlib.Path(argv[1]) if len(argv) > 1 else HERE / "readaptation_seeds.json"
    runs, partial = load(path)
    if not runs:
        raise SystemExit(f"{path}: no finished seed yet")
    result = {**reading(runs), "partial": partial}
    print("\n".join(lines(result, partial)))
    if not partial:
        target = path.parent / "reading.json"
        tmp = target.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(result, indent=1) + "\n")
        tmp.replace(target)
        print(f"wrote {target}")


if __name__ == "__main__":
    main(sys.argv)
