"""python -m benchmark.audit --gin_file=my_method.gin [--name=NAME] [--seeds=0,1,2]
[--reference=results/zietlow2021_cpu] [--output_dir=results/audit_NAME] [--alpha=0.05]
[--margin_fraction=0.5]

Audits one method (any model of the suite, or the user's own: see models/registry.py and
docs/studies.md, "Audit a new method") for paper 002's question: does its disentanglement depend
on the local structure that the manipulation removes?
1. trains it on original, modified and noisy dSprites for several seeds, with the settings
   of the reference study (the same steps, metrics and modified artefact, read from the
   reference's study.json), as a study in --output_dir (resumable; a run counts as
   finished only with the configuration fingerprint the audit asks for, see study.py);
2. tests its MIG (benchmark/stats.py: Welch's t-test, Welch t intervals, TOST, the
   difference of drops) beside the reference study's beta-VAE (the method known to exploit
   local structure), AE (no disentanglement: the floor) and PCL (known to be robust);
3. writes audit.md and audit.json with a verdict, decided in this order (`verdict`):
   - positive control: the reference beta-VAE's MIG drop on modified data must itself be
     significant (one-sided Welch, p < alpha); else INCONCLUSIVE: the study does not show
     the exploitation it tests for;
   - floor: the method's original MIG must be significantly above the reference AE's
     (one-sided Welch); else INCONCLUSIVE, "does not disentangle at this scale";
   - DEPENDS on local structure: a significant MIG drop on modified data (one-sided
     Welch) and significantly larger than the drop on noisy data (stats.drop_difference),
     so it is not mere noise sensitivity;
   - ROBUST: original and modified MIG equivalent within ±margin (TOST at alpha), the
     margin being margin_fraction (default 0.5) of the reference beta-VAE's drop (a drop
     that is significant, but no larger than on noisy data and within the margin, is
     ROBUST too: it is smaller than the effect the audit looks for);
   - INCONCLUSIVE otherwise, with the seeds per arm (stats.seeds_needed, power 0.8 at the
     observed spread) that would decide the failing step.
   Both DEPENDS and ROBUST require each of their tests at alpha (intersection-union
   tests), so no multiplicity correction applies. Over-pruned runs (paper 002 sec. 5.3)
   are excluded from the tests and reported per arm as an outcome (count, rate, Fisher's
   p against original); an arm emptied by exclusions is named in the verdict, and when
   counting the method's over-pruned runs would change the verdict, the verdict says that
   the exclusions decide it.
"""

from __future__ import annotations

import json
import os
import pathlib

import numpy as np
from absl import app, flags

from benchmark import config, report, stats, study
from benchmark.atomic import atomic_path, write_json
from benchmark.errors import cli_main, run_command, user_errors

FLAGS = flags.FLAGS
ALPHA = stats.ALPHA
#: the equivalence margin of ROBUST, as a fraction of the reference beta-VAE's MIG drop
MARGIN_FRACTION = 0.5


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command)."""
    flags.DEFINE_string("gin_file", None, "The method's gin file (model.* bindings, and an "
                        "`import` line for a method of your own).")
    flags.DEFINE_string("name", None, "Name of the method in the audit (default: the gin "
                        "file's stem).")
    flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds per variant.")
    flags.DEFINE_string("reference", "results/zietlow2021_cpu", "Reference study directory "
                        "(its study.json fixes the scale; its beta_vae, ae and pcl runs are "
                        "the references).")
    flags.DEFINE_string("output_dir", None, "Audit directory (default results/audit_<name>).")
    flags.DEFINE_integer("workers", 1, "Runs at a time.")
    flags.DEFINE_float("alpha", ALPHA, "Level of every test of the verdict.")
    flags.DEFINE_float("margin_fraction", MARGIN_FRACTION, "Equivalence margin of ROBUST, as "
                       "a fraction of the reference beta-VAE's MIG drop on modified data.")


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


def audit_settings(gin_file: str, name: str, seeds, reference: dict, output_dir: str
                   ) -> dict:
    """Study settings of the audit: the reference study's scale, this one method."""
    dataset = "dsprites" if "dsprites" in reference["datasets"] else reference["datasets"][0]
    return study.study_settings(
        name=f"audit_{name}", output_dir=output_dir, models={name: str(gin_file)},
        datasets=[dataset], variants=["original", "modified", "noisy"],
        artefacts={dataset: reference["artefacts"].get(dataset, {})}, seeds=list(seeds),
        bindings=reference["bindings"], source=reference.get("source", "auto"))


