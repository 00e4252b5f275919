"""The training loop: compiled steps, checkpoints, resume, TensorBoard, progress, NaN stop.

A model trains through `model.train_step(batch, step, seed) -> dict of scalar terms`
(the model applies its own optimiser updates, so methods with several optimisers, such as
FactorVAE's discriminator, fit the same loop). The loop:
- compiles one step with tf.function (optionally XLA);
- seeds every step statelessly from (seed, step) and reads batch b of a stream that
  depends only on (seed, b), so a resumed run sees exactly the data and noise an
  uninterrupted run would have seen;
- checkpoints model, optimisers, step and the step's loss terms every `checkpoint_every`
  steps with tf.train.CheckpointManager (a checkpoint becomes visible only once fully
  written, so a run killed at any point resumes from the last complete one; a run resumed
  at its last step reports the loss terms stored with that checkpoint); a checkpoint
  damaged after it was written (a truncated or corrupted file) is skipped, with a warning
  naming it, for the newest one that reads whole (`read_newest_intact`);
- stops at the first non-finite loss term with an error naming the step and the term,
  without checkpointing the bad state, and likewise when an optional `stop_check` of the
  terms gives a reason;
- writes every term to TensorBoard and shows a tqdm bar on a terminal, periodic log lines
  otherwise.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import pathlib
import re
import sys
import time
from typing import Callable

import numpy as np
import tensorflow as tf
from absl import logging
from tqdm import tqdm

from benchmark.core.errors import UserError


#: TensorFlow's words for the storage failures a user fixes, and the errno they stand for
_STORAGE_FAILURES = {"No space left on device": errno.ENOSPC,
                     "Disk quota exceeded": errno.EDQUOT,
                     "Read-only file system": errno.EROFS,
                     "Permission denied": errno.EACCES}


@contextlib.contextmanager
def storage_errors(path):
    """Within the block, a TensorFlow write failure for a full disk, a read-only file system
    or a forbidden path (a tf.errors.OpError naming no file) is raised as the OSError it
    stands for, naming `path`, so that commands report it as one line."""
    try:
        yield
    except tf.errors.OpError as error:
        for words, number in _STORAGE_FAILURES.items():
            if words in str(error.message):
                raise OSError(number, f"writing {path} failed: {words}") from error
        raise


class TrainingDiverged(RuntimeError):
    """A loss term became NaN or infinite, or the run's stop_check gave a reason."""


def _checkpoint(model, step: tf.Variable, terms: tf.Variable) -> tf.train.Checkpoint:
    """model, optimisers, step and `terms` (JSON text of the last step's loss terms)."""
    optimizers = {f"optimizer_{i}": opt for i, opt in enumerate(model.optimizers_list())}
    for opt, variables in model.optimizer_variables():
        opt.build(variables)
    return tf.train.Checkpoint(model=model, step=step, terms=terms, **optimizers)


class CheckpointDamaged(UserError, RuntimeError):
    """Every checkpoint of a run directory is damaged (none reads whole)."""


def checkpoint_prefixes(directory) -> list[str]:
    """Every checkpoint prefix ('.../ckpt-N') in `directory` that has an index file, newest
    (highest N) first; read from the file names, since the state file can be damaged too."""
    numbers = sorted((int(match.group(1)) for path in pathlib.Path(directory).glob("ckpt-*.index")
                      if (match := re.fullmatch(r"ckpt-(\d+)\.index", path.name))),
                     reverse=True)
    return [str(pathlib.Path(directory) / f"ckpt-{n}") for n in numbers]


