"""The battery's strength, chosen by a registered rule from a dose-response pilot.

An audit calls a drop "depends on the local geometry" when the reference model's code
*turns* there: it stays a linear image of the factors' plane, rotated towards the
diagonal, with its information kept. A drop where the code stops following the factors
linearly, or loses information, is another effect. The pilot (a study of one model over
the original and the sweep's strengths, e.g. studies/battery_pilot_3k_cpu.gin) measures,
per run, from its evaluation codes in the plane's two factor columns
(benchmark/metrics/alignment.py):

    misalignment   mean angle to the nearest factor axis of the latents whose linear fit
                   on the plane has R^2 >= MIN_R2 (0 aligned, 45 diagonal; None if none)
    linear_r2      the second-largest latent R^2 (for 2 latents: the smaller one): whether
                   two latents follow the plane linearly, so that the angle means something
    factor_r2      mean over the plane's factors of the R^2 of a linear fit of the factor
                   on the whole code (rotation-invariant information; descriptive)

and MIG and DCI-I from results.json. A run whose codes are gone (a published pilot's: the
codes are not in the repository) is read from its study's alignment.json, which keeps
each run's per-latent angles and R^2 (`python -m benchmark.metrics.alignment`): its
misalignment and linear_r2 as from its codes, its factor_r2 missing (the table says of how
many runs that mean is). The rule (`choose`), per strength s > 0:

    (a) linear:  mean linear_r2 >= MIN_R2
    (b) turned:  mean misalignment >= TURNED_DEG, and above the original's by a one-sided
                 Welch test at alpha
    (c) kept:    DCI-I drop (mean original - mean s) <= DCI_I_MARGIN

and the battery's strength is the smallest s meeting all three (None when none does: the
design changes, the rule does not). `python -m benchmark.strength_choice STUDY_DIR`
prints the table and writes STUDY_DIR/strength_choice.json.

`--turn=geometry` reads (b) against the local geometry's own turn (the rule registered in
gin_configs/studies/battery_pilot_relative_cpu.gin, after six designs met no absolute
angle): (b') the mean misalignment exceeds the original's (one-sided Welch at alpha) and
reaches GEOMETRY_SHARE of the angle by which the principal axis of the images' local
geometry at s lies off the nearest factor axis (perturbations/geometry.py, computed from
the wave on the ellipse: a code cannot be asked to turn further than the images do). The
share of runs whose own misalignment reaches that angle is reported beside it. A pilot
whose sweep is the 'rotated' sprite (benchmark/data/rotated.py) reads it against the
turned sprite's own geometry.

`--units=spread` reads every angle in units of the factors' spreads (each factor divided
by its std), on the codes (alignment's spread misalignment) and the geometry (the axis of
S G S, perturbations/geometry.py) alike. A window of a factor (data.factor_ranges) needs
it: there the factors' classes differ in spread, and class steps misstate both angles.

`--informativeness=readout` reads (c) on the DCI-I of the code with its linear readout
appended (`dci_readout`, benchmark/metrics/dci.py; the rule registered in
studies/battery_pilot_readout_cpu.gin after pilot 17, whose turned codes lost held-out
DCI-I while their positions stayed linear in them): (c') readout DCI-I drop <=
DCI_I_MARGIN. The axis-aligned trees of DCI-I pay for reading a turned code, which is the
effect (b') asks for; the readout does not. Both drops are reported whichever is ruled on.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from benchmark.core.arm_label import base_of
from benchmark.core.errors import UserError, cli_main
from benchmark.metrics import alignment
from benchmark.metrics import codes as codes_lib
from benchmark.statistics import stats
from benchmark.studies import report_data
from benchmark.studies.battery import TURNED_DEG, sweep_of

#: the largest DCI-I drop at which a code still counts as keeping its information
#: (registered in studies/battery_pilot_3k_cpu.gin)
DCI_I_MARGIN = 0.05
ALPHA = 0.05
FILE_NAME = "strength_choice.json"
#: --turn=geometry: the share of the local geometry's turn a code's mean must reach
#: (registered in studies/battery_pilot_relative_cpu.gin)
GEOMETRY_SHARE = 0.5
#: the turn rules `choose` knows
TURN_RULES = ("absolute", "geometry")
#: the informativeness criterion (c) reads: {flag value: report column}
INFORMATIVENESS = {"dci": "DCI-I", "readout": "DCI-I readout"}
#: the data a geometry turn is computed for: the ellipse with the wave's defaults
ELLIPSE_BINDING = "data.fixed_factors={'shape':1,'scale':5,'orientation':0}"


def code_measures(factors, codes, columns=(0, 1), units: str = "classes") -> dict:
    """{'misalignment' (degrees or None, in `units`: alignment.UNIT_KEYS), 'linear_r2',
    'factor_r2'} of codes (n, d) against the factor columns `columns` of factors (n, k)
    (module docstring)."""
    codes = np.asarray(codes, np.float64)
    design = np.column_stack([codes - codes.mean(axis=0), np.ones(len(codes))])
    explained = []
    for column in columns:
        target = np.asarray(factors, np.float64)[:, column]
        target = target - target.mean()
        coefficients, *_ = np.linalg.lstsq(design, target, rcond=None)
        total = float((target ** 2).sum())
        explained.append(1.0 - float(((target - design @ coefficients) ** 2).sum()) / total
                         if total > 0 else 0.0)
    return {**angle_measures(alignment.linear_angles(factors, codes, columns), units=units),
            "factor_r2": float(np.mean(explained))}


def angle_measures(fit: dict, where: str = "alignment.json", units: str = "classes") -> dict:
    """{'misalignment' (degrees or None, in `units`), 'linear_r2'} of one code's per-latent
    fit ({'misalignment_deg' or 'spread_misalignment_deg', 'r2'}: alignment.linear_angles,
    or a row of alignment.json)."""
    try:
        r2 = sorted(float(q) for q in fit["r2"])
    except (KeyError, TypeError, ValueError) as error:
        raise UserError(f"{where}: expected a row with 'r2' per latent, found {fit!r:.120} "
                        f"({error})") from None
    return {"misalignment": alignment.row_misalignment(fit, where,
                                                       key=alignment.UNIT_KEYS[units][1]),
            "linear_r2": r2[-2] if len(r2) >= 2 else (r2[0] if r2 else 0.0)}


def _wave_only(bindings) -> list[str]:
    return [b for b in bindings if not b.replace(" ", "").startswith("data.wave_")]


def check_original_study(settings: dict, original: dict, original_dir,
                         model: str | None = None) -> None:
    """UserError unless the study at original_dir trained the same model (`model`'s config
    in both studies' models; every model when None) on the same data with the same
    bindings as `settings`, but for the wave arms' own (`data.wave_*`, which the original
    arm refuses: benchmark/data/__init__.py). The original study may train other models
    beside it (a floor)."""
    if model is not None:
        mine, theirs = ((s.get("models") or {}).get(model) for s in (settings, original))
        if mine is None or mine != theirs:
            raise UserError(f"--original_from={original_dir}: its study trains {model} as "
                            f"{theirs!r}, this pilot as {mine!r}; expected the same config")
    for key in (("datasets", "source") if model is not None
                else ("models", "datasets", "source")):
        if settings.get(key) != original.get(key):
            raise UserError(f"--original_from={original_dir}: its study has {key} "
                            f"{original.get(key)!r}, this pilot {settings.get(key)!r}")
    mine, theirs = _wave_only(settings.get("bindings", [])), original.get("bindings", [])
    if sorted(mine) != sorted(theirs):
        raise UserError(f"--original_from={original_dir}: its bindings differ from this "
                        f"pilot's (but for data.wave_*): {sorted(set(mine) ^ set(theirs))}")


def pilot_runs(study_dir, model: str, plane=(0, 1), original_dir=None,
               units: str = "classes") -> dict:
    """{strength: [per-run {'run', 'MIG', 'DCI-I', 'misalignment', 'linear_r2',
    'factor_r2'}]} of `model`'s kept runs in a pilot study (0.0 = original, then each
    strength of the study's sweep: its battery's 'sweep', else the one base variant of
    its non-original variants), and 'codes': whether the run's eval_codes.npz was read
    (else its saved angles in its study's alignment.json, `_run_measures`). original_dir: a
    study whose original arm is this pilot's (the same settings but for the wave arms' own,
    `check_original_study`), for a pilot that trains the wave arms alone. units: the
    misalignment's, 'classes' (class steps) or 'spread' (the factors' spreads)."""
    study_dir = pathlib.Path(study_dir)
    settings = report_data.read_study(study_dir).get("settings", {})
    if original_dir is not None:
        check_original_study(settings, report_data.read_study(original_dir).get("settings", {}),
                             original_dir, model)
    variants = settings.get("variants", [])
    bases = {base_of(v) for v in variants if v != "original"}
    battery = settings.get("battery") or ({"sweep": bases.pop()} if len(bases) == 1 else {})
    if not battery.get("sweep"):
        raise UserError(f"{study_dir}: expected a pilot study whose variants are the original "
                        f"and one sweep (e.g. wave@0.1, wave@0.2), found {variants}")
    dataset = settings.get("datasets", ["dsprites"])[0]
    labels = [(0.0, "original"), *sweep_of(battery, dataset, variants)]
    found = report_data.load_runs(study_dir)
    if original_dir is not None:
        found = [r for r in found if r["variant"] != "original"] + [
            r for r in report_data.load_runs(original_dir) if r["variant"] == "original"]
    records = [r for r in found
               if r["model"] == model and not r["overpruned"] and r["setting"] == ""]
    saved = {}
    for directory in {pathlib.Path(r["run_dir"]).parent.parent for r in records}:
        saved.update(alignment.saved_rows(directory, plane))
    out = {}
    for strength, label in labels:
        rows = []
        for record in (r for r in records if r["variant"] == label):
            rows.append({"run": pathlib.Path(record["run_dir"]).name,
                         "MIG": record["values"].get("MIG"),
                         "DCI-I": record["values"].get("DCI-I"),
                         "DCI-I readout": record["values"].get("DCI-I readout"),
                         **_run_measures(record["run_dir"], plane, saved, units)})
        out[strength] = rows
    return out


def _run_measures(run_dir, plane, saved: dict, units: str) -> dict:
    """code_measures of a run's eval_codes.npz; without it, the run's row of its study's
    alignment.json (misalignment and linear R^2; factor R^2 None: the row cannot give it)
    with 'codes' False; UserError when neither is there."""
    path = pathlib.Path(run_dir) / "eval_codes.npz"
    if path.is_file():
        arrays = codes_lib.read_npz(path, ("factors", "codes"))
        return {**code_measures(arrays["factors"], arrays["codes"], plane, units),
                "codes": True}
    saved_at = path.parent.parent.parent / "alignment.json"
    row = saved.get(path.parent.name)
    if row is None:
        raise UserError(f"{path}: expected the run's evaluation codes, or its row in "
                        f"{saved_at} (python -m benchmark.metrics.alignment STUDY_DIR, in "
                        f"the plane {list(plane)}), found neither")
    return {**angle_measures(row, str(saved_at), units), "factor_r2": None, "codes": False}


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def geometry_turns(settings: dict, strengths, units: str = "classes") -> dict:
    """{strength: degrees by which the principal axis of the images' local geometry at that
    strength of the pilot's sweep lies off the nearest factor axis} for a pilot on the
    ellipse: the wave with its default direction and the pilot's data.wave_periods (default
    8; perturbations.geometry.wave_rows), or the 'rotated' sprite (`rotation_rows`), each
    on the pilot's plane as its data.factor_strides and data.factor_ranges reduce it. units 'classes': the axis of
    the Gram per class step; 'spread': of the Gram in the factors' spreads (the whitened
    axis), the units a code's spread misalignment is read in. UserError for a window of a
    factor (data.factor_ranges) in class steps (its factors' classes differ in spread: the
    turn must be read in spreads on both the codes and the geometry), and for a pilot on
    other data or another sweep, whose geometry this does not compute."""
    from perturbations.geometry import misalignment_deg, rotation_rows, wave_rows

    bindings = [b.replace(" ", "") for b in settings.get("bindings", [])]
    if ELLIPSE_BINDING not in bindings or any(
            b.startswith("data.wave_") and not b.startswith("data.wave_periods=")
            for b in bindings):
        raise UserError("--turn=geometry computes the local geometry of the wave or the "
                        "rotated sprite on the ellipse (data.fixed_factors = {'shape': 1, "
                        "'scale': 5, 'orientation': 0}, the wave's default direction and "
                        "plane, any data.wave_periods); this pilot's bindings are "
                        f"{settings.get('bindings', [])}")
    periods = _wave_periods_of(bindings)
    bases = {base_of(v) for v in settings.get("variants", []) if v != "original"}
    sweep = (settings.get("battery") or {}).get("sweep") or (bases.pop() if len(bases) == 1
                                                              else None)
    if sweep is None:
        raise UserError("--turn=geometry needs the pilot's sweep: set study.battery's "
                        "'sweep', or sweep one variant; found variants "
                        f"{settings.get('variants', [])}")
    if sweep not in ("wave", "rotated"):
        raise UserError(f"--turn=geometry computes the geometry of the 'wave' and 'rotated' "
                        f"sweeps, found {sweep!r}")
    positive = [s for s in strengths if s > 0]
    ranges = _factor_dict_of(bindings, "factor_ranges", "{'posX': (6, 26)}")
    if ranges and units != "spread":
        raise UserError("--turn=geometry on a window of a factor (data.factor_ranges = "
                        f"{ranges}) reads turns in the factors' spreads: the windowed "
                        "factor's classes span less of the plane than the other's, so class "
                        "steps would misstate both the codes' and the geometry's angles; "
                        "pass --units=spread")
    strides = _factor_dict_of(bindings, "factor_strides", "{'posY': 2}")
    rows = (wave_rows(positive, strides, ranges, periods=periods) if sweep == "wave"
            else rotation_rows([int(s) for s in positive], strides, ranges))
    return {float(r["variant"].partition("@")[2]):
            (r["misalignment_deg"] if units == "classes"
             else misalignment_deg(r["whitened_axis_deg"]))
            for r in rows if r["variant"].startswith(f"{sweep}@")}


def _wave_periods_of(bindings: list[str]) -> float | None:
    """The pilot's data.wave_periods (bindings without spaces), None without one;
    UserError for a value that is not a positive number."""
    found = [b.partition("=")[2] for b in bindings if b.startswith("data.wave_periods=")]
    if not found:
        return None
    try:
        periods = float(found[-1])
    except ValueError:
        periods = None
    if periods is None or not periods > 0:
        raise UserError(f"data.wave_periods: expected a positive number, found {found[-1]!r}")
    return periods


def _factor_dict_of(bindings: list[str], name: str, example: str) -> dict | None:
    """The pilot's data.`name` (a dict literal; bindings without spaces), None without one."""
    from benchmark.data.subset import parse_factor_dict

    found = [b.partition("=")[2] for b in bindings if b.startswith(f"data.{name}=")]
    return parse_factor_dict(found[-1], f"data.{name}", example) if found else None


