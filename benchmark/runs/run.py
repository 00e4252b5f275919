"""python -m benchmark.run --gin_file=FILE.gin [--gin_file=...] [--gin_bindings=...] [--output_dir=DIR]

Trains one model on one dataset variant, evaluates it with the metric suite and writes a
run directory:
    operative_config.gin   the gin config as it was used
    checkpoints/, tb/      resumable training state and TensorBoard curves
    eval_codes.npz         (factors, codes) of the evaluation sample, the format of
                           `python -m benchmark.metrics evaluate`
    reconstructions.png, traversals.png   (methods with a decoder)
    fingerprint.json       the run's identity: fingerprint of its gin configuration
                           (benchmark/runs/fingerprint.py) and the suite version
    run_manifest.json      what this run wrote (all that --overwrite removes)
    started_from.json      (run.start_from only) the shorter run of the same
                           configuration whose last checkpoint this run trained on from
    arrays.npz             per-factor vectors and matrices of the scores (load with
                           allow_pickle=False; benchmark/runs/results.py)
    results.json           written last: a run directory without it is not finished;
                           schema version 2 (benchmark/runs/results.py): hyperparameters as a
                           flat dict of the gin bindings, scalar scores under namespaced
                           keys ('metric/mig', 'health/psnr', 'loss/kl'), and
                           `metric_settings`, the settings behind every score
Every file is written to a temporary name and renamed. Everything random is seeded from
run.seed (Python, numpy, TF and Keras initialisers before the model is built; training
and evaluation draw from (seed, step) / (seed, purpose)), so the same command gives the
same weights and numbers in another process. One process writes a run directory at a time
(benchmark/core/lock.py). Starting the same command again resumes an interrupted run (its
leftover temporary files removed) and does nothing for a finished one; a directory
holding a run of another configuration is refused with the differing bindings
(--overwrite replaces it). The default directory name ends in 8 hex digits of the
configuration's fingerprint, so two configurations never share one by default. Ctrl-C
ends with one line naming the last checkpoint; rerunning resumes from it.
"""

from __future__ import annotations

import glob
import json
import dataclasses
import pathlib
import shutil
import sys
import time

import gin
import keras
import numpy as np
import tensorflow as tf
from absl import app, flags, logging

from benchmark import metrics as metrics_lib
from benchmark.core import config, machine
from benchmark.core.atomic import atomic_path, temporaries_of, write_json
from benchmark.core.errors import UserError, cli_main, user_errors
from benchmark.core.lock import LOCK_NAME, directory_lock
from benchmark.data import load_data, materialize, pipeline
from benchmark.metrics import codes as codes_lib
from benchmark.metrics import health
from benchmark.runs import figures
from benchmark.runs import fingerprint as fingerprint_lib
from benchmark.runs import results as results_lib
from benchmark.runs import train as train_lib
from models.configurables import check_bound_method, configured_model

SCHEMA_VERSION = results_lib.SCHEMA_VERSION

FLAGS = flags.FLAGS


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command, so that
    importing this module next to another command's flags never clashes)."""
    config.define_gin_flags("beta_vae.beta = 8")
    flags.DEFINE_string("output_dir", None, "Run directory (default: runs/<model>_<dataset>_"
                        "<variant>_seed<seed>_<8 hex digits of the configuration's fingerprint>).")
    flags.DEFINE_boolean("overwrite", False, "Retrain from scratch even when the run directory "
                         "holds a finished run or a run of another configuration (only the "
                         "files that run wrote are removed).")


#: what a run writes into its directory; run_manifest.json lists those it has written
OUTPUTS = ("operative_config.gin", fingerprint_lib.FILE_NAME, "checkpoints", "tb",
           "eval_codes.npz", "reconstructions.png", "traversals.png", "arrays.npz",
           "results.json", "started_from.json")
MANIFEST = "run_manifest.json"


class RunError(UserError, ValueError):
    """A setting or run directory the run cannot use: one message, before any training."""


class RunInterrupted(Exception):
    """Ctrl-C: the message names the last checkpoint."""


#: the most steps a run may ask for (the papers train 300k; 10^8 would take years here)
MAX_STEPS = 10**8


