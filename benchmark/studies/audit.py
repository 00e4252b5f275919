"""python -m benchmark.audit --gin_file=my_method.gin [--name=NAME] [--seeds=0,1,2,3,4]
[--strengths=0.05,0.1,0.2] [--reference=results/geometry_cpu] [--output_dir=runs/audit_NAME]
[--alpha=0.05] [--margin_fraction=0.5] [--dry_run]
python -m benchmark.audit export --out=DIR [--reference=...] [--seeds=...] [--strengths=...]
python -m benchmark.audit score --export=DIR --name=NAME [--output_dir=...]

Audits one method (any model of the suite, or the user's own: see models/registry.py and
docs/audit.md) for paper 002's question: does its disentanglement
depend on the local structure of the data that a factor-dependent perturbation removes?
The reference study's battery (benchmark/studies/battery.py; default the geometry battery,
results/geometry_cpu: the ellipse of dSprites, where a wave turns the images' local
geometry to the diagonal, with noise and a fixed-phase texture of the same energy as
controls and the wave at four strengths) says which arm is the manipulation and which are
its controls. A reference without a battery (results/zietlow2021_cpu) has paper 002's:
modified against noisy.
1. prints the plan (runs, and the time they take at the reference runs' measured
   cost), then trains the method on every arm of the reference's battery (original, the
   manipulation, its controls and the sweep; an arm outside it enters no verdict and is
   not trained) for several seeds, with the reference's settings (steps, metrics,
   artefacts, from its study.json), as a study in --output_dir (resumable; a run counts
   as finished only with the configuration fingerprint the audit asks for, see study.py);
2. tests its MIG (benchmark/statistics/stats.py: Welch's t-test, Welch t intervals, TOST, the
   difference of drops) beside the reference study's beta-VAE (known to exploit local
   structure), AE (no disentanglement: the floor) and PCL (the robust control);
3. writes audit.md and audit.json with a verdict, decided in this order (`verdict`, in
   benchmark/studies/verdict.py with the rules below):
   - positive control: the reference beta-VAE's MIG drop on the manipulated arm must
     itself be significant (one-sided Welch, p < alpha); else INCONCLUSIVE: the study
     does not show the exploitation it tests for. Its second half, whether that drop is
     larger than on every control (`reference_specificity`), is reported and named in
     the sentences below: without it the battery shows the manipulation's cost, not that
     the cost comes from the structure it removes;
   - validity gate: the reference beta-VAE's original MIG must be above the reference
     AE's (one-sided Welch); else INCONCLUSIVE, untestable at this scale (nothing to lose);
   - floor: the method's original MIG must be significantly above the reference AE's
     (one-sided Welch); else INCONCLUSIVE, "does not disentangle at this scale";
   - DEPENDS on local structure: a significant MIG drop on the manipulated arm (one-sided
     Welch), significantly larger than the drop on every control (stats.drop_difference),
     so it is not mere sensitivity to a change that keeps the structure, *and* either a
     turn of the code (misalignment up on the manipulated arm, one-sided Welch, over the
     runs whose latents follow the battery's plane linearly) or a smaller share of its MIG
     kept than the reference AE keeps on that arm (stats.keeps_less);
   - LOSES INFORMATION: that specific drop without a turn or a share beyond the AE's: the
     manipulation costs the code information, as it costs any code;
   - ROBUST: original and manipulated MIG equivalent within ±margin (TOST at alpha), the
     margin being margin_fraction (default 0.5) of the share of its headroom above the AE
     floor the reference beta-VAE loses, times the method's own headroom, so a method
     with less disentanglement to lose is held to a proportionally smaller drop (a drop
     that is significant, but no larger than on a control and within the margin, is
     ROBUST too: it is smaller than the effect the audit looks for);
   - SENSITIVE: a significant drop on the manipulated arm that is not significantly
     larger than on a control, where the drop on that control is itself significant: the
     code is hurt by a control, a perturbation that keeps the removed structure,
     so a dependence on that structure is not separated from it (the pattern of the
     reference beta-VAE when its drop is not specific);
   - INCONCLUSIVE otherwise, with the seeds per arm (stats.seeds_needed, power 0.8 at the
     observed spread) that would decide the failing step.
   Both DEPENDS and ROBUST require each of their tests at alpha (intersection-union
   tests), so no multiplicity correction applies. Over-pruned runs (paper 002 sec. 5.3)
   are excluded from the tests and reported per arm as an outcome (count, rate, Fisher's
   p against original); an arm emptied by exclusions is named in the verdict, and when
   counting the method's over-pruned runs would change the verdict, the verdict says that
   the exclusions decide it.
   Beside the verdict: the battery, its scale and the power of the method's seeds; whether
   the reference PCL kept its MIG (`robust_control`, TOST at the same margin); MIG, DCI-D,
   DCI-I and the alignment angle per arm (benchmark/metrics/alignment.py), which tell a code
   that turned from one that lost information; and the dose-response over the sweep's
   strengths, as a table and dose_response.png, with the strength at which each code
   turns (benchmark/studies/battery.py).
A method trained in another framework (PyTorch, JAX) is audited with `export` (each arm's
images in the official file format and a manifest), codes written by the user, and
`score` (the same metrics and verdict): benchmark/studies/external.py.
"""