VARIANTS = ("original", "modified", "noisy")


def arms(records: list[dict], model: str, dataset: str) -> dict:
    """MIG of `model` on `dataset` per arm: {variant: {'kept': [MIG of the runs kept],
    'overpruned': [MIG of the over-pruned runs]}} for original, modified and noisy (the
    report's nominal variant labels; runs without a line-search setting). records: the
    output of report.load_runs."""
    kept, _ = report.group(records)
    pruned, _ = report.group([{**r, "overpruned": False} for r in records if r["overpruned"]])

    def mig(groups, variant):
        return [r["values"]["MIG"] for r in groups.get((model, dataset, variant, ""), [])
                if "MIG" in r["values"]]
    return {v: {"kept": mig(kept, v), "overpruned": mig(pruned, v)} for v in VARIANTS}


def mig_drops(model_arms: dict) -> dict:
    """{'original_mean', 'seeds_original', 'modified': drop record, 'noisy': drop record}
    of the kept runs (stats.drop_test; a variant is absent without runs on both sides)."""
    original = model_arms["original"]["kept"]
    out = {"original_mean": float(np.mean(original)) if original else None,
           "seeds_original": len(original)}
    for variant in ("modified", "noisy"):
        other = model_arms[variant]["kept"]
        if original and other:
            out[variant] = stats.drop_test(original, other)
    return out


def overpruning(model_arms: dict) -> dict:
    """Over-pruning as an outcome per arm: {variant: {'runs', 'overpruned', 'rate' (None
    without runs), 'p_fisher' (vs original; None for original)}}."""
    counts = {v: (len(a["overpruned"]), len(a["kept"]) + len(a["overpruned"]))
              for v, a in model_arms.items()}
    return {v: {"runs": runs, "overpruned": pruned,
                "rate": pruned / runs if runs else None,
                "p_fisher": (None if v == "original" else
                             stats.overpruning_test(*counts["original"], pruned, runs))}
            for v, (pruned, runs) in counts.items()}


def _evidence(drop: dict) -> str:
    return (f"{drop['drop']:.3f}, one-sided p = {drop['p_drop']:.3g}, 95 % CI "
            f"[{drop['ci_low']:.3f}, {drop['ci_high']:.3f}], n {drop['n_original']}/"
            f"{drop['n_other']}")


def _short_arm(who: str, model_arms: dict, variants, include: bool = False) -> str | None:
    """Why an arm of `variants` cannot be tested (fewer than 2 runs), naming over-pruning
    when exclusions emptied it; None when all can."""
    for v in variants:
        arm = model_arms[v]
        used = len(arm["kept"]) + (len(arm["overpruned"]) if include else 0)
        if used >= 2:
            continue
        runs = len(arm["kept"]) + len(arm["overpruned"])
        if arm["overpruned"] and not include:
            return (f"{who}'s {v} arm has {used} run(s) left of {runs}: "
                    f"{len(arm['overpruned'])} over-pruned and excluded (rate "
                    f"{len(arm['overpruned']) / runs:.0%}), so over-pruning is the outcome "
                    "there and the test needs at least 2 runs")
        return f"{who}'s {v} arm has {runs} run(s); the test needs at least 2"
    return None


def _values(arm: dict, include: bool) -> list:
    return arm["kept"] + (arm["overpruned"] if include else [])


def positive_control(beta_vae: dict, alpha: float = ALPHA) -> tuple[bool, dict | None, str]:
    """(passed, drop record or None, one sentence): does the reference study's beta-VAE
    (arms as `arms`) show the exploitation paper 002 Table 1 reports (0.23 -> 0.07 on
    dSprites), i.e. a significant MIG drop on modified data (one-sided Welch at alpha)?
    Without it no method can be judged against the reference."""
    short = _short_arm("the reference β-VAE", beta_vae, ("original", "modified"))
    if short:
        return False, None, (f"Positive control not testable: {short}; the study does not "
                             "show the exploitation it tests for.")
    drop = stats.drop_test(beta_vae["original"]["kept"], beta_vae["modified"]["kept"])
    if drop["p_drop"] < alpha:
        return True, drop, (f"Positive control passed: the reference β-VAE's MIG drops "
                            f"significantly on modified data ({_evidence(drop)}), as in paper "
                            "002 Table 1.")
    return False, drop, (f"Positive control failed: at this scale the reference β-VAE's MIG "
                         f"drop on modified data is not significant ({_evidence(drop)}; paper "
                         "002 Table 1, at 300k steps and 10 seeds: 0.23 → 0.07 on dSprites), "
                         "so the study does not show the exploitation it tests for; train "
                         "longer or with more seeds for a decision.")


