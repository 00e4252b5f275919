import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from benchmark.core.lock import LOCK_NAME, DirectoryLocked, directory_lock

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOLD = ("import sys, time\n"
        "from benchmark.core.lock import directory_lock\n"
        "with directory_lock(sys.argv[1], 'holder in a test'):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(600)\n")


def _holder(directory):
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(directory)], cwd=ROOT,
                               stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert process.stdout.readline().strip() == "held"
    return process


def test_second_writer_fails_naming_a_live_holder_and_a_dead_ones_lock_is_taken(tmp_path):
    process = _holder(tmp_path / "dir")
    try:
        with pytest.raises(DirectoryLocked, match=rf"pid {process.pid} on .* holder in a "
                                                  "test"):
            with directory_lock(tmp_path / "dir"):
                pass
    finally:
        process.send_signal(signal.SIGKILL)          # dies holding it: a stale lock file
        process.wait()
    record = json.loads((tmp_path / "dir" / LOCK_NAME).read_text())
    assert record["pid"] == process.pid              # still names the dead holder ...
    with directory_lock(tmp_path / "dir", "next writer"):     # ... but is free
        assert json.loads((tmp_path / "dir" / LOCK_NAME).read_text())["pid"] == os.getpid()
    assert not (tmp_path / "dir" / LOCK_NAME).exists()      # released: the lock file goes


def test_a_refused_command_leaves_no_directory_and_a_used_one_keeps_its_files(tmp_path):
    target = tmp_path / "a" / "b" / "out"
    with pytest.raises(ValueError):
        with directory_lock(target):
            raise ValueError("refused before writing")
    assert not (tmp_path / "a").exists()
    with directory_lock(target):
        (target / "result.txt").write_text("kept")
    assert sorted(p.name for p in target.iterdir()) == ["result.txt"]
    (tmp_path / "shared").mkdir()
    with directory_lock(tmp_path / "shared", name=".file.npz.lock"):
        assert (tmp_path / "shared" / ".file.npz.lock").exists()
    assert (tmp_path / "shared").is_dir() and not list((tmp_path / "shared").iterdir())


def test_lock_is_released_when_the_block_fails(tmp_path):
    with pytest.raises(KeyError):
        with directory_lock(tmp_path):
            raise KeyError("boom")
    started = time.perf_counter()
    with directory_lock(tmp_path):
        pass
    assert time.perf_counter() - started < 1.0