from __future__ import annotations

import pathlib
import sys

import gin
from absl import app, flags

from benchmark.core import config
from benchmark.core.errors import UserError, cli_main, user_errors
from benchmark.studies import battery as battery_lib
from benchmark.studies import external, report_data, study
from benchmark.studies.audit_plan import battery_variants, plan, reference_settings
from benchmark.studies.audit_report import write_audit
from benchmark.studies.verdict import ALPHA, MARGIN_FRACTION

FLAGS = flags.FLAGS
#: the geometry battery at CPU scale (gin_configs/studies/geometry_cpu.gin)
DEFAULT_REFERENCE = "results/geometry_cpu"
DEFAULT_SEEDS = (0, 1, 2, 3, 4)


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command)."""
    flags.DEFINE_string("gin_file", None, "The method's gin file (model.* bindings, and an "
                        "`import` line for a method of your own); not for export / score.")
    flags.DEFINE_string("name", None, "Name of the method in the audit (default: the gin "
                        "file's stem).")
    flags.DEFINE_list("seeds", [str(s) for s in DEFAULT_SEEDS], "Seeds per arm: more "
                      "seeds, more power and time. Given, every arm's verdict rests on these "
                      "seeds alone; by default the audit also counts the finished runs of "
                      "other seeds in its directory (a registered extension of an arm, named "
                      "in the verdict's scope).")
    flags.DEFINE_list("strengths", None, "Strengths of the reference's dose-response sweep to "
                      "train (default: all of them); the manipulated arm and its controls "
                      "are always trained. Fewer strengths, less time.")
    flags.DEFINE_string("reference", DEFAULT_REFERENCE, "Reference study directory (its "
                        "study.json fixes the scale and the arms; its beta_vae, ae and pcl "
                        "runs are the references).")
    flags.DEFINE_bool("dry_run", False, "Print the planned runs and the estimated time, "
                      "train nothing.")
    flags.DEFINE_string("out", None, "export: the directory to write each arm's images, "
                        "the manifest and (by you) the codes into.")
    flags.DEFINE_string("export", None, "score: the directory `export` wrote, with the "
                        "codes files written into it.")
    flags.DEFINE_string("output_dir", None, "Audit directory (default runs/audit_<name>; "
                        "publishing is an explicit copy into results/).")
    flags.DEFINE_integer("workers", 1, "Runs at a time.", lower_bound=1)
    flags.DEFINE_integer("runs_per_process", 1, "Runs one process trains in sequence "
                         "(TensorFlow's start paid once; the same numbers as alone).",
                         lower_bound=1)
    flags.DEFINE_float("alpha", ALPHA, "Level of every test of the verdict.")
    flags.DEFINE_float("margin_fraction", MARGIN_FRACTION, "Equivalence margin of ROBUST, as "
                       "a fraction of the share of its headroom above the AE's MIG the "
                       "reference beta-VAE loses on the manipulated arm, applied to each "
                       "model's own headroom.")


def audit_settings(gin_file: str, name: str, seeds, reference: dict, output_dir: str,
                   strengths=None) -> study.StudySettings:
    """Study settings of the audit: the reference study's scale and its battery's arms,
    this one method. strengths: the sweep strengths to train (None: every one the
    reference has); the manipulated arm and its controls are always trained, the
    reference's arms outside the battery never."""
    dataset = "dsprites" if "dsprites" in reference["datasets"] else reference["datasets"][0]
    battery = battery_lib.battery_of(reference)
    variants = list(reference.get("variants") or battery_lib.LEGACY_VARIANTS)
    if strengths is not None:
        wanted = {float(s) for s in strengths}
        offered = {eps for eps, _ in battery_lib.sweep_of(battery, dataset, variants)}
        if not battery.get("sweep") or not wanted <= offered:
            raise ValueError(f"--strengths: expected strengths of the reference's sweep "
                             f"({sorted(offered) or 'none: it has no sweep'}), found "
                             f"{sorted(wanted)}")
        fixed = {"original", battery["manipulated"], *battery["controls"]}
        strength = {battery_lib.label(v, dataset): v for v in variants}
        eps_of = {strength[arm]: eps for eps, arm in battery_lib.sweep_of(battery, dataset,
                                                                          variants)}
        variants = [v for v in variants if v in fixed or v not in eps_of
                    or eps_of[v] in wanted]
    # the battery's arms only: a reference's other arms (paper 002's L-inf noise beside the
    # energy-matched one, say) enter no verdict and would cost a run per seed each
    variants = battery_variants(battery, variants)
    return study.study_settings(
        name=f"audit_{name}", output_dir=output_dir, models={name: str(gin_file)},
        datasets=[dataset], variants=variants,
        artefacts={dataset: reference["artefacts"].get(dataset, {})}, seeds=list(seeds),
        bindings=reference["bindings"], source=reference.get("source", "auto"),
        battery=battery)


