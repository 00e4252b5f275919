"""python -m benchmark.aligned_baseline STUDY_DIR [--model=beta_vae] [--floor=ae|none]
[--units=classes|spread] [--plane=0,1] [--both_factors] [--out=FILE]

The aligned-baseline rule of the known-answer battery's pilots (registered in
gin_configs/studies/battery_pilot_lr_cpu.gin and read unchanged by the later original-only
pilots): before a manipulation can take a code's alignment away, the reference model's
code on the original data must be aligned on nearly every seed. Per run of `model` on the
original arm, from its evaluation codes (or its row of the study's alignment.json when the
codes are gone; benchmark/metrics/alignment.py):

    misalignment   mean over the latents whose linear fit on the plane has R^2 >= MIN_R2
                   of the latent's distance to the nearest factor axis (degrees, 0-45), in
                   class steps or in units of the factors' spreads (`--units`; the same on
                   a square grid, see alignment's docstring)
    better         the smallest such distance (the better latent's)
    both_kept      both of the two best-fitting latents have R^2 >= MIN_R2 and their
                   angles lie at least BOTH_APART_DEG apart (one latent per factor, not two
                   of one factor)

and the rule over the runs:

    (a) mean misalignment <= MEAN_LIMIT_DEG (its 95 % t interval beside it)
    (b) at least RUNS_SHARE of the runs within RUN_LIMIT_DEG
    (c) G1: MIG above the floor model's on the same arm (one-sided Welch, alpha ALPHA; its
        90 % Welch t interval beside it, as the report's)
    (d) with --both_factors (registered by the windowed pilot): at least RUNS_SHARE of the
        runs both_kept

Each run also says whether it `passes` on its own: within RUN_LIMIT_DEG and, with
--both_factors, both_kept (the per-run rule of the screens, which pick a design worth a
pilot from a few seeds). `--floor=none` reads a study that has no floor model (a screen):
(c) is then not read, `holds` is None (the rule is not decided) and `read_criteria_hold`
says whether (a), (b) and (d) do.

Written to --out (default STUDY_DIR/aligned_baseline.json; atomically) and printed as a
table. The floor
model's own misalignment (a code with no preferred rotation; a uniform angle gives 22.5 deg)
and the model's against it (one-sided Welch, 'less') are reported beside the rule, not in it.
"""

from __future__ import annotations

import json
import math
import pathlib

import numpy as np
from scipy import stats as scipy_stats

from benchmark.core.errors import UserError, cli_main
from benchmark.metrics import alignment
from benchmark.metrics import codes as codes_lib
from benchmark.statistics import stats
from benchmark.studies import report_data
from perturbations.geometry import turn_deg   # the angle between two axes, in [0, 90]

#: (a), (b), (d) of the rule (studies/battery_pilot_lr_cpu.gin)
MEAN_LIMIT_DEG = 10.0
RUN_LIMIT_DEG = 12.0
RUNS_SHARE = 0.8
#: (d): two latents this far apart in angle follow different factors
BOTH_APART_DEG = 45.0
ALPHA = 0.05
FILE_NAME = "aligned_baseline.json"
#: the angle units `--units` knows: alignment row keys
UNIT_KEYS = alignment.UNIT_KEYS
#: `--floor` value of a study without a floor model: (c) is not read
NO_FLOOR = "none"


def run_measures(row: dict, units: str = "classes", min_r2: float = alignment.MIN_R2) -> dict:
    """{'misalignment', 'better' (degrees or None when no latent reaches min_r2),
    'both_kept'} of one run's per-latent fit (`alignment.linear_angles`, or a row of
    alignment.json), read in `units`; MetricInputError for a row without them."""
    angle_key, key = UNIT_KEYS[units]
    try:
        angles, distances, r2 = row[angle_key], row[key], row["r2"]
    except (KeyError, TypeError) as error:
        raise codes_lib.MetricInputError(
            f"expected a row with {angle_key!r}, {key!r} and 'r2' (python -m "
            f"benchmark.metrics.alignment; rows written before the spread units have only "
            f"class steps), found {row!r:.120} ({error})") from None
    kept = [d for d, q in zip(distances, r2) if q >= min_r2]
    best = np.argsort(r2)[::-1][:2]
    both = (len(best) == 2 and all(r2[i] >= min_r2 for i in best)
            and turn_deg(angles[best[0]], angles[best[1]]) >= BOTH_APART_DEG)
    return {"misalignment": float(np.mean(kept)) if kept else None,
            "better": float(min(kept)) if kept else None, "both_kept": bool(both)}


def mean_interval(values, confidence: float = 0.95) -> tuple[float, float] | None:
    """The two-sided t interval of the mean of values (n >= 2), None below 2 values."""
    values = np.asarray(values, np.float64)
    if len(values) < 2:
        return None
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, len(values) - 1)
                 * values.std(ddof=1) / math.sqrt(len(values)))
    return float(values.mean() - half), float(values.mean() + half)