def _count(name: str, value, minimum: int, maximum: int | None = None) -> int:
    if (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum
            or (maximum is not None and value > maximum)):
        bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise RunError(f"run.{name} must be an integer {bound}, found {value!r}")
    return int(value)


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """A run's checked training and evaluation settings (`run_settings`, whose docstring
    says what each means); `record()` is the form results.json keeps."""
    seed: int
    steps: int
    batch_size: int
    metrics: tuple
    eval_points: int
    checkpoint_every: int
    log_every: int
    jit_compile: bool
    pair_rate: float
    health_points: int
    figures: bool
    precision: str
    shared_eval_sample: bool
    threads: int
    metric_points: int | None
    eval_every: int
    start_from: str | None

    def record(self) -> dict:
        """{setting: value}, tuples as lists (JSON)."""
        return {k: list(v) if isinstance(v, tuple) else v
                for k, v in dataclasses.asdict(self).items()}


@gin.configurable("run")
def run_settings(seed: int = 0, steps: int = 300000, batch_size: int = 64,
                 metrics=("mig", "dci", "sap", "factor_vae_score", "infomec"),
                 eval_points: int = 10000, checkpoint_every: int = 1000,
                 log_every: int = 100, jit_compile: bool = False,
                 pair_rate: float = 6.0, health_points: int = 1000,
                 figures: bool = True, precision: str = "float32",
                 shared_eval_sample: bool = True, threads: int = machine.DEFAULT_THREADS,
                 metric_points: int | None = None, eval_every: int = 0,
                 start_from: str | None = None) -> "RunSettings":
    """Training and evaluation settings (dlib defaults: batch 64, 300k steps).

    pair_rate: Laplace rate of the factor transitions for pair-trained methods (SlowVAE,
    PCL; 6 as in paper 002's Table 2).
    health_points: evaluation images for active units, PSNR and reconstruction loss.
    figures: write reconstructions.png and traversals.png (methods with a decoder).
    precision: 'float32', or 'mixed_bfloat16' (GPU: layers compute in bfloat16, variables,
      output layers and losses stay float32; no loss scaling needed).
    shared_eval_sample: the metrics (and eval_codes.npz) read their rows of one sample,
      encoded once (benchmark/metrics/__init__.py); False gives each metric its own sample,
      as before 2026-11-24 (the same numbers as then).
    threads: TensorFlow's intra-op and inter-op thread counts, fixed whatever the machine
      or CPU quota, so the same configuration trains the same weights under any affinity
      (float sums split over another number of threads round differently). The default, 2,
      is what TensorFlow chose on the 2-core machine the published runs were trained on
      (benchmark/core/machine.py); another count is another configuration (fingerprint).
    metric_points: caps every metric's sample sizes (points, votes, pool rows), and
      eval_points and health_points, at this many, e.g. 300 for a smoke test in seconds;
      None: each metric's own settings (dlib's 10,000-point samples). The capped settings
      are recorded with the scores.
    eval_every: every this many steps (a multiple of checkpoint_every, so a point is at a
      checkpoint and a resumed run recomputes none twice; 0: never) the run scores its
      metrics and active dims as it will at the end, into curves.json and TensorBoard
      ('eval/...'): a learning curve. It does not change training (not in the
      fingerprint).
    start_from: a run directory of this very configuration but for run.steps (fewer or as
      many), e.g. a shorter study's run: a run with no checkpoint of its own starts from
      that run's last checkpoint (model, optimisers, step) and its learning curve's points
      up to it, and trains on. The batches and latent noise of step b depend on (seed, b)
      alone, so this is a resume (as exact as one; tests/benchmark_core/test_run.py) and
      not in the fingerprint; STARTED_FROM records where it started.
    Every value is checked here, before any data is loaded or step trained (RunError).
    """
    if precision not in ("float32", "mixed_bfloat16"):
        raise RunError(f"run.precision must be 'float32' or 'mixed_bfloat16', found "
                       f"{precision!r}")
    seed = _count("seed", seed, 0, 2**32 - 1)          # numpy legacy seeding's range
    steps = _count("steps", steps, 1, MAX_STEPS)
    threads = _count("threads", threads, 1, 1024)
    batch_size = _count("batch_size", batch_size, 1)
    checkpoint_every = _count("checkpoint_every", checkpoint_every, 1)
    log_every = _count("log_every", log_every, 1)
    eval_every = _count("eval_every", eval_every, 0)
    if eval_every % checkpoint_every:
        raise RunError(f"run.eval_every must be a multiple of run.checkpoint_every "
                       f"({checkpoint_every}), found {eval_every}")
    eval_points = _count("eval_points", eval_points, 2)
    health_points = _count("health_points", health_points, 2)
    if metric_points is not None:       # a smoke test: every evaluation sample capped
        metric_points = _count("metric_points", metric_points, 10)
        eval_points = min(eval_points, metric_points)
        health_points = min(health_points, metric_points)
    if (not isinstance(metrics, (list, tuple))
            or not all(isinstance(m, str) for m in metrics)):
        raise RunError(f"run.metrics must be a list of metric names, found {metrics!r}")
    if not metrics:
        raise RunError("run.metrics is empty; expected at least one metric name (e.g. "
                       "['mig']): a run that scores nothing has no result to report")
    try:
        metrics_lib.check_names(metrics)
    except ValueError as error:
        raise RunError(f"run.metrics: {error}") from None
    if start_from is not None and not (isinstance(start_from, str) and start_from):
        raise RunError(f"run.start_from must be a run directory (text) or None, found "
                       f"{start_from!r}")
    if not isinstance(shared_eval_sample, bool):
        raise RunError(f"run.shared_eval_sample must be True or False, found "
                       f"{shared_eval_sample!r}")
    if (isinstance(pair_rate, bool) or not isinstance(pair_rate, (int, float))
            or not pair_rate > 0):
        raise RunError(f"run.pair_rate must be a number > 0, found {pair_rate!r}")
    return RunSettings(seed=seed, steps=steps, batch_size=batch_size, metrics=tuple(metrics),
                       eval_points=eval_points, checkpoint_every=checkpoint_every,
                       log_every=log_every, jit_compile=jit_compile, pair_rate=pair_rate,
                       health_points=health_points, figures=figures, precision=precision,
                       shared_eval_sample=shared_eval_sample, threads=threads,
                       metric_points=metric_points, eval_every=eval_every,
                       start_from=start_from)


