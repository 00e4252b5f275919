"""One writer per output directory: an exclusive lock file that names its holder.

    with directory_lock(run_dir, "benchmark.run"):
        ...   # only this process writes in run_dir

The lock is `<directory>/.lock`, held with `fcntl.flock` (exclusive, non-blocking) for as
long as the block runs; the file holds the holder's pid, host, command and start time.
The kernel drops a flock when its process dies, however it dies (kill -9 included), so a
lock left by a dead process is stale by construction and the next writer simply takes it;
the pid in the file is only read to name a live holder. A second writer fails at once with
`DirectoryLocked`, one message naming the holder. The lock is per directory, not
re-entrant: a process that already holds it must not take it again (it would fail
naming itself). Linux/macOS local file systems (flock); on NFS flock may be local only.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pathlib
import socket
import sys
import time

from benchmark.errors import UserError

LOCK_NAME = ".lock"


class DirectoryLocked(UserError, RuntimeError):
    """Another live process is writing to the directory."""


def _holder(lock_path: pathlib.Path) -> str:
    try:
        info = json.loads(lock_path.read_text())
        return (f"pid {info['pid']} on {info['host']} since {info['since']}: "
                f"{info['command']}")
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not yet recorded itself"


@contextlib.contextmanager
def directory_lock(directory, what: str = ""):
    """Holds `<directory>/.lock` exclusively for the block (creating the directory).

    what: the writer's name for the record (default: this process's command line).
    Raises DirectoryLocked, naming the holder, if another process holds it."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DirectoryLocked(
                f"{directory} is being written by another process ({_holder(path)}); "
                f"wait for it to finish or stop it, or write to another directory") from None
        record = {"pid": os.getpid(), "host": socket.gethostname(),
                  "since": time.strftime("%Y-%m-%d %H:%M:%S"),
                  "command": what or " ".join(sys.argv)}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode(), 0)
        try:
            yield path
        finally:
            os.ftruncate(fd, 0)        # no stale holder named once released
    finally:
        os.close(fd)                   # closing releases the flock