def choose(runs: dict, alpha: float = ALPHA, margin: float = DCI_I_MARGIN,
           geometry: dict | None = None, units: str = "classes",
           informativeness: str = "dci") -> dict:
    """The registered rule (module docstring) on `pilot_runs`' output: {'strengths': [one
    row per strength: 'strength', 'n', the means of every measure, 'misalignment_p' (one-
    sided Welch, None below 2 values a side), 'dci_i_drop', 'linear', 'turned', 'kept',
    'meets'], 'chosen': the smallest strength meeting (a)-(c) or None, 'rule': its text}.
    geometry: {strength: the local geometry's turn in degrees} (`geometry_turns`): criterion
    (b) reads the turn against it (--turn=geometry), and each row also has
    'geometry_turn' and 'followed_share' (runs whose misalignment reaches GEOMETRY_SHARE
    of it). units: the angles' (`pilot_runs`, `geometry_turns`), said in the rule.
    informativeness: which drop criterion (c) reads, 'dci' ('dci_i_drop') or 'readout'
    ('readout_drop', UserError when a run lacks the dci_readout score); both are in each
    row where the runs have them."""
    if informativeness not in INFORMATIVENESS:
        raise UserError(f"informativeness must be one of {', '.join(INFORMATIVENESS)}, found "
                        f"{informativeness!r}")
    if 0.0 not in runs or not runs[0.0]:
        raise UserError("the pilot has no original runs to compare the strengths with")
    base = runs[0.0]
    base_angles = [r["misalignment"] for r in base if r["misalignment"] is not None]
    base_dci = _mean(r["DCI-I"] for r in base)
    base_readout = _mean(r.get("DCI-I readout") for r in base)
    if informativeness == "readout":
        lacking = sorted(r["run"] for found in runs.values() for r in found
                         if r.get("DCI-I readout") is None)
        if lacking:
            raise UserError(f"--informativeness=readout needs every run's dci_readout score "
                            f"(run.metrics with 'dci_readout'); {len(lacking)} lack it, e.g. "
                            f"{lacking[0]}")
    rows = []
    for strength in sorted(runs):
        found = runs[strength]
        angles = [r["misalignment"] for r in found if r["misalignment"] is not None]
        row = {"strength": strength, "n": len(found),
               "n_with_angle": len(angles),
               "n_codes": sum(1 for r in found if r.get("codes", True)),
               **{key: _mean(r.get(key) for r in found)
                  for key in ("MIG", "DCI-I", "DCI-I readout", "misalignment", "linear_r2",
                              "factor_r2")}}
        if strength > 0:
            test = (stats.welch(angles, base_angles, "greater")
                    if len(angles) >= 2 and len(base_angles) >= 2 else None)
            row["misalignment_p"] = None if test is None else test["p"]
            row["dci_i_drop"] = (None if base_dci is None or row["DCI-I"] is None
                                 else base_dci - row["DCI-I"])
            row["readout_drop"] = (None if base_readout is None or row["DCI-I readout"] is None
                                   else base_readout - row["DCI-I readout"])
            row["linear"] = row["linear_r2"] is not None and row["linear_r2"] >= alignment.MIN_R2
            if geometry is None:
                needed = TURNED_DEG
            else:
                if strength not in geometry:
                    raise UserError(f"no local geometry computed for strength {strength:g}")
                row["geometry_turn"] = geometry[strength]
                needed = GEOMETRY_SHARE * geometry[strength]
                row["followed_share"] = (sum(a >= needed for a in angles) / len(angles)
                                         if angles else None)
            row["turned"] = (row["misalignment"] is not None
                             and row["misalignment"] >= needed
                             and row["misalignment_p"] is not None
                             and row["misalignment_p"] < alpha)
            drop = row["dci_i_drop" if informativeness == "dci" else "readout_drop"]
            row["kept"] = drop is not None and drop <= margin
            row["meets"] = row["linear"] and row["turned"] and row["kept"]
        rows.append(row)
    chosen = next((r["strength"] for r in rows if r.get("meets")), None)
    turn = (f"(b) mean misalignment >= {TURNED_DEG:g} deg" if geometry is None else
            f"(b') mean misalignment >= {GEOMETRY_SHARE:g} x the local geometry's turn")
    rule = (f"(a) mean linear R^2 >= {alignment.MIN_R2:g}; {turn} and above the "
            f"original's, one-sided Welch p < {alpha:g}; "
            + ("(c) DCI-I" if informativeness == "dci" else "(c') readout DCI-I")
            + f" drop <= {margin:g}; "
            "the smallest strength meeting all three"
            + ("" if units == "classes" else "; angles in the factors' spreads"))
    return {"strengths": rows, "chosen": chosen, "rule": rule, "alpha": alpha, "units": units,
            "dci_i_margin": margin, "turn": "absolute" if geometry is None else "geometry",
            "informativeness": informativeness,
            **({} if geometry is None else {"geometry_share": GEOMETRY_SHARE})}


