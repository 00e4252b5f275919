"""What a row of the study report is (benchmark/studies/report.py): the finished runs of a
study, read through the tidy table of benchmark/runs/results.py into one record per run
(copies counted once, runs of different configurations kept apart), the label of each
variant, the groups of runs (model × dataset × variant × setting; over-pruned runs left
out and counted), and the rows computed from them: mean ± std per group and the drops
original → variant with their tests. The studies that read runs the way the report does
(battery, audit, strength_choice) read them here. Reads result files only; imports no
model.
"""

from __future__ import annotations

import json
import math
import pathlib
from collections import defaultdict

import numpy as np
import pandas as pd

from benchmark.core.arm_label import ArmLabel
from benchmark.core.errors import UserError
from benchmark.runs import results as results_lib
from benchmark.statistics import stats
from benchmark.statistics.stats import drop_test


#: (column name, metric group, score key), in the order the tables show them
METRICS = [("MIG", "mig", "mig"), ("DCI-D", "dci", "dci_disentanglement"),
           ("DCI-C", "dci", "dci_completeness"), ("DCI-I", "dci", "dci_informativeness_test"),
           ("DCI-I readout", "dci_readout", "dci_readout_informativeness_test"),
           ("FactorVAE", "factor_vae_score", "factor_vae_score"), ("SAP", "sap", "sap"),
           ("InfoM", "infomec", "infom"), ("InfoE", "infomec", "infoe"),
           ("InfoC", "infomec", "infoc"), ("PSNR", "health", "psnr"),
           ("Recon.", "health", "reconstruction_loss")]
#: columns where lower is better; every other column is higher-is-better. A drop always
#: reads "how much worse on the variant": original − variant, or variant − original here.
LOWER_IS_BETTER = ("Recon.",)


class ReportError(UserError, ValueError):
    """Results that cannot be reported; the message names the file and what was wrong."""


def load_runs(results_dir) -> list[dict]:
    """One record per finished run: model, dataset, variant (with eps), setting, seed,
    overpruned, {column: value}, run_dir, read through the tidy table of
    benchmark/runs/results.py (results.json of schema version 1 or 2). The study's line-searched
    parameter, when study.json names one, becomes the record's `setting` ('beta=8.0': the
    run's hyperparameter as gin writes it; '?' where the run does not bind it)."""
    return load_with_table(results_dir)[0]


def load_with_table(results_dir):
    """(records kept by `deduplicate`, their rows of the tidy table, in the same order)."""
    results_dir = pathlib.Path(results_dir)
    if not results_dir.is_dir():
        raise ReportError(f"--results: expected a directory, found {results_dir}")
    line_search = read_study(results_dir).get("settings", {}).get("line_search", {})
    try:
        table = results_lib.load(results_dir)
    except results_lib.ResultsError as error:
        raise ReportError(str(error)) from None
    records = []
    for row in table.to_dict("records"):
        variant = row["variant"]
        if variant != "original" and not math.isnan(row["eps"]):
            variant = f"{variant}@{row['eps']:g}"
        setting = ""
        if row["model"] in line_search:
            param = line_search[row["model"]][0]
            value = row.get(results_lib.CONFIG + param)
            shown = "?" if is_missing(value) else results_lib.gin_text(value)
            setting = f"{param.split('.')[-1]}={shown}"
        values = {column: float(row[key]) for column, key in _score_columns()
                  if is_finite(row.get(key))}
        overpruned = row.get("health/overpruned")
        records.append({"model": row["model"], "dataset": row["dataset"], "variant": variant,
                        "setting": setting, "seed": row["seed"],
                        "overpruned": False if is_missing(overpruned) else bool(overpruned),
                        "health_known": not is_missing(overpruned),
                        "values": values, "run_dir": row["run_dir"]})
    kept = {id(r) for r in separate_configurations(deduplicate(records))}
    rows = [i for i, r in enumerate(records) if id(r) in kept]
    return [records[i] for i in rows], table.iloc[rows].reset_index(drop=True)


def _score_columns() -> list[tuple[str, str]]:
    """(report column, namespaced key of the tidy table) of every METRICS column."""
    return [(column, results_lib.metric_key(group, key)) for column, group, key in METRICS]


def is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def is_finite(value) -> bool:
    return (isinstance(value, (int, float, np.integer, np.floating))
            and not isinstance(value, (bool, np.bool_)) and math.isfinite(value))


def read_study(results_dir) -> dict:
    """The study.json of a study directory ({} when there is none)."""
    path = pathlib.Path(results_dir) / "study.json"
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ReportError(f"{path}: expected the study's JSON, found unreadable content "
                          f"({error})") from None


