"""python -m benchmark.run --gin_file=FILE.gin [--gin_file=...] [--gin_bindings=...] [--output_dir=DIR]

Trains one model on one dataset variant, evaluates it with the metric suite and writes a
run directory:
    operative_config.gin   the gin config as it was used
    checkpoints/, tb/      resumable training state and TensorBoard curves
    eval_codes.npz         (factors, codes) of the evaluation sample, the format of
                           `python -m benchmark.metrics evaluate`
    reconstructions.png, traversals.png   (methods with a decoder)
    results.json           written last: a run directory without it is not finished
Every file is written to a temporary name and renamed. Starting the same command again
resumes an interrupted run and does nothing for a finished one (unless --overwrite).
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import sys
import time

import gin
import keras
import numpy as np
from absl import app, flags, logging

from benchmark import config, figures
from benchmark import metrics as metrics_lib
from benchmark import train as train_lib
from benchmark.atomic import atomic_path
from benchmark.data import load_data, pipeline
from benchmark.metrics import codes as codes_lib
from benchmark.metrics import health
from models.registry import make_model

SCHEMA_VERSION = 1

FLAGS = flags.FLAGS
config.define_gin_flags("beta_vae.beta = 8")
flags.DEFINE_string("output_dir", None, "Run directory (default: runs/<model>_<dataset>_"
                    "<variant>_seed<seed>).")
flags.DEFINE_boolean("overwrite", False, "Retrain even when the run directory is complete.")


@gin.configurable("run")
def run_settings(seed: int = 0, steps: int = 300000, batch_size: int = 64,
                 metrics=("mig", "dci", "sap", "factor_vae_score", "infomec"),
                 eval_points: int = 10000, checkpoint_every: int = 1000,
                 log_every: int = 100, jit_compile: bool = False,
                 pair_rate: float = 6.0, health_points: int = 1000,
                 figures: bool = True, precision: str = "float32") -> dict:
    """Training and evaluation settings (dlib defaults: batch 64, 300k steps).

    pair_rate: Laplace rate of the factor transitions for pair-trained methods (SlowVAE,
    PCL; REFERENCE.md).
    health_points: evaluation images for active units, PSNR and reconstruction loss.
    figures: write reconstructions.png and traversals.png (methods with a decoder).
    precision: 'float32', or 'mixed_bfloat16' (GPU: layers compute in bfloat16, variables,
      output layers and losses stay float32; no loss scaling needed).
    """
    if precision not in ("float32", "mixed_bfloat16"):
        raise ValueError(f"run.precision must be 'float32' or 'mixed_bfloat16', found "
                         f"{precision!r}")
    if int(health_points) < 2 or int(eval_points) < 2:
        raise ValueError(f"run.eval_points and run.health_points must be >= 2, found "
                         f"{eval_points} and {health_points}")
    return dict(seed=seed, steps=steps, batch_size=batch_size, metrics=tuple(metrics),
                eval_points=eval_points, checkpoint_every=checkpoint_every,
                log_every=log_every, jit_compile=jit_compile, pair_rate=pair_rate,
                health_points=health_points, figures=figures, precision=precision)


def make_stream(model, data, settings: dict, first_batch: int):
    """The batch stream the model's `input_kind` asks for, starting at `first_batch`."""
    kind = getattr(model, "input_kind", "images")
    if kind == "images":
        return pipeline.image_dataset(data, settings["batch_size"], settings["seed"],
                                      first_batch)
    if kind in ("pairs", "pairs_with_negatives"):
        return pipeline.pair_dataset(data, settings["batch_size"], settings["seed"],
                                     first_batch, rate=settings["pair_rate"],
                                     negatives=kind == "pairs_with_negatives")
    raise ValueError(f"model {model.name!r} asks for unknown input kind {kind!r}")


def batched_representation(model, batch_size: int = 256):
    def representation(images: np.ndarray) -> np.ndarray:
        return np.concatenate([np.asarray(model.representation(images[i:i + batch_size]))
                               for i in range(0, len(images), batch_size)])
    return representation


