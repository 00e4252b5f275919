"""How far a VAE's posterior reaches, in the factors' class steps: the mechanism behind
the rate reading.

Paper 002 (sec. 3.3, after eq. 8) locates the pressure that aligns a β-VAE's axes in the
stochastic reconstruction term: the encoder's noise reaches "a certain radius of the
relevant local structure", so the decoder is asked about an image's neighbours only as far
as the posterior spreads. A posterior narrower than one class step reaches no neighbour.
This module measures that reach on a trained run. Per latent j, over images with factors
(n, k) in class steps, posterior means mu (n, d) and standard deviations sigma (n, d):

    mu_j - mean ~ g_j . (factors - mean)          (least squares; g_j in units per class step)
    sd_j        = mean over images of sigma_j
    reach_j     = sd_j / |g_j|                    (the posterior's sd in class steps along
                                                   the direction the latent moves in)
    factor_j    = the factor with the largest |g_j| component

A reach below 1 means neighbouring images (one class step apart) sit more than one
posterior sd apart on that latent. Reading reach as "the radius of the relevant local
structure" is the suite's reading of paper 002, not the paper's own measure. The gradient
is a linear fit: for a latent that is not linear in the factors (alignment.py's R^2 < 0.5)
|g_j| understates how fast the mean moves, and the reach overstates; `r2` is kept beside it.

    python -m benchmark.metrics.posterior_reach STUDY_OR_RUN_DIR [...]

Each run directory needs its operative_config.gin and checkpoints/ (written by
benchmark.run; checkpoints are not kept in git, so a published study needs a bit-identical
retrain first, as `python -m benchmark.readings restore_codes` documents). The run's own
data (its variant, fixed factors, ranges) is rebuilt from its configuration and every image
is encoded when there are at most MAX_IMAGES; else a seeded sample of MAX_IMAGES factor
rows. A run whose encoder gives no posterior ('logvar') is named and skipped. Writes
DIR/posterior_reach.json ({'runs': [row, ...]}, atomically) for each directory given and
prints one line per run.
"""

from __future__ import annotations

import math
import pathlib

import numpy as np

from benchmark.core.errors import cli_main, run_command
from benchmark.metrics import codes as codes_lib

#: images encoded per run at most (all of a plane; a seeded sample of a larger dataset)
MAX_IMAGES = 10_000
#: images per encoder call
BATCH = 256


def reach_in_class_steps(factors, means, sds) -> dict:
    """{'sd', 'gradient', 'reach', 'factor', 'r2'}: per latent (lists of d) the mean
    posterior sd, the least-squares gradient of the mean per class step (a list of k floats
    per latent), sd / |gradient|, the index of the factor with the largest |gradient|
    component and the fit's R^2, for factors (n, k) in class steps, means (n, d) and
    sds (n, d) > 0. MetricInputError for mismatched shapes, non-finite values, sds <= 0, a
    constant factor or a latent whose mean does not move (|gradient| 0: no reach exists)."""
    factors, means = codes_lib.check_codes(factors, means, 3, "posterior_reach")
    sds = np.asarray(sds, dtype=np.float64)
    if sds.shape != means.shape or not np.all(np.isfinite(sds)) or np.any(sds <= 0):
        raise codes_lib.MetricInputError(
            f"posterior_reach: expected posterior sds of the means' shape {means.shape}, "
            f"finite and > 0; found shape {sds.shape} with "
            f"{int(np.sum(~np.isfinite(sds)))} non-finite and {int(np.sum(sds <= 0))} <= 0")
    grid = factors.astype(np.float64)
    grid -= grid.mean(axis=0)
    if np.any(grid.std(axis=0) == 0):
        raise codes_lib.MetricInputError("posterior_reach: a factor is constant over the "
                                         "images; expected every column of factors to vary")
    centred = means - means.mean(axis=0)
    gradients, *_ = np.linalg.lstsq(grid, centred, rcond=None)            # (k, d)
    norms = np.linalg.norm(gradients, axis=0)
    if np.any(norms == 0):
        raise codes_lib.MetricInputError(
            f"posterior_reach: latent(s) {np.flatnonzero(norms == 0).tolist()} do not move "
            "with the factors (gradient 0); a reach is not defined for them")
    residual = ((centred - grid @ gradients) ** 2).sum(axis=0)
    total = (centred ** 2).sum(axis=0)
    sd = sds.mean(axis=0)
    return {"sd": sd.tolist(), "gradient": gradients.T.tolist(),
            "reach": (sd / norms).tolist(),
            "factor": np.argmax(np.abs(gradients), axis=0).tolist(),
            "r2": np.where(total > 0, 1.0 - residual / np.where(total > 0, total, 1.0),
                           0.0).tolist()}


