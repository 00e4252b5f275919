"""Why a MIG dropped, per arm: did the code turn, or lose information?

MIG falls both when a code *mixes* the factors (each latent still carries them, rotated
away from the axes) and when it *loses* them. Per model and arm this module summarises
the kept (not over-pruned) runs in four columns (`MECHANISM`):

    MIG, DCI-D, DCI-I        the run's scores (benchmark/studies/report.py columns)
    misalignment             degrees, 0 aligned with the factor axes to 45 diagonal: the
                             mean over the latents that follow the two factors of the
                             battery's plane linearly (benchmark/metrics/alignment.py)

A code that turned keeps DCI-I and gains misalignment; a code that lost information loses
DCI-I. Each cell is a mean with its 95 % t interval (`summary`); beside it, the change of
the mean misalignment from the original arm with its Welch t interval (`turn`). Both are
descriptive: no study registers a hypothesis on them.

Used by the study report (benchmark/studies/report.py, for a study whose battery names a plane)
and by the audit's report (benchmark/studies/audit_report.py).
"""

from __future__ import annotations

import math
import pathlib

import numpy as np
from scipy import stats as sp_stats

from benchmark.metrics import alignment
from benchmark.statistics import stats

#: the columns of the mechanism table (report columns; 'misalignment' from the codes)
MECHANISM = ("MIG", "DCI-D", "DCI-I", "misalignment")
#: how to read the table, for the reports that print it
READING = ("mean, 95 % t CI, n kept runs; misalignment: the mean angle, in degrees, between "
           "the factor axes and each latent that follows the two factors linearly "
           f"(R² ≥ {alignment.MIN_R2:g}), 0 aligned, 45 diagonal; Δ misalignment: arm − "
           "original, Welch 95 % t CI (descriptive, not a registered test). A code that "
           "*turned* keeps DCI-I and gains misalignment; a code that *lost information* "
           "loses DCI-I")


def with_misalignment(records: list[dict], plane, study_dir=None) -> list[dict]:
    """records with values['misalignment'] (degrees, alignment.code_misalignment in the
    factor columns `plane`) where some latent follows the two factors linearly: from the
    run's evaluation codes (eval_codes.npz), or, for a published study whose codes are not
    in the repository, from STUDY_DIR/alignment.json (written by `python -m
    benchmark.metrics.alignment STUDY_DIR` in the same plane), and 'codes_read' (whether
    the run's codes or their saved angles were there to measure). Records unchanged without
    a plane."""
    if plane is None:
        return records
    saved = alignment.saved_rows(study_dir, plane)
    out = []
    for r in records:
        angle = alignment.run_misalignment(r["run_dir"], plane)
        row = saved.get(pathlib.Path(r["run_dir"]).name)
        if angle is None and row is not None:
            angle = alignment.row_misalignment(row, f"{study_dir}/alignment.json")
        values = r["values"] if angle is None else {**r["values"], "misalignment": angle}
        codes_read = (pathlib.Path(r["run_dir"], "eval_codes.npz").is_file()
                      or row is not None)
        out.append({**r, "values": values, "codes_read": codes_read})
    return out


def summary(values: list[float], bounds=None) -> dict:
    """{'n', 'mean', 'sd', 'ci_low', 'ci_high'}: the 95 % t interval of the mean (None
    below 2 values; mean None without values), cut to `bounds` (lo, hi) when given (the
    range of the quantity: a MIG's (0, 1))."""
    x = np.asarray(values, float)
    out = {"n": len(x), "mean": float(x.mean()) if len(x) else None, "sd": None,
           "ci_low": None, "ci_high": None}
    if len(x) >= 2:
        sd = float(x.std(ddof=1))
        half = float(sp_stats.t.ppf(0.5 + stats.CONFIDENCE / 2, len(x) - 1)) * sd / math.sqrt(
            len(x))
        low, high = stats.clip_interval(out["mean"] - half, out["mean"] + half, bounds)
        out.update(sd=sd, ci_low=low, ci_high=high)
    return out


def turn(original: list[float], arm: list[float]) -> dict:
    """{'diff': mean(arm) − mean(original) misalignment (degrees), 'ci_low', 'ci_high'
    (Welch 95 % t interval; None below 2 values a side), 'n_original', 'n_arm'}; diff None
    when a side has no value."""
    out = {"diff": None, "ci_low": None, "ci_high": None, "n_original": len(original),
           "n_arm": len(arm)}
    if original and arm:
        out["diff"] = float(np.mean(arm) - np.mean(original))
    if len(original) >= 2 and len(arm) >= 2:
        out["ci_low"], out["ci_high"] = stats.welch_ci(arm, original)
    return out


def _angles(runs: list[dict]) -> list[float]:
    return [r["values"]["misalignment"] for r in runs if "misalignment" in r["values"]]


def mechanism_rows(runs_by_model: dict, labels) -> list[dict]:
    """One row per model and arm (in `labels` order; arms without kept runs skipped):
    {'model', 'arm', column: `summary` of the kept runs for each MECHANISM column, 'turn':
    `turn` from the model's 'original' arm (None on original itself)}; runs_by_model:
    {model: {arm: {'kept': [records], ...}}} (battery.arm_runs)."""
    rows = []
    for model, runs in runs_by_model.items():
        original = _angles(runs.get("original", {}).get("kept", []))
        for arm in labels:
            kept = runs.get(arm, {}).get("kept", [])
            if not kept:
                continue
            rows.append({"model": model, "arm": arm, **{
                c: summary([r["values"][c] for r in kept if c in r["values"]])
                for c in MECHANISM},
                "turn": None if arm == "original" else turn(original, _angles(kept))})
    return rows


def _cell(s: dict, digits: int = 3) -> str:
    if s["mean"] is None:
        return "—"
    if s["ci_low"] is None:
        return f"{s['mean']:.{digits}f} (n {s['n']})"
    return (f"{s['mean']:.{digits}f} [{s['ci_low']:.{digits}f}, {s['ci_high']:.{digits}f}] "
            f"(n {s['n']})")


def _turn_cell(t: dict | None) -> str:
    if t is None or t["diff"] is None:
        return "—"
    if t["ci_low"] is None:
        return f"{t['diff']:+.1f}"
    return f"{t['diff']:+.1f} [{t['ci_low']:+.1f}, {t['ci_high']:+.1f}]"


def table_lines(rows: list[dict]) -> list[str]:
    """The markdown table of `mechanism_rows`."""
    lines = ["| model | arm | MIG | DCI-D | DCI-I | misalignment (°) | Δ misalignment (°) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['arm']} | " + " | ".join(
            _cell(r[c], 1 if c == "misalignment" else 3) for c in MECHANISM)
            + f" | {_turn_cell(r.get('turn'))} |")
    return lines


def csv_rows(rows: list[dict]) -> list[dict]:
    """`mechanism_rows` flattened for a CSV: one column per summary field."""
    out = []
    for r in rows:
        flat = {"model": r["model"], "arm": r["arm"]}
        for c in MECHANISM:
            flat.update({f"{c} {k}": v for k, v in r[c].items()})
        turned = r.get("turn") or {}
        flat.update({f"turn {k}": turned.get(k) for k in ("diff", "ci_low", "ci_high")})
        out.append(flat)
    return out
