"""python -m benchmark.known_answers --gin_file=known_answers/rotated_cpu.gin
[--output_dir=DIR]

Does the audit's rule (benchmark/studies/verdict.py) give each kind of method the verdict
it deserves on a battery? A known-answer table, registered as a gin file before its runs
(gin_configs/known_answers/), names a reference study and its rows: a method, where its
runs are, and the outcome it must come out with. This command scores every row from the
runs that have finished and writes known_answers.json and known_answers.md (in
--output_dir, default the reference study's directory). A battery whose rows all match
has earned the verdicts the audit prints on it; one row that does not match means the
audit's verdicts on that battery are not yet known to be deserved.

A row's runs are either
- the reference study's own runs of one of its models (`model`): the verdict is decided
  as the audit decides it, with that model's runs as the method's and the reference's
  beta-VAE and AE as the references; or
- an audit's directory (`audit`: written by `python -m benchmark.audit`, or by `audit
  score` for codes from files): its audit.json's verdict, checked to be of this reference
  with all of its registered runs finished, of the current rule, at the row's alpha and
  margin fraction and on exactly the row's seeds.

The outcomes: DEPENDS, LOSES INFORMATION, ROBUST, SENSITIVE, as the verdict's labels, and
FLOOR: INCONCLUSIVE because the method's original MIG is not above the AE's once the
positive control and the validity gate have passed (the audit's step 3 "does not
disentangle at this scale"). A verdict INCONCLUSIVE for another reason is its own outcome.

A row of the reference's runs may be sequential: `looks` lists its seed sets (each
containing the previous), the method's tests decided at `alpha` at each look (Pocock:
the design of the table's study says how it was chosen), the reference's own tests
(positive control, specificity, validity gate) at the table's `reference_alpha`. At a
look before the last, the row stops when it matches, or when the method's one-sided MIG
drop is significant (it does not match); when the verdict stopped before the method's
equivalence test (positive control, validity gate, floor) or the pooled MIG spread of the
method's two arms exceeds `untestable_sd`, the row is "untestable at this scale";
otherwise it waits for the next look's runs. At the last look, it matches or not.

Each row's status: matches, does not match, untestable at this scale, pending (its runs
have not all finished; the reason names what is missing), or not as registered (its
audit was run otherwise than the row says).
"""

from __future__ import annotations

import json
import pathlib

import gin
import numpy as np

from benchmark.core.atomic import atomic_path, write_json
from benchmark.core.errors import cli_main, user_errors
from benchmark.statistics import stats
from benchmark.studies import battery as battery_lib
from benchmark.studies import mechanism, report_data
from benchmark.studies.audit_plan import reference_settings
from benchmark.studies.verdict import MARGIN_FRACTION, RULE_VERSION, verdict

OUTCOMES = ("DEPENDS", "LOSES INFORMATION", "ROBUST", "SENSITIVE", "FLOOR")
MATCHES, MISMATCH, UNTESTABLE, PENDING, UNREGISTERED = (
    "matches", "does not match", "untestable at this scale", "pending", "not as registered")
ROW_KEYS = {"method", "expected", "model", "audit", "seeds", "looks", "alpha",
            "untestable_sd", "how"}
FILE_NAME = "known_answers"


def _seeds(value, where: str) -> list[int]:
    if (not isinstance(value, (list, tuple)) or len(value) < 2
            or not all(isinstance(s, int) and not isinstance(s, bool) for s in value)
            or len(set(value)) != len(value)):
        raise ValueError(f"{where}: expected a list of at least 2 distinct integer seeds, "
                         f"found {value!r}")
    return list(value)