def _cell(value, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:.{digits}g}" if abs(value) < 1e-3 and value != 0 else f"{value:.{digits}f}"


def _codes_note(row: dict) -> str:
    """' (k/n)' when only k of the n runs had their codes to give a factor R^2."""
    n_codes = row.get("n_codes", row["n"])
    return "" if n_codes == row["n"] else f" ({n_codes}/{row['n']})"


def table_lines(choice: dict) -> list[str]:
    """The choice as a markdown table and one line naming the chosen strength (with the
    local geometry's turn and the share of runs that followed half of it, under
    --turn=geometry)."""
    geometric = choice.get("turn") == "geometry"
    readout = any(r.get("DCI-I readout") is not None for r in choice["strengths"])
    extra = " geometry turn (deg) | runs following |" if geometric else ""
    read_head = " DCI-I readout | readout drop |" if readout else ""
    lines = ["| strength | runs | MIG | DCI-I | DCI-I drop |" + read_head
             + f" misalignment (deg) | p (> original) |{extra} linear R^2 | factor R^2 | "
             "(a) linear | (b) turned | (c) kept |",
             "|---" * (12 + 2 * geometric + 2 * readout) + "|"]
    for r in choice["strengths"]:
        cells = (f" {_cell(r.get('geometry_turn'), 1)} | {_cell(r.get('followed_share'), 2)} |"
                 if geometric else "")
        lines.append(
            f"| {r['strength']:g} | {r['n']} | {_cell(r['MIG'])} | {_cell(r['DCI-I'])} | "
            f"{_cell(r.get('dci_i_drop'))} |"
            + (f" {_cell(r.get('DCI-I readout'))} | {_cell(r.get('readout_drop'))} |"
               if readout else "")
            + f" {_cell(r['misalignment'], 1)} "
            f"({r['n_with_angle']}/{r['n']}) | {_cell(r.get('misalignment_p'))} |{cells} "
            f"{_cell(r['linear_r2'])} | {_cell(r['factor_r2'])}{_codes_note(r)} | "
            f"{_cell(r.get('linear'))} | "
            f"{_cell(r.get('turned'))} | {_cell(r.get('kept'))} |")
    lines.append("")
    lines.append(f"Rule: {choice['rule']}.")
    lines.append("Chosen strength: " + ("none: no strength meets the rule"
                                        if choice["chosen"] is None
                                        else f"{choice['chosen']:g}"))
    return lines