def make_stream(model, data, settings: RunSettings, first_batch: int):
    """The batch stream the model's `input_kind` asks for, starting at `first_batch`."""
    kind = getattr(model, "input_kind", "images")
    if kind == "images":
        return pipeline.image_dataset(data, settings.batch_size, settings.seed,
                                      first_batch)
    if kind in ("pairs", "pairs_with_negatives"):
        return pipeline.pair_dataset(data, settings.batch_size, settings.seed,
                                     first_batch, rate=settings.pair_rate,
                                     negatives=kind == "pairs_with_negatives")
    raise ValueError(f"model {model.name!r} asks for unknown input kind {kind!r}")


def batched_representation(model, batch_size: int = 256):
    def representation(images: np.ndarray) -> np.ndarray:
        return codes_lib.apply_in_batches(model.representation, images, batch_size)
    return representation


def model_health(model, images: np.ndarray, num_factors: int, batch_size: int = 256
                 ) -> dict:
    """Active units and the overpruning flag (methods with a posterior log-variance), PSNR
    and the model's own mean reconstruction loss (methods with a decoder) on `images`.
    The decoder sees what `encode` gives it: 'codes' where a method quantises, else the
    posterior mean."""
    scores = {}
    batches = codes_lib.batches(images, batch_size)
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


def _claim(output_dir: pathlib.Path, *names: str) -> None:
    """Adds `names` to the run's manifest before they are written (so a run killed while
    writing one still lists it)."""
    path = output_dir / MANIFEST
    try:
        listed = json.loads(path.read_text()) if path.is_file() else []
    except ValueError:
        listed = None
    readable = isinstance(listed, list) and all(isinstance(n, str) for n in listed)
    if not readable:
        listed = list(OUTPUTS)        # unreadable: at least the runner's fixed outputs
    if not readable or not set(names) <= set(listed):
        write_json(path, sorted(set(listed) | set(names)))


#: the files TensorFlow writes into the run's directories (checkpoints: its Checkpoint-
#: Manager's; tb: the summary writer's): what --overwrite removes from them, nothing else
WRITTEN_INSIDE = {"checkpoints": ("checkpoint", "ckpt-*.index", "ckpt-*.data-*",
                                  "ckpt-*_temp*", "checkpoint.tmp*"),
                  "tb": ("events.out.tfevents.*",)}
#: the manifest entry saying its run lists the files it wrote inside tb/ ('tb/<name>'):
#: --overwrite then removes those alone (a manifest without it predates the lists and
#: falls back to WRITTEN_INSIDE's patterns)
LISTED_INSIDE = "tb/"
#: the files that make a directory a run's (with MANIFEST): without one of them, a
#: directory is not the suite's to clean
RUN_RECORDS = (fingerprint_lib.FILE_NAME, "operative_config.gin", "results.json")


