"""Angles of a code in the plane of two factors: the mechanism check of the oracle studies.

MIG cannot tell *why* a code of two factors is entangled. When each latent is close to a
linear function of the two factors a, b (the oracle studies' beta-VAEs: R^2 0.97-0.99),
the code is a rotation of the factor axes and its angle says it all: 0 / 90 degrees is
aligned, 45 is fully mixed. Per latent j, on a sample (factors (n, k), codes (n, d)):

    z_j - mean ~ g_a (a - mean) + g_b (b - mean)        (least squares)
    angle_j = atan2(g_b, g_a) in degrees, in [0, 180)
    misalignment_j = distance of angle_j to the nearest axis (0, 90, 180), in [0, 45]
    r2_j = the fit's R^2 (how linear the latent is; angles of latents with low R^2 mean
           little)

The angle depends on the factors' units (class steps). Where the two factors have the same
number of classes it is the same in any common unit; where they do not (a strided or
windowed plane, benchmark/data/subset.py), a latent mixing the two factors equally in
units of their spread reads as nearly aligned with the wider one in class steps. So each
row also holds `spread_angle_deg` and `spread_misalignment_deg`: the same fit with each
factor divided by its std over the sample (the units a latent of unit prior variance takes
a factor in; equal to the class angles on a square grid).

A latent that is not linear in the plane (R^2 < MIN_R2) has no angle, but it still follows
something: `class_share` is, per latent, the share of its variance that each factor's class
means explain (between-class over total variance, in [0, 1]; a latent of one factor, linear
or not, has share 1 for it and 0 for the other on a full grid).

`python -m benchmark.metrics.alignment STUDY_DIR` reads every run's eval_codes.npz
(written by benchmark.run) and writes STUDY_DIR/alignment.json (one row per run). The
codes are not in the repository (.gitignore), so a later call, in a clone that lacks some,
keeps the rows of the earlier alignment.json for the runs whose codes are gone (same plane
only; `merge_rows`) instead of dropping them.
"""

from __future__ import annotations

import json
import pathlib
from typing import Sequence

import numpy as np

from benchmark.core.errors import cli_main, run_command
from benchmark.metrics import codes as codes_lib


def linear_angles(factors, codes, columns: Sequence[int] = (0, 1)) -> dict:
    """{'angle_deg', 'misalignment_deg', 'r2', 'spread_angle_deg',
    'spread_misalignment_deg'}: lists of d floats (module docstring) for codes (n, d)
    against the factor columns `columns` (two indices) of factors (n, k)."""
    if len(columns) != 2:
        raise codes_lib.MetricInputError(f"alignment: expected two factor columns, found "
                                         f"{list(columns)}")
    factors, codes = codes_lib.check_codes(factors, codes, 3, "alignment")
    plane = factors[:, list(columns)].astype(np.float64)
    gradients, r2 = linear_fit(plane, codes)                             # (2, d), (d,)
    angles = np.degrees(np.arctan2(gradients[1], gradients[0])) % 180.0
    spread_angles = angles_in_spreads(angles, plane.std(axis=0))
    return {"angle_deg": angles.tolist(), "misalignment_deg": _to_axis(angles).tolist(),
            "r2": r2.tolist(), "spread_angle_deg": spread_angles.tolist(),
            "spread_misalignment_deg": _to_axis(spread_angles).tolist()}


def linear_fit(factors, codes) -> tuple[np.ndarray, np.ndarray]:
    """(gradients (k, d), r2 (d,)): the least-squares fit of each centred latent of codes
    (n, d) on the centred factors (n, k), float arrays, and its R^2 (0 for a constant
    latent)."""
    plane = np.asarray(factors, np.float64)
    plane = plane - plane.mean(axis=0)
    centred = codes - codes.mean(axis=0)
    gradients, *_ = np.linalg.lstsq(plane, centred, rcond=None)
    residual = ((centred - plane @ gradients) ** 2).sum(axis=0)
    total = (centred ** 2).sum(axis=0)
    return gradients, np.where(total > 0, 1.0 - residual / np.where(total > 0, total, 1.0), 0.0)


def angles_in_spreads(angle_deg, spreads) -> np.ndarray:
    """Angles (degrees, [0, 180)) of latents' gradients in class steps, read in units of the
    factors' spreads (two stds): z = g . f = (g * spread) . (f / spread)."""
    angle = np.radians(np.asarray(angle_deg, np.float64))
    return np.degrees(np.arctan2(np.sin(angle) * spreads[1],
                                 np.cos(angle) * spreads[0])) % 180.0


