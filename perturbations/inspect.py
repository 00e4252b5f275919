"""python -m perturbations.inspect DIR [--num_images N] [--out JSON] [--publish]

Diagnostics of the manipulation artefact in DIR (perturbations/diagnostics.py): std of m
across images, its image-independent vs w-dependent energy, per-factor sensitivity, the
distribution of the one-neuron scalar s = a.w + b and m along it, saturated pixels, and
mean |x' - x| beside the noise arm's. Prints the key numbers; --out writes the whole
result as JSON; --publish merges it into DIR/evidence.json ("diagnostics", other keys
kept) and redraws DIR/figure.png (the images generate.py drew, now beside the numbers).
The artefact's weights and metadata.json are only read (the weights' SHA-256 is checked).
Exit status: 0 done (also when the artefact is below the minimum effect: that is logged
as a warning and recorded), 2 the artefact cannot be loaded or an argument is invalid (one
line `error: ...`, the suite's policy in benchmark/core/errors.py).
"""

from __future__ import annotations

import os
import pathlib

from absl import app, flags, logging

from benchmark.core.atomic import write_json
from benchmark.core.errors import cli_main, run_command, user_errors

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command, so that
    importing this module next to another command's flags never clashes)."""
    from perturbations.diagnostics import DEFAULT_IMAGES

    flags.DEFINE_integer("num_images", DEFAULT_IMAGES, "Uniform factor samples the "
                         "diagnostics use (each costs k + 1 evaluations of m).", lower_bound=2)
    flags.DEFINE_integer("seed", 0, "Seed of the factor samples.", lower_bound=0)
    flags.DEFINE_string("out", None, "Write the diagnostics as JSON to this file.")
    flags.DEFINE_string("source", None, "Dataset source (procedural|file|auto); default: "
                        "the one recorded in the artefact's metadata.")
    flags.DEFINE_boolean("publish", False, "Merge the diagnostics into DIR/evidence.json "
                         "and redraw DIR/figure.png with them (weights and metadata.json "
                         "are never written).")


def inspect_artefact(directory, num_images: int, seed: int = 0, source: str | None = None,
                     publish: bool = False) -> dict:
    """The diagnostics of the manipulation artefact in `directory` (see
    diagnostics.manipulation_diagnostics); with `publish`, also written into its
    evidence.json and figure.png. ArtefactError when it cannot be loaded."""
    from perturbations import diagnostics
    from perturbations.generate import publish_diagnostics

    data, network, metadata = diagnostics.load_manipulation_artefact(directory, source)
    found = diagnostics.manipulation_diagnostics(data, network, metadata["eps"], num_images,
                                                 seed)
    if publish:
        figure_seed = metadata.get("training", {}).get("seed", 0)
        publish_diagnostics(directory, data, network, metadata["eps"],
                            figure_seed if isinstance(figure_seed, int) else 0, found)
    elif found["minimum_effect"]["below_minimum"]:
        logging.warning("artefact %s is below the minimum effect: %s", directory,
                        "; ".join(found["minimum_effect"]["reasons"]))
    return found


@cli_main
def main(argv):
    from perturbations.diagnostics import summary_lines

    if len(argv) != 2:
        raise app.UsageError("expected one artefact directory: python -m "
                             "perturbations.inspect DIR [--num_images N] [--out JSON]")
    directory = pathlib.Path(argv[1])
    with user_errors(OSError, ValueError):             # ArtefactError is a UserError
        found = inspect_artefact(directory, FLAGS.num_images, FLAGS.seed, FLAGS.source,
                                 FLAGS.publish)
    print("\n".join([str(directory)] + summary_lines(found)))
    if FLAGS.out:
        write_json(FLAGS.out, {"artefact": str(directory), **found})
        print(f"wrote {FLAGS.out}")
    if FLAGS.publish:
        print(f"wrote {directory / 'evidence.json'} and {directory / 'figure.png'}")


if __name__ == "__main__":
    define_flags()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    run_command(main)