def deduplicate(records: list[dict]) -> list[dict]:
    """One record per (configuration fingerprint, seed), the first in path order: a copied
    run directory is the same run, not another seed (benchmark/runs/fingerprint.py; runs from
    before fingerprints are identified by their results.json gin_config; a results.json
    without any gin binding is never merged). Each dropped copy is logged as a warning
    naming both directories."""
    from absl import logging

    from benchmark.runs import fingerprint
    kept, first = [], {}
    for record in records:
        try:
            ident = fingerprint.recorded(record["run_dir"])
        except ValueError:
            ident = None
        identified = ident is not None and ident["bindings"]    # hand-written: no config
        key = (ident["fingerprint"] if identified else record["run_dir"], record["seed"],
               record["model"], record["dataset"], record["variant"], record["setting"])
        if key in first:
            logging.warning("report: %s is the same run as %s (configuration fingerprint "
                            "%s, seed %s); counted once", record["run_dir"], first[key],
                            str(key[0])[:12], record["seed"])
            continue
        first[key] = record["run_dir"]
        kept.append(record)
    return kept


def _binding_text(value) -> str:
    """A canonical binding value (benchmark/runs/fingerprint.py: JSON text) as a label shows it."""
    if value is None:
        return "unset"
    try:
        decoded = json.loads(value)
    except (TypeError, ValueError):
        return str(value)
    if isinstance(decoded, str):
        return decoded
    if isinstance(decoded, dict) and list(decoded) == ["dict"]:     # gin dict, canonical
        return "{" + ",".join(f"{k}:{_binding_text(json.dumps(v))}"
                              for k, v in decoded["dict"]) + "}"
    return json.dumps(decoded, separators=(",", ":"))


def separate_configurations(records: list[dict]) -> list[dict]:
    """`records` with the runs of one group (model, dataset, variant, setting) that differ
    in any binding other than the seed made separate groups: their `setting` gains the
    differing bindings ('run.steps=300'), so a 100-step and a 300-step run of seed 0 are
    two groups of one seed, never one of "2 seeds". Each split is logged as a warning
    naming the bindings. A run without a readable configuration stays in its group."""
    from absl import logging

    from benchmark.runs import fingerprint
    groups = defaultdict(list)
    for record in records:
        groups[(record["model"], record["dataset"], record["variant"],
                record["setting"])].append(record)
    for (model, dataset, variant, _), members in groups.items():
        configs = []
        for record in members:
            try:
                ident = fingerprint.recorded(record["run_dir"])
            except ValueError:
                ident = None
            bindings = dict(ident["bindings"]) if ident else {}
            bindings.pop("run.seed", None)
            configs.append(bindings if ident else None)
        known = [c for c in configs if c is not None]
        differing = sorted(key for key in set().union(*known, set())
                           if len({c.get(key) for c in known}) > 1)
        if not differing:
            continue
        for record, bindings in zip(members, configs):
            if bindings is None:
                continue
            label = ", ".join(f"{key}={_binding_text(bindings.get(key))}" for key in differing)
            record["setting"] = ", ".join(filter(None, [record["setting"], label]))
        logging.warning("report: runs of %s / %s / %s differ in bindings other than the "
                        "seed (%s); reported as separate groups, labelled by those bindings",
                        model, dataset, variant, ", ".join(differing))
    return records


#: arms whose default strength is the oracle control's (benchmark/data/oracle.py)
ORACLE_ARMS = ("oracle", "texture", "wave", "wave_texture")


def default_eps(base: str, dataset: str) -> float | None:
    """The strength a variant has when none is given: paper 002's per dataset, or the
    oracle control's (benchmark/data/oracle.py) for its arms; None for 'rotated' and
    the shadings and the vignette (their strength is always given)."""
    if base in ("rotated", "shaded", "shaded_diagonal", "shaded_fixed", "vignetted"):
        return None
    from benchmark.data.oracle import ORACLE_EPS
    from benchmark.data.variants import DEFAULT_EPS
    return ORACLE_EPS if base in ORACLE_ARMS else DEFAULT_EPS.get(dataset)


def nominal(records: list[dict]) -> dict[str, str]:
    """The variant label of each dataset's default strength: 'modified@0.1' -> 'modified'
    when it is the only or the paper's strength, so the tables read like Table 1
    ({(dataset, variant): label} of the relabelled ones, `variant_label`)."""
    labels = {}
    for r in records:
        shown = variant_label(r["variant"], r["dataset"])
        if shown != r["variant"]:
            labels[(r["dataset"], r["variant"])] = shown
    return labels


def variant_label(variant: str, dataset: str) -> str:
    """The label of a variant: its base name at its default strength (`default_eps`:
    'modified@0.1' on dSprites -> 'modified', 'wave@0.3' -> 'wave'), else base@eps with eps
    as :g writes it ('wave@0.30' -> 'wave@0.3'); a variant without '@eps' unchanged."""
    arm = ArmLabel.parse(variant)
    if not arm.strength:
        return variant
    return arm.base if float(f"{arm.eps:g}") == default_eps(arm.base, dataset) else arm.shown()


