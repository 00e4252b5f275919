"""What an audit reads from its reference study and what it will train: the reference's
settings (study.json, checked as data), the arms of its battery an audit trains
(`battery_variants`), its artefacts flagged by their own evidence, whether its registered
runs all finished (`reference_completeness`), what a reference run cost and the audit's
plan with its time (`plan`). Used by the command (benchmark/studies/audit.py) and the
audit's report (benchmark/studies/audit_report.py).
"""

from __future__ import annotations

import json
import os
import pathlib

import numpy as np

from benchmark.core import config, machine
from benchmark.core.arm_label import ArmLabel, base_of
from benchmark.studies import battery as battery_lib
from benchmark.studies import study
from perturbations.artefact import artefact_warnings


def reference_settings(reference_dir) -> dict:
    """The reference study's settings (study.json), which fix the audit's scale. study.json
    is data: its types are checked and its bindings may import only the suite's packages
    and include no file (config.check_untrusted_config), before anything runs."""
    path = pathlib.Path(reference_dir) / "study.json"
    if not path.is_file():
        raise FileNotFoundError(f"--reference: expected a study directory with study.json, "
                                f"found none at {path}")
    try:
        settings = json.loads(path.read_text()).get("settings")
    except (ValueError, AttributeError) as error:
        raise ValueError(f"{path}: expected a study's JSON object with 'settings', found "
                         f"unreadable content ({error})") from None
    expected = {"bindings": list, "datasets": list, "artefacts": dict}
    if not isinstance(settings, dict) or any(
            not isinstance(settings.get(k), kind) for k, kind in expected.items()):
        raise ValueError(f"{path}: expected 'settings' with a list 'bindings', a list "
                         f"'datasets' and an object 'artefacts', found {settings!r:.200}")
    if not all(isinstance(b, str) for b in settings["bindings"]):
        raise ValueError(f"{path}: expected settings.bindings to be gin binding strings")
    config.check_untrusted_config("\n".join(settings["bindings"]),
                                  f"{path} (settings.bindings)")
    return settings

REFERENCES = (("beta_vae", "β-VAE (reference: exploits local structure)"),
              ("ae", "AE (reference: the floor, no disentanglement)"),
              ("pcl", "PCL (reference: robust)"))


def battery_variants(battery: dict, variants) -> list[str]:
    """The study variants an audit trains and reads: original, the manipulation, its
    controls and the sweep's strengths, in the order of `variants`."""
    fixed = {"original", battery["manipulated"], *battery["controls"]}
    sweep = battery.get("sweep")
    return [v for v in variants
            if v in fixed or (sweep is not None and base_of(v) == sweep)]


def reference_artefact_warnings(reference: dict, battery: dict, dataset: str
                                ) -> dict[str, list[str]]:
    """{'variant (directory)': sentences} for each artefact that an arm of the battery
    reads on `dataset` and that its own evidence.json flags
    (perturbations.artefact.artefact_warnings); {} when none is."""
    bases = {base_of(v) for v in battery_variants(
        battery, reference.get("variants") or battery_lib.LEGACY_VARIANTS)}
    found = {}
    for variant, directory in ((reference.get("artefacts") or {}).get(dataset) or {}).items():
        warnings = (artefact_warnings(directory)
                    if variant in bases and isinstance(directory, str) else [])
        if warnings:
            found[f"{variant} ({directory})"] = warnings
    return found


def reference_completeness(reference: dict, battery: dict, dataset: str,
                           reference_runs: list[dict]) -> dict | None:
    """{'registered', 'finished': counts of the reference models' runs on the battery's
    arms (`battery_variants`, the sweep's included), 'missing': {'model on arm': count}}:
    the reference study's grid
    (study.expand) against its finished runs (report_data.load_runs records), so that an audit
    of a reference with failed or unfinished runs says so; None when its study.json does
    not hold a whole grid (no 'models', say), so that nothing can be counted."""
    arms = battery_variants(battery, reference.get("variants") or
                            battery_lib.LEGACY_VARIANTS)
    tags = {ArmLabel.parse(arm).shown(): arm for arm in arms}
    finished = {pathlib.Path(r["run_dir"]).name for r in reference_runs}
    out = {"registered": 0, "finished": 0, "missing": {}}
    try:
        specs = study.expand({"line_search": {}, **reference})
    except (KeyError, TypeError, ValueError):
        return None
    for spec in specs:
        model, _, rest = spec.name.partition(f"_{dataset}_")
        tag = rest.rpartition("_seed")[0]
        if model not in dict(REFERENCES) or tag not in tags:
            continue
        out["registered"] += 1
        if spec.name in finished:
            out["finished"] += 1
        else:
            key = f"{model} on {tags[tag]}"
            out["missing"][key] = out["missing"].get(key, 0) + 1
    return out