def run_audit(gin_file: str, name: str, seeds, reference_dir, output_dir, workers: int = 1,
              alpha: float = ALPHA, margin_fraction: float = MARGIN_FRACTION,
              strengths=None, announce=print, only_seeds: bool = True,
              runs_per_process: int = 1) -> pathlib.Path:
    """Trains what is missing, writes audit.md / audit.json (and dose_response.png with a
    sweep); returns audit.md. announce: called with the plan's text before any training."""
    reference = reference_settings(reference_dir)
    settings = audit_settings(gin_file, name, seeds, reference, str(output_dir), strengths)
    announce(plan(settings, report_data.load_runs(reference_dir), workers)["text"])
    summary = study.execute(settings, workers=workers, runs_per_process=runs_per_process)
    if summary["stopped"]:
        raise UserError(f"{len(summary['stopped'])} run(s) were stopped before they finished "
                        f"({', '.join(summary['stopped'][:3])}); no verdict was written on "
                        "fewer seeds than planned: the same command resumes them")
    return write_audit(name, seeds, reference, reference_dir, settings, output_dir, alpha,
                       margin_fraction, summary["failed"], only_seeds=only_seeds)


def _external_settings(reference_dir, seeds, strengths) -> tuple[dict, dict]:
    """(reference settings, audit settings) for codes trained elsewhere
    (benchmark/studies/external.py): the reference's arms, a placeholder method."""
    reference = reference_settings(reference_dir)
    return reference, audit_settings(external.PLACEHOLDER_GIN, "external", seeds, reference,
                                     "unused", strengths)


def check_method_config(settings: study.StudySettings) -> None:
    """Parses the first planned run's gin files and bindings as its run will, and checks its
    model.method: a module the method's gin file cannot import (with config.parse_config's
    hint), a misspelt binding or an unknown method fails here in one line, before the plan
    is printed or any run starts (not once in every run, minutes later)."""
    from benchmark.runs import run  # noqa: F401  (registers every configurable a run binds)
    from models.configurables import check_bound_method
    spec = study.expand(settings)[0]
    try:
        config.parse_config(list(spec.gin_files), list(spec.bindings))
        check_bound_method()
    finally:
        gin.clear_config()


