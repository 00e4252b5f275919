"""The go / no-go of the feasibility pilot (results/feasibility_dsprites_cpu), as registered
in gin_configs/studies/feasibility_dsprites_cpu.gin (2026-11-25, before its runs); the
rule was written down as code on 2026-11-26, before the first curve point existed, and is
applied as registered:

    GO at L, the smallest curve step <= 30,000 where
      (a) the median MIG of the two seeds is >= 0.15,
      (b) neither seed is over-pruned (fewer active dims than dSprites' 5 factors: the
          run's own health/overpruned), and
      (c) the seeds differ by >= 0.05 in MIG;
    NO-GO if no step <= 30,000 meets all three.

    python -m benchmark.readings feasibility_gate results/feasibility_dsprites_cpu

Reads each run's curves.json (STUDY_DIR/runs/beta_vae_dsprites_original_seed{0,1}/:
points written every 5,000 steps, also while the runs are still training), so it can be
run at any time: before every step <= 30,000 of both seeds has a point and none passes,
the answer is 'undecided'. Writes STUDY_DIR/gate.json and STUDY_DIR/curves.png (MIG,
DCI-D and active dims of each seed against the step, the thresholds drawn), atomically,
and prints the decision.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from benchmark.core.atomic import atomic_path, write_json
from benchmark.readings import ReadingError

SEEDS = (0, 1)
EVERY, LAST_STEP = 5000, 30000
MIN_MEDIAN_MIG, MIN_MIG_GAP = 0.15, 0.05
#: dSprites' factors: fewer active dims is over-pruned (drawn on the figure)
FACTORS = 5
RUN = "beta_vae_dsprites_original_seed{seed}"
#: the keys of a curve point the gate reads
POINT_KEYS = ("step", "metric/mig", "metric/dci/disentanglement", "health/active_units",
              "health/overpruned")
USAGE = ("usage: python -m benchmark.readings feasibility_gate STUDY_DIR "
         "(e.g. results/feasibility_dsprites_cpu)")


class GateError(ReadingError):
    """The study directory or a run's curves.json is not what the gate reads."""


def read_points(path: pathlib.Path) -> list[dict]:
    """The `points` of one run's curves.json (each a dict with POINT_KEYS); [] if the file
    is not written yet; GateError if it is not a curves file."""
    if not path.exists():
        return []
    try:
        points = json.loads(path.read_text())["points"]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as error:
        raise GateError(f"{path}: expected a curves file ({{'points': [...]}}), found "
                        f"{type(error).__name__}: {error}") from error
    for point in points:
        missing = [key for key in POINT_KEYS if key not in point] if isinstance(
            point, dict) else list(POINT_KEYS)
        if missing:
            raise GateError(f"{path}: expected every point to have {list(POINT_KEYS)}, "
                            f"found one without {missing}")
    return points


def curves(study_dir) -> dict:
    """{seed: {step: point}} of both seeds from STUDY_DIR/runs/RUN/curves.json; a run
    without one yet has {}. GateError if neither run's folder exists (not this study)."""
    folders = {seed: pathlib.Path(study_dir) / "runs" / RUN.format(seed=seed)
               for seed in SEEDS}
    if not any(folder.is_dir() for folder in folders.values()):
        raise GateError(f"expected the feasibility study's directory, with runs/"
                        f"{RUN.format(seed='N')}/ for seeds {list(SEEDS)}, found neither "
                        f"run folder in {study_dir}")
    return {seed: {int(p["step"]): p for p in read_points(folder / "curves.json")}
            for seed, folder in folders.items()}


def step_verdict(points: list) -> dict:
    """The three criteria at one step, from the two seeds' points there (seed order):
    their MIGs, active dims, over-pruning and DCI-D, the median MIG and the MIG gap,
    'checks' {(a) 'median_mig', (b) 'not_overpruned', (c) 'seeds_differ': bool} and
    'passes' (all three)."""
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


def verdicts(by_seed: dict) -> dict:
    """{step: `step_verdict`} at every step where both seeds have a point."""
    common = sorted(set(by_seed[SEEDS[0]]) & set(by_seed[SEEDS[1]]))
    return {step: step_verdict([by_seed[s][step] for s in SEEDS]) for step in common}


def decide(by_step: dict) -> tuple[str, int | None]:
    """The registered rule on {step: verdict}: ('go', L) at the first curve step L <=
    LAST_STEP that passes, walking EVERY, 2 EVERY, ...; ('undecided', None) if a step is
    missing before one passes; else ('no-go', None)."""
    for step in range(EVERY, LAST_STEP + 1, EVERY):
        if step not in by_step:
            return "undecided", None
        if by_step[step]["passes"]:
            return "go", step
    return "no-go", None


def gate(by_seed: dict) -> dict:
    """gate.json's content from {seed: {step: point}}: the rule's constants, 'decision',
    'length' (L or None), 'steps' {str(step): verdict} and 'points_per_seed'."""
    by_step = verdicts(by_seed)
    decision, length = decide(by_step)
    return {"rule": {"every": EVERY, "last_step": LAST_STEP, "min_median_mig": MIN_MEDIAN_MIG,
                     "min_mig_gap": MIN_MIG_GAP, "over_pruned": "health/overpruned "
                     f"(active dims < {FACTORS} factors)"},
            "decision": decision, "length": length,
            "steps": {str(k): v for k, v in by_step.items()},
            "points_per_seed": {str(s): sorted(by_seed[s]) for s in SEEDS}}


def lines(out: dict) -> list[str]:
    """The printed decision (JSON of decision and length), then one line a step."""
    return [json.dumps({k: out[k] for k in ("decision", "length")}),
            *(f"{k}: MIG {v['mig']}, active {v['active_dims']}, passes {v['passes']}"
              for k, v in out["steps"].items())]


def figure(by_seed: dict, path) -> pathlib.Path:
    """curves.png at `path`: each seed's MIG, DCI-D and active dims against the step; the
    gate's thresholds drawn (written atomically)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 3.4))
    axes = fig.subplots(1, 3)
    for seed in SEEDS:
        steps = sorted(by_seed[seed])
        for ax, key in zip(axes, ("metric/mig", "metric/dci/disentanglement",
                                  "health/active_units")):
            ax.plot(steps, [by_seed[seed][s][key] for s in steps], "o-", label=f"seed {seed}")
    axes[0].axhline(MIN_MEDIAN_MIG, color="grey", ls="--", label="median needed")
    axes[2].axhline(FACTORS, color="grey", ls="--", label=f"{FACTORS} factors")
    for ax, title in zip(axes, ("MIG", "DCI disentanglement", "active dims")):
        ax.axvline(LAST_STEP, color="grey", ls=":")
        ax.set_ylim(bottom=0)
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.legend(fontsize=7)
    with atomic_path(path, ".png") as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    return pathlib.Path(path)


def main(args: list[str]) -> None:
    """`python -m benchmark.readings feasibility_gate STUDY_DIR`: writes gate.json (and,
    once a point exists, curves.png) in STUDY_DIR and prints the decision."""
    if len(args) != 1:
        raise GateError(f"{USAGE}; found {len(args)} arguments {args}")
    by_seed = curves(args[0])
    out = gate(by_seed)
    write_json(pathlib.Path(args[0]) / "gate.json", out)
    if any(by_seed.values()):
        figure(by_seed, pathlib.Path(args[0]) / "curves.png")
    print(*lines(out), sep="\n")
