"""python -m benchmark.metrics evaluate --codes=FILE.npz [--metrics=mig,dci,...] [--out=F.json]
    [--preset=suite|dlib] [--gin_file=...] [--gin_bindings="sap.classifier = 'linear_svm'"]

Scores any representation saved as an npz with two arrays: `factors` (n, k) integer
classes of the ground-truth factors and `codes` (n, d) float codes of the same n images,
drawn uniformly from the dataset. Files are data: loaded with allow_pickle=False.

Metric settings come from gin, exactly as in a run: the preset's file
(gin_configs/metrics/<preset>.gin; `dlib` = every disentanglement_lib-compatible choice,
`suite` = the suite's defaults), then --gin_file, then --gin_bindings (later wins). A
misspelt binding or a value a metric does not allow exits 2 before the codes are read.
The scores are printed and written (--out) with the settings that produced them
(`metric_settings`: classifier, bins, k, pruning, sample counts, seed of each metric).
"""

from __future__ import annotations

from absl import app, flags

from benchmark.core import config
from benchmark.core.atomic import write_json
from benchmark.core.errors import UserError, cli_main, run_command, user_errors
from benchmark.metrics import (METRICS, TRAIN_FRACTION, codes_settings, evaluate_codes,
                               resolve_settings)
from benchmark.metrics import codes as codes_lib

SCHEMA_VERSION = 1

#: --preset values: gin files under gin_configs/metrics/
PRESETS = ("suite", "dlib")

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command, so that
    importing this module next to another command's flags never clashes)."""
    flags.DEFINE_string("codes", None, "npz with arrays 'factors' (n, k) and 'codes' (n, d).")
    flags.DEFINE_list("metrics", list(METRICS), "Metrics to compute.")
    flags.DEFINE_string("out", None, "Write the scores as JSON here (atomically).")
    flags.DEFINE_integer("seed", 0, "Seed of the metrics' randomness.")
    flags.DEFINE_enum("preset", "suite", list(PRESETS), "Metric settings: 'suite' (the "
                      "suite's defaults) or 'dlib' (disentanglement_lib's choices: exact "
                      "GBT DCI, LinearSVC SAP, FactorVAE pruning and fresh batches); "
                      "--gin_file / --gin_bindings apply on top.")
    config.define_gin_flags("sap.classifier = 'linear_svm'")


def preset_file(preset: str) -> str:
    """The gin file of a preset, relative to gin_configs/."""
    if preset not in PRESETS:
        raise ValueError(f"--preset must be one of {', '.join(PRESETS)}, found {preset!r}")
    return f"metrics/{preset}.gin"


def _describe(values: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items() if k != "level")


@cli_main
def main(argv):
    if len(argv) != 2 or argv[1] != "evaluate":
        raise app.UsageError(f"expected the command 'evaluate', found {' '.join(argv[1:]) or 'none'}")
    if not FLAGS.codes:
        raise app.UsageError("--codes is required")
    if not FLAGS.metrics:
        raise UserError(f"--metrics is empty; expected metric names from "
                        f"{', '.join(METRICS)}")
    gin_files = [preset_file(FLAGS.preset), *FLAGS.gin_file]
    with user_errors(ValueError, KeyError, IOError, prefix="invalid metric configuration: "):
        config.parse_config(gin_files, FLAGS.gin_bindings)
        resolved = resolve_settings(FLAGS.metrics, FLAGS.seed)
    with user_errors(ValueError):                       # MetricInputError is a ValueError
        factors, codes = codes_lib.load_codes(FLAGS.codes)
        settings = codes_settings(resolved, len(codes), TRAIN_FRACTION)
        scores = evaluate_codes(factors, codes, FLAGS.seed, FLAGS.metrics, TRAIN_FRACTION,
                                settings)
    result = {"schema_version": SCHEMA_VERSION, "codes_file": FLAGS.codes, "seed": FLAGS.seed,
              "preset": FLAGS.preset, "gin_files": gin_files,
              "gin_bindings": list(FLAGS.gin_bindings),
              "num_samples": int(len(codes)), "num_factors": int(factors.shape[1]),
              "code_dims": int(codes.shape[1]), "metrics": scores,
              "metric_settings": settings}
    print(f"preset {FLAGS.preset}; gin files {', '.join(gin_files)}"
          + (f"; bindings {'; '.join(FLAGS.gin_bindings)}" if FLAGS.gin_bindings else ""))
    for name, values in scores.items():
        shown = ", ".join(f"{k}={v}" if isinstance(v, int) else f"{k}={v:.4f}"
                          for k, v in values.items()
                          if isinstance(v, (int, float)) and not isinstance(v, bool))
        print(f"{name:24s} {shown}")
        print(f"{'':24s} settings: {_describe(settings[name])}")
    if FLAGS.out:
        write_json(FLAGS.out, result, sort_keys=False)
        print(f"wrote {FLAGS.out}")


if __name__ == "__main__":
    define_flags()
    run_command(main)
