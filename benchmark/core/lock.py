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

The holder removes the lock file as it releases it, and the directories the lock created
when nothing else was written into them: a refused or empty command leaves nothing
behind. A writer that opened the file just before its holder removed it finds, once it
holds it, that the path no longer names that file, and takes the lock again on a fresh one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import pathlib
import socket
import sys
import time

from benchmark.core.errors import UserError

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


def _missing(directory: pathlib.Path) -> list[pathlib.Path]:
    """`directory` and those of its ancestors that do not exist, deepest first."""
    missing = []
    while not directory.exists() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    return missing


class OutputDirError(UserError, ValueError):
    """An output directory that cannot be made (a file there, a name too long, a symlink
    loop, a path that is not UTF-8, a place no directory can be made)."""


#: what cli_main reports as storage (a full or read-only disk, a forbidden place)
_STORAGE = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


def make_output_dir(directory: pathlib.Path) -> list[pathlib.Path]:
    """Makes `directory` (and its missing parents); returns those it made, deepest first.
    OutputDirError, one line naming the path and why, where it cannot be made; storage
    failures (full, read-only, forbidden) propagate as the OSError cli_main reports."""
    try:
        str(directory).encode("utf-8")
    except UnicodeEncodeError:
        raise OutputDirError(f"{str(directory)!r}: expected an output path of UTF-8 text, "
                             "found undecodable bytes; give another directory") from None
    try:
        created = _missing(directory)
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        if error.errno in _STORAGE:
            raise
        why = ("a file, not a directory, is there" if isinstance(error, FileExistsError)
               or error.errno == errno.ENOTDIR else error.strerror or str(error))
        raise OutputDirError(f"{directory}: cannot make the output directory ({why}); give "
                             "another directory") from None
    return created


def _same_file(fd: int, path: pathlib.Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def directory_lock(directory, what: str = "", name: str = LOCK_NAME):
    """Holds `<directory>/<name>` exclusively for the block (creating the directory).

    what: the writer's name for the record (default: this process's command line).
    name: the lock file's name (default `.lock`: one writer per directory; a writer of one
      file in a shared directory locks `.<file>.lock`).
    Raises DirectoryLocked, naming the holder, if another process holds it. On release the
    lock file goes, and so do the directories it created if they hold nothing else."""
    directory = pathlib.Path(directory)
    created = make_output_dir(directory)
    path = directory / name
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DirectoryLocked(
                f"{directory if name == LOCK_NAME else path} {LOCKED_MARK} "
                f"({_holder(path)}); "
                f"wait for it to finish or stop it, or write to another directory") from None
        if _same_file(fd, path):
            break
        os.close(fd)                   # its holder removed it as we opened it: again
    try:
        record = {"pid": os.getpid(), "host": socket.gethostname(),
                  "since": time.strftime("%Y-%m-%d %H:%M:%S"),
                  "command": what or " ".join(sys.argv)}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode(), 0)
        try:
            yield path
        finally:
            os.ftruncate(fd, 0)        # no stale holder named once released
            path.unlink(missing_ok=True)        # still held: no other writer is inside
            for folder in created:
                try:
                    folder.rmdir()              # only when empty
                except OSError:
                    break
    finally:
        os.close(fd)                   # closing releases the flock
