"""Atomic file writes: write to a temporary name in the target directory, then rename.

A reader never sees a half-written file under the final name, and a failed write leaves
nothing behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
import tempfile


@contextlib.contextmanager
def atomic_path(path, suffix: str = ""):
    """Yields a temporary path next to `path`; renames it to `path` if the block succeeds.

    The finished file gets the permissions a plain `open(path, 'w')` would give it.
    """
    path = pathlib.Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix or path.suffix,
                                        dir=path.parent)
        os.close(fd)
    except OSError as error:
        raise naming_error(error, path) from error
    tmp = pathlib.Path(tmp_name)
    try:
        yield tmp
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except OSError as error:
        raise naming_error(error, path) from error
    finally:
        tmp.unlink(missing_ok=True)


def write_json(path, payload, *, indent: int = 2, sort_keys: bool = True,
               default=None) -> pathlib.Path:
    """Writes `payload` as JSON to `path` atomically (through `atomic_path`); returns the
    path. Every JSON file the suite writes goes through here."""
    text = json.dumps(payload, indent=indent, sort_keys=sort_keys, default=default)
    with atomic_path(path, ".json") as tmp:
        tmp.write_text(text)
    return pathlib.Path(path)


def naming_error(error: OSError, path) -> OSError:
    """`error` re-stated to name the file being written (a disk-full error from deep
    inside numpy or h5py names no file): same errno, so the same OSError subclass."""
    message = f"writing {path} failed: {error.strerror or error}"
    return OSError(error.errno, message) if error.errno else OSError(message)


def is_temporary_of(candidate: str, name: str) -> bool:
    """Whether the file name `candidate` is one of `atomic_path`'s temporary names for a
    file called `name`: `.<name>.` + tempfile's 8 random characters + an optional suffix
    (`.results.json.k3j_x9a1.json`). A user's `.results.json.keep_me` is not one."""
    return re.fullmatch(rf"\.{re.escape(name)}\.[a-z0-9_]{{8}}(\.[A-Za-z0-9]+)?",
                        candidate) is not None


def temporaries_of(path) -> list[pathlib.Path]:
    """The temporary files `atomic_path` left beside `path` (a killed writer's)."""
    path = pathlib.Path(path)
    if not path.parent.is_dir():
        return []
    return sorted(p for p in path.parent.glob(f".{glob_escape(path.name)}.*")
                  if is_temporary_of(p.name, path.name))


def glob_escape(name: str) -> str:
    """`name` with glob's special characters escaped."""
    return re.sub(r"([*?\[])", r"[\1]", name)