def variant_rank(variant: str) -> tuple:
    """Sort key: original, modified, noisy, then strengths ('modified@0.3') by name."""
    return {"original": 0, "modified": 1, "noisy": 2}.get(variant, 3), variant


#: the columns a report groups runs by
KEY = ["model", "dataset", "variant", "setting"]


def group(records: list[dict]) -> tuple[dict, dict]:
    """({(model, dataset, variant, setting): [records kept]}, {same key: excluded count});
    variants at their dataset's default strength under their `nominal` label."""
    labels = nominal(records)
    runs = [{**r, "variant": labels.get((r["dataset"], r["variant"]), r["variant"])}
            for r in records]
    if not runs:
        return {}, {}
    table = pd.DataFrame(runs, columns=[*KEY, "overpruned"])
    pruned = table["overpruned"].astype(bool)
    kept = {key: [runs[i] for i in index]
            for key, index in table[~pruned].groupby(KEY).groups.items()}
    excluded = {key: int(n) for key, n in table[pruned].groupby(KEY).size().items()}
    return kept, excluded


def _mean(values: pd.Series) -> float:
    values = values.dropna().to_numpy(dtype=float)
    return float(np.mean(values)) if len(values) else math.nan


def _std(values: pd.Series) -> float:
    """Sample std (ddof 1), 0 for one value."""
    values = values.dropna().to_numpy(dtype=float)
    return (float(np.std(values, ddof=1)) if len(values) > 1 else 0.0 if len(values)
            else math.nan)


def summary_rows(groups: dict, excluded: dict) -> list[dict]:
    """Mean and sample std (ddof 1; 0 for one seed) of every column per group (a column
    without a value in the group is left out of its row)."""
    kept = pd.DataFrame([{**{k: r[k] for k in KEY}, **r["values"]}
                         for runs in groups.values() for r in runs],
                        columns=KEY + [c for c, _, _ in METRICS])
    statistics = {}
    if len(kept):
        statistics = kept.groupby(KEY).agg(**{
            f"{column} {name}": (column, fn) for column, _, _ in METRICS
            for name, fn in (("mean", _mean), ("std", _std))}).to_dict("index")
    rows = []
    for key in sorted(set(groups) | set(excluded)):
        row = {"model": key[0], "dataset": key[1], "variant": key[2], "setting": key[3],
               "seeds": len(groups.get(key, [])), "excluded_overpruned": excluded.get(key, 0)}
        row.update({k: v for k, v in statistics.get(key, {}).items() if not math.isnan(v)})
        rows.append(row)
    return rows


def runs_table(records: list[dict], table: pd.DataFrame) -> pd.DataFrame:
    """The tidy table of the reported runs (benchmark/runs/results.py; `table`, one row per
    record) with the report's view of each: 'report/variant' (the label of its tables),
    'report/setting' (its line-search setting) and 'report/excluded' (over-pruned, left
    out of the tables)."""
    labels = nominal(records)
    out = table.copy()
    position = list(out.columns).index("run_dir") + 1
    for offset, (name, values) in enumerate([
            ("report/variant", [labels.get((r["dataset"], r["variant"]), r["variant"])
                                for r in records]),
            ("report/setting", [r["setting"] for r in records]),
            ("report/excluded", [r["overpruned"] for r in records])]):
        out.insert(position + offset, name, values)
    return out


def drop_rows(groups: dict) -> list[dict]:
    """Original -> every other variant of the same model, dataset and setting; the drop is
    signed so that positive means worse on the variant for every column (LOWER_IS_BETTER
    columns are negated before the test)."""
    rows = []
    for (model, dataset, variant, setting), runs in sorted(groups.items()):
        if variant == "original":
            continue
        originals = groups.get((model, dataset, "original", setting))
        if not originals:
            continue
        for column, _, _ in METRICS:
            sign = -1.0 if column in LOWER_IS_BETTER else 1.0
            a = [sign * r["values"][column] for r in originals if column in r["values"]]
            b = [sign * r["values"][column] for r in runs if column in r["values"]]
            if a and b:
                rows.append({"model": model, "dataset": dataset, "variant": variant,
                             "setting": setting, "metric": column, **drop_test(a, b)})
    _adjust_per_metric(rows)
    return rows


def _adjust_per_metric(rows: list[dict]) -> None:
    """Adds 'p_bh': Benjamini-Hochberg adjusted p over every tested drop of the same metric
    (all models, datasets, variants, settings), since a report tests many drops at once."""
    for column, _, _ in METRICS:
        family = [r for r in rows if r["metric"] == column]
        for r, p in zip(family, stats.adjust([r["p_welch"] for r in family], "bh")):
            r["p_bh"] = p
