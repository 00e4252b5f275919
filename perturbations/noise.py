"""python -m perturbations.noise --dataset=dsprites [--eps=0.1] [--seed=0] --out=DIR
[--eps_sweep=0.05,0.2]

Writes the noisy variant of paper 002 sec. 5.2 (uniform pixel noise in [-eps, eps], fixed
per image) as a perturbation artefact, the same format as the manipulation's
(perturbations/artefact.py), so a study loads 'noisy' and 'modified' alike:
data.variant = 'noisy'; data.artefact = DIR. Nothing is rendered here: the noise of an
image is a function of (seed, index), computed when the image is read.
"""

from __future__ import annotations

import pathlib

from absl import app, flags

from benchmark.core.errors import cli_main, run_command, user_errors
from benchmark.data import DATASETS
from benchmark.data.variants import DEFAULT_EPS
from perturbations import artefact

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command, so that
    importing this module next to another command's flags never clashes)."""
    flags.DEFINE_enum("dataset", "dsprites", list(DATASETS), "Dataset the noise is for.")
    flags.DEFINE_float("eps", None, "Noise strength (default 0.1 dSprites, 0.175 Shapes3D).")
    flags.DEFINE_integer("seed", 0, "Seed of the fixed per-image noise.")
    flags.DEFINE_string("out", None, "Artefact directory to write.")
    flags.DEFINE_list("eps_sweep", [], "Further strengths, written as <out>_eps<E>.")


def write_noise_artefact(out, dataset: str, eps: float | None = None, seed: int = 0
                         ) -> pathlib.Path:
    """Writes a noise artefact directory for `dataset`; returns it."""
    from benchmark.data import get_dataset
    eps = DEFAULT_EPS[dataset] if eps is None else float(eps)
    if not 0.0 < eps <= 1.0:
        raise ValueError(f"noise eps must be in (0, 1], found {eps}")
    sizes = get_dataset(dataset, "procedural").factor_sizes
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    artefact.write_metadata(out, {"kind": "noise", "dataset": dataset, "eps": eps,
                                  "seed": int(seed),
                                  "factor_sizes": [int(s) for s in sizes]})
    return out


@cli_main
def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    if not FLAGS.out:
        raise app.UsageError("--out is required")
    with user_errors(ValueError):
        written = [write_noise_artefact(FLAGS.out, FLAGS.dataset, FLAGS.eps, FLAGS.seed)]
        for eps in FLAGS.eps_sweep:
            written.append(write_noise_artefact(f"{FLAGS.out}_eps{float(eps):g}",
                                                FLAGS.dataset, float(eps), FLAGS.seed))
    for path in written:
        print(path)


if __name__ == "__main__":
    define_flags()
    run_command(main)