def check_row(row, index: int) -> dict:
    """A row of the table as registered, checked: {'method', 'expected' (OUTCOMES), 'alpha'
    (default 0.05), 'how' (text, optional), and either 'model' with 'looks' (seed lists,
    each containing the previous; 'seeds' is one look) and 'untestable_sd' (optional), or
    'audit' (a directory) with 'seeds'}. ValueError naming what was expected."""
    where = f"known_answer_table.rows[{index}]"
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a dict, found {row!r}")
    unknown = set(row) - ROW_KEYS
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {sorted(unknown)}; expected some of "
                         f"{sorted(ROW_KEYS)}")
    if not isinstance(row.get("method"), str) or not row["method"]:
        raise ValueError(f"{where}: expected 'method', the row's name, found "
                         f"{row.get('method')!r}")
    if row.get("expected") not in OUTCOMES:
        raise ValueError(f"{where} ({row['method']}): expected 'expected' in {OUTCOMES}, "
                         f"found {row.get('expected')!r}")
    if ("model" in row) == ("audit" in row):
        raise ValueError(f"{where} ({row['method']}): expected exactly one of 'model' (the "
                         "reference's own runs) and 'audit' (an audit's directory)")
    alpha = row.get("alpha", stats.ALPHA)
    if not (isinstance(alpha, float) and 0 < alpha < 1):
        raise ValueError(f"{where} ({row['method']}): expected 0 < alpha < 1, found {alpha!r}")
    out = {"method": row["method"], "expected": row["expected"], "alpha": alpha,
           "how": row.get("how", "")}
    if "audit" in row:
        if "looks" in row or "untestable_sd" in row:
            raise ValueError(f"{where} ({row['method']}): an audit row has 'seeds', not "
                             "'looks' or 'untestable_sd'")
        return {**out, "audit": str(row["audit"]),
                "seeds": _seeds(row.get("seeds"), f"{where}.seeds")}
    if ("seeds" in row) == ("looks" in row):
        raise ValueError(f"{where} ({row['method']}): expected one of 'seeds' and 'looks'")
    looks = [row["seeds"]] if "seeds" in row else row["looks"]
    if not isinstance(looks, (list, tuple)) or not looks:
        raise ValueError(f"{where}.looks: expected a list of seed lists, found {looks!r}")
    looks = [_seeds(look, f"{where}.looks[{i}]") for i, look in enumerate(looks)]
    if any(not set(a) < set(b) for a, b in zip(looks, looks[1:])):
        raise ValueError(f"{where}.looks: expected each look's seeds to contain the "
                         f"previous look's and more, found {looks}")
    bound = row.get("untestable_sd")
    if bound is not None and not (isinstance(bound, float) and bound > 0):
        raise ValueError(f"{where}.untestable_sd: expected a positive float, found {bound!r}")
    return {**out, "model": str(row["model"]), "looks": looks, "untestable_sd": bound}


@gin.configurable
def known_answer_table(reference: str = gin.REQUIRED, rows=gin.REQUIRED,
                       margin_fraction: float = MARGIN_FRACTION,
                       reference_alpha: float = stats.ALPHA) -> dict:
    """The registered table: {'reference': the reference study's directory, 'rows': rows
    as `check_row` returns them, 'margin_fraction': the audit's (verdict.MARGIN_FRACTION),
    'reference_alpha': the level of the reference's own tests (positive control, its
    specificity, validity gate) in every row of its runs, whatever the row's alpha}."""
    if not isinstance(rows, (list, tuple)) or not rows:
        raise ValueError(f"known_answer_table.rows: expected a list of rows, found {rows!r}")
    if not (isinstance(reference_alpha, float) and 0 < reference_alpha < 1):
        raise ValueError(f"known_answer_table.reference_alpha: expected 0 < alpha < 1, "
                         f"found {reference_alpha!r}")
    if not (isinstance(margin_fraction, float) and margin_fraction > 0):
        raise ValueError(f"known_answer_table.margin_fraction: expected a positive float, "
                         f"found {margin_fraction!r}")
    checked = [check_row(r, i) for i, r in enumerate(rows)]
    names = [r["method"] for r in checked]
    if len(set(names)) != len(names):
        raise ValueError(f"known_answer_table.rows: expected distinct methods, found {names}")
    return {"reference": str(reference), "rows": checked, "margin_fraction": margin_fraction,
            "reference_alpha": reference_alpha}


def outcome_of(decision: dict, alpha: float) -> str:
    """The verdict's outcome: its label, FLOOR for INCONCLUSIVE at the floor step (the
    positive control and the gate passed, the method's original MIG not above the AE's)."""
    floor = decision["tests"].get("floor")
    if (decision["label"] == "INCONCLUSIVE" and decision.get("relative_margin") is not None
            and floor is not None and not floor["p"] < alpha
            and "drop" not in decision["tests"]):
        return "FLOOR"
    return decision["label"]


def _span(seeds) -> str:
    seeds = sorted(seeds)
    if seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


