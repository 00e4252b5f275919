"""Ctrl-C ends a study: runs not started are cancelled, running ones stopped (before,
the thread pool's exit waited for every queued run, so an interrupted study went on)."""

import pathlib
import shlex
import signal
import subprocess
import sys
import threading
import time

import pytest

from benchmark.core import processes
from benchmark.studies import study

ROOT = pathlib.Path(__file__).resolve().parents[2]
SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]
QUICK = [sys.executable, "-c", "pass"]


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_an_interrupted_study_stops_its_runs_and_starts_no_more(workers):
    commands = {"quick": QUICK, "long_a": SLEEPER, "long_b": SLEEPER, "long_c": SLEEPER}
    seen = []

    def record(name, code, stderr, seconds):
        assert 0 <= seconds < 20                       # how long the run took
        seen.append((name, code))
        raise KeyboardInterrupt            # as if Ctrl-C arrived when the first run ended

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        study.run_local(commands, workers, record)
    assert time.monotonic() - started < 20             # not 60 s, nor 3 x 60 s
    assert seen == [("quick", 0)]
    assert not processes._LIVE_RUNS                         # nothing left running


@pytest.mark.slow
def test_stop_runs_interrupts_a_run_in_another_thread():
    assert not processes._STOPPING.is_set()                 # run_local cleared it on its way out
    out = {}
    thread = threading.Thread(target=lambda: out.setdefault("result", processes.run_one(
        [sys.executable, "-c", "import time\ntry:\n time.sleep(60)\nexcept KeyboardInterrupt:"
         "\n raise SystemExit(130)"])))
    thread.start()
    deadline = time.monotonic() + 10
    while not processes._LIVE_RUNS and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)                                     # let it reach its sleep
    assert processes.stop_runs(grace=10) == 1
    processes._STOPPING.clear()
    thread.join(10)
    assert out["result"][0] == 130                      # SIGINT: the run's own clean exit


def _interrupted_in_background(script: str) -> tuple[int, float]:
    """(exit status, seconds) of `script` started as a background shell starts a job, with
    SIGINT ignored (`trap '' INT; exec ...`), then sent SIGINT once it prints 'ready'."""
    process = subprocess.Popen(
        ["sh", "-c", f"trap '' INT; exec {shlex.quote(sys.executable)} -c "
                     f"{shlex.quote(script)}"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout.readline().strip() == "ready"
    started = time.monotonic()
    process.send_signal(signal.SIGINT)
    process.wait(timeout=60)
    return process.returncode, time.monotonic() - started


def test_a_command_started_in_the_background_still_stops_on_sigint():
    """`python -m benchmark.study ... &` inherits SIGINT ignored from the shell: without
    run_command's restore_interrupt, `kill -INT` (the suite's stop signal) would do
    nothing and the runs it started would ignore it too."""
    plain = "import time\nprint('ready', flush=True)\ntime.sleep(3)"
    code, seconds = _interrupted_in_background(plain)
    assert code == 0 and seconds > 2                  # the control: SIGINT was ignored
    command = ("import time\nfrom benchmark.core.errors import cli_main, run_command\n"
               "@cli_main\ndef main(argv):\n    print('ready', flush=True)\n"
               "    time.sleep(30)\nrun_command(main)")
    code, seconds = _interrupted_in_background(command)
    assert code != 0 and seconds < 10                 # stopped by KeyboardInterrupt