def run_dirs(paths) -> list[pathlib.Path]:
    """The run directories under each path: the path itself when it holds
    operative_config.gin, else its runs/*/ that do; ValueError naming a path with none."""
    found = []
    for path in map(pathlib.Path, paths):
        runs = ([path] if (path / "operative_config.gin").exists()
                else sorted(p.parent for p in path.glob("runs/*/operative_config.gin")))
        if not runs:
            raise codes_lib.MetricInputError(
                f"{path}: expected a run directory (operative_config.gin) or a study "
                "directory (runs/*/operative_config.gin), found neither")
        found.extend(runs)
    return found


def _posterior(model, images) -> tuple[np.ndarray, np.ndarray] | None:
    """(means, sds) of images (n, h, w, c) in [0, 1], in batches; None when the model's
    encode() gives no 'logvar'."""
    import tensorflow as tf

    means, sds = [], []
    for start in range(0, len(images), BATCH):
        out = model.encode(tf.constant(images[start:start + BATCH], tf.float32))
        if not isinstance(out, dict) or "mean" not in out or "logvar" not in out:
            return None
        means.append(np.asarray(out["mean"], np.float64))
        sds.append(np.exp(0.5 * np.asarray(out["logvar"], np.float64)))
    return np.concatenate(means), np.concatenate(sds)


def run_reach(run_dir) -> dict | None:
    """The row of one run: {'run', 'step', 'images', 'factor_names', and
    reach_in_class_steps' keys with 'factor' as names}; None when its encoder has no
    posterior. Rebuilds the run's data and model from its operative_config.gin and reads
    its newest intact checkpoint."""
    import gin

    import benchmark.runs.run  # noqa: F401  (registers run.* for the operative config)
    from benchmark.core import config
    from benchmark.data import load_data
    from benchmark.runs.train import restore_model
    from models.configurables import configured_model
    from perturbations.artefact import load_variant

    run_dir = pathlib.Path(run_dir)
    gin.clear_config()
    try:
        config.parse_config([str(run_dir / "operative_config.gin")], [])
        data = load_data(artefact_loader=load_variant)
        model = configured_model(data.observation_shape)
    finally:
        gin.clear_config()
    step = restore_model(model, run_dir)
    sizes = [int(s) for s in data.factor_sizes]
    count = math.prod(sizes)
    if count <= MAX_IMAGES:
        factors = np.stack(np.meshgrid(*map(np.arange, sizes), indexing="ij"),
                           -1).reshape(-1, len(sizes))
    else:
        factors = np.stack([np.random.default_rng(0).integers(0, s, MAX_IMAGES)
                            for s in sizes], 1)
    posterior = _posterior(model, data.observations_from_factors(factors))
    if posterior is None:
        return None
    row = reach_in_class_steps(factors, *posterior)
    names = list(data.factor_names)
    row["factor"] = [names[i] for i in row["factor"]]
    return {"run": run_dir.name, "step": step, "images": len(factors),
            "factor_names": names, **row}


def define_flags() -> None:
    """Paths only."""


@cli_main
def main(argv) -> None:
    from absl import app

    from benchmark.core.atomic import write_json

    if len(argv) < 2:
        raise app.UsageError("usage: python -m benchmark.metrics.posterior_reach "
                             "STUDY_OR_RUN_DIR [...]")
    for path in argv[1:]:
        rows = []
        for run_dir in run_dirs([path]):
            row = run_reach(run_dir)
            if row is None:
                print(f"{run_dir.name}: no posterior (encode() gives no 'logvar'), skipped")
                continue
            rows.append(row)
            latents = "  ".join(f"z{j} {f} sd {s:.3f} reach {r:.2f} R2 {q:.2f}" for j, (f, s, r, q)
                                in enumerate(zip(row["factor"], row["sd"], row["reach"], row["r2"])))
            print(f"{row['run']:48s} step {row['step']}  {latents}")
        if not rows:
            raise codes_lib.MetricInputError(f"{path}: no run with a posterior (every "
                                             "encoder gave no 'logvar')")
        out = pathlib.Path(path) / "posterior_reach.json"
        write_json(out, {"runs": rows})
        print(f"written {out}")


if __name__ == "__main__":
    define_flags()
    run_command(main)
