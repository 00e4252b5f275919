"""Restores the evaluation codes (eval_codes.npz, not kept in git) of the original arm's
runs from a bit-identical retrain, so that the alignment angle of the original arm rests on
all ten pool runs and not on the four whose codes survived a machine change (seeds 2, 7, 8,
9; two of them the game's references, an unrepresentative pair).

    python -m benchmark.study --gin_file=studies/restarts_ellipse3_cpu.gin \
        --gin_bindings="study.output_dir = 'runs/restarts_ellipse3_retrain'" \
        --gin_bindings="study.seeds = [0, 1, 3, 4, 5, 6]" --workers=2
    python results/manipulation_ellipse3_cpu/restore_codes.py
    python -m benchmark.metrics.alignment results/manipulation_ellipse3_cpu --columns=1,2

A retrain's codes are copied only when the retrain repeats the published run exactly: the
same configuration fingerprint, the same results.json scalars (losses, health, metrics),
the same curves.json and the same arrays.npz arrays; otherwise it is named and nothing is
copied. Seeds 2, 7, 8 and 9 are not retrained: their angles are in alignment.json already.
Run from the repository root.
"""

import json
import pathlib
import shutil
import sys

import numpy as np

RETRAIN = pathlib.Path("runs/restarts_ellipse3_retrain/runs")
STUDY = pathlib.Path("results/manipulation_ellipse3_cpu/runs")


def identical(retrain: pathlib.Path, published: pathlib.Path) -> bool:
    read = lambda run, name: json.loads((run / name).read_text())  # noqa: E731
    if read(retrain, "fingerprint.json") != read(published, "fingerprint.json"):
        return False
    if read(retrain, "results.json")["scalars"] != read(published, "results.json")["scalars"]:
        return False
    if read(retrain, "curves.json") != read(published, "curves.json"):
        return False
    with np.load(retrain / "arrays.npz", allow_pickle=False) as a, \
            np.load(published / "arrays.npz", allow_pickle=False) as b:
        return sorted(a.files) == sorted(b.files) and all(
            np.array_equal(a[k], b[k]) for k in a.files)


def main() -> int:
    if not RETRAIN.is_dir():
        print(f"no retrain in {RETRAIN}: run the study command of this file's docstring")
        return 1
    differ = 0
    for run in sorted(RETRAIN.iterdir()):
        target = STUDY / run.name
        if not (run / "eval_codes.npz").is_file() or not (target / "results.json").is_file():
            continue
        if (target / "eval_codes.npz").is_file():
            print(f"{run.name}: codes already there")
        elif identical(run, target):
            shutil.copy2(run / "eval_codes.npz", target / "eval_codes.npz")
            print(f"{run.name}: identical retrain, codes copied")
        else:
            differ += 1
            print(f"{run.name}: the retrain DIFFERS from the published run; not copied")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
