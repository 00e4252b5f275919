"""Readings of published studies: the analyses behind numbers in results/, each a function
of a study's stored outputs with its own tests, run as `python -m benchmark.readings NAME
STUDY_DIR` (benchmark/readings/__main__.py lists them)."""

from __future__ import annotations

import json
import pathlib

from benchmark.core.errors import UserError


class ReadingError(UserError, ValueError):
    """A study output a reading cannot read: missing, not JSON, or not what it expects."""


def read_json_object(path: pathlib.Path, what: str, error: type = ReadingError) -> dict:
    """The JSON object stored at `path`; `error` (a ReadingError) naming the file and `what`
    was expected when it is missing, unreadable, not JSON or not an object."""
    try:
        found = json.loads(pathlib.Path(path).read_text())
    except FileNotFoundError:
        raise error(f"expected {what} at {path}, found no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as problem:
        raise error(f"{path}: expected {what} (JSON), found {type(problem).__name__}: "
                    f"{problem}") from None
    if not isinstance(found, dict):
        raise error(f"{path}: expected {what} (a JSON object), found {type(found).__name__}")
    return found