def model_health(model, images: np.ndarray, num_factors: int, batch_size: int = 256
                 ) -> dict:
    """Active units and the overpruning flag (methods with a posterior log-variance), PSNR
    and the model's own mean reconstruction loss (methods with a decoder) on `images`.
    The decoder sees what `encode` gives it: 'codes' where a method quantises, else the
    posterior mean."""
    scores = {}
    batches = [images[i:i + batch_size] for i in range(0, len(images), batch_size)]
    encoded = ([model.encode(batch) for batch in batches] if hasattr(model, "encode")
               else [{"mean": model.representation(batch)} for batch in batches])
    if "logvar" in encoded[0]:
        variance = np.exp(np.concatenate([np.asarray(e["logvar"]) for e in encoded]))
        scores.update(health.active_units(variance, num_factors))
    if hasattr(model, "decode_images"):
        codes = [model.representation(batch) for batch in batches]
        decoded = np.concatenate([np.asarray(model.decode_images(c)) for c in codes])
        scores["psnr"] = health.psnr(images, decoded.astype(np.float64))
        if hasattr(model, "reconstruction_loss") and hasattr(model, "decode"):
            scores["reconstruction_loss"] = float(np.mean(np.concatenate([
                np.asarray(model.reconstruction_loss(batch, model.decode(e.get("codes",
                                                                               e["mean"]))))
                for batch, e in zip(batches, encoded)])))
    return scores


def write_json(path: pathlib.Path, payload: dict) -> None:
    with atomic_path(path, ".json") as tmp:
        tmp.write_text(json.dumps(payload, indent=2, sort_keys=True))


def run(output_dir: pathlib.Path | None, overwrite: bool = False) -> pathlib.Path:
    """Trains and evaluates the parsed configuration; returns the run directory."""
    settings = run_settings()
    data = load_data()
    keras.mixed_precision.set_global_policy(settings["precision"])
    model = make_model(data.observation_shape)
    described = data.describe()
    if output_dir is None:
        output_dir = pathlib.Path("runs") / (f"{model.name}_{described['name']}_"
                                             f"{described.get('variant', 'original')}_"
                                             f"seed{settings['seed']}")
    output_dir = pathlib.Path(output_dir)
    if (output_dir / "results.json").exists():
        if not overwrite:
            logging.info("%s is complete (results.json exists); use --overwrite to retrain",
                         output_dir)
            return output_dir
        shutil.rmtree(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    with atomic_path(output_dir / "operative_config.gin", ".gin") as tmp:
        tmp.write_text(gin.config_str())

    health_rng = np.random.default_rng([settings["seed"], 2])
    health_images = data.observations_from_factors(
        data.sample_factors(settings["health_points"], health_rng), health_rng)
    representation = batched_representation(model)
    image_summary = None
    if hasattr(model, "decode_images"):
        def image_summary():
            sheet, _ = figures.reconstruction_sheet(
                health_images[:10], representation,
                lambda c: np.asarray(model.decode_images(c)))
            return sheet

    start = time.perf_counter()
    training = train_lib.train(
        model, lambda first: make_stream(model, data, settings, first),
        settings["steps"], output_dir, settings["seed"], settings["checkpoint_every"],
        settings["log_every"], settings["jit_compile"], image_summary=image_summary)
    eval_rng = np.random.default_rng([settings["seed"], 1])
    factors, codes = codes_lib.sample_codes(data, representation, settings["eval_points"],
                                            eval_rng, batch_size=256)
    with atomic_path(output_dir / "eval_codes.npz", ".npz") as tmp, open(tmp, "wb") as f:
        np.savez(f, factors=factors, codes=codes)
    scores = metrics_lib.evaluate(data, representation, settings["seed"],
                                  settings["metrics"], record_errors=True)
    scores["health"] = model_health(model, health_images, data.num_factors)
    if settings["figures"] and hasattr(model, "decode_images"):
        figures.write_model_figures(
            output_dir, health_images, codes, representation,
            lambda c: np.asarray(model.decode_images(c)),
            f"{model.name} on {described['name']} ({described.get('variant', 'original')})",
            scores["health"].get("mean_posterior_variance"))
    results = {"schema_version": SCHEMA_VERSION, "seed": settings["seed"],
               "model": model.name, "dataset": described, "settings": {
                   k: list(v) if isinstance(v, tuple) else v for k, v in settings.items()},
               "steps": training["steps"], "resumed_from": training["resumed_from"],
               "train_seconds": training["seconds"],
               "wall_seconds": time.perf_counter() - start,
               "final_losses": training["final_terms"], "metrics": scores,
               "gin_config": gin.config_str()}
    write_json(output_dir / "results.json", results)
    return output_dir


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    if not FLAGS.gin_file and not FLAGS.gin_bindings:
        raise app.UsageError("give at least one --gin_file or --gin_bindings")
    try:
        config.parse_config(FLAGS.gin_file, FLAGS.gin_bindings)
    except (ValueError, KeyError, IOError) as error:
        print(f"error: invalid gin configuration: {error}", file=sys.stderr)
        sys.exit(2)
    out = run(pathlib.Path(FLAGS.output_dir) if FLAGS.output_dir else None, FLAGS.overwrite)
    print(out / "results.json")


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    app.run(main)