def read_newest_intact(checkpoint: tf.train.Checkpoint, directory,
                       check=lambda status: status.expect_partial()) -> str | None:
    """Reads into `checkpoint` the newest checkpoint in `directory` that reads whole, after
    check(status) (which may raise); returns its prefix, None when there is no checkpoint.
    A newer one that does not read (truncated or corrupted after it was written) is named in
    a warning and skipped: the next one down holds an earlier step, from which training
    reproduces the same state. CheckpointDamaged when checkpoints exist but none reads."""
    damaged = []
    for prefix in checkpoint_prefixes(directory):
        try:
            check(checkpoint.read(prefix))
        except (IndexError, ValueError, AssertionError, tf.errors.OpError) as error:
            reason = (str(error).strip().splitlines() or [type(error).__name__])[0][:160]
            damaged.append(f"{pathlib.Path(prefix).name} ({type(error).__name__}: {reason})")
            continue
        if damaged:
            logging.warning("damaged checkpoint(s) in %s skipped: %s; read %s instead",
                            directory, "; ".join(damaged), pathlib.Path(prefix).name)
        return prefix
    if damaged:
        raise CheckpointDamaged(
            f"{directory}: every checkpoint is damaged ({'; '.join(damaged)}); move that "
            "folder away (or rerun with --overwrite) to train this run from scratch")
    return None


def restore_model(model, workdir) -> int:
    """Loads the newest intact checkpoint of a run directory's `checkpoints/` into `model`
    (its weights only; `read_newest_intact`); returns the step it was saved at."""
    step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
    found = read_newest_intact(
        tf.train.Checkpoint(model=model, step=step), pathlib.Path(workdir) / "checkpoints",
        lambda status: status.assert_existing_objects_matched().expect_partial())
    if found is None:
        raise FileNotFoundError(f"{workdir}: expected checkpoints/ with a checkpoint, found none")
    return int(step)


