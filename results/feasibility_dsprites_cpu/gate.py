"""The go / no-go of the feasibility pilot, as registered in
gin_configs/studies/feasibility_dsprites_cpu.gin (2026-11-25, before its runs); this script
was written on 2026-11-26 before the first curve point existed and applies the rule as
written there:

    GO at L, the smallest curve step <= 30,000 where
      (a) the median MIG of the two seeds is >= 0.15,
      (b) neither seed is over-pruned (fewer active dims than dSprites' 5 factors: the
          run's own health/overpruned), and
      (c) the seeds differ by >= 0.05 in MIG;
    NO-GO if no step <= 30,000 meets all three.

It reads each run's curves.json (points written every 5,000 steps, also while the runs
are still training), so it can be run at any time: before every step <= 30,000 of both
seeds has a point and none passes, the answer is 'undecided'. Writes gate.json and
curves.png (MIG, DCI-D and active dims of each seed against the step, the thresholds
drawn) beside this file (atomically) and prints the decision.

    python results/feasibility_dsprites_cpu/gate.py
"""

import json
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmark.atomic import atomic_path, write_json  # noqa: E402

SEEDS = (0, 1)
EVERY, LAST_STEP = 5000, 30000
MIN_MEDIAN_MIG, MIN_MIG_GAP = 0.15, 0.05
RUN = "beta_vae_dsprites_original_seed{seed}"


def curves() -> dict:
    """{seed: {step: point}} from the runs' curves.json; a run without one yet has {}."""
    found = {}
    for seed in SEEDS:
        path = HERE / "runs" / RUN.format(seed=seed) / "curves.json"
        points = json.loads(path.read_text())["points"] if path.exists() else []
        found[seed] = {int(p["step"]): p for p in points}
    return found


def step_verdict(points: list) -> dict:
    """The three criteria at one step, from the two seeds' points there."""
    migs = [float(p["metric/mig"]) for p in points]
    over = [bool(p["health/overpruned"]) for p in points]
    checks = {"median_mig": float(np.median(migs)) >= MIN_MEDIAN_MIG,
              "not_overpruned": not any(over),
              "seeds_differ": abs(migs[0] - migs[1]) >= MIN_MIG_GAP}
    return {"mig": migs, "active_dims": [int(p["health/active_units"]) for p in points],
            "overpruned": over, "dci_disentanglement": [
                float(p["metric/dci/disentanglement"]) for p in points],
            "median_mig": float(np.median(migs)), "mig_gap": abs(migs[0] - migs[1]),
            "checks": checks, "passes": all(checks.values())}


def figure(by_seed: dict, path: pathlib.Path) -> None:
    """Each seed's MIG, DCI-D and active dims against the step; the gate's thresholds."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(12, 3.4))
    axes = fig.subplots(1, 3)
    for seed in SEEDS:
        steps = sorted(by_seed[seed])
        for ax, key in zip(axes, ("metric/mig", "metric/dci/disentanglement",
                                  "health/active_units")):
            ax.plot(steps, [by_seed[seed][s][key] for s in steps], "o-", label=f"seed {seed}")
    axes[0].axhline(MIN_MEDIAN_MIG, color="grey", ls="--", label="median needed")
    axes[2].axhline(5, color="grey", ls="--", label="5 factors")
    for ax, title in zip(axes, ("MIG", "DCI disentanglement", "active dims")):
        ax.axvline(LAST_STEP, color="grey", ls=":")
        ax.set_ylim(bottom=0)
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.legend(fontsize=7)
    with atomic_path(path, ".png") as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")


def main() -> dict:
    by_seed = curves()
    common = sorted(set(by_seed[SEEDS[0]]) & set(by_seed[SEEDS[1]]))
    verdicts = {step: step_verdict([by_seed[s][step] for s in SEEDS]) for step in common}
    decision, length = "no-go", None
    for step in range(EVERY, LAST_STEP + 1, EVERY):
        if step not in verdicts:
            decision = "undecided"
            break
        if verdicts[step]["passes"]:
            decision, length = "go", step
            break
    out = {"rule": {"every": EVERY, "last_step": LAST_STEP, "min_median_mig": MIN_MEDIAN_MIG,
                    "min_mig_gap": MIN_MIG_GAP, "over_pruned": "health/overpruned "
                    "(active dims < 5 factors)"},
           "decision": decision, "length": length,
           "steps": {str(k): v for k, v in verdicts.items()},
           "points_per_seed": {str(s): sorted(by_seed[s]) for s in SEEDS}}
    write_json(HERE / "gate.json", out)
    if any(by_seed.values()):
        figure(by_seed, HERE / "curves.png")
    print(json.dumps({k: out[k] for k in ("decision", "length")}),
          *(f"{k}: MIG {v['mig']}, active {v['active_dims']}, passes {v['passes']}"
            for k, v in out["steps"].items()), sep="\n")
    return out


if __name__ == "__main__":
    main()