def _inconclusive(reason: str, tests: dict, effect=None, spread=None, alpha=ALPHA,
                  what: str = "") -> dict:
    """An INCONCLUSIVE decision with the seeds per arm that would detect `effect` (`what`)
    at `spread` (one-sided Welch at alpha, power 0.8), when both are known; when the
    observed effect is not positive, the reason says that seeds alone will not decide."""
    seeds = None
    if effect is not None and spread is not None:
        seeds = stats.seeds_needed(effect, spread, alpha)
        if seeds is not None:
            reason += (f"; about {seeds} seeds per arm would detect {what} ({effect:.3f}) "
                       f"at the observed spread {spread:.3f} (one-sided Welch, α = {alpha:g}, "
                       "power 0.8)")
        elif effect <= 0:
            reason += (f"; the observed value ({effect:.3f}) is not positive, so more seeds "
                       "alone are unlikely to decide it")
    return {"label": "INCONCLUSIVE", "reason": reason, "tests": tests, "seeds_needed": seeds}


def _decide(method: dict, ae: dict, margin: float, alpha: float, include: bool,
            tests: dict) -> dict:
    """The method's verdict once the positive control has passed (the steps after it in
    the module docstring); include: count the method's over-pruned runs too."""
    tests = dict(tests)
    short = _short_arm("the method", method, ("original", "modified"), include)
    if short:
        return _inconclusive(short, tests)
    original = _values(method["original"], include)
    modified = _values(method["modified"], include)
    short = _short_arm("the reference AE", ae, ("original",))
    if short:
        return _inconclusive(f"no floor check: {short}", tests)
    baseline = ae["original"]["kept"]
    floor = stats.welch(original, baseline, "greater")
    tests["floor"] = floor
    if not floor["p"] < alpha:
        return _inconclusive(
            f"does not disentangle at this scale: its original MIG {np.mean(original):.3f} is "
            f"not significantly above the reference AE's {np.mean(baseline):.3f} (one-sided "
            f"Welch p = {floor['p']:.3g}), so it has no disentanglement to lose", tests,
            floor["diff"], stats.pooled_sd(original, baseline), alpha,
            "such a lead over the AE")
    drop = stats.drop_test(original, modified)
    tests["drop"] = drop
    equivalence = stats.tost(original, modified, margin, alpha)
    tests["equivalence"] = equivalence
    if drop["p_drop"] < alpha:
        short = _short_arm("the method", method, ("noisy",), include)
        if short:
            return _inconclusive(f"MIG drops on modified data ({_evidence(drop)}), but "
                                 f"{short}, so noise sensitivity cannot be ruled out", tests)
        noisy = _values(method["noisy"], include)
        difference = stats.drop_difference(modified, noisy)
        tests["difference"] = difference
        if difference["p"] < alpha:
            return {"label": "DEPENDS", "reason": (
                f"MIG drops on modified data ({_evidence(drop)}), significantly more than on "
                f"noisy data (difference of drops {difference['diff']:.3f}, one-sided Welch "
                f"p = {difference['p']:.3g})"), "tests": tests, "seeds_needed": None}
        if not equivalence["equivalent"]:
            return _inconclusive(
                f"MIG drops on modified data ({_evidence(drop)}) but not significantly more "
                f"than on noisy data (difference of drops {difference['diff']:.3f}, one-sided "
                f"Welch p = {difference['p']:.3g}): noise sensitivity, not shown to be a "
                "dependence on the removed structure", tests, difference["diff"],
                stats.pooled_sd(modified, noisy), alpha, "such a difference of drops")
    if equivalence["equivalent"]:
        return {"label": "ROBUST", "reason": (
            f"MIG on modified data is equivalent to MIG on original data within ±{margin:.3f} "
            f"(the equivalence margin: a fraction of the reference β-VAE's drop): drop "
            f"{equivalence['diff']:.3f}, {100 * (1 - 2 * alpha):g} % CI "
            f"[{equivalence['ci_low']:.3f}, {equivalence['ci_high']:.3f}], TOST p = "
            f"{equivalence['p']:.3g}"), "tests": tests, "seeds_needed": None}
    return _inconclusive(
        f"neither a significant MIG drop on modified data ({_evidence(drop)}) nor "
        f"equivalence within ±{margin:.3f} (TOST p = {equivalence['p']:.3g}, "
        f"{100 * (1 - 2 * alpha):g} % CI [{equivalence['ci_low']:.3f}, "
        f"{equivalence['ci_high']:.3f}])", tests, margin,
        stats.pooled_sd(original, modified), alpha, "a drop the size of the margin")


