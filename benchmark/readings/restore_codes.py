"""A published study's evaluation codes (eval_codes.npz, not kept in git) restored from a
bit-identical retrain of its runs.

    python -m benchmark.readings restore_codes PUBLISHED_STUDY RETRAIN_DIR

Both directories are a study's output directory (its runs under runs/<run name>/). Made
for the original arm of results/manipulation_ellipse3_cpu, so that its alignment angle
rests on all ten pool runs and not on the four whose codes survived a machine change
(seeds 2, 7, 8, 9; two of them the game's references, an unrepresentative pair):

    python -m benchmark.study --gin_file=studies/restarts_ellipse3_cpu.gin \\
        --gin_bindings="study.output_dir = 'runs/restarts_ellipse3_retrain'" \\
        --gin_bindings="study.seeds = [0, 1, 3, 4, 5, 6]" --workers=2
    python -m benchmark.readings restore_codes results/manipulation_ellipse3_cpu \\
        runs/restarts_ellipse3_retrain
    python -m benchmark.metrics.alignment results/manipulation_ellipse3_cpu --columns=1,2

The rule: a retrained run's codes are copied into the published run of the same name only
when the retrain repeats it exactly: the same configuration fingerprint (fingerprint.json),
the same results.json scalars (losses, health, metrics), the same curves.json (or neither
run has one: it is written only with run.eval_every) and the same
arrays.npz arrays (names, dtypes, shapes and bytes). Otherwise the run is named with what
differs and nothing of it is copied; so is a retrained run that is unfinished (no
eval_codes.npz) or that the published study does not have. A published run that already
has its codes keeps them. Every run is printed with its outcome; when any run is named,
the command ends with one error line listing them (exit status 2) after copying the
others.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import zipfile

import numpy as np

from benchmark.core.atomic import atomic_path
from benchmark.readings import ReadingError

#: the evaluation codes a run writes (benchmark.run) and a study does not publish
CODES = "eval_codes.npz"
#: outcomes that need nothing more of the user
RESTORED = ("codes copied", "codes already there")


class RestoreError(ReadingError):
    """The arguments are not two study directories, or some runs were not restored."""


def json_difference(retrain: pathlib.Path, published: pathlib.Path, name: str,
                    part=lambda found: found, optional: bool = False) -> str | None:
    """None when `part` of the JSON file `name` is the same in both run directories, else
    why not (a file missing or unreadable on one side, or '<name> differs'). optional: a
    file that neither run has is no difference (curves.json, written only by a run with
    run.eval_every)."""
    if optional and not (retrain / name).exists() and not (published / name).exists():
        return None
    found = []
    for side, run in (("retrain", retrain), ("published run", published)):
        try:
            found.append(part(json.loads((run / name).read_text())))
        except FileNotFoundError:
            return f"the {side} has no {name}"
        except (OSError, ValueError, KeyError, TypeError) as error:
            return f"the {side}'s {name} is unreadable ({type(error).__name__}: {error})"
    return None if found[0] == found[1] else f"{name} differs"


def same_array(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays are bit-identical: same dtype, shape and bytes (NaN equals a NaN
    of the same bits)."""
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def arrays_difference(retrain: pathlib.Path, published: pathlib.Path) -> str | None:
    """None when both runs' arrays.npz hold the same array names with bit-identical arrays
    (read without pickle), else why not."""
    try:
        with np.load(retrain / "arrays.npz", allow_pickle=False) as a, \
                np.load(published / "arrays.npz", allow_pickle=False) as b:
            if sorted(a.files) != sorted(b.files):
                return (f"arrays.npz holds {sorted(a.files)} in the retrain, "
                        f"{sorted(b.files)} in the published run")
            differ = [k for k in sorted(a.files) if not same_array(a[k], b[k])]
    except FileNotFoundError as error:
        return f"no arrays.npz: {error.filename}"
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        return f"arrays.npz unreadable ({type(error).__name__}: {error})"
    return f"arrays.npz differs in {differ}" if differ else None


def difference(retrain: pathlib.Path, published: pathlib.Path) -> str | None:
    """None when the retrained run repeats the published one exactly (fingerprint.json,
    results.json's 'scalars', curves.json, arrays.npz), else the first thing that differs."""
    return (json_difference(retrain, published, "fingerprint.json")
            or json_difference(retrain, published, "results.json",
                               lambda found: found["scalars"])
            or json_difference(retrain, published, "curves.json", optional=True)
            or arrays_difference(retrain, published))


def restore_run(retrain: pathlib.Path, published: pathlib.Path) -> str:
    """Copies retrain/eval_codes.npz into `published` (atomically) when the rule allows it;
    returns the outcome: one of RESTORED, or why the run is named and nothing was copied."""
    if not (published / "results.json").is_file():
        return "not in the published study (no results.json); nothing copied"
    if (published / CODES).is_file():
        return "codes already there"
    if not (retrain / CODES).is_file():
        return f"the retrain has no {CODES} (unfinished?); nothing copied"
    why = difference(retrain, published)
    if why:
        return f"the retrain DIFFERS from the published run: {why}; nothing copied"
    with atomic_path(published / CODES, ".npz") as tmp:
        shutil.copyfile(retrain / CODES, tmp)
    return "codes copied"


def restore(study: pathlib.Path, retrain: pathlib.Path) -> dict[str, str]:
    """{run name: outcome} for every run directory under retrain/runs, in name order,
    each restored into study/runs/<run name> by `restore_run`."""
    return {run.name: restore_run(run, study / "runs" / run.name)
            for run in sorted((retrain / "runs").iterdir()) if run.is_dir()}


def study_dirs(args: list[str]) -> tuple[pathlib.Path, pathlib.Path]:
    """(published study, retrain) from the two arguments, each a directory with runs/;
    RestoreError saying what was found otherwise."""
    if len(args) != 2:
        raise RestoreError("usage: python -m benchmark.readings restore_codes "
                           "PUBLISHED_STUDY RETRAIN_DIR; expected two arguments, found "
                           f"{len(args)}: {args}")
    dirs = tuple(pathlib.Path(a) for a in args)
    for role, path in zip(("PUBLISHED_STUDY", "RETRAIN_DIR"), dirs):
        if not (path / "runs").is_dir():
            raise RestoreError(f"expected {role} to be a study's output directory with "
                               f"runs/, found {path} "
                               f"{'without runs/' if path.is_dir() else 'is no directory'}")
    return dirs


def main(args: list[str]) -> None:
    """Restores the codes (`restore`), prints each run's outcome, and raises RestoreError
    naming the runs not restored, if any."""
    study, retrain = study_dirs(args)
    outcomes = restore(study, retrain)
    for run, outcome in outcomes.items():
        print(f"{run}: {outcome}")
    named = [run for run, outcome in outcomes.items() if outcome not in RESTORED]
    if named:
        raise RestoreError(f"expected every retrained run to repeat its published run, "
                           f"found {len(named)} not restored (nothing of them copied): "
                           f"{', '.join(named)}")
