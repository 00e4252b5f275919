"""S1-S3 of the Shapes3D magnitude study, by the design registered in
results/shapes3d_magnitude_cpu/DESIGN.md with gin_configs/studies/shapes3d_magnitude_cpu.gin, before
the runs. Outcome: a run's active dims (`health/active_units` of runs/*/results.json). The
registered tests:

    S1 (family A): fewer active dims on noisy@0.175 than on original (one-sided
       Mann-Whitney, exact).
    S2 (family A): fewer active dims on modified than on noisy@0.175 (one-sided
       Mann-Whitney, exact).
    Family A is Holm-adjusted at alpha 0.05.
    S3 (alone, alpha 0.05): modified and noisy@0.2627 are equivalent in mean active dims
       within +-1 dim (TOST, two one-sided Welch tests, `benchmark.statistics.stats.tost`).
    If both S3 arms are constant (every run the same count), the TOST is undefined and S3
    is reported as not testable, with the counts.

and the reading fixed with them: "S2 not supported -> 'not shown' ..., never 'no
difference'. S3 not supported -> 'equivalence not shown'." Original runs written before
the suite recorded `variant` omit it and are read as 'original' (the one change made after
the runs).

    python -m benchmark.readings magnitude results/shapes3d_magnitude_cpu

Writes STUDY_DIR/analysis.json (atomically) and prints the active dims and S1-S3.
"""

from __future__ import annotations

import json
import pathlib

from scipy import stats as scipy_stats

from benchmark.core.atomic import write_json
from benchmark.readings import ReadingError
from benchmark.statistics import stats

ALPHA, MARGIN = 0.05, 1.0
ARMS = ("original", "modified", "noisy@0.2787", "noisy@0.175", "noisy@0.2627")
#: the registered seeds of every arm
SEEDS = tuple(range(5))
#: family A: (key, arm expected to have fewer active dims, the arm it is compared with)
FAMILY_A = (("S1", "noisy@0.175", "original"), ("S2", "modified", "noisy@0.175"))
#: S3: the two arms whose mean active dims should be equivalent within MARGIN
EQUIVALENT = ("modified", "noisy@0.2627")
USAGE = ("usage: python -m benchmark.readings magnitude STUDY_DIR "
         "(e.g. results/shapes3d_magnitude_cpu)")


class MagnitudeError(ReadingError):
    """The study's runs are missing, incomplete, or their results.json malformed."""


def arm_of(dataset: dict) -> str:
    """A run's arm from its results.json `dataset`: the variant ('original' when older
    runs omit it), with '@eps' (as %g) for noise."""
    variant = dataset.get("variant", "original")
    return variant + (f"@{dataset['eps']:g}" if variant == "noisy" else "")


def read_run(path: pathlib.Path) -> tuple[str, int, int]:
    """(arm, seed, active dims) of one results.json; MagnitudeError if it lacks them."""
    try:
        result = json.loads(path.read_text())
        return (arm_of(result["dataset"]), int(result["seed"]),
                int(result["scalars"]["health/active_units"]))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError,
            ValueError) as error:
        raise MagnitudeError(f"{path}: expected a run's results.json with dataset, seed "
                             f"and scalars['health/active_units'], found "
                             f"{type(error).__name__}: {error}") from error


def active_dims(study_dir) -> dict:
    """{arm: [active dims of seeds 0-4, in seed order]} for each of ARMS from
    STUDY_DIR/runs/*/results.json (runs of other arms are ignored); MagnitudeError when an
    arm has another set of finished seeds (the tests need the registered 5)."""
    if not pathlib.Path(study_dir).is_dir():
        raise MagnitudeError(f"expected the magnitude study's directory (runs/*/"
                             f"results.json), found no directory {study_dir}")
    found = {arm: {} for arm in ARMS}
    for path in sorted(pathlib.Path(study_dir).glob("runs/*/results.json")):
        arm, seed, dims = read_run(path)
        if arm in found:
            found[arm][seed] = dims
    for arm, seeds in found.items():
        if sorted(seeds) != list(SEEDS):
            raise MagnitudeError(f"{study_dir}: {arm}: expected the finished runs of seeds "
                                 f"{SEEDS[0]}-{SEEDS[-1]} in runs/*/results.json, found "
                                 f"seeds {sorted(seeds)}")
    return {arm: [seeds[s] for s in SEEDS] for arm, seeds in found.items()}


