"""python -m perturbations.publish_references ARTEFACT [--work_dir=DIR] [--tolerance=T]

Publishes, inside a manipulation artefact made before artefacts carried their references,
the reference models its metadata names, so that `perturbations.readapt`
and the game rerun from a clean clone (perturbations/references.py says what a published
reference holds). For each entangled and disentangled reference:
  - its run directory still has checkpoints/: those weights are published as they are
    ('published_from': 'run');
  - else it is retrained from the gin config and seed its results.json records (the run's
    own results.json must be there: published studies keep it) into
    `work_dir/<side><i>` (skipped when finished, so the command resumes), and published
    only if the retrained run's MIG equals the recorded one within `tolerance`
    ('published_from': 'retrained'): the runner seeds every generator
    (keras.utils.set_random_seed), so a rerun on CPU should repeat the run. A run that does
    not repeat is refused, not published as a stand-in, unless --accept_different is
    passed, which publishes it with 'published_from': 'retrained_different' and both MIGs,
    and every command that loads it says so.
The metadata gains, per reference, 'published' (the path inside the artefact), 'sha256'
(its files' digests) and 'published_from'; nothing else in it changes, and it is written
last, atomically, so an interrupted command leaves the artefact as it was.

Exit status 0 when every reference is published, 2 with one line `error: ...` otherwise.
"""

from __future__ import annotations

import os
import pathlib

from absl import app, flags, logging

from benchmark.core.errors import cli_main, run_command, user_errors
from perturbations import references

FLAGS = flags.FLAGS

DEFAULT_TOLERANCE = references.REPEAT_TOLERANCE


def define_flags() -> None:
    """The command's flags (defined only when it runs as a command)."""
    flags.DEFINE_string("work_dir", None, "Where references without checkpoints are "
                        "retrained (default runs/publish_references/<artefact name>).")
    flags.DEFINE_float("tolerance", DEFAULT_TOLERANCE, "Largest |MIG retrained - MIG "
                       "recorded| that counts as the same run repeated.", lower_bound=0.0)
    flags.DEFINE_boolean("accept_different", False, "Publish a retrained reference whose "
                         "MIG differs from the recorded one, marked as such.")


def publish_artefact_references(directory, work_dir=None, tolerance=DEFAULT_TOLERANCE,
                                accept_different=False) -> dict:
    """Publishes the references of the artefact in `directory` and records them in its
    metadata (module docstring); returns the new metadata."""
    from perturbations import artefact, diagnostics

    directory = pathlib.Path(directory)
    data, _, metadata = diagnostics.load_manipulation_artefact(directory)
    references.recorded_references(metadata, directory)      # the entries are well formed
    work_dir = pathlib.Path(work_dir or pathlib.Path("runs/publish_references")
                            / directory.name)
    updated = {side: list(metadata["references"][side])
               for side in ("entangled", "disentangled")}
    for side in ("entangled", "disentangled"):
        for i, entry in enumerate(updated[side]):
            if references.published_copy(entry, directory):
                logging.info("%s%d: published before (%s)", side, i, entry["published"])
                continue
            reference, provenance = references.weights_source(
                entry["run_dir"], f"{side}{i}", work_dir, tolerance, accept_different)
            relative = f"{references.IN_ARTEFACT}/{side}{i}"
            digests = references.publish(reference, directory / relative,
                                         data.observation_shape)
            updated[side][i] = {**entry, "published": relative, "sha256": digests,
                                **provenance}
    metadata = {**{k: v for k, v in metadata.items()
                   if k not in ("schema_version", "suite_version")},
                "references": {**metadata["references"], **updated}}
    artefact.write_metadata(directory, metadata)
    return metadata


@cli_main
def main(argv):
    if len(argv) != 2:
        raise app.UsageError("expected one artefact directory: python -m perturbations."
                             "publish_references ARTEFACT [--work_dir=DIR]")
    directory = pathlib.Path(argv[1])
    with user_errors(OSError, ValueError):       # ArtefactError, ReferenceError: UserErrors
        metadata = publish_artefact_references(directory, FLAGS.work_dir, FLAGS.tolerance,
                                               FLAGS.accept_different)
    for side in ("entangled", "disentangled"):
        for entry in metadata["references"][side]:
            print(f"{side}: {directory / entry['published']} ({entry['published_from']}, "
                  f"MIG recorded {entry['mig']:.4f}"
                  + (f", retrained {entry['retrained_mig']:.4f}"
                     if "retrained_mig" in entry else "") + ")")


if __name__ == "__main__":
    define_flags()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    run_command(main)
