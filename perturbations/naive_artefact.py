"""python -m perturbations.naive_artefact MANIPULATION_ARTEFACT --out=DIR [--source=procedural]

Writes paper 002 sec. 4.4's "naive" move (perturbations/naive.py) as a perturbation
artefact of kind 'naive' (perturbations/artefact.py): the move of every image of the
grid, computed once from the entangled and disentangled references that
MANIPULATION_ARTEFACT records (its published copies, checked against their digests), so a
run trains on it like any other variant:

    data.variant = 'naive'
    data.artefact = 'DIR'
    data.eps = 1.0            # the share of the move, in (0, 1]; default the artefact's 1

`--towards=disentangled` writes its control instead, the same construction with the
references' roles swapped (each image moved towards the disentangled reference's
reconstruction and away from the entangled one's), trained on as `data.variant =
'naive_swapped'`: a move of the same kind and size that favours the other side.

The references are loaded here, once, and never by a run (loading a reference rebuilds its
model from its own gin config). The dataset must be small enough that every image's move
is kept (perturbations.naive.MAX_IMAGES, e.g. the 1,024 images of the reduced ellipse);
the deltas are float32, compressed.
"""

from __future__ import annotations

import pathlib

import numpy as np
from absl import app, flags

from benchmark.core.errors import ConfigError, cli_main, run_command, user_errors
from perturbations import artefact
from perturbations.naive import MAX_IMAGES, TOWARDS, feasible_move, reconstructions

FLAGS = flags.FLAGS
#: the move's formula, as the artefact's metadata records it
DELTA_FORMULA = TOWARDS["entangled"][1]


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command)."""
    flags.DEFINE_string("out", None, "Artefact directory to write.")
    flags.DEFINE_enum("source", None, ["auto", "procedural", "file"],
                      "Where the dataset's images come from (default: the source the "
                      "manipulation artefact records).")
    flags.DEFINE_enum("towards", "entangled", sorted(TOWARDS),
                      "The side each image moves towards: 'entangled' (paper 002's naive "
                      "move, variant 'naive') or 'disentangled' (its control with the "
                      "references' roles swapped, variant 'naive_swapped').")
    flags.DEFINE_float("eps", 1.0, "The artefact's default strength, in (0, 1]: the share "
                       "of the move a run applies when it sets no data.eps.")


def write_naive_artefact(manipulation_dir, out, source: str | None = None,
                         eps: float = 1.0, towards: str = "entangled") -> pathlib.Path:
    """Writes the naive artefact of the manipulation artefact in `manipulation_dir` to
    `out` (module docstring); towards='disentangled' writes its swapped control (variant
    'naive_swapped'); returns `out`. ArtefactError / ReferenceError / ConfigError (one line
    each) when the artefact, its references or its dataset do not fit."""
    if towards not in TOWARDS:
        raise ConfigError(f"--towards: expected one of {sorted(TOWARDS)}, found {towards!r}")
    metadata = artefact.read_metadata(manipulation_dir)
    if metadata["kind"] != "manipulation":
        raise artefact.ArtefactError(
            f"perturbation artefact {manipulation_dir}: the naive move is built from the "
            f"references of a manipulation artefact, found kind {metadata['kind']!r}")
    strength = artefact.check_eps(eps, "--eps")
    data = artefact.artefact_dataset(metadata, source)
    if data.num_images > MAX_IMAGES:
        raise ConfigError(f"the naive artefact keeps every image's move: expected at most "
                          f"{MAX_IMAGES} images, found {data.num_images}")
    from perturbations import references    # TensorFlow's import, after the checks above

    runs = references.recorded_references(metadata, manipulation_dir)
    found = {side: [references.read_reference(r) for r in dirs] for side, dirs in runs.items()}
    pairs = {side: [references.load_encoder_decoder(r, data.observation_shape) for r in refs]
             for side, refs in found.items()}
    images = data.observations_from_factors(data.factors_of(np.arange(data.num_images)))
    other = "disentangled" if towards == "entangled" else "entangled"
    deltas = feasible_move(images, reconstructions(pairs[towards], images),
                           reconstructions(pairs[other], images))
    energy = (deltas.astype(np.float64) ** 2).reshape(len(deltas), -1).sum(axis=1)
    return artefact.save_naive(out, deltas, {
        "dataset": metadata["dataset"], "factor_sizes": list(metadata["factor_sizes"]),
        **({"fixed_factors": metadata["fixed_factors"]} if metadata.get("fixed_factors")
           else {}),
        "observation_shape": [int(s) for s in data.observation_shape],
        "source": data.describe().get("source", source), "eps": strength,
        "delta": TOWARDS[towards][1], "towards": towards,
        "made_from": str(manipulation_dir),
        "references": {side: [{"run_dir": r["run_dir"], "seed": r["seed"], "mig": r["mig"]}
                              for r in refs] for side, refs in found.items()},
        "energy_per_image_at_eps_1": float(energy.mean()),
    })


@cli_main
def main(argv):
    if len(argv) != 2:
        raise app.UsageError("expected one manipulation artefact directory, found "
                             f"{' '.join(argv[1:]) or 'none'}")
    if not FLAGS.out:
        raise app.UsageError("--out is required")
    with user_errors(ValueError, FileNotFoundError):
        print(write_naive_artefact(argv[1], FLAGS.out, FLAGS.source, FLAGS.eps, FLAGS.towards))


if __name__ == "__main__":
    define_flags()
    run_command(main)
