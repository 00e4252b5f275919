"""Reference beta-VAEs of the manipulation (paper 002 sec. 4.3): trained by the runner over
several restarts (or reused from finished run directories), ranked by MIG, the least
disentangled (min MIG) and the most disentangled (max MIG) chosen; ensembles of k + k take
the k lowest and the k highest (Shapes3D: 4 + 4, appendix B.1).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import gin
import numpy as np

from benchmark import config
from benchmark import results as results_lib
from benchmark import train as train_lib
from benchmark.errors import UserError
from models.configurables import configured_model
from perturbations.artefact import is_integer, is_number, read_json_object


class ReferenceError(UserError, RuntimeError):
    """A reference run that could not be trained or read."""


def check_gin_config(text, source) -> str:
    """`text` if it is a gin config that imports only the suite's packages and includes no
    file (benchmark.config.check_untrusted_config); else ReferenceError naming `source`."""
    try:
        return config.check_untrusted_config(text, source)
    except config.UntrustedConfigError as error:
        raise ReferenceError(str(error)) from None


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
    """{'run_dir', 'seed', 'mig', 'overpruned' (fewer active dims than factors, paper 002
    sec. 5.3; None when the run did not record it), 'mean_posterior_variance', 'method',
    'dataset', 'gin_config'} of a finished beta-VAE-family run (its results.json)."""
    path = pathlib.Path(run_dir) / "results.json"
    if not path.is_file():
        raise ReferenceError(f"reference {run_dir}: expected a finished run (results.json), "
                             "found none")
    results = read_json_object(path, ReferenceError, max_bytes=64 << 20)

    def field(*keys):
        value = results
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    if results.get("schema_version") == results_lib.SCHEMA_VERSION:   # benchmark/results.py
        mig_name, variance_name = "scalars['metric/mig']", "health/mean_posterior_variance"
        mig = field("scalars", "metric/mig")
        overpruned = field("scalars", "health/overpruned")
        try:
            variance = results_lib.read_arrays(run_dir).get(variance_name)
        except results_lib.ResultsError as error:
            raise ReferenceError(str(error)) from None
        variance = None if variance is None else variance.tolist()
        variance_name = f"{results_lib.ARRAYS}[{variance_name!r}]"
    else:                                                        # schema version 1
        mig_name, variance_name = "metrics.mig.mig", "metrics.health.mean_posterior_variance"
        mig = field("metrics", "mig", "mig")
        overpruned = field("metrics", "health", "overpruned")
        variance = field("metrics", "health", "mean_posterior_variance")
    if mig is None:
        raise ReferenceError(f"reference {run_dir}: expected a MIG score in results.json "
                             "(run.metrics must include 'mig'), found none")
    if not is_number(mig):
        raise ReferenceError(f"{path}: expected {mig_name}, a finite number, found "
                             f"{mig!r} ({type(mig).__name__})")
    if variance is None:
        raise ReferenceError(f"reference {run_dir}: expected a variational model with posterior "
                             f"variances, found model {results.get('model')!r} without them")
    if not (isinstance(variance, list) and variance and all(is_number(v) for v in variance)):
        raise ReferenceError(f"{path}: expected {variance_name}, a "
                             f"list of finite numbers, found {str(variance)[:80]}")
    if not is_integer(results.get("seed")):
        raise ReferenceError(f"{path}: expected an integer seed, found "
                             f"{results.get('seed')!r} ({type(results.get('seed')).__name__})")
    gin_config = check_gin_config(results.get("gin_config"), f"{path} (gin_config)")
    return {"run_dir": str(run_dir), "seed": results["seed"], "mig": float(mig),
            "overpruned": None if overpruned is None else bool(overpruned),
            "mean_posterior_variance": variance, "method": results.get("model"),
            "dataset": results.get("dataset"), "gin_config": gin_config}


def choose(references: list[dict], ensemble_size: int = 1, exclude_overpruned: bool = False,
           min_mig_gap: float | None = None) -> tuple[list[dict], list[dict]]:
    """(entangled: the `ensemble_size` lowest MIG, disentangled: the highest), each sorted.

    exclude_overpruned: choose among the runs that are not over-pruned only (issue 28 step
      5; a run that did not record it is an error, not a guess).
    min_mig_gap: the pre-registered contrast the references must have, the lowest
      disentangled MIG minus the highest entangled MIG; a pool below it is an error that
      says so (no references with that contrast at this length)."""
    if exclude_overpruned:
        unknown = [r["run_dir"] for r in references if r.get("overpruned") is None]
        if unknown:
            raise ReferenceError(f"excluding over-pruned references needs each run's "
                                 f"health/overpruned, found none in {unknown[:3]}")
        kept = [r for r in references if not r["overpruned"]]
        if len(kept) < 2 * ensemble_size:
            raise ReferenceError(f"{len(references) - len(kept)} of {len(references)} "
                                 f"references are over-pruned; {len(kept)} are left and "
                                 f"{ensemble_size} + {ensemble_size} are needed")
        references = kept
    if len(references) < 2 * ensemble_size:
        raise ReferenceError(f"choosing {ensemble_size} entangled + {ensemble_size} "
                             f"disentangled references needs >= {2 * ensemble_size} runs, "
                             f"found {len(references)}")
    ranked = sorted(references, key=lambda r: (r["mig"], r["run_dir"]))
    entangled, disentangled = ranked[:ensemble_size], ranked[::-1][:ensemble_size]
    if min_mig_gap is not None:
        gap = min(r["mig"] for r in disentangled) - max(r["mig"] for r in entangled)
        if gap < min_mig_gap:
            raise ReferenceError(
                f"the chosen references' MIG gap is {gap:.3f} (entangled up to "
                f"{max(r['mig'] for r in entangled):.3f}, disentangled from "
                f"{min(r['mig'] for r in disentangled):.3f}), below the pre-registered "
                f"minimum {min_mig_gap:g}: this pool has no references with that contrast")
    return entangled, disentangled


def load_encoder_decoder(reference: dict, observation_shape):
    """(encoder, decoder) of a reference run, rebuilt from its operative gin config and
    restored from its last checkpoint. Clears the global gin config (call it after every
    setting of the caller has been read)."""
    text = check_gin_config(reference["gin_config"], f"reference {reference['run_dir']}")
    gin.clear_config()
    try:
        gin.parse_config(text, skip_unknown=True)
        model = configured_model(tuple(observation_shape))
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