@cli_main
def main(argv):
    command = argv[1] if len(argv) > 1 else None
    if len(argv) > 2 or command not in (None, "export", "score"):
        raise app.UsageError(f"expected no argument (train and audit), 'export' or 'score', "
                             f"found {' '.join(argv[1:])}")
    # ValueError includes fingerprint.ConfigMismatch: the audit directory holds runs of
    # another configuration (benchmark/studies/study.py); DirectoryLocked is a UserError
    with user_errors(FileNotFoundError, ValueError):
        seeds = [int(s) for s in FLAGS.seeds]
        if not seeds or len(set(seeds)) != len(seeds) or not all(0 <= s < 2**32
                                                                 for s in seeds):
            raise ValueError(f"--seeds: expected distinct seeds in [0, 2**32), at least one, "
                             f"found {FLAGS.seeds}")
        if not (0 < FLAGS.alpha < 1 and FLAGS.margin_fraction > 0):
            raise ValueError(f"expected 0 < --alpha < 1 and --margin_fraction > 0, found "
                             f"{FLAGS.alpha} and {FLAGS.margin_fraction}")
        strengths = (None if FLAGS.strengths is None
                     else [float(s) for s in FLAGS.strengths])
        reference_dir = config.find_published(FLAGS.reference)
        if command == "export":
            if not FLAGS.out:
                raise app.UsageError("export needs --out (the directory to write)")
            reference, settings = _external_settings(reference_dir, seeds, strengths)
            print(external.export(reference_dir, reference, settings, FLAGS.out,
                                  strengths))
            if len(seeds) < 2:
                print(f"note: --seeds={','.join(map(str, seeds))}: a verdict needs at least "
                      "2 seeds an arm (it tests drops across seeds); export with more to "
                      "score a verdict", file=sys.stderr)
            return
        if command == "score":
            if not (FLAGS.export and FLAGS.name):
                raise app.UsageError("score needs --export (the export's directory) and "
                                     "--name (the method's name)")
            config.check_path_name(FLAGS.name, "--name")
            alpha, fraction = FLAGS.alpha, FLAGS.margin_fraction
            path = external.score(
                FLAGS.export, FLAGS.name, FLAGS.output_dir or f"runs/audit_{FLAGS.name}",
                _external_settings,
                lambda *args: write_audit(*args, alpha, fraction, failed=[]))
            print(path.read_text().split("\n")[2])
            print(path)
            return
        if not FLAGS.gin_file:
            raise app.UsageError("--gin_file is required")
        gin_path = pathlib.Path(FLAGS.gin_file)
        if config.find_gin_file(FLAGS.gin_file) is None:     # before any plan or training
            raise FileNotFoundError(f"--gin_file: expected a gin file, found none at "
                                    f"{FLAGS.gin_file} (nor under {config.GIN_SEARCH_PATH})")
        name = config.check_path_name(FLAGS.name or gin_path.stem,
                                      "--name" if FLAGS.name else "--name (from --gin_file)")
        output_dir = FLAGS.output_dir or f"runs/audit_{name}"
        reference = reference_settings(reference_dir)
        settings = audit_settings(str(gin_path), name, seeds, reference, output_dir,
                                  strengths)
        check_method_config(settings)              # a dry run too: before any plan
        if FLAGS.dry_run:
            print(plan(settings, report_data.load_runs(reference_dir), FLAGS.workers)["text"])
            print(f"output directory: {output_dir}")
            for spec in study.expand(settings):
                print(f"  {spec.name}")
            return
        path = run_audit(str(gin_path), name, seeds, reference_dir, output_dir,
                         FLAGS.workers, FLAGS.alpha, FLAGS.margin_fraction, strengths,
                         only_seeds=FLAGS["seeds"].present > 0,
                         runs_per_process=FLAGS.runs_per_process)
    print(path.read_text().split("\n")[2])
    print(path)