def study_runs(study_dir, model: str, plane=(0, 1), units: str = "classes",
               need_angles: bool = True) -> list[dict]:
    """[{'run', 'seed', 'MIG', 'codes' (read from eval_codes.npz, else the saved row; None
    with neither), **run_measures}] of `model`'s runs on the study's original arm, by seed.
    A run with neither codes nor a saved row is a UserError when need_angles, else its
    angles are None (the floor's, which the rule does not read)."""
    study_dir = pathlib.Path(study_dir)
    saved = alignment.saved_rows(study_dir, plane)
    out = []
    for record in report_data.load_runs(study_dir):
        if record["model"] != model or record["variant"] != "original":
            continue
        run_dir = pathlib.Path(record["run_dir"])
        path = run_dir / "eval_codes.npz"
        if path.is_file():
            arrays = codes_lib.read_npz(path, ("factors", "codes"))
            row, codes = alignment.linear_angles(arrays["factors"], arrays["codes"], plane), True
        elif run_dir.name in saved:
            row, codes = saved[run_dir.name], False
        elif not need_angles:
            out.append({"run": run_dir.name, "seed": record["seed"],
                        "MIG": record["values"].get("MIG"), "codes": None,
                        "misalignment": None, "better": None, "both_kept": False})
            continue
        else:
            raise UserError(f"{path}: expected the run's evaluation codes, or its row in "
                            f"{study_dir / 'alignment.json'} (python -m "
                            "benchmark.metrics.alignment STUDY_DIR), found neither")
        try:
            measures = run_measures(row, units)
        except codes_lib.MetricInputError as error:
            raise UserError(f"{run_dir.name}: {error}") from None
        out.append({"run": run_dir.name, "seed": record["seed"],
                    "MIG": record["values"].get("MIG"), "codes": codes, **measures})
    return sorted(out, key=lambda r: r["seed"])


def passes(run: dict, both_factors: bool = False) -> bool:
    """A run's own pass (module docstring): within RUN_LIMIT_DEG and, when both_factors,
    both factors kept."""
    return (run["misalignment"] is not None and run["misalignment"] <= RUN_LIMIT_DEG
            and (run["both_kept"] or not both_factors))


def decide(runs: list[dict], floor: list[dict] | None, both_factors: bool = False) -> dict:
    """The rule (module docstring) on `study_runs` of the model and of its floor model
    (None: no floor, (c) not read): {'criteria': {name: {'found', 'holds'}}, 'holds' (every
    criterion; None without a floor), 'read_criteria_hold', 'runs_passing', the model's and
    the floor's summaries}; UserError below 2 runs of the model, or of a floor given."""
    if len(runs) < 2 or (floor is not None and len(floor) < 2):
        raise UserError(f"the rule needs at least 2 runs of the model and of its floor on the "
                        f"original arm, found {len(runs)} and "
                        f"{'no floor' if floor is None else len(floor)} (a study without "
                        f"a floor model: --floor={NO_FLOOR})")
    runs = [{**r, "passes": passes(r, both_factors)} for r in runs]
    angles = [r["misalignment"] for r in runs if r["misalignment"] is not None]
    within = sum(1 for a in angles if a <= RUN_LIMIT_DEG)
    needed = math.ceil(RUNS_SHARE * len(runs))
    mean = float(np.mean(angles)) if angles else None
    criteria = {
        "a_mean": {"found": mean, "interval": mean_interval(angles),
                   "limit": MEAN_LIMIT_DEG,
                   "holds": mean is not None and mean <= MEAN_LIMIT_DEG},
        "b_runs_within": {"found": within, "of": len(runs), "needed": needed,
                          "limit": RUN_LIMIT_DEG, "holds": within >= needed},
        "c_gate": _gate([r["MIG"] for r in runs],
                        None if floor is None else [r["MIG"] for r in floor]),
    }
    if both_factors:
        kept = sum(r["both_kept"] for r in runs)
        criteria["d_both_factors"] = {"found": kept, "of": len(runs), "needed": needed,
                                      "holds": kept >= needed}
    floor_angles = [r["misalignment"] for r in floor or [] if r["misalignment"] is not None]
    below = (stats.welch(angles, floor_angles, alternative="less")
             if len(angles) >= 2 and len(floor_angles) >= 2 else None)
    read = [c["holds"] for c in criteria.values() if c["holds"] is not None]
    return {"criteria": criteria,
            "holds": all(read) if floor is not None else None,
            "read_criteria_hold": all(read),
            "runs_passing": sum(r["passes"] for r in runs),
            "better_within": sum(1 for r in runs if r["better"] is not None
                                 and r["better"] <= RUN_LIMIT_DEG),
            "floor_misalignment": float(np.mean(floor_angles)) if floor_angles else None,
            "below_floor_p": None if below is None else below["p"],
            "runs": runs, "floor_runs": floor or []}


def _gate(mig, floor_mig) -> dict:
    """(c): the model's MIG above the floor's (one-sided Welch; the (1 - 2 alpha) interval, as
    the report's); not read ('holds' None) without a floor."""
    if floor_mig is None:
        return {"found": None, "interval": None, "p": None, "model_mig": float(np.mean(mig)),
                "floor_mig": None, "holds": None}
    gate = stats.welch(mig, floor_mig, alternative="greater")
    return {"found": gate["diff"], "interval": stats.welch_ci(mig, floor_mig, 1 - 2 * ALPHA),
            "p": gate["p"], "model_mig": float(np.mean(mig)),
            "floor_mig": float(np.mean(floor_mig)), "holds": gate["p"] < ALPHA}