def class_shares(factors, codes, columns: Sequence[int] = (0, 1)) -> list[list[float]]:
    """Per latent of codes (n, d), [share of factor a, share of factor b] (module docstring)
    for the factor columns `columns` of factors (n, k); a constant latent gets [0, 0]."""
    factors, codes = codes_lib.check_codes(factors, codes, 3, "alignment")
    centred = codes - codes.mean(axis=0)
    total = (centred ** 2).mean(axis=0)
    shares = []
    for col in columns:
        _, group = np.unique(factors[:, col], return_inverse=True)
        counts = np.bincount(group).astype(np.float64)
        means = np.stack([np.bincount(group, weights=centred[:, j]) / counts
                          for j in range(codes.shape[1])], axis=1)          # (classes, d)
        between = (counts[:, None] * means ** 2).sum(axis=0) / len(codes)
        shares.append(np.where(total > 0, between / np.where(total > 0, total, 1.0), 0.0))
    return np.stack(shares, axis=1).tolist()


def _to_axis(angles: np.ndarray) -> np.ndarray:
    """Distance in [0, 45] of angles (degrees) to the nearest axis."""
    return np.abs(((angles + 45.0) % 90.0) - 45.0)


#: a row's misalignments in units of the factors' spreads (module docstring)
SPREAD_KEY = "spread_misalignment_deg"
#: the angle units a reading can be in: {units: (row key of the angles, of the misalignments)}
UNIT_KEYS = {"classes": ("angle_deg", "misalignment_deg"),
             "spread": ("spread_angle_deg", SPREAD_KEY)}
#: a latent's angle counts towards a code's misalignment only when its linear fit on the
#: two factors explains this much of its variance (an inactive latent's angle is noise)
MIN_R2 = 0.5


def code_misalignment(factors, codes, columns: Sequence[int] = (0, 1),
                      min_r2: float = MIN_R2) -> float | None:
    """Mean misalignment (degrees, 0 aligned with the factor axes to 45 diagonal) of the
    latents of codes (n, d) whose linear fit on the factor columns has R^2 >= min_r2; None
    when no latent does (the code does not follow the two factors linearly)."""
    fit = linear_angles(factors, codes, columns)
    kept = [m for m, r2 in zip(fit["misalignment_deg"], fit["r2"]) if r2 >= min_r2]
    return float(np.mean(kept)) if kept else None


def run_misalignment(run_dir, columns: Sequence[int] = (0, 1),
                     min_r2: float = MIN_R2) -> float | None:
    """`code_misalignment` of a run's evaluation codes (RUN_DIR/eval_codes.npz, written by
    benchmark.run); None when the run has no such file."""
    path = pathlib.Path(run_dir) / "eval_codes.npz"
    if not path.is_file():
        return None
    factors, codes = _read_codes(path)
    return code_misalignment(factors, codes, columns, min_r2)


def _read_codes(path: pathlib.Path) -> tuple[np.ndarray, np.ndarray]:
    arrays = codes_lib.read_npz(path, ("factors", "codes"))
    return arrays["factors"], arrays["codes"]


def study_alignment(study_dir, columns: Sequence[int] = (0, 1)) -> list[dict]:
    """One row per run directory under STUDY_DIR/runs with an eval_codes.npz: its name,
    and `linear_angles` of its codes; codes read with allow_pickle=False."""
    rows = []
    for path in sorted(pathlib.Path(study_dir).glob("runs/*/eval_codes.npz")):
        factors, codes = _read_codes(path)
        rows.append({"run": path.parent.name, **linear_angles(factors, codes, columns),
                     "class_share": class_shares(factors, codes, columns)})
    return rows


def saved_rows(study_dir, columns: Sequence[int] = (0, 1)) -> dict:
    """{run name: row} of STUDY_DIR/alignment.json (the angles of runs whose codes are not
    kept: a published study's), when it was measured in the factor columns `columns`; {}
    with a warning when it was measured in another plane, {} when there is no such file;
    MetricInputError for unreadable content."""
    from absl import logging

    path = None if study_dir is None else pathlib.Path(study_dir) / "alignment.json"
    if path is None or not path.is_file():
        return {}
    try:
        content = json.loads(path.read_text())
        if list(content["columns"]) != list(columns):
            logging.warning("%s measures the factor columns %s, not the plane %s: its angles "
                            "are not used (rerun python -m benchmark.metrics.alignment %s "
                            "--columns=%s)", path, list(content["columns"]), list(columns),
                            path.parent, ",".join(str(c) for c in columns))
            return {}
        return {row["run"]: row for row in content["runs"]}
    except (ValueError, KeyError, TypeError) as error:
        raise codes_lib.MetricInputError(
            f"{path}: expected the JSON that benchmark.metrics.alignment writes, found "
            f"unreadable content ({error})") from None