class Reference:
    """The reference study's runs as the verdict reads them: settings, battery, the arms it
    compares and every model's finished runs, with their misalignment."""

    def __init__(self, reference_dir):
        self.dir = pathlib.Path(reference_dir)
        self.settings = reference_settings(reference_dir)
        self.battery = battery_lib.battery_of(self.settings)
        datasets = self.settings["datasets"]
        self.dataset = "dsprites" if "dsprites" in datasets else datasets[0]
        self.compared = battery_lib.arms_of(self.battery, self.dataset)
        self.runs = mechanism.with_misalignment(report_data.load_runs(reference_dir),
                                                self.battery.get("plane"), reference_dir)

    def model_arms(self, model: str, seeds=None) -> dict:
        """battery.arm_runs of `model` on the compared arms (of `seeds` only, when given)."""
        runs = [r for r in self.runs if r["model"] == model
                and (seeds is None or int(r["seed"]) in set(seeds))]
        return battery_lib.arm_runs(runs, model, self.dataset, self.compared)

    def registered_arms(self, model: str) -> list[str]:
        """The compared arms `model` is trained on in the study (study.model_variants)."""
        own = (self.settings.get("model_variants") or {}).get(model)
        if own is None:
            return list(self.compared)
        labels = {battery_lib.label(v, self.dataset) for v in own}
        return [arm for arm in self.compared if arm in labels]

    def planned_missing(self, model: str) -> list[str]:
        """`missing` against the seeds the study plans for each of `model`'s arms
        (as study.seeds_of: study.cell_seeds' 'model/variant', else its 'model', else
        study.seeds; read from study.json's record, which may lack the grid's other keys)."""
        cells = self.settings.get("cell_seeds") or {}
        variants = (self.settings.get("model_variants") or {}).get(
            model, self.settings.get("variants") or [])
        out = []
        for variant in variants:
            arm = battery_lib.label(variant, self.dataset)
            if arm in self.compared:
                seeds = cells.get(f"{model}/{variant}",
                                  cells.get(model, self.settings.get("seeds") or []))
                out += self.missing(model, seeds, [arm])
        return out

    def missing(self, model: str, seeds, arms=None) -> list[str]:
        """'model on arm, seed(s) ...' for each of `arms` (default: every registered arm)
        lacking a finished run."""
        runs = self.model_arms(model, seeds)
        out = []
        for arm in self.registered_arms(model) if arms is None else arms:
            found = {int(r["seed"]) for k in ("kept", "overpruned") for r in runs[arm][k]}
            lacking = sorted(set(int(s) for s in seeds) - found)
            if lacking:
                out.append(f"{model} on {arm}, seed(s) {_span(lacking)}")
        return out


def _decide_look(reference: Reference, row: dict, seeds, margin_fraction: float,
                 reference_alpha: float) -> dict:
    method_runs = reference.model_arms(row["model"], seeds)
    method = battery_lib.arm_scores(method_runs)
    turns = (battery_lib.code_turns(method_runs, reference.compared)
             if reference.battery.get("plane") is not None else None)
    beta_vae = battery_lib.arm_scores(reference.model_arms("beta_vae"))
    ae = battery_lib.arm_scores(reference.model_arms("ae"))
    manipulated, controls = reference.compared[1], reference.compared[2:]
    decision = verdict(method, beta_vae, ae, row["alpha"], margin_fraction, manipulated,
                       controls, turns=turns, reference_alpha=reference_alpha)
    spread = stats.pooled_sd(method["original"]["kept"], method[manipulated]["kept"])
    return {**decision, "spread": spread}


