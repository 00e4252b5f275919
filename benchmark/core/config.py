"""Gin configuration of the suite's commands: one search path, one parser, one pair of flags."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import pathlib
import re
import tokenize

import gin
from absl import flags
from gin import config_parser

from benchmark.core.errors import UserError

#: gin files named relative to this folder are found from any working directory
GIN_SEARCH_PATH = pathlib.Path(__file__).resolve().parents[2] / "gin_configs"


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


def find_published(path: str) -> str:
    """A path of the suite's own published files (`results/geometry_cpu`) as given when it
    exists from here, else from the repository's root when it exists there (a command run
    from a subdirectory), else as given (the reader then names it as missing)."""
    if pathlib.Path(path).exists() or pathlib.Path(path).is_absolute():
        return path
    rooted = GIN_SEARCH_PATH.parent / path
    return str(rooted) if rooted.exists() else path


def find_gin_file(name: str) -> pathlib.Path | None:
    """Where `name` is, as parse_config would find it (as given, else under gin_configs/);
    None when it is in neither place."""
    for path in (pathlib.Path(name), GIN_SEARCH_PATH / name):
        if path.is_file():
            return path
    return None


_SEARCH_PATH_ADDED = False


def parse_config(gin_files, gin_bindings) -> None:
    """Parses gin files and bindings; an unknown or misspelt binding fails here, before any
    work starts (a missing file too, with gin's error), and so does text gin cannot parse
    (ValueError naming gin's complaint; gin itself raises SyntaxError or tokenize's
    TokenError). The config stays unlocked so lazily imported modules can still register."""
    global _SEARCH_PATH_ADDED
    if not _SEARCH_PATH_ADDED:        # gin keeps a list: once per process, not per parse
        gin.add_config_file_search_path(str(GIN_SEARCH_PATH))
        _SEARCH_PATH_ADDED = True
    try:
        with _quiet_gin_lookups():
            gin.parse_config_files_and_bindings(list(gin_files), list(gin_bindings),
                                                finalize_config=False)
    except (SyntaxError, tokenize.TokenError) as error:
        raise ValueError(f"gin cannot parse the configuration: {error}") from error
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


#: packages a gin text read from a file the suite did not write (a reference run's
#: results.json, a reference study's study.json) may import: the suite's own packages, found
#: where this checkout has them (a custom method of the suite's examples/ included); anything
#: else would run a module named by a data file
SUITE_PACKAGES = ("benchmark", "models", "perturbations", "examples")
SUITE_ROOT = GIN_SEARCH_PATH.parent


def is_suite_module(module: str) -> bool:
    """Whether `module` ('examples.sparse_vae') is one of the suite's own: its top-level
    package is in SUITE_PACKAGES and resolves, as an import from here would, to this
    checkout's folder of that name (not a namesake in the working directory or on
    PYTHONPATH), and the module's file is in that folder. Nothing is imported to decide."""
    top, _, rest = module.partition(".")
    if top not in SUITE_PACKAGES:
        return False
    folder = (SUITE_ROOT / top).resolve()
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    if spec is None or spec.origin is None or pathlib.Path(spec.origin).resolve().parent != folder:
        return False
    if not rest:
        return True
    path = folder.joinpath(*rest.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


#: a name that becomes a file or folder name: letters, digits and . _ @ = + -, no leading dot
PATH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@=+-]{0,149}")


def check_path_name(value, what: str) -> str:
    """`value` if it can name a file or folder inside an output directory without leaving it
    (PATH_NAME, no '..'); else ValueError naming `what` and the value."""
    if not isinstance(value, str) or not PATH_NAME.fullmatch(value) or ".." in value:
        raise ValueError(f"{what}: expected a name of letters, digits and . _ @ = + - "
                         f"(at most 150, no leading dot, no '..'; it becomes a folder name), "
                         f"found {value!r:.200}")
    return value


class UntrustedConfigError(UserError, ValueError):
    """Gin text from a data file that would import a foreign module or include a file."""


def check_untrusted_config(text, source: str) -> str:
    """`text` if it is gin text whose `import` lines name only SUITE_PACKAGES and that has
    no `include`; else UntrustedConfigError naming `source` and the offending line. Gin
    would import any module an `import` line names (running its code) and read any file an
    `include` names, so text read from results.json / study.json passes here first."""
    if not isinstance(text, str):
        raise UntrustedConfigError(f"{source}: expected the gin config as a string, found "
                                   f"{type(text).__name__}")
    try:
        statements = list(config_parser.ConfigParser(
            text, gin.config.ParserDelegate(skip_unknown=True)))
    except (SyntaxError, ValueError, tokenize.TokenError) as error:
        raise UntrustedConfigError(f"{source}: expected a parseable gin config, found: "
                                   f"{error}") from error
    for statement in statements:
        line = getattr(statement, "location", None)
        where = f"line {line.line_num if line else '?'}"
        if isinstance(statement, config_parser.IncludeStatement):
            raise UntrustedConfigError(
                f"{source}: the gin config includes {statement.filename!r} ({where}); "
                "gin text read from a data file must not include files")
        if isinstance(statement, config_parser.ImportStatement):
            if not is_suite_module(statement.module):
                raise UntrustedConfigError(
                    f"{source}: the gin config imports {statement.module!r} ({where}); only "
                    f"modules of the suite's own packages {list(SUITE_PACKAGES)} in "
                    f"{SUITE_ROOT} may be imported from gin text read from a data file "
                    "(importing runs the module's code)")
    return text