def verdict(method: dict, beta_vae: dict, ae: dict, alpha: float = ALPHA,
            margin_fraction: float = MARGIN_FRACTION) -> dict:
    """The audit's decision (module docstring) from MIG arms (each as `arms`: the method's,
    the reference beta-VAE's and the reference AE's). Returns {'label': DEPENDS | ROBUST |
    INCONCLUSIVE, 'reason': one sentence, 'tests': {name: record} of the tests run
    ('positive_control', 'floor', 'drop', 'equivalence', 'difference'), 'margin' (None
    before the positive control passes), 'seeds_needed' (INCONCLUSIVE: seeds per arm that
    would decide the failing step, where computable), 'overpruning' (the method's, per arm),
    'exclusions_decide' (True when counting the method's over-pruned runs would change the
    label; the reason then says so)}."""
    passed, control, sentence = positive_control(beta_vae, alpha)
    tests = {"positive_control": control} if control else {}
    out = {"margin": None, "overpruning": overpruning(method), "exclusions_decide": False,
           "positive_control": sentence}
    if not passed:
        spread = (stats.pooled_sd(beta_vae["original"]["kept"], beta_vae["modified"]["kept"])
                  if control else None)
        return {**out, **_inconclusive(
            sentence[0].lower() + sentence[1:].rstrip("."), tests,
            control["drop"] if control else None, spread, alpha,
            "such a drop of the reference β-VAE")}
    margin = margin_fraction * control["drop"]
    decided = _decide(method, ae, margin, alpha, False, tests)
    out["margin"] = margin
    pruned = sum(len(a["overpruned"]) for a in method.values())
    if pruned:
        counted = _decide(method, ae, margin, alpha, True, tests)
        if counted["label"] != decided["label"]:
            out["exclusions_decide"] = True
            decided["reason"] += (f"; the exclusion of {pruned} over-pruned run(s) decides "
                                  f"this verdict: counting them, it would be "
                                  f"{counted['label']}")
    return {**out, **decided}


def _cell(d: dict | None) -> str:
    if d is None:
        return "—"
    ci = "n/a" if d["ci_low"] is None else f"[{d['ci_low']:.3f}, {d['ci_high']:.3f}]"
    p = "n/a" if d["p_drop"] is None else f"{d['p_drop']:.3g}"
    return f"{d['drop']:.3f} (p {p}, CI {ci}, n {d['n_original']}/{d['n_other']})"


def _row(label: str, drops: dict) -> str:
    original = drops.get("original_mean")
    return (f"| {label} | {'—' if original is None else f'{original:.3f}'} | "
            + " | ".join(_cell(drops.get(v)) for v in ("modified", "noisy")) + " |")


def _pruning_lines(label: str, pruning: dict) -> list[str]:
    cells = []
    for v in VARIANTS:
        arm = pruning[v]
        if not arm["runs"]:
            cells.append("—")
            continue
        p = "" if arm["p_fisher"] is None else f", Fisher p {arm['p_fisher']:.3g}"
        cells.append(f"{arm['overpruned']}/{arm['runs']} ({arm['rate']:.0%}{p})")
    return [f"| {label} | " + " | ".join(cells) + " |"]