def reference_row(reference: Reference, row: dict, margin_fraction: float,
                  reference_alpha: float = stats.ALPHA) -> dict:
    """A row of the reference's own runs, decided look by look (the module's docstring)."""
    missing = [m for model in ("beta_vae", "ae") for m in reference.planned_missing(model)]
    if missing:
        return {"status": PENDING, "outcome": None, "look": None,
                "reason": "the reference's runs have not all finished: " + "; ".join(missing)}
    manipulated = reference.compared[1]
    for index, seeds in enumerate(row["looks"]):
        last = index == len(row["looks"]) - 1
        lacking = reference.missing(row["model"], seeds)
        if lacking:
            return {"status": PENDING, "outcome": None, "look": None,
                    "reason": (f"look {index + 1} of {len(row['looks'])} (seeds "
                               f"{_span(seeds)}) waits for its runs: " + "; ".join(lacking))}
        decision = _decide_look(reference, row, seeds, margin_fraction, reference_alpha)
        outcome = outcome_of(decision, row["alpha"])
        done = {"outcome": outcome, "look": index + 1, "seeds": seeds,
                "label": decision["label"], "reason": decision["reason"],
                "spread": decision["spread"], "tests": decision["tests"],
                "margin": decision["margin"]}
        if outcome == row["expected"]:
            return {**done, "status": MATCHES}
        if last and len(row["looks"]) == 1:
            return {**done, "status": MISMATCH}
        drop = decision["tests"].get("drop")
        if drop is not None and drop["p_drop"] is not None and drop["p_drop"] < row["alpha"]:
            return {**done, "status": MISMATCH, "reason": done["reason"] + (
                f"; its MIG drops on {manipulated} (one-sided p {drop['p_drop']:.3g} < "
                f"{row['alpha']:g}), which stops the row")}
        if "equivalence" not in decision["tests"]:
            return {**done, "status": UNTESTABLE, "reason": done["reason"] + (
                "; the verdict stopped before the method's own test")}
        bound = row["untestable_sd"]
        if bound is not None and decision["spread"] is not None and decision["spread"] > bound:
            return {**done, "status": UNTESTABLE, "reason": done["reason"] + (
                f"; its pooled MIG spread {decision['spread']:.3f} exceeds the registered "
                f"{bound:g}, beyond which more seeds were not to be run")}
        if last:
            return {**done, "status": MISMATCH}
    raise AssertionError("unreachable: the last look returns")


def audit_row(reference: Reference, row: dict, margin_fraction: float) -> dict:
    """A row of an audit's directory: its audit.json's verdict, checked against the row."""
    directory = pathlib.Path(row["audit"])
    path = directory / "audit.json"
    if not path.is_file():
        return {"status": PENDING, "outcome": None,
                "reason": f"no audit.json at {path}: the audit has not been run or scored"}
    try:
        audit = json.loads(path.read_text())
        label, alpha = audit["verdict"], float(audit["alpha"])
        fraction, tests = float(audit["margin_fraction"]), audit["tests"]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: expected an audit's JSON with 'verdict', 'alpha', "
                         f"'margin_fraction' and 'tests', found unreadable content "
                         f"({error!r})") from None
    seeds = sorted({int(r["seed"]) for r in report_data.load_runs(directory)})
    problems = []
    same = pathlib.Path(str(audit.get("reference_study", ""))).resolve() == reference.dir.resolve()
    if not same:
        problems.append(f"its reference is {audit.get('reference_study')!r}, not "
                        f"{str(reference.dir)!r}")
    if audit.get("rule_version", 1) != RULE_VERSION:
        problems.append(f"it was decided by rule {audit.get('rule_version', 1)}, not "
                        f"{RULE_VERSION}")
    if not np.isclose(alpha, row["alpha"]) or not np.isclose(fraction, margin_fraction):
        problems.append(f"its alpha and margin fraction are {alpha:g} and {fraction:g}, not "
                        f"{row['alpha']:g} and {margin_fraction:g}")
    complete = audit.get("reference_completeness") or {}
    if complete.get("missing"):
        problems.append(f"it was decided before the reference's runs had all finished "
                        f"({complete.get('finished')} of {complete.get('registered')}): "
                        "score or audit it again")
    if seeds != sorted(row["seeds"]):
        problems.append(f"its runs are of seeds {_span(seeds) if seeds else 'none'}, not "
                        f"{_span(row['seeds'])}")
    decision = {"label": label, "tests": tests,
                "relative_margin": audit.get("relative_margin")}
    outcome = outcome_of(decision, alpha)
    done = {"outcome": outcome, "label": label, "reason": audit.get("reason", ""),
            "seeds": seeds, "tests": tests, "margin": audit.get("margin")}
    if problems:
        return {**done, "status": UNREGISTERED,
                "reason": f"{path}: " + "; ".join(problems)}
    return {**done, "status": MATCHES if outcome == row["expected"] else MISMATCH}


def score_table(table: dict) -> dict:
    """Every row scored: {'reference', 'rule_version', 'margin_fraction', 'rows': [row as
    registered + 'status', 'outcome', 'reason', ...], 'all_match': True when every row
    matches, 'summary': one sentence}."""
    reference = Reference(table["reference"])
    rows = []
    for row in table["rows"]:
        score = (reference_row(reference, row, table["margin_fraction"],
                               table.get("reference_alpha", stats.ALPHA)) if "model" in row
                 else audit_row(reference, row, table["margin_fraction"]))
        rows.append({**row, **score})
    counts = {s: sum(r["status"] == s for r in rows)
              for s in (MATCHES, MISMATCH, UNTESTABLE, PENDING, UNREGISTERED)}
    all_match = counts[MATCHES] == len(rows)
    if all_match:
        summary = (f"Every row matches ({len(rows)} of {len(rows)}): the audit's verdicts on "
                   "this battery are earned for these kinds of method.")
    else:
        shown = ", ".join(f"{s}: {n}" for s, n in counts.items() if n)
        summary = (f"Not every row matches ({shown}): the audit's verdicts on this battery "
                   "are not yet known to be deserved.")
    return {"reference": table["reference"], "rule_version": RULE_VERSION,
            "margin_fraction": table["margin_fraction"],
            "reference_alpha": table.get("reference_alpha", stats.ALPHA),
            "battery": reference.battery,
            "rows": rows, "all_match": all_match, "summary": summary}


