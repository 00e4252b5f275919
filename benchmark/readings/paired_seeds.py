"""Each arm of a study read against the original seed by seed: exploratory, not a test.

    python -m benchmark.readings paired_seeds STUDY_DIR [MODEL]

A study's runs of one seed share the model's initial weights and the batch order across
arms, so an arm that barely changes the images follows the original's run of its seed,
and the spread between seeds cancels in the per-seed difference. For MODEL (default
beta_vae) and each of its arms other than original, over the seeds both have (kept runs,
not over-pruned), per metric (MIG, DCI-D, DCI-I): the mean per-seed drop original − arm,
its sd, the one-sided paired t p (drop > 0) and the 95 % paired t interval, how many
seeds dropped, and the Pearson correlation of the arm's and the original's values across
seeds (how closely the arm follows the original's runs; near 0, the pairing buys nothing
and the paired p says no more than Welch's). Where no hypothesis was registered paired,
these numbers are exploratory: they can motivate a registered, paired study on fresh
seeds (`'paired': True`, benchmark/statistics/hypotheses.py), not replace one.

Writes STUDY_DIR/paired_seeds.json (atomically) and prints the table.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from benchmark.core.atomic import write_json
from benchmark.readings import ReadingError
from benchmark.statistics import stats

METRICS = ("MIG", "DCI-D", "DCI-I")
FILE_NAME = "paired_seeds.json"


def seed_values(records: list[dict], model: str) -> dict:
    """{variant: {metric: {seed: value}}} of `model`'s kept runs (report_data records);
    ReadingError on two kept runs of one seed in one arm (no pairs can be formed)."""
    out: dict = {}
    for r in records:
        if r["model"] != model or r["overpruned"] or r["setting"]:
            continue
        for metric in METRICS:
            if metric not in r["values"]:
                continue
            seen = out.setdefault(r["variant"], {}).setdefault(metric, {})
            if r["seed"] in seen:
                raise ReadingError(f"{model} / {r['variant']}: two kept runs of seed "
                                   f"{r['seed']}; pairs need one run a seed")
            seen[r["seed"]] = float(r["values"][metric])
    return out


def paired_rows(values: dict) -> list[dict]:
    """One row per (arm, metric) with pairs: {'arm', 'metric', 'n', 'drop' (mean of
    original − arm), 'sd', 'p' (one-sided paired t, drop > 0), 'ci_low', 'ci_high' (95 %),
    'dropped' (seeds with a positive drop), 'correlation' (None when either side is
    constant)}; an (arm, metric) with fewer than two shared seeds is a row with 'drop'
    None and 'untestable' saying so, never left out."""
    if "original" not in values:
        raise ReadingError("the study has no kept original runs of this model to pair with")
    rows = []
    for arm in sorted(v for v in values if v != "original"):
        for metric in METRICS:
            base, other = values["original"].get(metric, {}), values[arm].get(metric, {})
            shared = sorted(set(base) & set(other))
            if len(shared) < 2:
                if base or other:
                    rows.append({"arm": arm, "metric": metric, "n": len(shared),
                                 "seeds": shared, "drop": None,
                                 "untestable": f"{len(shared)} shared seed(s): no paired "
                                               "test"})
                continue
            a = np.array([base[s] for s in shared])
            b = np.array([other[s] for s in shared])
            test = stats.paired(a, b, "greater", confidence=0.95)
            correlation = (float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0
                           else None)
            rows.append({"arm": arm, "metric": metric, "n": len(shared),
                         "seeds": shared, "drop": test["diff"], "sd": test["sd"],
                         "p": test["p"], "ci_low": test["ci_low"],
                         "ci_high": test["ci_high"], "dropped": int((a - b > 0).sum()),
                         "correlation": correlation})
    return rows


def table_lines(rows: list[dict], model: str) -> list[str]:
    lines = [f"{model}, each arm against the original seed by seed (exploratory):", "",
             "| arm | metric | pairs | mean drop [95 % CI] | sd | p (paired, one-sided) | "
             "seeds that dropped | correlation with original |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["drop"] is None:
            lines.append(f"| {r['arm']} | {r['metric']} | {r['n']} | {r['untestable']} "
                         "| — | — | — | — |")
            continue
        corr = "—" if r["correlation"] is None else f"{r['correlation']:.2f}"
        lines.append(f"| {r['arm']} | {r['metric']} | {r['n']} | {r['drop']:+.3f} "
                     f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] | {r['sd']:.3f} | "
                     f"{r['p']:.3g} | {r['dropped']} of {r['n']} | {corr} |")
    return lines


def main(args: list[str]) -> None:
    from benchmark.studies import report_data

    if len(args) not in (1, 2):
        raise ReadingError("usage: python -m benchmark.readings paired_seeds STUDY_DIR "
                           f"[MODEL]; found {len(args)} arguments")
    study_dir = pathlib.Path(args[0])
    model = args[1] if len(args) == 2 else "beta_vae"
    try:
        records = report_data.load_runs(study_dir)
    except report_data.ReportError as error:
        raise ReadingError(str(error)) from None
    rows = paired_rows(seed_values(records, model))
    left_out = sum(1 for r in records if r["model"] == model
                   and (r["overpruned"] or r["setting"]))
    print("\n".join(table_lines(rows, model)))
    if left_out:
        print(f"({left_out} {model} runs left out: over-pruned, or of a setting other than "
              "the study's default)")
    out = write_json(study_dir / FILE_NAME, json.loads(json.dumps(
        {"model": model, "metrics": list(METRICS), "rows": rows, "left_out_runs": left_out,
         "reading": "exploratory unless a hypothesis was registered paired"})))
    print(json.dumps({"written": str(out)}))