def define_flags() -> None:
    from absl import flags
    flags.DEFINE_string("model", "beta_vae", "The pilot's model.")
    flags.DEFINE_list("plane", ["0", "1"], "The two factor columns of the plane.")
    flags.DEFINE_enum("turn", "absolute", list(TURN_RULES),
                      "How criterion (b) reads a turn: 'absolute' (mean misalignment >= "
                      "22.5 deg) or 'geometry' (>= half the local geometry's own turn, "
                      "computed for the wave or the rotated sprite on the ellipse).")
    flags.DEFINE_enum("units", "classes", list(alignment.UNIT_KEYS),
                      "The angles' units, for the codes and the geometry alike: class steps, "
                      "or the factors' spreads (each factor divided by its std), which a "
                      "window of a factor (data.factor_ranges) needs.")
    flags.DEFINE_enum("informativeness", "dci", list(INFORMATIVENESS),
                      "Which drop criterion (c) reads: DCI-I ('dci') or the DCI-I of the code "
                      "with its linear readout appended ('readout', the dci_readout metric), "
                      "which does not charge a turned code for the trees' axis-aligned "
                      "splits.")
    flags.DEFINE_string("original_from", None, "A study whose original arm is this pilot's "
                        "(same settings but for data.wave_*), for a pilot that trains the "
                        "wave arms alone.")


@cli_main
def main(argv) -> None:
    from absl import app, flags

    from benchmark.core.atomic import write_json

    if len(argv) != 2:
        raise app.UsageError("usage: python -m benchmark.strength_choice STUDY_DIR")
    plane = [int(c) for c in flags.FLAGS.plane]
    original = flags.FLAGS.original_from
    units = flags.FLAGS.units
    runs = pilot_runs(argv[1], flags.FLAGS.model, plane, original, units)
    geometry = (geometry_turns(report_data.read_study(argv[1]).get("settings", {}), list(runs),
                               units)
                if flags.FLAGS.turn == "geometry" else None)
    choice = choose(runs, geometry=geometry, units=units,
                    informativeness=flags.FLAGS.informativeness)
    choice.update(model=flags.FLAGS.model, plane=plane, original_from=original)
    print("\n".join(table_lines(choice)))
    path = write_json(pathlib.Path(argv[1]) / FILE_NAME, json.loads(json.dumps(choice)))
    print(path)