def _runs_cell(row: dict) -> str:
    if "model" in row:
        looks = " then ".join(_span(s) for s in row["looks"])
        cell = f"the reference's `{row['model']}` runs, seeds {looks}, α {row['alpha']:g}"
    else:
        cell = f"`{row['audit']}`, seeds {_span(row['seeds'])}, α {row['alpha']:g}"
    return cell + (f"; {row['how']}" if row["how"] else "")


def table_lines(scored: dict) -> list[str]:
    """The scored table as markdown: one line a row, then each row's reason."""
    battery = scored["battery"]
    lines = [f"# Known-answer table on `{scored['reference']}`", "",
             f"The audit's rule {scored['rule_version']} (benchmark/studies/verdict.py), "
             f"margin fraction {scored['margin_fraction']:g}, the reference's own tests at "
             f"α {scored['reference_alpha']:g}; battery: "
             f"{battery['manipulated']} against {', '.join(battery['controls'])}.", "",
             f"**{scored['summary']}**", "",
             "| method | runs | must come out | came out | status |", "|---|---|---|---|---|"]
    for row in scored["rows"]:
        look = f" (look {row['look']})" if row.get("look") and len(row.get("looks", [])) > 1 \
            else ""
        lines.append(f"| {row['method']} | {_runs_cell(row)} | {row['expected']} | "
                     f"{row['outcome'] or '—'}{look} | {row['status']} |")
    lines += ["", "Why each row came out as it did:", ""]
    lines += [f"- **{row['method']}**: {row['reason']}." for row in scored["rows"]]
    return lines + [""]


def write_table(scored: dict, output_dir) -> pathlib.Path:
    """Writes known_answers.json and known_answers.md in output_dir (each atomically);
    returns the markdown's path."""
    out = pathlib.Path(output_dir)
    write_json(out / f"{FILE_NAME}.json", json.loads(json.dumps(scored, default=float)))
    path = out / f"{FILE_NAME}.md"
    with atomic_path(path, ".md") as tmp:
        tmp.write_text("\n".join(table_lines(scored)))
    return path


def define_flags() -> None:
    from absl import flags
    flags.DEFINE_string("gin_file", None, "The registered table (gin_configs/known_answers/).")
    flags.DEFINE_multi_string("gin_bindings", [], "Extra bindings (e.g. the reference's "
                              "directory: known_answer_table.reference='...').")
    flags.DEFINE_string("output_dir", None, "Where to write known_answers.json and .md "
                        "(default: the reference study's directory).")


@cli_main
def main(argv) -> None:
    from absl import app, flags

    from benchmark.core import config

    if len(argv) != 1:
        raise app.UsageError(f"expected no argument, found {' '.join(argv[1:])}")
    if not flags.FLAGS.gin_file:
        raise app.UsageError("--gin_file is required (e.g. known_answers/rotated_cpu.gin)")
    with user_errors(FileNotFoundError, ValueError, report_data.ReportError):
        if config.find_gin_file(flags.FLAGS.gin_file) is None:
            raise FileNotFoundError(f"--gin_file: expected a gin file, found none at "
                                    f"{flags.FLAGS.gin_file} (nor under "
                                    f"{config.GIN_SEARCH_PATH})")
        gin.clear_config()
        config.parse_config([flags.FLAGS.gin_file], list(flags.FLAGS.gin_bindings))
        table = known_answer_table()
        table["reference"] = config.find_published(table["reference"])
        table["rows"] = [{**r, "audit": config.find_published(r["audit"])} if "audit" in r
                         else r for r in table["rows"]]
        scored = score_table(table)
        path = write_table(scored, flags.FLAGS.output_dir or table["reference"])
    print("\n".join(table_lines(scored)))
    print(path)