def run_audit(gin_file: str, name: str, seeds, reference_dir, output_dir, workers: int = 1,
              alpha: float = ALPHA, margin_fraction: float = MARGIN_FRACTION
              ) -> pathlib.Path:
    """Trains what is missing, writes audit.md / audit.json; returns audit.md."""
    reference = reference_settings(reference_dir)
    settings = audit_settings(gin_file, name, seeds, reference, str(output_dir))
    summary = study.execute(settings, workers=workers)
    dataset = settings["datasets"][0]
    runs = report.load_runs(output_dir)
    method_names = sorted({r["model"] for r in runs})
    method_model = method_names[0] if len(method_names) == 1 else name
    method = arms(runs, method_model, dataset)
    reference_runs = report.load_runs(reference_dir)
    references = {m: arms(reference_runs, m, dataset) for m in ("beta_vae", "ae", "pcl")}
    decision = verdict(method, references["beta_vae"], references["ae"], alpha,
                       margin_fraction)
    pruning = {m: overpruning(a) for m, a in [("method", method), *references.items()]}
    payload = {"method": name, "model_name": method_model, "dataset": dataset,
               "verdict": decision["label"], "reason": decision["reason"], "alpha": alpha,
               "margin_fraction": margin_fraction, "margin": decision["margin"],
               "tests": decision["tests"], "seeds_needed": decision["seeds_needed"],
               "exclusions_decide": decision["exclusions_decide"],
               "positive_control": decision["positive_control"],
               "method_drops": mig_drops(method),
               "reference_drops": {m: mig_drops(a) for m, a in references.items()},
               "overpruning": pruning, "reference_study": str(reference_dir),
               "failed_runs": summary["failed"],
               "excluded_overpruned": sum(a["overpruned"] for a in pruning["method"].values())}
    out = pathlib.Path(output_dir)
    write_json(out / "audit.json", payload)
    margin = decision["margin"]
    control = ([] if decision["reason"].startswith("positive control")
               else [decision["positive_control"], ""])
    lines = [f"# Audit of {name}", "", f"**Verdict: {decision['label']}** — "
             f"{decision['reason']}.", "", *control,
             f"MIG on {dataset}, original → modified / noisy (drop = original − variant; "
             f"one-sided Welch p of a drop, α = {alpha:g}; 95 % Welch t CI; n = kept seeds "
             f"original/variant). Equivalence margin (ROBUST): "
             + ("none, the positive control did not pass" if margin is None else
                f"±{margin:.3f} = {margin_fraction:g} × the reference β-VAE's drop")
             + f". Scale and artefact of the reference study `{reference_dir}`.", "",
             "| method | MIG original | drop → modified | drop → noisy |", "|---|---|---|---|",
             _row(f"**{name}**", payload["method_drops"]),
             _row("β-VAE (reference: exploits local structure)",
                  payload["reference_drops"]["beta_vae"]),
             _row("AE (reference: the floor, no disentanglement)",
                  payload["reference_drops"]["ae"]),
             _row("PCL (reference: robust)", payload["reference_drops"]["pcl"]), "",
             "Over-pruned runs per arm (fewer active dims than factors; excluded from the "
             "tests above, an outcome of their own; Fisher's exact p against original):", "",
             "| method | original | modified | noisy |", "|---|---|---|---|"]
    for label, key in ((f"**{name}**", "method"), ("β-VAE (reference)", "beta_vae"),
                       ("AE (reference)", "ae"), ("PCL (reference)", "pcl")):
        lines += _pruning_lines(label, pruning[key])
    lines.append("")
    if summary["failed"]:
        lines.append(f"Failed runs (see {out / 'failed.json'}): {', '.join(summary['failed'])}")
    report.write_report(out, out / "report")
    lines.append("Full tables and figures: [report/report.md](report/report.md)")
    path = out / "audit.md"
    with atomic_path(path, ".md") as tmp:
        tmp.write_text("\n".join(lines) + "\n")
    return path


@cli_main
def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    if not FLAGS.gin_file:
        raise app.UsageError("--gin_file is required")
    gin_path = pathlib.Path(FLAGS.gin_file)
    name = FLAGS.name or gin_path.stem
    output_dir = FLAGS.output_dir or f"results/audit_{name}"
    # ValueError includes fingerprint.ConfigMismatch: the audit directory holds runs of
    # another configuration (benchmark/study.py); DirectoryLocked is a UserError
    with user_errors(FileNotFoundError, ValueError):
        seeds = [int(s) for s in FLAGS.seeds]
        if not (0 < FLAGS.alpha < 1 and FLAGS.margin_fraction > 0):
            raise ValueError(f"expected 0 < --alpha < 1 and --margin_fraction > 0, found "
                             f"{FLAGS.alpha} and {FLAGS.margin_fraction}")
        path = run_audit(str(gin_path), name, seeds, FLAGS.reference, output_dir,
                         FLAGS.workers, FLAGS.alpha, FLAGS.margin_fraction)
    print(path.read_text().split("\n")[2])
    print(path)


if __name__ == "__main__":
    define_flags()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    run_command(main)
