"""The runner processes of a study: start one, and stop them all on Ctrl-C, or when the
study itself dies (`end_with_parent`: however it dies, kill -9 included).

Kept apart from benchmark/studies/study.py, which registers gin configurables, so that a Ray worker
can import `run_in_worker` by name: a function of a module run as `__main__` (`python -m
benchmark.study`) would be pickled by value, with the module's lock, and fail.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time

#: runner processes started by `run_one` in this process and not yet ended
_LIVE_RUNS: set = set()
_LIVE_LOCK = threading.Lock()
#: set by `stop_runs`: `run_one` starts no new process until `run_local` clears it
_STOPPING = threading.Event()
#: seconds an interrupted run gets to write its checkpoint and exit before it is killed
STOP_GRACE_SECONDS = 30.0
#: Linux prctl option: the signal a process gets when the thread that started it ends
_PR_SET_PDEATHSIG = 1


def end_with_parent(sig: int = signal.SIGINT):
    """A `preexec_fn` for subprocess: the child is sent `sig` when the process that
    started it dies, however it dies (kill -9, the OOM killer), so a killed pipeline or
    study leaves no study or run running on (SIGINT: a run keeps its last checkpoint, a
    study stops its own runs). Linux only (prctl PR_SET_PDEATHSIG); None elsewhere. Start
    the child from a thread that outlives it (the signal follows the starting thread)."""
    if not sys.platform.startswith("linux"):
        return None
    parent = os.getpid()

    def arrange() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:        # it died before the child could arrange it
            os.kill(os.getpid(), sig)
    return arrange



def run_one(command: list[str], cwd: str | None = None) -> tuple[int, str]:
    """Runs one runner command; (exit code, tail of its stderr). The process is known to
    `stop_runs` until it ends, so an interrupted study can stop it."""
    with _LIVE_LOCK:                  # a worker may pick up a run while the study stops
        if _STOPPING.is_set():
            return 130, "not started: the study was interrupted"
        process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True,
                                   preexec_fn=end_with_parent(),
                                   env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
        _LIVE_RUNS.add(process)
    try:
        _, stderr = process.communicate()
    finally:
        with _LIVE_LOCK:
            _LIVE_RUNS.discard(process)
    return process.returncode, stderr[-4000:]


def run_batch(specs: list[dict], cwd: str | None, on_result) -> None:
    """Runs `specs` ([{'name', 'gin_files', 'bindings', 'output_dir'}]) in one worker
    process (`python -m benchmark.worker`), calling on_result(name, exit code, stderr
    tail, seconds) as each run ends, and once for every run the worker did not report: the
    run it was in when it died gets the worker's exit status (a signal: negative, i.e.
    stopped; a crash: 1), the runs after it 130, not started. Known to `stop_runs` like a
    run of `run_one`. Never raises: a worker that cannot start reports every run as
    failed (exit 1)."""
    import collections
    import json

    names = [s["name"] for s in specs]
    reported: set = set()

    def report(name, code, tail, seconds):
        reported.add(name)
        on_result(name, code, tail, seconds)

    process = None
    try:
        with _LIVE_LOCK:
            if _STOPPING.is_set():
                for name in names:
                    report(name, 130, "not started: the study was interrupted", 0.0)
                return
            process = subprocess.Popen(
                [sys.executable, "-m", "benchmark.worker"], cwd=cwd, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                preexec_fn=end_with_parent(),
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
            _LIVE_RUNS.add(process)
        tail = collections.deque(maxlen=400)
        drain = threading.Thread(target=lambda: tail.extend(process.stderr), daemon=True)
        drain.start()
        payload = json.dumps(specs)           # the worker's input, on a pipe: no file
        process.stdin.write(payload)
        process.stdin.close()
        for line in process.stdout:
            try:
                result = json.loads(line)
            except ValueError:
                continue
            if isinstance(result, dict) and result.get("name") in names \
                    and result["name"] not in reported:
                report(result["name"], int(result.get("exit_code", 1)),
                       str(result.get("stderr_tail", "")), float(result.get("seconds", 0.0)))
        process.wait()
        drain.join(timeout=10)
        left = [n for n in names if n not in reported]
        for i, name in enumerate(left):
            if i == 0:
                code = process.returncode if process.returncode not in (0, None) else 1
                report(name, code, "".join(tail)[-4000:] or
                       f"the worker ended (exit {process.returncode}) during this run", 0.0)
            else:
                report(name, 130, "not started: the worker ended before it", 0.0)
    except Exception as error:            # Popen itself failed: every run unreported fails
        for name in [n for n in names if n not in reported]:
            report(name, 1, f"the worker could not run: {error!r}", 0.0)
    finally:
        if process is not None:
            with _LIVE_LOCK:
                _LIVE_RUNS.discard(process)


def stop_runs(grace: float = STOP_GRACE_SECONDS) -> int:
    """Sends SIGINT to every live run of `run_one` (a run keeps its last checkpoint and
    exits 130), waits up to `grace` seconds in all, then kills the ones left; returns how
    many were stopped. A study interrupted while its runs ran in worker threads (or with
    SIGINT sent to the study alone) would otherwise leave them running."""
    with _LIVE_LOCK:
        _STOPPING.set()
        live = [p for p in _LIVE_RUNS if p.poll() is None]
    for process in live:
        process.send_signal(signal.SIGINT)
    deadline = time.monotonic() + grace
    for process in live:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return len(live)


def run_in_worker(command: list[str], cwd: str | None = None) -> tuple[int, str]:
    """Runs one runner command in a Ray worker; (exit code, tail of its stderr). Nothing
    here is shared with the driver (Ray stops its workers when the study ends)."""
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    return result.returncode, result.stderr[-4000:]
