"""Atomic file writes: write to a temporary name in the target directory, then rename.

A reader never sees a half-written file under the final name, and a failed write leaves
nothing behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
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
