"""python -m benchmark.pipeline --gin_file=pipelines/zietlow2021_paper.gin [--backend=local|ray]
[--address=ADDR] [--workers=N] [--stages=NAME,...] [--dry_run] [--gin_bindings=...]

A pipeline is an ordered list of stages, each one command of the suite run in its own
process: a study (`python -m benchmark.study`, whose runs go to a Ray cluster with
--backend=ray) or a generation (`python -m perturbations.generate`, one process: the game
of one manipulation network). Every stage resumes where it stopped (finished runs are
skipped, the game restarts from its last checkpoint), so the same command, started again
after a lost node or a wall-clock limit, continues the pipeline. A stage that fails stops
the pipeline with its exit status; the stages after it do not start.

Paper 002 at paper scale (gin_configs/pipelines/zietlow2021_paper.gin):
the restart pools (beta-VAE, Table 2 settings, dlib's 300k steps: 10 restarts on dSprites,
16 on Shapes3D), the two games (their references chosen from the pools by MIG: 1 + 1 on
dSprites, an ensemble of 4 + 4 on Shapes3D; appendix B.1), then the retraining of
Table 1 (six methods x original / modified / noisy x 10 seeds). --dry_run lists every
stage with its command and what it would do (a study's runs and their state; a
generation's references and outputs) and trains nothing.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import gin
from absl import app, flags

from benchmark.core import config
from benchmark.core.errors import ConfigError, cli_main, user_errors
from benchmark.core.processes import end_with_parent

FLAGS = flags.FLAGS

#: stage kind -> the module that runs it
COMMANDS = {"study": "benchmark.study", "generate": "perturbations.generate"}


def define_flags() -> None:
    config.define_gin_flags("pipeline.stage_bindings = {'restarts_dsprites': "
                            "['study.seeds = [0, 1]']}")
    flags.DEFINE_enum("backend", "local", ["local", "ray"],
                      "Where the runs of study stages execute.")
    flags.DEFINE_integer("workers", 1, "Runs at a time in study stages (local backend).",
                         lower_bound=1)
    flags.DEFINE_string("address", None, "Ray cluster address for study stages (default: a "
                        "local Ray instance on this machine, bound to localhost).")
    flags.DEFINE_list("stages", None, "Run only these stages (names), in the pipeline's "
                      "order; default all.")
    flags.DEFINE_boolean("dry_run", False, "Print every stage's plan; train nothing.")


@gin.configurable("pipeline")
def pipeline_settings(stages=gin.REQUIRED, stage_bindings=None) -> list[dict]:
    """The stages, in order: [{'name', 'kind': 'study' | 'generate', 'gin_file',
    'bindings'}].

    stages: [(name, kind, gin_file)], names unique, gin files on the suite's search path
      (gin_configs/) or paths.
    stage_bindings: {stage name: [gin binding]}, appended to that stage's command after its
      gin file (a smaller pool, fewer steps, another output directory).
    """
    stage_bindings = dict(stage_bindings or {})
    found, names = [], set()
    for stage in stages:
        if not (isinstance(stage, (list, tuple)) and len(stage) == 3
                and all(isinstance(s, str) for s in stage)):
            raise ConfigError(f"pipeline.stages: expected (name, kind, gin_file) string "
                              f"triples, found {stage!r}")
        name, kind, gin_file = stage
        if kind not in COMMANDS:
            raise ConfigError(f"pipeline stage {name!r}: expected a kind in "
                              f"{sorted(COMMANDS)}, found {kind!r}")
        if name in names:
            raise ConfigError(f"pipeline.stages: stage name {name!r} appears twice")
        names.add(name)
        bindings = stage_bindings.get(name, [])
        if not (isinstance(bindings, (list, tuple))
                and all(isinstance(b, str) for b in bindings)):
            raise ConfigError(f"pipeline.stage_bindings[{name!r}]: expected a list of gin "
                              f"binding strings, found {bindings!r}")
        found.append({"name": name, "kind": kind, "gin_file": gin_file,
                      "bindings": list(bindings)})
    unknown = sorted(set(stage_bindings) - names)
    if unknown:
        raise ConfigError(f"pipeline.stage_bindings names no stage of this pipeline: "
                          f"{unknown}; its stages are {[s['name'] for s in found]}")
    if not found:
        raise ConfigError("pipeline.stages: expected at least one stage, found none")
    return found


def select(stages: list[dict], names) -> list[dict]:
    """The stages named (all when names is None), in the pipeline's order."""
    if names is None:
        return stages
    unknown = [n for n in names if n not in {s["name"] for s in stages}]
    if unknown:
        raise ConfigError(f"--stages: no stage named {unknown}; the pipeline's stages are "
                          f"{[s['name'] for s in stages]}")
    return [s for s in stages if s["name"] in names]


def stage_command(stage: dict, backend: str = "local", workers: int = 1,
                  address: str | None = None, dry_run: bool = False) -> list[str]:
    """The argument list that runs `stage`: a generation with --resume (it exits at once
    when finished, else trains on; perturbations/generate.py); a dry run asks each command
    for its plan (--dry_run)."""
    command = [sys.executable, "-m", COMMANDS[stage["kind"]],
               f"--gin_file={stage['gin_file']}",
               *[f"--gin_bindings={b}" for b in stage["bindings"]]]
    if stage["kind"] == "study":
        command += [f"--backend={backend}", f"--workers={workers}"]
        if address:
            command.append(f"--address={address}")
    if dry_run:
        command.append("--dry_run")
    elif stage["kind"] == "generate":
        command.append("--resume")
    return command


def run_stages(stages: list[dict], backend: str = "local", workers: int = 1,
               address: str | None = None, dry_run: bool = False, announce=print) -> int:
    """Runs the stages in order, each to completion; returns 0, or the exit status of the
    first stage that failed (the stages after it are not started)."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2")}
    for i, stage in enumerate(stages, 1):
        command = stage_command(stage, backend, workers, address, dry_run)
        announce(f"[{i}/{len(stages)}] {stage['name']} ({stage['kind']}): "
                 + " ".join(command[1:]))
        code = subprocess.run(command, env=env, preexec_fn=end_with_parent()).returncode
        if code != 0:
            announce(f"stage {stage['name']} {'(dry run) ' if dry_run else ''}exited with "
                     f"status {code}; the stages after it did not start. Rerun the same "
                     "command to resume.")
            return code
    announce("dry run: nothing was trained" if dry_run else
             f"pipeline finished: {len(stages)} stage(s)")
    return 0


@cli_main
def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    if not FLAGS.gin_file:
        raise app.UsageError("--gin_file is required (e.g. pipelines/zietlow2021_paper.gin)")
    # RuntimeError: gin's "required bindings not provided" (a file without pipeline.stages)
    with user_errors(ValueError, KeyError, IOError, RuntimeError,
                     prefix="invalid pipeline configuration: "):
        config.parse_config(FLAGS.gin_file, FLAGS.gin_bindings)
        stages = select(pipeline_settings(), FLAGS.stages)
    code = run_stages(stages, FLAGS.backend, FLAGS.workers, FLAGS.address, FLAGS.dry_run)
    if code:
        sys.exit(code)

