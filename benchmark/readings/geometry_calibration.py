"""Does the local geometry predict where a code ends up? The calibration of the geometry
check (perturbations/geometry.py) against trained codes.

A code that followed the local geometry of the factors' plane would lie as far off the
factor axes as the geometry's principal axis does (`misalignment_deg` of the check's rows:
0 on the original ellipse, 4.7 deg for the wave at 0.05 up to 43.1 at 0.3). This reading
sets each trained run's own misalignment (the mean over its latents with R^2 >= 0.5 of
alignment.json, benchmark.metrics.alignment) beside the geometry's angle for its arm, per
arm (mean with its 95 % t interval) and as one least-squares line, observed = a + b x
geometry, with the slope's 95 % t interval. Slope 1 and intercept 0: codes follow the
geometry; a slope whose interval holds 0: at that length the geometry does not predict the
code's angle. Descriptive: no study registered a test on it.

Arms read: 'original' and the default wave (8 periods along the diagonal: runs that
record no wave_periods or wave_direction_deg), at the strengths the geometry file has;
runs of other arms, of other models and runs with no linear latent are counted, not used.
Give studies of one length together (the line is fitted over all runs given).

    python -m benchmark.readings geometry_calibration GEOMETRY_JSON OUT_JSON STUDY_DIR...

e.g. results/perturbations/geometry.json, results/perturbations/calibration_3000.json and
the 3,000-step studies of the beta-VAE (β 8, 2 latents). Writes OUT_JSON and OUT_JSON with
.md (atomically) and prints the markdown.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
from scipy import stats as sp_stats

from benchmark.core.atomic import atomic_path, write_json
from benchmark.metrics.alignment import MIN_R2
from benchmark.readings import ReadingError, read_json_object
from benchmark.studies import mechanism

MODEL = "beta_vae"
USAGE = ("usage: python -m benchmark.readings geometry_calibration GEOMETRY_JSON OUT_JSON "
         "STUDY_DIR... (e.g. results/perturbations/geometry.json "
         "results/perturbations/calibration_3000.json results/battery_pilot_3k_cpu)")


class CalibrationError(ReadingError):
    """A geometry file or a study whose outputs the calibration cannot read."""


def geometry_angles(path) -> dict:
    """{arm: the geometry's misalignment (deg)} of the wave rows of a geometry file
    (`python -m perturbations.geometry --waves=...`): 'original', 'wave@EPS' (EPS as %g)."""
    content = read_json_object(path, "the geometry check's JSON", CalibrationError)
    rows = [r for r in content.get("rows", []) if isinstance(r, dict)
            and str(r.get("name", "")).startswith("wave")]
    angles = {r["variant"]: float(r["misalignment_deg"]) for r in rows
              if "misalignment_deg" in r and (r["variant"] == "original"
                                              or r["variant"].startswith("wave@"))}
    if "original" not in angles or len(angles) < 2:
        raise CalibrationError(f"{path}: expected the wave's rows (original and wave@EPS "
                               f"with misalignment_deg), found {sorted(angles) or 'none'}")
    return angles


def run_angles(study_dir) -> dict:
    """{run name: mean misalignment (deg) of its latents with R^2 >= MIN_R2, or None when
    none has} from STUDY_DIR/alignment.json."""
    path = pathlib.Path(study_dir) / "alignment.json"
    content = read_json_object(path, "benchmark.metrics.alignment's JSON", CalibrationError)
    out = {}
    try:
        for row in content["runs"]:
            kept = [float(m) for m, r2 in zip(row["misalignment_deg"], row["r2"])
                    if float(r2) >= MIN_R2]
            out[row["run"]] = float(np.mean(kept)) if kept else None
    except (KeyError, TypeError, ValueError) as error:
        raise CalibrationError(f"{path}: expected runs with 'run', 'misalignment_deg' and "
                               f"'r2', found {type(error).__name__}: {error}") from None
    return out


def arm_of(dataset: dict) -> str | None:
    """'original', 'wave@EPS' for the default wave, None for any other arm."""
    variant = dataset.get("variant", "original")
    if variant == "original":
        return "original"
    if variant == "wave" and "wave_periods" not in dataset \
            and "wave_direction_deg" not in dataset and "eps" in dataset:
        return f"wave@{float(dataset['eps']):g}"
    return None


def points(study_dirs, angles: dict, model: str = MODEL) -> tuple[list[dict], dict]:
    """([{'study', 'run', 'arm', 'geometry', 'observed'}], counts of runs not used by
    reason) over the finished runs of `model` in the studies."""
    found, skipped = [], {"other arm": 0, "no linear latent": 0, "not in alignment.json": 0}
    for study_dir in study_dirs:
        measured = run_angles(study_dir)
        runs = sorted(pathlib.Path(study_dir, "runs").glob("*/results.json"))
        if not runs:
            raise CalibrationError(f"{study_dir}: expected finished runs "
                                   "(runs/*/results.json), found none")
        for path in runs:
            result = read_json_object(path, "a run's results.json", CalibrationError)
            if result.get("model") != model:
                continue
            arm = arm_of(result.get("dataset") or {})
            if arm is None:
                skipped["other arm"] += 1
                continue
            if arm not in angles:
                raise CalibrationError(f"{path}: its arm {arm} has no row in the geometry "
                                       f"file (rows: {sorted(angles)}); rerun "
                                       "perturbations.geometry with that strength")
            name = path.parent.name
            if name not in measured:
                skipped["not in alignment.json"] += 1
            elif measured[name] is None:
                skipped["no linear latent"] += 1
            else:
                found.append({"study": str(study_dir), "run": name, "arm": arm,
                              "geometry": angles[arm], "observed": measured[name]})
    return found, skipped


def calibration(found: list[dict]) -> dict:
    """Per arm {'geometry', 'n', 'mean', 'ci_low', 'ci_high'} (95 % t) and the line
    observed = intercept + slope x geometry with the slope's 95 % t interval."""
    if len({p["arm"] for p in found}) < 2 or len(found) < 3:
        raise CalibrationError(f"a line needs runs of at least two arms and 3 runs, found "
                               f"{len(found)} runs of {sorted({p['arm'] for p in found})}")
    arms = {}
    for arm in sorted({p["arm"] for p in found}, key=lambda a: (a != "original", a)):
        arm_summary = mechanism.summary([p["observed"] for p in found if p["arm"] == arm])
        arms[arm] = {"geometry": next(p["geometry"] for p in found if p["arm"] == arm),
                     **{k: arm_summary[k] for k in ("n", "mean", "ci_low", "ci_high")}}
    x = np.array([p["geometry"] for p in found])
    y = np.array([p["observed"] for p in found])
    fit = sp_stats.linregress(x, y)
    half = sp_stats.t.ppf(0.975, len(x) - 2) * fit.stderr
    return {"arms": arms, "slope": float(fit.slope), "intercept": float(fit.intercept),
            "slope_ci": [float(fit.slope - half), float(fit.slope + half)],
            "r": float(fit.rvalue), "n": int(len(x))}


def markdown(result: dict) -> str:
    lines = ["| arm | geometry (deg off the axes) | runs | observed misalignment (deg), "
             "mean [95 % t CI] |", "|---|---|---|---|"]
    for arm, row in result["arms"].items():
        ci = ("" if row["ci_low"] is None
              else f" [{row['ci_low']:.1f}, {row['ci_high']:.1f}]")
        lines.append(f"| {arm} | {row['geometry']:.1f} | {row['n']} | {row['mean']:.1f}{ci} |")
    low, high = result["slope_ci"]
    sign = "+" if result["slope"] >= 0 else "−"
    lines += ["", f"Line over {result['n']} runs: observed = {result['intercept']:.1f} {sign} "
              f"{abs(result['slope']):.3f} x geometry, slope 95 % t CI [{low:.3f}, {high:.3f}], "
              f"r {result['r']:.2f} (a code that followed the geometry: slope 1, intercept 0)."]
    skipped = {k: v for k, v in result["skipped"].items() if v}
    if skipped:
        lines.append("Runs not used: " + ", ".join(f"{v} ({k})" for k, v in skipped.items())
                     + ".")
    return "\n".join(lines) + "\n"


def main(args: list[str]) -> None:
    if len(args) < 3:
        raise ReadingError(USAGE)
    geometry, out, studies = args[0], pathlib.Path(args[1]), args[2:]
    if out.suffix != ".json":
        raise ReadingError(f"{USAGE}; expected OUT_JSON to end in .json, found {out}")
    found, skipped = points(studies, geometry_angles(geometry))
    result = {"geometry": geometry, "studies": list(studies), "model": MODEL,
              "min_r2": MIN_R2, **calibration(found), "skipped": skipped, "points": found}
    write_json(out, result)
    text = markdown(result)
    with atomic_path(out.with_suffix(".md")) as tmp:
        pathlib.Path(tmp).write_text(text)
    print(text, end="")
    print(json.dumps({"written": str(out)}))
