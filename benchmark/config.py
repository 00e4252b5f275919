"""Gin configuration of the suite's commands: one search path, one parser, one pair of flags."""

from __future__ import annotations

import contextlib
import logging
import pathlib

import gin
from absl import flags

#: gin files named relative to this folder are found from any working directory
GIN_SEARCH_PATH = pathlib.Path(__file__).resolve().parent.parent / "gin_configs"


class _GinLookupFilter(logging.Filter):
    """Drops gin's 'Path not found' errors, logged while it tries a file's literal path
    before the search path (a file found on the search path is no error)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.pathname.endswith(str(pathlib.Path("gin", "resource_reader.py")))


@contextlib.contextmanager
def _quiet_gin_lookups():
    root = logging.getLogger()
    quiet = _GinLookupFilter()
    root.addFilter(quiet)
    try:
        yield
    finally:
        root.removeFilter(quiet)


def parse_config(gin_files, gin_bindings) -> None:
    """Parses gin files and bindings; an unknown or misspelt binding fails here, before any
    work starts (a missing file too, with gin's error). The config stays unlocked so lazily
    imported modules can still register."""
    gin.add_config_file_search_path(str(GIN_SEARCH_PATH))
    try:
        with _quiet_gin_lookups():
            gin.parse_config_files_and_bindings(list(gin_files), list(gin_bindings),
                                                finalize_config=False)
    except ModuleNotFoundError as error:
        raise ValueError(f"{error}\n(a gin `import` line names a module Python cannot find "
                         f"from {pathlib.Path.cwd()}: run the command from the directory "
                         "that contains your package, or add that directory to PYTHONPATH)"
                         ) from error
    except ValueError as error:
        if "No configurable matching" not in str(error):
            raise
        raise ValueError(f"{error}\n(register it where it is defined: decorate the function "
                         "or class with @gin.configurable, or call gin.external_configurable "
                         "on it, in the module your gin file imports)") from error


def define_gin_flags(example_binding: str) -> None:
    """--gin_file (repeatable) and --gin_bindings (repeatable) of a command."""
    flags.DEFINE_multi_string("gin_file", [], "Gin config files (searched also in "
                              "gin_configs/).")
    flags.DEFINE_multi_string("gin_bindings", [], f"Gin bindings, e.g. \"{example_binding}\".")