def reference_cost(reference_runs: list[dict]) -> dict | None:
    """What a reference run cost, from the finished runs' results.json: {'runs' (how many
    were read), 'cpu_seconds' (mean CPU seconds a run used, from its `machine` record;
    None where no run recorded it), 'threads', 'cpu' (the reference's CPU model or None),
    'wall_seconds' (mean wall time)}; None when no run recorded a time. Runs resumed from a
    checkpoint timed only their last part and are left out when others are complete."""
    records = []
    for r in reference_runs:
        try:
            payload = json.loads((pathlib.Path(r["run_dir"]) / "results.json").read_text())
            records.append((float(payload["wall_seconds"]), payload.get("machine") or {},
                            payload.get("resumed_from")))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    whole = [rec for rec in records if rec[2] is None]
    records = whole or records
    if not records:
        return None
    measured = [m for _, m, _ in records if isinstance(m.get("cpu_seconds"), (int, float))]
    return {"runs": len(records), "wall_seconds": float(np.mean([w for w, _, _ in records])),
            "cpu_seconds": (float(np.mean([m["cpu_seconds"] for m in measured]))
                            if measured else None),
            "measured": len(measured),
            "threads": int(np.median([m.get("threads") or machine.DEFAULT_THREADS
                                      for m in measured])) if measured else None,
            "cpu": measured[0].get("cpu") if measured else None}


def _minutes(seconds: float) -> str:
    return "under a minute" if seconds < 60 else f"{seconds / 60:.0f} min"


def plan(settings: study.StudySettings, reference_runs: list[dict], workers: int = 1) -> dict:
    """{'runs', 'finished', 'to_run', 'seconds_per_run' (None unknown), 'estimate_seconds'
    (None unknown), 'text'}: what the audit will train and about how long it takes.

    Where the reference's runs recorded their CPU time (results.json `machine`), the
    estimate is that work spread over min(this machine's cores, workers x the runs'
    threads): it holds whatever shared the cores while the reference trained, on a CPU
    like the reference's. Older references give only their mean wall time, which runs that
    shared their cores inflate: the plan then says it is an upper bound."""
    specs = study.expand(settings)
    out = pathlib.Path(settings.output_dir)
    # a fresh audit holds no run: no fingerprints to compute (a TensorFlow process)
    held = any((out / "runs" / s.name).is_dir() for s in specs)
    done = study.run_states(out, specs)[0] if held else set()
    to_run = len(specs) - len(done)
    workers = max(1, int(workers))
    cost = reference_cost(reference_runs)
    text = (f"audit plan: {len(specs)} runs ({len(settings.variants)} arms × "
            f"{len(settings.seeds)} seeds), {len(done)} finished, {to_run} to train")
    per_run = estimate = None
    if to_run == 0:
        text += "; nothing to train"
    elif cost and cost["cpu_seconds"] is not None:
        cores = os.cpu_count() or 1
        parallel = min(cores, workers * cost["threads"])
        per_run = cost["cpu_seconds"] / min(cores, cost["threads"])
        estimate = to_run * cost["cpu_seconds"] / parallel
        text += (f"; about {_minutes(estimate)}: a reference run used "
                 f"{cost['cpu_seconds'] / 60:.1f} CPU-min ({cost['measured']} runs measured"
                 f"{', ' + cost['cpu'] if cost['cpu'] else ''}), spread over {parallel:g} of "
                 f"this machine's {cores} cores ({workers} worker(s) × {cost['threads']} "
                 "threads; a VAE-sized method)")
    elif cost:
        per_run = cost["wall_seconds"]
        estimate = to_run * per_run / workers
        text += (f"; at most about {_minutes(estimate)} at the reference runs' mean wall "
                 f"time, {per_run / 60:.1f} min, on {workers} worker(s) (their CPU time was "
                 "not recorded, and runs that shared their cores took longer than alone: "
                 "an upper bound; a VAE-sized method)")
    return {"runs": len(specs), "finished": len(done), "to_run": to_run,
            "seconds_per_run": per_run, "estimate_seconds": estimate, "text": text}
