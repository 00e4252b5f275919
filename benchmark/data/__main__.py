"""python -m benchmark.data {preview,export} --dataset=dsprites|shapes3d [--variant=noisy] ...

preview: a PNG sheet of random samples plus one traversal row per factor; for a variant
         other than original also OUT's name with .change.json: how much the variant
         changes the images (L-infinity, mean |x' - x|, energy per image;
         benchmark/data/change.py), which study reports list per arm.
export:  the dataset (any variant) in the official file format, for other libraries.
"""

from __future__ import annotations

import ast

from absl import app, flags, logging

from benchmark.atomic import write_json
from benchmark.data import DATASETS, VARIANTS, export, get_dataset, make_variant, preview
from benchmark.data.change import arm_change, change_path
from benchmark.data.subset import FactorSubset
from benchmark.errors import cli_main, run_command, user_errors
from perturbations.artefact import load_variant

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command, so that
    importing this module next to another command's flags never clashes)."""
    flags.DEFINE_enum("dataset", "dsprites", list(DATASETS), "Ground-truth dataset.")
    flags.DEFINE_enum("variant", "original", list(VARIANTS), "Dataset variant.")
    flags.DEFINE_enum("source", "auto", ["auto", "procedural", "file"],
                      "Official file, procedural renderer, or the file when present.")
    flags.DEFINE_string("data_dir", None, "Directory of the official files "
                        "(default: $DISENTANGLEMENT_LIB_DATA).")
    flags.DEFINE_float("eps", None, "Noise strength of the noisy variant "
                       "(default: paper 002, 0.1 dSprites / 0.175 Shapes3D).")
    flags.DEFINE_integer("noise_seed", 0, "Seed of the noisy variant's fixed per-image noise.")
    flags.DEFINE_integer("seed", 0, "Seed of the preview's random samples.")
    flags.DEFINE_string("artefact", None, "Perturbation artefact directory (variant 'modified', "
                        "or a noise artefact for 'noisy').")
    flags.DEFINE_string("fixed_factors", None, "Reduce the dataset to its other factors "
                        "first, as data.fixed_factors: a dict literal of factor name to "
                        "class, e.g. \"{'shape': 1, 'scale': 5, 'orientation': 0}\".")
    flags.DEFINE_string("out", None, "Output file (PNG for preview; .npz / .h5 for export).")


COMMANDS = ("preview", "export")


def parse_fixed_factors(text: str) -> dict:
    """--fixed_factors' dict literal (data, never code: ast.literal_eval)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = None
    if not isinstance(value, dict):
        raise app.UsageError(f"--fixed_factors: expected a dict literal such as "
                             f"\"{{'shape': 1}}\", found {text!r}")
    return value


@cli_main
def main(argv):
    if len(argv) != 2 or argv[1] not in COMMANDS:
        raise app.UsageError(f"expected one command, one of {', '.join(COMMANDS)}; "
                             f"found {' '.join(argv[1:]) or 'none'}")
    if not FLAGS.out:
        raise app.UsageError("--out is required")
    with user_errors(FileNotFoundError, ValueError):    # DataFileError is a ValueError
        original = get_dataset(FLAGS.dataset, FLAGS.source, FLAGS.data_dir)
        if FLAGS.fixed_factors:
            original = FactorSubset(original, parse_fixed_factors(FLAGS.fixed_factors))
        data = make_variant(original, FLAGS.variant, eps=FLAGS.eps, seed=FLAGS.noise_seed,
                            artefact=FLAGS.artefact, artefact_loader=load_variant)
        if argv[1] == "preview":
            title = f"{FLAGS.dataset} ({data.describe()['source']}, {FLAGS.variant})"
            path = preview.save_preview(data, FLAGS.out, seed=FLAGS.seed, title=title)
            if FLAGS.variant != "original":
                measured = change_path(path)
                write_json(measured, {"dataset": FLAGS.dataset, "variant": FLAGS.variant,
                                      "eps": data.describe().get("eps"),
                                      **arm_change(original, data)})
                logging.info("wrote %s", measured)
        else:
            path = export.export_official(data, FLAGS.out)
    logging.info("wrote %s", path)
    print(path)


if __name__ == "__main__":
    define_flags()
    run_command(main)
