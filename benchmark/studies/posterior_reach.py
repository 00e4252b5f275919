"""python -m benchmark.posterior_reach STUDY_OR_RUN_DIR [...]

How far each run's posterior reaches, in the factors' class steps
(benchmark/metrics/posterior_reach.py has the formula and what it is read as). Each run
directory needs its operative_config.gin and checkpoints/ (written by benchmark.run;
checkpoints are not kept in git, so a published study needs a bit-identical retrain first,
as `python -m benchmark.readings restore_codes` documents). The run's own data (its
variant, fixed factors, ranges) is rebuilt from its configuration and every image is
encoded when there are at most MAX_IMAGES; else a seeded sample of MAX_IMAGES factor rows.
A run whose encoder gives no posterior ('logvar') is named and skipped. On an additive
perturbation (the wave, its texture, noise: benchmark/data/variants.py) the row also
keeps 'perturbation': how much of what was added its decoder renders
(benchmark/metrics/perturbation_share.py; None on unperturbed data or for a model without
decode_images). Writes
DIR/posterior_reach.json ({'runs': [row, ...]}, atomically) for each directory given and
prints one line per run.
"""

from __future__ import annotations

import pathlib

import numpy as np

from benchmark.core.errors import cli_main
from benchmark.metrics import codes as codes_lib
from benchmark.metrics.perturbation_share import perturbation_share
from benchmark.metrics.posterior_reach import reach_in_class_steps

#: images encoded per run at most (all of a plane; a seeded sample of a larger dataset)
MAX_IMAGES = 10_000
#: images per encoder call
BATCH = 256


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
    for batch in codes_lib.batches(images, BATCH):
        out = model.encode(tf.constant(batch, tf.float32))
        if not isinstance(out, dict) or "mean" not in out or "logvar" not in out:
            return None
        means.append(np.asarray(out["mean"], np.float64))
        sds.append(np.exp(0.5 * np.asarray(out["logvar"], np.float64)))
    return np.concatenate(means), np.concatenate(sds)


def _perturbation(model, data, factors, images, means) -> dict | None:
    """perturbation_share of the run's reconstructions (decoded from the posterior means)
    against the clean images of the same factors; None on data that is not an additive
    perturbation or for a model without decode_images."""
    from benchmark.data.variants import AdditivePerturbation

    if not isinstance(data, AdditivePerturbation) or not hasattr(model, "decode_images"):
        return None
    reconstructed = codes_lib.apply_in_batches(model.decode_images, means.astype(np.float32),
                                               BATCH)
    return perturbation_share(data.base.observations_from_factors(factors), images,
                              reconstructed)


def run_data(run_dir, bindings=()):
    """The data of a run, rebuilt from its operative_config.gin with `bindings` (gin lines,
    e.g. "data.variant = 'noisy'") applied after it."""
    import gin

    import benchmark.runs.run  # noqa: F401  (registers run.* for the operative config)
    from benchmark.core import config
    from benchmark.data import load_data
    from perturbations.artefact import load_variant

    gin.clear_config()
    try:
        config.parse_config([str(pathlib.Path(run_dir) / "operative_config.gin")],
                            list(bindings))
        return load_data(artefact_loader=load_variant)
    finally:
        gin.clear_config()


def trained_run(run_dir) -> tuple:
    """(data, model, step) of a finished run: its data (`run_data`) and model rebuilt from
    its operative_config.gin, the model restored from its newest intact checkpoint;
    MetricInputError naming the directory when it has no checkpoint."""
    run_dir = pathlib.Path(run_dir)
    if not any((run_dir / "checkpoints").glob("*.index")):     # before TensorFlow's import
        raise codes_lib.MetricInputError(
            f"{run_dir}: expected checkpoints/ with a checkpoint, found none (checkpoints are "
            "not kept in git: retrain the study into another output_dir, check it is "
            "bit-identical with `python -m benchmark.readings restore_codes`, and read the "
            "retrain)")
    import gin

    from benchmark.core import config
    from benchmark.runs.train import restore_model
    from models.configurables import configured_model

    data = run_data(run_dir)
    gin.clear_config()
    try:
        config.parse_config([str(run_dir / "operative_config.gin")], [])
        model = configured_model(data.observation_shape)
    finally:
        gin.clear_config()
    return data, model, restore_model(model, run_dir)


def run_reach(run_dir) -> dict | None:
    """The row of one run: {'run', 'step', 'images', 'factor_names', and
    reach_in_class_steps' keys with 'factor' as names}; None when its encoder has no
    posterior (`trained_run`)."""
    run_dir = pathlib.Path(run_dir)
    data, model, step = trained_run(run_dir)
    factors = (data.factors_of(np.arange(data.num_images)) if data.num_images <= MAX_IMAGES
               else data.sample_factors(MAX_IMAGES, np.random.default_rng(0)))
    images = data.observations_from_factors(factors)
    posterior = _posterior(model, images)
    if posterior is None:
        return None
    row = reach_in_class_steps(factors, *posterior)
    names = list(data.factor_names)
    row["factor"] = [names[i] for i in row["factor"]]
    return {"run": run_dir.name, "step": step, "images": len(factors),
            "factor_names": names, **row,
            "perturbation": _perturbation(model, data, factors, images, posterior[0])}


def define_flags() -> None:
    """Paths only."""


@cli_main
def main(argv) -> None:
    from absl import app

    from benchmark.core.atomic import write_json

    if len(argv) < 2:
        raise app.UsageError("usage: python -m benchmark.posterior_reach "
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
            rendered = row["perturbation"]
            shown = (f"  perturbation rendered {rendered['share']:.2f} (energy "
                     f"{rendered['energy']:.1f})" if rendered else "")
            print(f"{row['run']:48s} step {row['step']}  {latents}{shown}")
        if not rows:
            raise codes_lib.MetricInputError(f"{path}: no run with a posterior (every "
                                             "encoder gave no 'logvar')")
        out = pathlib.Path(path) / "posterior_reach.json"
        write_json(out, {"runs": rows})
        print(f"written {out}")