def train(model, make_stream: Callable[[int], tf.data.Dataset], num_steps: int,
          workdir, seed: int, checkpoint_every: int = 1000, log_every: int = 100,
          jit_compile: bool = False, progress: bool | None = None,
          image_summary: Callable[[], np.ndarray] | None = None,
          stop_check: Callable[[dict], str | None] | None = None,
          on_checkpoint: Callable[[int], dict | None] | None = None,
          on_event_files: Callable[[list[str]], None] | None = None) -> dict:
    """Trains `model` to `num_steps`, resuming from `workdir/checkpoints` when present.

    make_stream(start_batch) -> infinite dataset of batches starting at that batch.
    image_summary() -> float image (h, w, 3) in [0, 1] (e.g. reconstructions), written to
    TensorBoard at every checkpoint.
    stop_check(terms) -> None, or the reason to stop: raised as TrainingDiverged like a
    non-finite term (e.g. perturbations.manipulation.dead_manipulation_check).
    on_event_files(names) is called with the names of the TensorBoard event files this
    call's writer created in workdir/tb, before anything is written to them.
    on_checkpoint(step) -> None or {name: float}, called after each checkpoint is saved
    (e.g. the runner's learning curves, run.eval_every); the values go to TensorBoard
    under 'eval/<name>'.
    Returns {'steps', 'resumed_from', 'seconds', 'first_step_seconds', 'final_terms':
    {name: float}}: seconds from the start of the loop to the end of its first step (the
    stream's start and the step's tracing: a fixed cost; 0 when no step ran), and the terms
    of the last step, also when that step was trained before a resume (read from the
    checkpoint; {} only for a checkpoint written before terms were stored).
    """
    workdir = pathlib.Path(workdir)
    step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
    with tf.device("CPU:0"):      # a string variable has no accelerator kernels
        saved_terms = tf.Variable("{}", dtype=tf.string, trainable=False, name="terms")
    checkpoint = _checkpoint(model, step, saved_terms)
    manager = tf.train.CheckpointManager(checkpoint, workdir / "checkpoints", max_to_keep=2)
    restored = read_newest_intact(checkpoint, workdir / "checkpoints")
    if restored:
        logging.info("resuming from %s at step %d", restored, int(step))
    resumed_from = int(step)
    tb = workdir / "tb"
    before = set(os.listdir(tb)) if tb.is_dir() else set()
    with storage_errors(tb):
        writer = tf.summary.create_file_writer(str(tb))
    if on_event_files is not None:            # the writer made its file as it was created
        on_event_files(sorted(set(os.listdir(tb)) - before))

    @tf.function(jit_compile=jit_compile, reduce_retracing=True)
    def train_step(batch, step_value):
        return model.train_step(batch, step_value,
                                tf.stack([tf.constant(seed, tf.int64), step_value]))

    if progress is None:
        progress = sys.stderr.isatty()
    bar = tqdm(total=num_steps, initial=resumed_from, disable=not progress, unit="step",
               dynamic_ncols=True)
    # The terms of the checkpointed step: what a run resumed at its last step reports.
    terms: dict[str, float] = json.loads(saved_terms.numpy().decode())
    start = time.perf_counter()
    first_step_seconds = 0.0
    last_log, last_log_step = start, resumed_from
    iterator = iter(make_stream(resumed_from))
    try:
        while int(step) < num_steps:
            current = int(step)
            batch = next(iterator)
            values = train_step(batch, tf.constant(current, tf.int64))
            terms = {name: float(value) for name, value in values.items()}
            bad = [name for name, value in terms.items() if not math.isfinite(value)]
            if bad:
                raise TrainingDiverged(
                    f"step {current}: loss term '{bad[0]}' is {terms[bad[0]]} (all terms: "
                    f"{terms}); the last good checkpoint is "
                    f"{manager.latest_checkpoint or 'none'}")
            reason = stop_check(terms) if stop_check is not None else None
            if reason:
                raise TrainingDiverged(f"step {current}: {reason}; the last checkpoint is "
                                       f"{manager.latest_checkpoint or 'none'}")
            step.assign(current + 1)
            if current == resumed_from:
                first_step_seconds = time.perf_counter() - start
            bar.update(1)
            if (current + 1) % log_every == 0 or current + 1 == num_steps:
                now = time.perf_counter()
                rate = ((current + 1 - last_log_step) * _batch_size(batch)
                        / max(now - last_log, 1e-9))
                last_log, last_log_step = now, current + 1
                with writer.as_default(step=current + 1):
                    for name, value in terms.items():
                        tf.summary.scalar(f"loss/{name}", value)
                    tf.summary.scalar("throughput/images_per_second", rate)
                bar.set_postfix(loss=f"{terms.get('loss', float('nan')):.2f}",
                                img_s=f"{rate:.0f}")
                if not progress:
                    logging.info("step %d/%d  %s  %.0f img/s", current + 1, num_steps,
                                 "  ".join(f"{k}={v:.4g}" for k, v in terms.items()), rate)
            if (current + 1) % checkpoint_every == 0 or current + 1 == num_steps:
                saved_terms.assign(json.dumps(terms))
                with storage_errors(workdir / "checkpoints"):
                    manager.save(checkpoint_number=current + 1)
                if image_summary is not None:
                    with writer.as_default(step=current + 1):
                        tf.summary.image("reconstructions", image_summary()[None])
                point = on_checkpoint(current + 1) if on_checkpoint is not None else None
                if point:
                    with writer.as_default(step=current + 1):
                        for name, value in point.items():
                            tf.summary.scalar(f"eval/{name}", value)
    finally:
        # Batches may come from Python (tf.numpy_function) on prefetch threads; drop the
        # iterator whatever happened, so none of them is left running at interpreter exit
        # (where it can block shutdown).
        del iterator
        bar.close()
    with storage_errors(workdir / "tb"):
        writer.flush()
    return {"steps": int(step), "resumed_from": resumed_from,
            "seconds": time.perf_counter() - start, "first_step_seconds": first_step_seconds,
            "final_terms": terms}


def _batch_size(batch) -> int:
    first = batch[0] if isinstance(batch, (tuple, list)) else batch
    return int(np.shape(first)[0])