def _remove_tree(path: pathlib.Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _remove_written(directory: pathlib.Path, patterns) -> list[pathlib.Path]:
    """Removes the entries of `directory` matching `patterns` (the suite's own writers'),
    then the directory if nothing else is left; returns what was kept."""
    for pattern in patterns:
        for path in directory.glob(pattern):
            _remove_tree(path)
    kept = sorted(directory.iterdir())
    if not kept:
        directory.rmdir()
    return kept


def _remove_outputs(output_dir: pathlib.Path) -> list[str]:
    """Removes what the previous run wrote: the names its manifest lists (a directory
    written before manifests: the runner's fixed OUTPUTS), and inside checkpoints/ and tb/
    only the files TensorFlow wrote there (WRITTEN_INSIDE). Anything else stays and is
    named in the log. A directory with files but no run record is refused (RunError):
    nothing there is known to be the suite's."""
    path = output_dir / MANIFEST
    if not path.is_file():
        foreign = [p.name for p in sorted(output_dir.iterdir()) if p.name != LOCK_NAME] \
            if output_dir.is_dir() else []
        if foreign and not any((output_dir / name).is_file() for name in RUN_RECORDS):
            raise RunError(f"{output_dir} holds {', '.join(foreign[:5])}"
                           f"{' ...' if len(foreign) > 5 else ''} but no run record "
                           f"({', '.join(RUN_RECORDS)}); --overwrite removes only what a run "
                           "wrote, so nothing there was removed: give another --output_dir, "
                           "or move those files away")
    try:
        listed = json.loads(path.read_text()) if path.is_file() else list(OUTPUTS)
    except ValueError as error:
        raise RunError(f"{path}: expected the run's list of files, found unreadable "
                       f"JSON ({error}); remove the run's files by hand") from None
    if not isinstance(listed, list) or not all(isinstance(n, str) for n in listed):
        raise RunError(f"{path}: expected a JSON list of file names, found {listed!r}")
    inside = [n for n in listed if "/" in n]
    for name in inside:
        folder, _, file = name.partition("/")
        if (folder not in WRITTEN_INSIDE or (file and pathlib.Path(file).name != file)
                or file in (".", "..")):
            raise RunError(f"{path}: expected plain file names or files of "
                           f"{sorted(WRITTEN_INSIDE)} ('tb/<name>'), found {name!r}")
    removed, kept = [], []
    for name in [n for n in listed if "/" not in n]:
        target = output_dir / name
        if pathlib.Path(name).name != name or name in ("", ".", ".."):
            raise RunError(f"{path}: expected plain file names, found {name!r}")
        if name in WRITTEN_INSIDE and target.is_dir() and not target.is_symlink():
            if f"{name}/" in listed:         # the run listed its files there: those alone
                files = [glob.escape(f) for f in (n.partition("/")[2] for n in inside
                                                  if n.startswith(f"{name}/")) if f]
            else:
                files = WRITTEN_INSIDE[name]
            kept += [str(p.relative_to(output_dir)) for p in _remove_written(target, files)]
        elif target.is_file() or target.is_symlink():
            target.unlink()
        else:
            continue
        removed.append(name)
    path.unlink(missing_ok=True)
    if kept:
        logging.warning("--overwrite kept files the suite did not write: %s", ", ".join(kept))
    return removed


def clean_temporaries(output_dir: pathlib.Path) -> list[pathlib.Path]:
    """Removes temporary files a killed run left: atomic writes' `.<output>.<8 random
    characters>[.suffix]` (atomic.is_temporary_of) and TensorFlow's
    `checkpoints/ckpt-N_temp/` and `checkpoints/checkpoint.tmp*`. Call only while holding
    the directory's lock (then no writer is using them)."""
    found = [p for name in (*OUTPUTS, MANIFEST) for p in temporaries_of(output_dir / name)]
    checkpoints = output_dir / "checkpoints"
    if checkpoints.is_dir():
        found += [*checkpoints.glob("*_temp"), *checkpoints.glob("*_temp_*"),
                  *checkpoints.glob("checkpoint.tmp*")]
    for path in found:
        _remove_tree(path)
    if found:
        logging.info("removed %d temporary files of an interrupted run: %s", len(found),
                     ", ".join(p.name for p in found))
    return found


def prepare_directory(output_dir: pathlib.Path, ident: dict, overwrite: bool) -> bool:
    """Under the directory's lock: True when it holds this configuration's finished run
    (nothing to do). Otherwise readies it for training: a run of another configuration is
    a ConfigMismatch (or, with `overwrite`, removed); leftover temporary files go."""
    try:
        held = fingerprint_lib.recorded(output_dir)
    except ValueError as error:
        if not overwrite:
            raise RunError(f"{error}; use --overwrite to replace the run, or another "
                           "--output_dir") from None
        held = None
    if not overwrite:
        if held is not None and held["fingerprint"] != ident["fingerprint"]:
            raise fingerprint_lib.ConfigMismatch(fingerprint_lib.mismatch_message(
                output_dir, held, ident, "Use --overwrite to replace that run (only the "
                "files it wrote are removed), or give another --output_dir."))
        present = [name for name in OUTPUTS if (output_dir / name).exists()]
        if held is None and present:
            raise RunError(f"{output_dir} has {', '.join(present)} but no record of their "
                           "configuration (fingerprint.json, operative_config.gin); give "
                           "another --output_dir (--overwrite replaces only a run's own "
                           "files)")
        damaged = results_lib.damage(output_dir, ident["fingerprint"])
        if damaged:
            kept = output_dir / "results.json.damaged"
            (output_dir / "results.json").replace(kept)
            logging.warning("%s; it is not taken as a finished run: moved aside to %s, the "
                            "run resumes from its last checkpoint and scores again",
                            damaged, kept.name)
        elif (output_dir / "results.json").exists():
            logging.info("%s is complete (results.json exists, same configuration); use "
                         "--overwrite to retrain", output_dir)
            return True
    else:
        removed = _remove_outputs(output_dir)
        if removed:
            logging.info("--overwrite: removed %s from %s", ", ".join(removed), output_dir)
    clean_temporaries(output_dir)
    return False


def default_output_dir(model_name: str, described: dict, seed: int, ident: dict
                       ) -> pathlib.Path:
    """runs/<model>_<dataset>_<variant>_seed<seed>_<fingerprint[:8]>."""
    return pathlib.Path("runs") / (f"{model_name}_{described['name']}_"
                                   f"{described.get('variant', 'original')}_seed{seed}_"
                                   f"{fingerprint_lib.short(ident)}")


def run(output_dir: pathlib.Path | None, overwrite: bool = False,
        artefact_loader=None) -> pathlib.Path:
    """Trains and evaluates the parsed configuration; returns the run directory.

    artefact_loader: how a variant that names an artefact directory (data.artefact) is
    loaded, `perturbations.artefact.load_variant` (`benchmark.data.make_variant`); the
    entry modules (benchmark/run.py, benchmark/worker.py) pass it, since perturbations/
    is a floor above this one (docs/architecture.md). Without it such a variant is a
    TypeError.

    Every setting is checked before the run directory is touched, and the directory's lock
    is taken before any data is loaded or model built (a second writer is refused at
    once); a finished run of this configuration returns without loading anything. Raises
    RunError / ConfigError / ConfigMismatch / DirectoryLocked (clear messages, before
    training) and RunInterrupted on Ctrl-C (naming the last checkpoint)."""
    settings = run_settings()
    check_bound_method()                 # an unset or unknown method: before any data loads
    threads = machine.pin_threads(settings.threads)
    if threads != settings.threads:
        logging.warning("run.threads = %d, but TensorFlow already runs in this process with "
                        "%s threads: the run is not pinned (start it as its own process, "
                        "python -m benchmark.run, to pin it)", settings.threads,
                        threads or "its default")
    try:        # metric settings are checked before any data is loaded or step trained
        metrics_lib.resolve_settings(settings.metrics, settings.seed,
                                     max_points=settings.metric_points)
    except ValueError as error:
        raise RunError(f"metric settings: {error}") from None
    try:
        serving = materialize.materialize_settings()
    except ValueError as error:
        raise RunError(str(error)) from None
    try:
        ident = fingerprint_lib.identity(gin.config_str())
    except ValueError as error:         # an artefact that is not there
        raise RunError(str(error)) from None
    built = None
    if output_dir is None:              # the default name needs the model's and data's names
        built = _build(settings, artefact_loader)
        output_dir = default_output_dir(built[1].name, built[0].describe(),
                                        settings.seed, ident)
    output_dir = pathlib.Path(output_dir)
    with directory_lock(output_dir, "benchmark.run"):
        if not overwrite and prepare_directory(output_dir, ident, overwrite=False):
            return output_dir
        data, model = built or _build(settings, artefact_loader)   # every setting checked ...
        for warning in data.describe().get("artefact_warnings", []):
            logging.warning("data.artefact %s: %s", data.describe().get("artefact"), warning)
        if overwrite:                               # ... before anything is removed
            prepare_directory(output_dir, ident, overwrite=True)
        if settings.start_from:
            start_from_run(output_dir, pathlib.Path(settings.start_from), ident,
                           settings.steps)
        described = data.describe()
        data = served_data(data, model, settings, ident, serving)
        try:
            return _train_and_evaluate(model, data, described, settings, ident,
                                       output_dir, threads)
        except KeyboardInterrupt:
            latest = tf.train.latest_checkpoint(str(output_dir / "checkpoints"))
            raise RunInterrupted(
                f"interrupted: the last checkpoint is {latest or 'none yet'}; rerun the same "
                "command to resume from it") from None


#: images each training example reads, by the model's input kind
IMAGES_PER_EXAMPLE = {"images": 1, "pairs": 2, "pairs_with_negatives": 3}


def served_data(data, model, settings: RunSettings, ident: dict, serving: dict):
    """`data` materialised for this run (benchmark/data/materialize.py; the same images,
    computed once): in memory, from the disk cache named by the data's content identity,
    or rendered per batch, as `serving` (materialize_settings()) and the run's length say."""
    content = {"bindings": {k: v for k, v in ident["bindings"].items()
                            if k.split("/")[-1].startswith("data.")},
               "describe": {k: v for k, v in data.describe().items()
                            if k not in ("artefact", "artefact_warnings")}}
    per_example = IMAGES_PER_EXAMPLE.get(getattr(model, "input_kind", "images"), 1)
    images_read = settings.steps * settings.batch_size * per_example
    return materialize.materialize(data, content, images_read, serving["mode"],
                                   serving["max_memory_bytes"], serving["cache_dir"],
                                   per_example)


#: where a run that started from another run's checkpoint (run.start_from) started
STARTED_FROM = "started_from.json"


def start_from_run(output_dir: pathlib.Path, source: pathlib.Path, ident: dict,
                   steps: int) -> dict | None:
    """run.start_from: copies `source`'s last checkpoint and its curve points up to it
    into `output_dir` (which has no checkpoint yet; else None: the run resumes its own)
    and records {'run_dir', 'step', 'fingerprint'} in STARTED_FROM. RunError when source
    is not a run of this configuration but for run.steps, or has no checkpoint at or
    below `steps`. The checkpoint's state file is written last, so a copy killed midway
    leaves no checkpoint and is made again."""
    if tf.train.latest_checkpoint(str(output_dir / "checkpoints")):
        return None
    where = f"run.start_from = '{source}'"
    try:
        held = fingerprint_lib.recorded(source)
    except ValueError as error:
        raise RunError(f"{where}: {error}") from None
    if held is None:
        raise RunError(f"{where}: expected a run directory (fingerprint.json), found none")
    ours, theirs = ({k: v for k, v in b.items() if k != "run.steps"}
                    for b in (ident["bindings"], held["bindings"]))
    if ours != theirs:
        differing = sorted(k for k in {*ours, *theirs} if ours.get(k) != theirs.get(k))
        raise RunError(f"{where}: expected a run of this configuration but for run.steps, "
                       f"found one that differs in {', '.join(differing)}")
    latest = tf.train.latest_checkpoint(str(source / "checkpoints"))
    if latest is None:
        raise RunError(f"{where}: expected checkpoints/ with a checkpoint, found none")
    step = int(latest.rsplit("-", 1)[1])
    if step > steps:
        raise RunError(f"{where}: its last checkpoint is at step {step}, past this run's "
                       f"run.steps = {steps}")
    _claim(output_dir, "checkpoints", CURVES, STARTED_FROM)
    target = output_dir / "checkpoints"
    target.mkdir(parents=True, exist_ok=True)
    for path in pathlib.Path(latest).parent.glob(pathlib.Path(latest).name + ".*"):
        with atomic_path(target / path.name, ".part") as tmp:
            shutil.copyfile(path, tmp)
    curve = source / CURVES
    if curve.is_file():
        try:
            points = [p for p in json.loads(curve.read_text())["points"] if p["step"] <= step]
        except (ValueError, KeyError, TypeError) as error:
            raise RunError(f"{where}: {curve} is not a learning curve ({error})") from None
        write_json(output_dir / CURVES, {"points": points})
    record = {"run_dir": str(source.resolve()), "step": step,
              "fingerprint": held["fingerprint"]}
    write_json(output_dir / STARTED_FROM, record)
    name = pathlib.Path(latest).name            # TensorFlow's checkpoint state, text proto
    with atomic_path(target / "checkpoint", ".tmp") as tmp:
        tmp.write_text(f'model_checkpoint_path: "{name}"\n'
                       f'all_model_checkpoint_paths: "{name}"\n')
    logging.info("starting from %s at step %d (run.start_from)", latest, step)
    return record


def _build(settings: RunSettings, artefact_loader=None) -> tuple:
    """(data, model) of the parsed configuration, seeded from run.seed; artefact_loader:
    see `run`."""
    keras.utils.set_random_seed(settings.seed)    # Python, numpy, TF, Keras
    data = load_data(artefact_loader=artefact_loader)
    keras.mixed_precision.set_global_policy(settings.precision)
    # Seeded again right here: initial weights depend on the seed alone, not on how much
    # randomness loading the data used.
    keras.utils.set_random_seed(settings.seed)
    return data, configured_model(data.observation_shape)


def evaluate_representation(data, representation, settings: RunSettings,
                            code_is_discrete: bool,
                            codes_path: pathlib.Path | None
                            ) -> tuple[dict, dict, np.ndarray]:
    """(scores, metric settings, codes of the evaluation sample) of a representation (images (n, h, w, c) in [0, 1] ->
    codes (n, d)) on `data`, as every run scores it: one settings object (gin-resolved, with
    the run's seed, the code kind and whether metrics share one sample), the shared sample
    of the run's seed, and the evaluation sample's first eval_points rows written to
    codes_path (factors, codes; None: not written). settings: `run_settings()`."""
    metric_settings = metrics_lib.resolve_settings(
        settings.metrics, settings.seed, code_is_discrete=code_is_discrete,
        shared_sample=settings.shared_eval_sample, max_points=settings.metric_points)
    sample = None
    start = time.perf_counter()
    if settings.shared_eval_sample:       # eval_codes.npz: the shared sample's first rows
        sample = metrics_lib.draw_shared_sample(
            data, representation,
            max(settings.eval_points, metrics_lib.shared_rows(metric_settings)),
            settings.seed)
        logging.info("evaluation sample of %d rows: %.1f s", len(sample[0]),
                     time.perf_counter() - start)
        factors, codes = (a[:settings.eval_points] for a in sample)
    else:
        eval_rng = np.random.default_rng([settings.seed, 1])
        factors, codes = codes_lib.sample_codes(data, representation, settings.eval_points,
                                                eval_rng, batch_size=256)
    if codes_path is not None:
        with atomic_path(codes_path, ".npz") as tmp, open(tmp, "wb") as f:
            np.savez(f, factors=factors, codes=codes)
    scores = metrics_lib.evaluate(data, representation, settings.seed,
                                  settings.metrics, record_errors=True,
                                  settings=metric_settings, sample=sample)
    return scores, metric_settings, codes


#: the learning curve of a run with run.eval_every (its points, by step)
CURVES = "curves.json"


def record_curve_point(path: pathlib.Path, step: int, model, data, representation,
                       settings: RunSettings, health_images) -> dict:
    """Scores the model at `step` as the run scores it at the end (metrics and health) and
    writes the point into `path` ({'points': [{'step', key: value}]}, by step; a point at
    this step or later, left by an interrupted run, is replaced); returns its scalars."""
    start = time.perf_counter()
    scores, _, _ = evaluate_representation(data, representation, settings,
                                           bool(getattr(model, "code_is_discrete", False)), None)
    scores["health"] = model_health(model, health_images, data.num_factors)
    scalars = results_lib.flatten_scores(scores)[0]
    points = []
    if path.exists():
        try:
            points = [p for p in json.loads(path.read_text())["points"] if p["step"] < step]
        except (ValueError, KeyError, TypeError) as error:
            raise RunError(f"{path}: expected the run's learning curve, found unreadable "
                           f"content ({error}); remove it to start the curve again") from None
    write_json(path, {"points": [*points, {"step": int(step), **scalars}]})
    logging.info("curve point at step %d: %s (%.1f s)", step, ", ".join(
        f"{k}={v:.3f}" for k, v in scalars.items() if k.startswith("metric/mig")
        or k.startswith("health/active")), time.perf_counter() - start)
    return {k: float(v) for k, v in scalars.items()
            if isinstance(v, (int, float, np.number)) and np.isfinite(float(v))}


def _train_and_evaluate(model, data, described: dict, settings: RunSettings, ident: dict,
                        output_dir: pathlib.Path, threads: int) -> pathlib.Path:
    _claim(output_dir, "operative_config.gin", fingerprint_lib.FILE_NAME)
    # the identity first: a run killed between the two is still known by its content
    # (an operative_config.gin alone names an artefact by path: fingerprint.recorded)
    fingerprint_lib.record(output_dir, ident)
    with atomic_path(output_dir / "operative_config.gin", ".gin") as tmp:
        tmp.write_text(gin.config_str())

    health_rng = np.random.default_rng([settings.seed, 2])
    health_images = data.observations_from_factors(
        data.sample_factors(settings.health_points, health_rng), health_rng)
    representation = batched_representation(model)
    image_summary = None
    if hasattr(model, "decode_images"):
        def image_summary():
            sheet, _ = figures.reconstruction_sheet(
                health_images[:10], representation,
                lambda c: np.asarray(model.decode_images(c)))
            return sheet

    start = time.perf_counter()
    setup_seconds = machine.setup_seconds()
    load = machine.LoadMeter().start()
    _claim(output_dir, "checkpoints", "tb", LISTED_INSIDE)
    curve_point, curve_seconds = None, []
    if settings.eval_every:
        _claim(output_dir, CURVES)

        def curve_point(step: int) -> dict | None:
            if step % settings.eval_every:
                return None
            started = time.perf_counter()
            point = record_curve_point(output_dir / CURVES, step, model, data, representation,
                                       settings, health_images)
            curve_seconds.append(time.perf_counter() - started)
            return point
    training = train_lib.train(
        model, lambda first: make_stream(model, data, settings, first),
        settings.steps, output_dir, settings.seed, settings.checkpoint_every,
        settings.log_every, settings.jit_compile, image_summary=image_summary,
        on_checkpoint=curve_point,
        on_event_files=lambda names: _claim(output_dir, *[f"tb/{n}" for n in names]))
    training["seconds"] -= sum(curve_seconds)       # training time, without the curve
    start_eval = time.perf_counter()
    _claim(output_dir, "eval_codes.npz")
    scores, metric_settings, codes = evaluate_representation(
        data, representation, settings, bool(getattr(model, "code_is_discrete", False)),
        output_dir / "eval_codes.npz")
    eval_seconds = time.perf_counter() - start_eval
    logging.info("evaluation: %.1f s, %.0f %% of training's %.1f s", eval_seconds,
                 100 * eval_seconds / max(training["seconds"], 1e-9), training["seconds"])
    start_after = time.perf_counter()
    scores["health"] = model_health(model, health_images, data.num_factors)
    if settings.figures and hasattr(model, "decode_images"):
        _claim(output_dir, "reconstructions.png", "traversals.png")
        figures.write_model_figures(
            output_dir, health_images, codes, representation,
            lambda c: np.asarray(model.decode_images(c)),
            f"{model.name} on {described['name']} ({described.get('variant', 'original')})",
            scores["health"].get("mean_posterior_variance"),
            input_label=figures.input_label(described))
    _claim(output_dir, results_lib.ARRAYS, results_lib.FILE_NAME)
    # Where the time went besides the steps: the fixed costs of a run (docs/training.md).
    timings = {"setup_seconds": setup_seconds,          # process start to the first batch
               "first_step_seconds": training["first_step_seconds"],   # stream + tracing
               "curve_seconds": sum(curve_seconds), "eval_seconds": eval_seconds,
               "health_and_figures_seconds": time.perf_counter() - start_after}
    results_lib.write(
        output_dir, model=model.name, seed=settings.seed, dataset=described,
        scores=scores, final_losses=training["final_terms"], gin_config=gin.config_str(),
        metric_settings=metric_settings,
        settings=settings.record(),
        steps=training["steps"], resumed_from=training["resumed_from"],
        train_seconds=training["seconds"], eval_seconds=eval_seconds,
        wall_seconds=time.perf_counter() - start,
        machine=machine.run_record(load.read(), threads),
        fingerprint=ident["fingerprint"], suite_version=ident["suite_version"],
        timings=timings)
    return output_dir


@cli_main        # RunError, ConfigMismatch, DirectoryLocked...: one line, exit 2
def main(argv, artefact_loader=None):
    """The command (benchmark/run.py passes `perturbations.artefact.load_variant`)."""
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    if not FLAGS.gin_file and not FLAGS.gin_bindings:
        raise app.UsageError("give at least one --gin_file or --gin_bindings")
    with user_errors(ValueError, KeyError, IOError, prefix="invalid gin configuration: "):
        config.parse_config(FLAGS.gin_file, FLAGS.gin_bindings)
    try:
        out = run(pathlib.Path(FLAGS.output_dir) if FLAGS.output_dir else None,
                  FLAGS.overwrite, artefact_loader)
    except RunInterrupted as interrupted:
        print(interrupted, file=sys.stderr)
        sys.exit(130)
    except KeyboardInterrupt:
        print("interrupted before training started; nothing was written", file=sys.stderr)
        sys.exit(130)
    print(out / "results.json")

