"""Reference beta-VAEs of the manipulation (paper 002 sec. 4.3): trained by the runner over
several restarts (or reused from finished run directories), ranked by MIG, the least
disentangled (min MIG) and the most disentangled (max MIG) chosen; ensembles of k + k take
the k lowest and the k highest (Shapes3D: 4 + 4, appendix B.1).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import gin
import numpy as np

from benchmark import train as train_lib
from models.registry import make_model


class ReferenceError(RuntimeError):
    """A reference run that could not be trained or read."""


def train_reference(gin_files, gin_bindings, seed: int, run_dir) -> pathlib.Path:
    """Runs `python -m benchmark.run` for one restart (resumes or skips a finished run)."""
    args = [sys.executable, "-m", "benchmark.run", *[f"--gin_file={f}" for f in gin_files],
            *[f"--gin_bindings={b}" for b in gin_bindings],
            f"--gin_bindings=run.seed = {int(seed)}", f"--output_dir={run_dir}"]
    result = subprocess.run(args, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise ReferenceError(f"reference run {run_dir} (seed {seed}) failed:\n"
                             f"{result.stderr[-3000:]}")
    return pathlib.Path(run_dir)


def read_reference(run_dir) -> dict:
    """{'run_dir', 'seed', 'mig', 'mean_posterior_variance', 'method', 'gin_config'} of a
    finished beta-VAE-family run (its results.json)."""
    path = pathlib.Path(run_dir) / "results.json"
    if not path.is_file():
        raise ReferenceError(f"reference {run_dir}: expected a finished run (results.json), "
                             "found none")
    results = json.loads(path.read_text())
    mig = results.get("metrics", {}).get("mig", {}).get("mig")
    if mig is None:
        raise ReferenceError(f"reference {run_dir}: expected a MIG score in results.json "
                             "(run.metrics must include 'mig'), found none")
    variance = results.get("metrics", {}).get("health", {}).get("mean_posterior_variance")
    if variance is None:
        raise ReferenceError(f"reference {run_dir}: expected a variational model with posterior "
                             f"variances, found model {results.get('model')!r} without them")
    return {"run_dir": str(run_dir), "seed": results["seed"], "mig": float(mig),
            "mean_posterior_variance": variance, "method": results["model"],
            "dataset": results["dataset"], "gin_config": results["gin_config"]}


def choose(references: list[dict], ensemble_size: int = 1) -> tuple[list[dict], list[dict]]:
    """(entangled: the `ensemble_size` lowest MIG, disentangled: the highest), each sorted."""
    if len(references) < 2 * ensemble_size:
        raise ReferenceError(f"choosing {ensemble_size} entangled + {ensemble_size} "
                             f"disentangled references needs >= {2 * ensemble_size} runs, "
                             f"found {len(references)}")
    ranked = sorted(references, key=lambda r: (r["mig"], r["run_dir"]))
    return ranked[:ensemble_size], ranked[::-1][:ensemble_size]


def load_encoder_decoder(reference: dict, observation_shape):
    """(encoder, decoder) of a reference run, rebuilt from its operative gin config and
    restored from its last checkpoint. Clears the global gin config (call it after every
    setting of the caller has been read)."""
    gin.clear_config()
    try:
        gin.parse_config(reference["gin_config"], skip_unknown=True)
        model = make_model(tuple(observation_shape))
    finally:
        gin.clear_config()
    if not hasattr(model, "decoder") or not hasattr(model, "encoder"):
        raise ReferenceError(f"reference {reference['run_dir']}: expected an encoder-decoder "
                             f"model, found {reference['method']!r}")
    train_lib.restore_model(model, reference["run_dir"])
    return model.encoder, model.decoder


def dims_by_variance(reference: dict) -> list[int]:
    """Latent dims ordered by mean posterior variance, most informative first (eqs. 13-14)."""
    return [int(i) for i in np.argsort(reference["mean_posterior_variance"])]