def fewer(a, b) -> float:
    """p of the exact one-sided Mann-Whitney test, H1: a tends to be smaller than b
    (a, b: 1-D sequences of counts)."""
    return float(scipy_stats.mannwhitneyu(a, b, alternative="less", method="exact").pvalue)


def family_a(dims: dict) -> dict:
    """{'S1', 'S2': {'claim', 'test', 'p', 'p_holm' (Holm over the two), 'supported'
    (p_holm < ALPHA)}} from {arm: active dims}."""
    raw = {key: fewer(dims[low], dims[high]) for key, low, high in FAMILY_A}
    adjusted = dict(zip(raw, stats.holm(list(raw.values()))))
    return {key: {"claim": f"fewer active dims on {low} than on {high}",
                  "test": "exact one-sided Mann-Whitney, Holm over S1 and S2",
                  "p": raw[key], "p_holm": float(adjusted[key]),
                  "supported": bool(adjusted[key] < ALPHA)}
            for key, low, high in FAMILY_A}


def s3(dims: dict) -> dict:
    """S3 from {arm: active dims}: {'claim', 'test', 'margin', 'testable', 'supported'}
    and either `stats.tost`'s fields (less 'equivalent', which is 'supported') or, when
    both arms are constant, 'why' it is not testable."""
    first, second = (dims[arm] for arm in EQUIVALENT)
    out = {"claim": f"{EQUIVALENT[0]} and {EQUIVALENT[1]} equivalent in mean active dims "
                    f"within ±{MARGIN:g}",
           "test": "TOST (two one-sided Welch)", "margin": MARGIN}
    if len(set(first)) == 1 and len(set(second)) == 1:
        return {**out, "testable": False, "supported": False,
                "why": "both arms are constant: a t-based test needs spread"}
    out.update(testable=True, **stats.tost(first, second, MARGIN, ALPHA))
    out["supported"] = bool(out.pop("equivalent"))
    return out


def analysis(dims: dict) -> dict:
    """analysis.json's content: {'active_dims', 'alpha', 'tests': {'S1', 'S2', 'S3'}}."""
    return {"active_dims": dims, "alpha": ALPHA, "tests": {**family_a(dims), "S3": s3(dims)}}


def lines(out: dict) -> list[str]:
    """The printed reading: each arm's active dims, then each test's p and verdict."""
    text = [f"{arm}: active dims {dims}" for arm, dims in out["active_dims"].items()]
    for key, test in out["tests"].items():
        if "p_holm" in test:
            numbers = f"p {test['p']:.3g}, Holm {test['p_holm']:.3g}"
        elif test.get("testable"):
            numbers = (f"difference {test['diff']:+.3g}, {100 * (1 - 2 * ALPHA):g} % CI "
                       f"[{test['ci_low']:+.3g}, {test['ci_high']:+.3g}], TOST p "
                       f"{test['p']:.3g}")
        else:
            numbers = f"not testable ({test['why']})"
        text.append(f"{key} ({test['claim']}): {numbers}; supported: {test['supported']}")
    return text


def main(args: list[str]) -> None:
    """`python -m benchmark.readings magnitude STUDY_DIR`: writes STUDY_DIR/analysis.json
    and prints the reading."""
    if len(args) != 1:
        raise MagnitudeError(f"{USAGE}; found {len(args)} arguments {args}")
    out = analysis(active_dims(args[0]))
    write_json(pathlib.Path(args[0]) / "analysis.json", out)
    print(*lines(out), sep="\n")