def _deg(value) -> str:
    return "—" if value is None else f"{value:.1f}"


def table_lines(decision: dict) -> list[str]:
    """The decision as a markdown table, the per-run angles and one verdict line."""
    c = decision["criteria"]
    a, b, g = c["a_mean"], c["b_runs_within"], c["c_gate"]
    held = {True: "yes", False: "no", None: "not read"}
    low_high = (f" [{a['interval'][0]:.1f}, {a['interval'][1]:.1f}]"
                if a["interval"] else "")
    below = "—" if decision["below_floor_p"] is None else f"{decision['below_floor_p']:.3g}"
    lines = ["| criterion | found | holds |", "|---|---|---|",
             f"| (a) mean misalignment ≤ {a['limit']:g}° | {_deg(a['found'])}°{low_high} "
             f"| {'yes' if a['holds'] else 'no'} |",
             f"| (b) ≥ {b['needed']} of {b['of']} runs within {b['limit']:g}° | {b['found']} "
             f"of {b['of']} | {'yes' if b['holds'] else 'no'} |",
             f"| (c) G1: MIG above the floor | " + (
                 f"{g['model_mig']:.3f} against {g['floor_mig']:.3f}, {g['found']:+.3f} "
                 f"[{g['interval'][0]:.3f}, {g['interval'][1]:.3f}], p {g['p']:.3g}"
                 if g["holds"] is not None else f"{g['model_mig']:.3f}, no floor")
             + f" | {held[g['holds']]} |"]
    if "d_both_factors" in c:
        d = c["d_both_factors"]
        lines.append(f"| (d) ≥ {d['needed']} of {d['of']} runs keep both factors | "
                     f"{d['found']} of {d['of']} | {'yes' if d['holds'] else 'no'} |")
    if decision["holds"] is None:
        verdict = ("The rule is not decided: (c) not read (no floor); the criteria read "
                   + ("hold." if decision["read_criteria_hold"] else "fail."))
    else:
        verdict = "The rule " + ("holds." if decision["holds"] else "fails.")
    lines += ["", "Per run (seed: misalignment, better latent, both factors kept, MIG, "
              "passes): " +
              "; ".join(f"{r['seed']}: {_deg(r['misalignment'])}, {_deg(r['better'])}, "
                        f"{'yes' if r['both_kept'] else 'no'}, {r['MIG']:.3f}, "
                        f"{'yes' if r['passes'] else 'no'}" for r in decision["runs"]),
              f"{decision['runs_passing']} of {len(decision['runs'])} runs pass on their own "
              f"(within {RUN_LIMIT_DEG:g}°" + (", both factors kept)." if "d_both_factors" in c
                                                else ")."),
              (f"Floor's misalignment {_deg(decision['floor_misalignment'])}° (the model's "
               f"below it: one-sided Welch p {below}); " if decision["floor_runs"]
               else "No floor model; ") + "better latent within "
              f"{RUN_LIMIT_DEG:g}° in {decision['better_within']} of "
              f"{len(decision['runs'])} runs.",
              verdict]
    return lines


def define_flags() -> None:
    from absl import flags
    flags.DEFINE_string("model", "beta_vae", "The reference model whose alignment is read.")
    flags.DEFINE_string("floor", "ae", f"The floor model of the gate (c); '{NO_FLOOR}' for a "
                        "study without one (a screen): (c) is then not read.")
    flags.DEFINE_enum("units", "classes", list(UNIT_KEYS), "The angles' units: class steps "
                      "(pilots on a square plane) or the factors' spreads (a plane whose "
                      "factors have unequal class counts).")
    flags.DEFINE_list("plane", ["0", "1"], "The two factor columns of the plane.")
    flags.DEFINE_bool("both_factors", False, "Add criterion (d): the code keeps both factors.")
    flags.DEFINE_string("out", None, f"Where to write the decision (default: STUDY_DIR/"
                        f"{FILE_NAME}).")


@cli_main
def main(argv) -> None:
    from absl import app, flags

    from benchmark.core.atomic import write_json

    if len(argv) != 2:
        raise app.UsageError("usage: python -m benchmark.aligned_baseline STUDY_DIR")
    F = flags.FLAGS
    plane = [int(c) for c in F.plane]
    runs = study_runs(argv[1], F.model, plane, F.units)
    floor = (None if F.floor == NO_FLOOR
             else study_runs(argv[1], F.floor, plane, F.units, need_angles=False))
    decision = decide(runs, floor, F.both_factors)
    decision.update(model=F.model, floor=F.floor, units=F.units, plane=plane,
                    min_r2=alignment.MIN_R2)
    print("\n".join(table_lines(decision)))
    out = F.out or pathlib.Path(argv[1]) / FILE_NAME
    print(write_json(out, json.loads(json.dumps(decision))))
