"""Several runs in one process: TensorFlow's start paid once (`study --runs_per_process`).

    python -m benchmark.worker < runs.json      # [{"name", "gin_files", "bindings",
                                                #   "output_dir"}, ...]

Each run is what `python -m benchmark.run --gin_file=... --gin_bindings=...
--output_dir=...` would do, in order, in this process: its own gin configuration (the
previous one cleared), its own seed (every generator seeded from run.seed before its model
is built, benchmark/runs/run.py), lock, directory and results; Keras's session is cleared
between runs. TensorFlow's thread pools are fixed once per process, so a run whose
`run.threads` differs from the first run's is refused (exit 2) rather than run unpinned.
After each run one JSON line goes to stdout: {"name", "exit_code", "stderr_tail",
"seconds"}, with the exit code `python -m benchmark.run` would have given (0 finished, 2 a
user error, 1 a bug, 130 interrupted). A run that fails does not stop the next; Ctrl-C
(SIGINT) stops the current run at its last checkpoint and the worker exits 130 without
starting another. tests/benchmark_core/test_worker.py checks that runs in one worker give
the same numbers as each run alone.
"""

from __future__ import annotations

import json
import pathlib
import sys
import time
import traceback

from benchmark.core.errors import STORAGE_ERRNOS, UserError, restore_interrupt, storage_message, \
    user_message


def _emit(name: str, code: int, tail: str, seconds: float) -> None:
    print(json.dumps({"name": name, "exit_code": code, "stderr_tail": tail[-4000:],
                      "seconds": seconds}), flush=True)


def check_specs(specs) -> list[dict]:
    """The worker's input: a JSON list of {'name', 'gin_files', 'bindings', 'output_dir'}
    (names unique); ValueError naming what is wrong."""
    if not isinstance(specs, list) or not specs:
        raise ValueError(f"expected a non-empty JSON list of runs, found {str(specs)[:80]!r}")
    for spec in specs:
        ok = (isinstance(spec, dict) and isinstance(spec.get("name"), str)
              and isinstance(spec.get("output_dir"), str)
              and all(isinstance(spec.get(k), list) and all(isinstance(v, str)
                                                          for v in spec[k])
                      for k in ("gin_files", "bindings")))
        if not ok:
            raise ValueError(f"expected runs as {{'name', 'gin_files', 'bindings', "
                             f"'output_dir'}}, found {str(spec)[:120]!r}")
    names = [s["name"] for s in specs]
    if len(set(names)) != len(names):
        raise ValueError("expected unique run names")
    return specs


def run_specs(specs: list[dict], artefact_loader=None) -> int:
    """Runs `specs` in order (module docstring); returns the worker's exit status: 130
    when interrupted, else 0 (each run's own status is in its JSON line). artefact_loader:
    see `benchmark.runs.run.run` (the entry, benchmark/worker.py, passes it)."""
    import gin
    import keras

    from benchmark.core import config, machine
    from benchmark.runs import run as run_lib

    pinned = None
    for spec in specs:
        started = time.monotonic()
        machine.mark_run_start()
        try:
            gin.clear_config()
            keras.backend.clear_session()
            try:
                config.parse_config(spec["gin_files"], spec["bindings"])
            except (ValueError, KeyError, OSError) as error:
                if isinstance(error, UserError):
                    raise
                raise UserError(f"invalid gin configuration: {error}") from None
            threads = run_lib.run_settings().threads
            if pinned is not None and threads != pinned:
                raise UserError(f"run.threads = {threads}, but this worker's TensorFlow "
                                f"runs {pinned} threads (its first run's); run it in a "
                                "process of its own (without --runs_per_process)")
            pinned = threads
            run_lib.run(pathlib.Path(spec["output_dir"]), False, artefact_loader)
            _emit(spec["name"], 0, "", time.monotonic() - started)
        except run_lib.RunInterrupted as interrupted:
            _emit(spec["name"], 130, str(interrupted), time.monotonic() - started)
            return 130
        except KeyboardInterrupt:
            _emit(spec["name"], 130, "interrupted before training started",
                  time.monotonic() - started)
            return 130
        except UserError as error:
            _emit(spec["name"], 2, f"error: {user_message(error)}", time.monotonic() - started)
        except OSError as error:
            if error.errno not in STORAGE_ERRNOS:
                _emit(spec["name"], 1, traceback.format_exc(), time.monotonic() - started)
            else:
                _emit(spec["name"], 2, f"error: {storage_message(error)}",
                      time.monotonic() - started)
        except Exception:                 # a bug in one run: recorded, the next one runs
            _emit(spec["name"], 1, traceback.format_exc(), time.monotonic() - started)
    return 0


def main(artefact_loader=None) -> int:
    from absl import logging

    restore_interrupt()
    logging.use_absl_handler()             # what the runner's absl app sets up
    logging.set_verbosity(logging.INFO)
    try:
        specs = check_specs(json.loads(sys.stdin.read()))
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return run_specs(specs, artefact_loader)

