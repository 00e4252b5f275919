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
#: the words of DirectoryLocked's message that tell another process's refusal apart
LOCKED_MARK = "is being written by another process"


class DirectoryLocked(UserError, RuntimeError):
    """Another live process is writing to the directory."""


def _holder(lock_path: pathlib.Path) -> str:
    try:
        info = json.loads(lock_path.read_text())
        return (f"pid {info['pid']} on {info['host']} since {info['since']}: "
                f"{info['command']}")
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not yet recorded itself"


def is_locked(directory, name: str = LOCK_NAME) -> str | None:
    """The holder of `<directory>/<name>` (as DirectoryLocked would name it) while a live
    process holds it; None when nobody does (or there is no such directory)."""
    path = pathlib.Path(directory) / name
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder(path)
    finally:
        os.close(fd)                   # closing releases a shared lock we took
    return None


@contextlib.contextmanager
def directory_lock(directory, what: str = "", name: str = LOCK_NAME):
    """Holds `<directory>/<name>` exclusively for the block (creating the directory).

    what: the writer's name for the record (default: this process's command line).
    name: the lock file's name (default `.lock`: one writer per directory; a writer of one
      file in a shared directory locks `.<file>.lock`).
    Raises DirectoryLocked, naming the holder, if another process holds it."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DirectoryLocked(
                f"{directory if name == LOCK_NAME else path} {LOCKED_MARK} "
                f"({_holder(path)}); "
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
