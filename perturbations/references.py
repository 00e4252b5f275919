"""Reference beta-VAEs of the manipulation (paper 002 sec. 4.3): trained by the runner over
several restarts (or reused from finished run directories), ranked by MIG, the least
disentangled (min MIG) and the most disentangled (max MIG) chosen; ensembles of k + k take
the k lowest and the k highest (Shapes3D: 4 + 4, appendix B.1).

A reference is *published* beside the artefact made from it, so that the
game and the re-adaptation rerun from a clean clone, where the runs' checkpoints (never in
git) are absent:

    ARTEFACT/references/<side><i>/results.json         the run's (read_reference reads it)
                                  arrays.npz           the run's (posterior variances)
                                  encoder.weights.h5   the encoder's and decoder's weights
                                  decoder.weights.h5   (Keras HDF5 arrays, no code)
                                  published.json       {'sha256': {file: hex digest},
                                                        'source_run_dir', 'step'}

A published directory is a reference run like any other (`generation.reference_runs` can
name it); it loads only when every file matches the SHA-256 its published.json records,
and the artefact's metadata records the same digests, so a swapped directory is refused.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

from absl import logging
import gin
import numpy as np

from benchmark.core import config
from benchmark.core.atomic import atomic_path, write_json
from benchmark.core.errors import UserError
from benchmark.core.processes import end_with_parent
from benchmark.data.files import file_sha256
from benchmark.runs import results as results_lib
from benchmark.runs import train as train_lib
from models.configurables import configured_model
from perturbations.artefact import ArtefactError, is_integer, is_number, read_json_object

#: what a published reference directory holds beside PUBLISHED_RECORD
PUBLISHED_FILES = ("results.json", results_lib.ARRAYS, "encoder.weights.h5",
                   "decoder.weights.h5")
PUBLISHED_RECORD = "published.json"


class ReferenceError(UserError, RuntimeError):
    """A reference run that could not be trained or read."""


def check_gin_config(text, source) -> str:
    """`text` if it is a gin config that imports only the suite's packages and includes no
    file (benchmark.core.config.check_untrusted_config); else ReferenceError naming `source`."""
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
                            preexec_fn=end_with_parent(),
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise ReferenceError(f"reference run {run_dir} (seed {seed}) failed:\n"
                             f"{result.stderr[-3000:]}")
    return pathlib.Path(run_dir)


def read_reference(run_dir) -> dict:
    """{'run_dir', 'seed', 'mig', 'dci_d', 'dci_i' (DCI disentanglement and test
    informativeness; None when the run did not compute DCI), 'overpruned' (fewer active dims than factors, paper 002
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

    if results.get("schema_version") == results_lib.SCHEMA_VERSION:   # benchmark/runs/results.py
        mig_name, variance_name = "scalars['metric/mig']", "health/mean_posterior_variance"
        mig = field("scalars", "metric/mig")
        dci_d = field("scalars", "metric/dci/disentanglement")
        dci_i = field("scalars", "metric/dci/informativeness_test")
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
        dci_d = field("metrics", "dci", "dci_disentanglement")
        dci_i = field("metrics", "dci", "dci_informativeness_test")
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
            "dci_d": float(dci_d) if is_number(dci_d) else None,
            "dci_i": float(dci_i) if is_number(dci_i) else None,
            "overpruned": None if overpruned is None else bool(overpruned),
            "mean_posterior_variance": variance, "method": results.get("model"),
            "dataset": results.get("dataset"), "gin_config": gin_config}


#: the thresholds a reference must meet to be chosen for its side: {key: (side, score,
#: 'max' or 'min')}; scores as read_reference gives them
THRESHOLDS = {"entangled_max_mig": ("entangled", "mig", "max"),
              "entangled_max_dci_d": ("entangled", "dci_d", "max"),
              "entangled_min_dci_i": ("entangled", "dci_i", "min"),
              "disentangled_min_mig": ("disentangled", "mig", "min"),
              "disentangled_min_dci_d": ("disentangled", "dci_d", "min")}


def check_thresholds(thresholds) -> dict:
    """{key of THRESHOLDS: number in [0, 1]}, checked; ValueError naming the key."""
    if not isinstance(thresholds, dict):
        raise ValueError(f"reference thresholds: expected a dict, found {thresholds!r:.80}")
    for key, value in thresholds.items():
        if key not in THRESHOLDS:
            raise ValueError(f"reference thresholds: unknown key {key!r}; expected some of "
                             f"{', '.join(THRESHOLDS)}")
        if not (is_number(value) and 0.0 <= float(value) <= 1.0):
            raise ValueError(f"reference thresholds: expected {key} a number in [0, 1], "
                             f"found {value!r}")
    return {key: float(value) for key, value in thresholds.items()}


def _meets(reference: dict, side: str, thresholds: dict) -> bool:
    """Whether `reference` meets every threshold of `side` (ReferenceError when it lacks a
    score one of them reads)."""
    for key, limit in thresholds.items():
        wanted_side, score, bound = THRESHOLDS[key]
        if wanted_side != side:
            continue
        value = reference.get(score)
        if value is None:
            raise ReferenceError(f"reference {reference['run_dir']}: the threshold {key} "
                                 f"reads its {score}, which the run did not record (run.metrics "
                                 "must include 'dci')")
        if (value > limit) if bound == "max" else (value < limit):
            return False
    return True


def choose(references: list[dict], ensemble_size: int = 1, exclude_overpruned: bool = False,
           min_mig_gap: float | None = None, thresholds: dict | None = None
           ) -> tuple[list[dict], list[dict]]:
    """(entangled: the `ensemble_size` lowest MIG, disentangled: the highest), each sorted.

    exclude_overpruned: choose among the runs that are not over-pruned only (a run that
      did not record it is an error, not a guess).
    min_mig_gap: the pre-registered contrast the references must have, the lowest
      disentangled MIG minus the highest entangled MIG; a pool below it is an error that
      says so (no references with that contrast at this length).
    thresholds: pre-registered levels each chosen reference must meet ({key of THRESHOLDS:
      value}, e.g. {'entangled_max_mig': 0.15, 'disentangled_min_mig': 0.4}): each side is
      chosen among the runs that meet its own; fewer than `ensemble_size` on a side is an
      error that counts them (no clearly entangled or disentangled references here)."""
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
    if thresholds:
        sides = {side: [r for r in ranked if _meets(r, side, thresholds)]
                 for side in ("entangled", "disentangled")}
        short = [f"{len(runs)} {side}" for side, runs in sides.items()
                 if len(runs) < ensemble_size]
        if short:
            migs = ", ".join(f"{r['mig']:.3f}" for r in ranked)
            raise ReferenceError(
                f"of {len(references)} references, {' and '.join(short)} meet the "
                f"pre-registered thresholds {thresholds}; {ensemble_size} a side are "
                f"needed (MIGs of the pool: {migs})")
        entangled = sides["entangled"][:ensemble_size]
        disentangled = sides["disentangled"][::-1][:ensemble_size]
        if {r["run_dir"] for r in entangled} & {r["run_dir"] for r in disentangled}:
            raise ReferenceError(f"under the thresholds {thresholds} one run would be chosen "
                                 "for both sides, entangled and disentangled: the pool has "
                                 "too few runs apart, or the thresholds overlap")
    else:
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


def _built_model(reference: dict, observation_shape):
    """The reference's model, built from its operative gin config (weights untrained).
    Clears the global gin config."""
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
    return model


def is_published(run_dir) -> bool:
    """Whether `run_dir` is a published reference (it holds PUBLISHED_RECORD)."""
    return (pathlib.Path(run_dir) / PUBLISHED_RECORD).is_file()


#: the folder of an artefact that holds the references it was made from
IN_ARTEFACT = "references"
#: MIG difference within which a retrained reference counts as the recorded run repeated
REPEAT_TOLERANCE = 1e-6


def copy_in_artefacts(run_dir, artefacts) -> pathlib.Path | None:
    """The published copy of the finished run `run_dir` in the first of the artefact
    directories `artefacts` whose metadata.json lists it as a reference ('run_dir',
    compared as resolved paths, with 'published' and 'sha256': `published_copy`, which
    checks the bytes); None when none does. A directory without metadata.json is a
    ReferenceError (a wrong path, not a miss)."""
    wanted = pathlib.Path(run_dir).resolve()
    for directory in map(pathlib.Path, artefacts):
        if not (directory / "metadata.json").is_file():
            raise ReferenceError(f"{directory}: expected a perturbation artefact (its "
                                 "metadata.json), found none")
        listed = read_json_object(directory / "metadata.json", ReferenceError).get(
            "references")
        for side in ("entangled", "disentangled"):
            entries = listed.get(side) if isinstance(listed, dict) else None
            for entry in entries if isinstance(entries, list) else []:
                if (isinstance(entry, dict) and isinstance(entry.get("run_dir"), str)
                        and pathlib.Path(entry["run_dir"]).resolve() == wanted):
                    copy = published_copy(entry, directory)
                    if copy is not None:
                        return pathlib.Path(copy)
    return None


def weights_source(run_dir, name: str, work_dir, tolerance: float = REPEAT_TOLERANCE,
                   accept_different: bool = False,
                   refusal: str = "it is not the run the artefact was made from "
                                  "(--accept_different publishes it marked as a different "
                                  "run)", artefacts=()) -> tuple[dict, dict]:
    """(the reference whose weights stand for the finished run `run_dir`, where they came
    from): the run itself when it kept its checkpoints/ ('published_from': 'run'); else
    its published copy in one of the artefact directories `artefacts` (`copy_in_artefacts`;
    bytes checked against their SHA-256), if that copy repeats the recorded MIG within
    `tolerance` ('artefact', with 'copy': its directory); else the run retrained from the
    gin config and seed its results.json records into work_dir/name (skipped when
    finished, so callers resume), kept only if its MIG repeats the recorded one within
    `tolerance` ('retrained', with 'retrained_mig'). A run that does not repeat raises
    ReferenceError ending in `refusal`, unless accept_different ('retrained_different')."""
    recorded_dir, work_dir = pathlib.Path(run_dir), pathlib.Path(work_dir)
    if (recorded_dir / "checkpoints").is_dir():
        return read_reference(recorded_dir), {"published_from": "run"}
    if not (recorded_dir / "results.json").is_file():
        raise ReferenceError(
            f"reference {recorded_dir}: expected its checkpoints/ or at least its "
            "results.json (the gin config and seed to retrain it from), found neither")
    recorded = read_reference(recorded_dir)
    copy = copy_in_artefacts(recorded_dir, artefacts)
    if copy is not None:
        found = read_reference(copy)
        if abs(found["mig"] - recorded["mig"]) <= tolerance:
            logging.info("reference %s: using its published copy %s (MIG %.6f)",
                         recorded_dir, copy, found["mig"])
            return found, {"published_from": "artefact", "copy": str(copy)}
        logging.warning("reference %s: its published copy %s has MIG %.6f, the run %.6f; "
                        "not used, retraining instead", recorded_dir, copy, found["mig"],
                        recorded["mig"])
    work_dir.mkdir(parents=True, exist_ok=True)
    config_file = work_dir / f"{name}.gin"
    config_file.write_text(recorded["gin_config"])
    retrained_dir = work_dir / name
    logging.info("retraining %s (seed %d) into %s", recorded_dir, recorded["seed"],
                 retrained_dir)
    train_reference([str(config_file)], [], recorded["seed"], retrained_dir)
    retrained = read_reference(retrained_dir)
    difference = abs(retrained["mig"] - recorded["mig"])
    provenance = {"published_from": "retrained", "retrained_mig": retrained["mig"]}
    if difference > tolerance:
        message = (f"reference {recorded_dir}: the retrained run {retrained_dir} has MIG "
                   f"{retrained['mig']:.6f}, the recorded run {recorded['mig']:.6f} "
                   f"(difference {difference:.2g} > tolerance {tolerance:g})")
        if not accept_different:
            raise ReferenceError(f"{message}: {refusal}")
        logging.warning("%s; published as a different run", message)
        provenance["published_from"] = "retrained_different"
    return retrained, provenance


def has_weights(run_dir) -> bool:
    """Whether `run_dir`'s weights can be loaded: a published reference, or a run that kept
    its checkpoints/ (git keeps neither a study's checkpoints nor its TensorBoard logs)."""
    return is_published(run_dir) or (pathlib.Path(run_dir) / "checkpoints").is_dir()


def verify_published(directory) -> dict:
    """{file: sha256} of a published reference directory, after checking that it lists
    exactly PUBLISHED_FILES and that every file's bytes match; ReferenceError otherwise."""
    directory = pathlib.Path(directory)
    record = read_json_object(directory / PUBLISHED_RECORD, ReferenceError)
    digests = record.get("sha256")
    if not (isinstance(digests, dict) and sorted(digests) == sorted(PUBLISHED_FILES)
            and all(isinstance(d, str) and len(d) == 64 for d in digests.values())):
        raise ReferenceError(f"{directory / PUBLISHED_RECORD}: expected sha256, a hex digest "
                             f"for each of {list(PUBLISHED_FILES)}, found {str(digests)[:120]}")
    for name, expected in digests.items():
        path = directory / name
        if not path.is_file():
            raise ReferenceError(f"published reference {directory}: expected {name}, found "
                                 "none")
        found = file_sha256(path)
        if found != expected:
            raise ReferenceError(f"published reference {directory}: {name} has SHA-256 "
                                 f"{found[:16]}..., expected {expected[:16]}... (the file "
                                 "was changed or swapped)")
    return dict(digests)


def load_encoder_decoder(reference: dict, observation_shape):
    """(encoder, decoder) of a reference, rebuilt from its operative gin config with the
    weights of its published directory (verified) or else of its run's last checkpoint.
    Clears the global gin config (call it after every setting of the caller has been
    read)."""
    return _restored(reference, observation_shape)[:2]


def _restored(reference: dict, observation_shape):
    """(encoder, decoder, training step of the weights or None) of a reference."""
    run_dir = pathlib.Path(reference["run_dir"])
    published = is_published(run_dir)
    if published:
        verify_published(run_dir)
    elif not (run_dir / "checkpoints").is_dir():
        check_gin_config(reference["gin_config"], f"reference {run_dir}")
        raise ReferenceError(
            f"reference {run_dir}: expected the run's checkpoints/ or a published copy "
            f"({PUBLISHED_RECORD}), found neither (checkpoints are not kept in git; "
            "`python -m perturbations.publish_references ARTEFACT` retrains and publishes "
            "an artefact's references)")
    model = _built_model(reference, observation_shape)
    if not published:
        return model.encoder, model.decoder, train_lib.restore_model(model, run_dir)
    for part in ("encoder", "decoder"):
        try:
            getattr(model, part).load_weights(str(run_dir / f"{part}.weights.h5"))
        except (ValueError, OSError) as error:
            raise ReferenceError(f"published reference {run_dir}: {part}.weights.h5 does not "
                                 f"fit the model its results.json configures ({error})"
                                 ) from None
    step = read_json_object(run_dir / PUBLISHED_RECORD, ReferenceError).get("step")
    return model.encoder, model.decoder, step


def publish(reference: dict, destination, observation_shape) -> dict:
    """Writes a reference (a finished run with checkpoints, or a published directory) into
    `destination` as a published reference: each file under a temporary name, then renamed,
    PUBLISHED_RECORD last, so a directory without it is unfinished. Returns {file: sha256}.
    """
    source, destination = pathlib.Path(reference["run_dir"]), pathlib.Path(destination)
    if not (source / results_lib.ARRAYS).is_file():
        raise ReferenceError(f"reference {source}: publishing needs a run written by this "
                             f"suite's runner (results.json with {results_lib.ARRAYS}), "
                             f"found no {results_lib.ARRAYS}")
    encoder, decoder, step = _restored(reference, observation_shape)
    destination.mkdir(parents=True, exist_ok=True)
    (destination / PUBLISHED_RECORD).unlink(missing_ok=True)
    for name in ("results.json", results_lib.ARRAYS):
        with atomic_path(destination / name) as tmp:
            shutil.copyfile(source / name, tmp)
    for name, part in (("encoder.weights.h5", encoder), ("decoder.weights.h5", decoder)):
        with atomic_path(destination / name, ".weights.h5") as tmp:
            part.save_weights(str(tmp))
    digests = {name: file_sha256(destination / name) for name in PUBLISHED_FILES}
    origin = source if not is_published(source) else read_json_object(
        source / PUBLISHED_RECORD, ReferenceError).get("source_run_dir")
    write_json(destination / PUBLISHED_RECORD,
               {"sha256": digests, "source_run_dir": str(origin), "step": step})
    return digests


def recorded_references(metadata: dict, directory) -> dict:
    """{'entangled': [run dir...], 'disentangled': [...]} an artefact was generated from, as
    its metadata records them: the published copy inside the artefact (checked against the
    digests the metadata records) where there is one, else the run directory."""
    directory = pathlib.Path(directory)
    recorded = metadata.get("references")
    dirs = {}
    for side in ("entangled", "disentangled"):
        entries = recorded.get(side) if isinstance(recorded, dict) else None
        if not (isinstance(entries, list) and entries
                and all(isinstance(e, dict) and isinstance(e.get("run_dir"), str)
                        for e in entries)):
            raise ArtefactError(f"perturbation artefact {directory}: expected metadata "
                                f"references.{side}, a list of {{'run_dir': ...}}, found "
                                f"{str(entries)[:80]}")
        dirs[side] = [published_copy(e, directory) or e["run_dir"] for e in entries]
    return dirs


def published_copy(entry: dict, directory) -> str | None:
    """The published copy a metadata reference entry names ('published': a path inside the
    artefact `directory`, 'sha256': its digests), verified; None when it names none."""
    if "published" not in entry:
        return None
    directory = pathlib.Path(directory)
    relative = entry["published"]
    path = directory / relative if isinstance(relative, str) else None
    if path is None or pathlib.PurePath(relative).is_absolute() or ".." in pathlib.PurePath(
            relative).parts:
        raise ArtefactError(f"perturbation artefact {directory}: expected references' "
                            f"'published' to be a path inside the artefact, found "
                            f"{str(relative)[:80]}")
    if not is_published(path):
        raise ReferenceError(f"perturbation artefact {directory}: its metadata names the "
                             f"published reference {relative}, found no {PUBLISHED_RECORD} "
                             "there")
    if verify_published(path) != entry.get("sha256"):
        raise ReferenceError(f"perturbation artefact {directory}: the published reference "
                             f"{relative} does not hold the files the metadata records "
                             "(SHA-256 differs)")
    return str(path)


def dims_by_variance(reference: dict) -> list[int]:
    """Latent dims ordered by mean posterior variance, most informative first (eqs. 13-14)."""
    return [int(i) for i in np.argsort(reference["mean_posterior_variance"])]
