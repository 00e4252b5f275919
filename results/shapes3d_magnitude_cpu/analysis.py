"""S1-S3 of DESIGN.md (registered with it, before the runs): active dims per arm from
runs/*/results.json, one-sided exact Mann-Whitney tests (S1, S2; Holm within family A)
and TOST within ±1 dim (S3). Writes analysis.json beside this file and prints it.

    python results/shapes3d_magnitude_cpu/analysis.py
"""

import json
import pathlib
import sys

from scipy import stats as scipy_stats

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmark import stats  # noqa: E402
from benchmark.atomic import write_json  # noqa: E402

ALPHA, MARGIN = 0.05, 1.0
ARMS = ("original", "modified", "noisy@0.2787", "noisy@0.175", "noisy@0.2627")


def active_dims() -> dict:
    """{arm: [active dims of seeds 0-4, in seed order]}; an arm with another count of
    finished runs is an error (the tests need the registered 5)."""
    found = {arm: {} for arm in ARMS}
    for path in sorted((HERE / "runs").glob("*/results.json")):
        result = json.loads(path.read_text())
        dataset = result["dataset"]
        variant = dataset.get("variant", "original")     # older original runs omit it
        arm = variant + (f"@{dataset['eps']:g}" if variant == "noisy" else "")
        if arm in found:
            found[arm][int(result["seed"])] = int(result["scalars"]["health/active_units"])
    for arm, seeds in found.items():
        if sorted(seeds) != list(range(5)):
            raise SystemExit(f"{arm}: expected the finished runs of seeds 0-4, found seeds "
                             f"{sorted(seeds)}")
    return {arm: [seeds[s] for s in range(5)] for arm, seeds in found.items()}


def fewer(a, b) -> float:
    """p of the exact one-sided Mann-Whitney test, H1: a tends to be smaller than b."""
    return float(scipy_stats.mannwhitneyu(a, b, alternative="less", method="exact").pvalue)


def main() -> dict:
    dims = active_dims()
    family = {"S1": fewer(dims["noisy@0.175"], dims["original"]),
              "S2": fewer(dims["modified"], dims["noisy@0.175"])}
    adjusted = dict(zip(family, stats.holm(list(family.values()))))
    out = {"active_dims": dims, "alpha": ALPHA, "tests": {}}
    for key, claim in (("S1", "fewer active dims on noisy@0.175 than on original"),
                       ("S2", "fewer active dims on modified than on noisy@0.175")):
        out["tests"][key] = {"claim": claim, "test": "exact one-sided Mann-Whitney, Holm "
                             "over S1 and S2", "p": family[key], "p_holm": float(adjusted[key]),
                             "supported": bool(adjusted[key] < ALPHA)}
    modified, matched = dims["modified"], dims["noisy@0.2627"]
    s3 = {"claim": "modified and noisy@0.2627 equivalent in mean active dims within ±1",
          "test": "TOST (two one-sided Welch)", "margin": MARGIN}
    if len(set(modified)) == 1 and len(set(matched)) == 1:
        s3.update(testable=False, supported=False,
                  why="both arms are constant: a t-based test needs spread")
    else:
        s3.update(testable=True, **stats.tost(modified, matched, MARGIN, ALPHA))
        s3["supported"] = bool(s3.pop("equivalent"))
    out["tests"]["S3"] = s3
    write_json(HERE / "analysis.json", out)
    return out


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