def row_misalignment(row: dict, where: str = "alignment.json",
                     min_r2: float = MIN_R2, key: str = "misalignment_deg") -> float | None:
    """`code_misalignment` from a saved row (`key`, 'misalignment_deg' in class steps or
    'spread_misalignment_deg' in the factors' spreads, and 'r2', one per latent): the mean
    over the latents with R^2 >= min_r2, None when none has."""
    try:
        kept = [m for m, r2 in zip(row[key], row["r2"]) if r2 >= min_r2]
    except (KeyError, TypeError) as error:
        raise codes_lib.MetricInputError(
            f"{where}: expected rows with {key!r} and 'r2' (python -m "
            f"benchmark.metrics.alignment STUDY_DIR writes them from the runs' codes; rows "
            f"written before the spread units have only class steps), found {row!r:.120} "
            f"({error})") from None
    return float(np.mean(kept)) if kept else None


def merge_rows(fresh: list[dict], previous_path, columns: Sequence[int]) -> list[dict]:
    """fresh rows (`study_alignment`), plus the rows of a previous alignment.json at
    previous_path for runs that fresh lacks (their codes are gone), sorted by run name.
    A previous file in another plane is an error (its rows would mean other angles): the
    user moves it or reruns in its plane. No previous file: fresh unchanged."""
    path = pathlib.Path(previous_path)
    if not path.is_file():
        return fresh
    try:
        previous = json.loads(path.read_text())
        old_columns, old_rows = [int(c) for c in previous["columns"]], list(previous["runs"])
        names = [str(row["run"]) for row in old_rows]
    except (ValueError, KeyError, TypeError) as error:
        raise codes_lib.MetricInputError(
            f"{path}: expected the JSON this command writes ({{'columns', 'runs': [{{'run', "
            f"...}}]}}), found unreadable content ({error}); move it away to start "
            "afresh") from None
    if old_columns != list(columns):
        raise codes_lib.MetricInputError(
            f"{path}: holds angles in the factor columns {old_columns}, this call asks for "
            f"{list(columns)}; rerun with --columns={','.join(map(str, old_columns))} or "
            "move the file away")
    have = {row["run"] for row in fresh}
    kept = [row for name, row in zip(names, old_rows) if name not in have]
    return sorted(fresh + kept, key=lambda row: row["run"])


def update_study_alignment(study_dir, columns: Sequence[int] = (0, 1)) -> tuple[list[dict], int]:
    """Brings STUDY_DIR/alignment.json up to date: the rows of every run with its codes
    (`study_alignment`) merged with the earlier file's rows of runs whose codes are gone
    (`merge_rows`), written atomically. Returns (rows written, how many were kept from the
    earlier file); writes nothing and returns ([], 0) when no run has its codes."""
    from benchmark.core.atomic import write_json

    fresh = study_alignment(study_dir, columns)
    if not fresh:
        return [], 0
    path = pathlib.Path(study_dir) / "alignment.json"
    rows = merge_rows(fresh, path, columns)
    write_json(path, {"columns": [int(c) for c in columns], "runs": rows})
    return rows, len(rows) - len(fresh)


def _shares_text(shares) -> str:
    return " ".join("/".join(f"{v:.2f}" for v in latent) for latent in shares)


def define_flags() -> None:
    from absl import flags
    flags.DEFINE_list("columns", ["0", "1"], "The two factor columns of the plane.")


@cli_main
def main(argv) -> None:
    from absl import app, flags

    if len(argv) != 2:
        raise app.UsageError("usage: python -m benchmark.metrics.alignment STUDY_DIR")
    columns = [int(c) for c in flags.FLAGS.columns]
    rows, kept = update_study_alignment(argv[1], columns)
    if not rows:
        raise codes_lib.MetricInputError(f"{argv[1]}: no runs/*/eval_codes.npz found")
    if kept:
        print(f"kept {kept} row(s) of the earlier alignment.json for runs "
              "whose eval_codes.npz is gone")
    for row in rows:
        print(f"{row['run']:48s} angles {' '.join(f'{a:5.1f}' for a in row['angle_deg'])}"
              f"  misalignment {' '.join(f'{m:4.1f}' for m in row['misalignment_deg'])}"
              f" (in spreads {' '.join(f'{m:4.1f}' for m in row.get(SPREAD_KEY, []))})"
              f"  R2 {' '.join(f'{r:.2f}' for r in row['r2'])}"
              f"  class shares {_shares_text(row.get('class_share', []))}")
    print(json.dumps({"written": str(pathlib.Path(argv[1]) / "alignment.json")}))


if __name__ == "__main__":
    define_flags()
    run_command(main)
