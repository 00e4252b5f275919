"""Run identity: the fingerprint of a run's operative configuration.

A run directory is identified by its gin configuration as the runner parsed it
(`gin.config_str()`: every explicit binding of the gin files and command-line bindings,
includes flattened), canonicalised:
- parsed with gin's own parser (comments, layout, order, `1` vs `1.0`, tuple vs list and
  dict key order do not matter; references stay `@name` / `@name()`, macros `%NAME`);
- `import` lines dropped (they register code; the bindings say what is used);
- the data named by content, not by path (`content_bindings`): `data.artefact` becomes the
  SHA-256 of the artefact's metadata.json (which records its weights' SHA-256, checked
  whenever the artefact loads), so another artefact under the same path is another
  configuration and the same artefact under another path (a checkout elsewhere) is the
  same one; an official data file the run would read (`data.source` 'file', or 'auto'
  where one is found) adds `data.file_sha256`, its content hash;
- bindings that change neither what is trained nor what is measured dropped
  (`IGNORED`: how often to log, checkpoint or score a learning-curve point; resume is
  exact whatever the period, and a curve point does not touch training; the shorter run
  of the same configuration a run started from, `run.start_from`, which is a resume; how
  images are stored and served, `materialize.*`, which gives the same bits), and
  settings bound to the default they had before they existed (`DEFAULTS`: run.threads).
The fingerprint is the SHA-256 of the canonical bindings (JSON, sorted); the suite version
is recorded beside it (`fingerprint.json`) but not hashed, so a version bump does not orphan
finished runs. A directory written before fingerprints existed is identified from the
`gin_config` text of its results.json (or its operative_config.gin), so published studies
keep counting as finished when resumed with the same configuration; the content such a run
read is unknown, so an artefact stays named by its path there (`artefact_key`) and never
matches a content-named one: such a run is refused, not silently reused.

The fingerprints a study's runs will have are computed by `python -m benchmark.identities`
(which registers the runner's configurables; this module stays below the runner).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import math
import pathlib

from gin import config_parser

from benchmark.core.atomic import write_json
from benchmark.core.errors import UserError
from benchmark.core.machine import DEFAULT_THREADS

FILE_NAME = "fingerprint.json"
IGNORED = frozenset({"run.log_every", "run.checkpoint_every", "run.eval_every",
                     "run.start_from"})
#: configurables none of whose settings changes a number (how images are stored and served:
#: benchmark/data/materialize.py)
IGNORED_SCOPES = ("materialize.",)


class ConfigMismatch(UserError, ValueError):
    """A run directory holds a run of another configuration."""


def suite_version() -> str:
    try:
        return importlib.metadata.version("disentangle-bench")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class _Symbols(config_parser.ParserDelegate):
    """Keeps references and macros as text: no configurable needs to be registered."""

    def configurable_reference(self, scoped_configurable_name, evaluate):
        return f"@{scoped_configurable_name}" + ("()" if evaluate else "")

    def macro(self, macro_name):
        return f"%{macro_name}"


def _canonical(value):
    """JSON-ready canonical form of a parsed gin value."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, float) and math.isfinite(value) and value == int(value):
            return int(value)
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        items = [[_canonical(k), _canonical(v)] for k, v in value.items()]
        return {"dict": sorted(items, key=lambda kv: json.dumps(kv, sort_keys=True))}
    return repr(value)


def binding_statements(config_text: str):
    """(key, value) of each binding of a gin config text, in order: key
    'scope/selector.param' (a macro definition by its name), value as gin parsed it
    (references and macros kept as text). Raises ValueError on text gin cannot parse."""
    try:
        statements = list(config_parser.ConfigParser(config_text, _Symbols()))
    except SyntaxError as error:
        raise ValueError(f"expected gin configuration text, found unparsable text: "
                         f"{error}") from None
    for statement in statements:
        if not isinstance(statement, config_parser.BindingStatement):
            continue
        key = statement.selector + (f".{statement.arg_name}" if statement.arg_name else "")
        yield (f"{statement.scope}/{key}" if statement.scope else key), statement.value


#: bindings dropped when they bind their default: the runs trained before the setting
#: existed used that value and keep their fingerprints
DEFAULTS = {"run.threads": DEFAULT_THREADS}


def bindings_of(config_text: str) -> dict[str, str]:
    """{'scope/selector.param': canonical JSON value} of a gin config text; a macro
    definition is keyed by its name. Raises ValueError on text gin cannot parse."""
    bindings = {}
    for key, value in binding_statements(config_text):
        if key not in IGNORED and not key.startswith(IGNORED_SCOPES):
            value = _canonical(value)
            if key in DEFAULTS and value == DEFAULTS[key]:
                continue
            if key.endswith("data.artefact") and isinstance(value, str):
                value = artefact_key(value)
            bindings[key] = json.dumps(value, sort_keys=True)
    return bindings


def artefact_key(path: str) -> str:
    """An artefact directory as the fingerprint sees it: its path below the last `results/`
    folder when it has one (the published artefacts: a study resumed from a checkout in
    another place names the same artefact by another absolute path), else as given."""
    parts = pathlib.PurePosixPath(path).parts
    if "results" in parts:
        last = len(parts) - 1 - parts[::-1].index("results")
        return str(pathlib.PurePosixPath(*parts[last:]))
    return path


def fingerprint_of(bindings: dict[str, str]) -> str:
    """SHA-256 (hex) of canonical bindings."""
    return hashlib.sha256(json.dumps(bindings, sort_keys=True).encode()).hexdigest()


#: the derived key of the official data file a run reads (its SHA-256)
DATA_FILE_KEY = "data.file_sha256"


def artefact_content(path: str) -> str:
    """The canonical binding value of an artefact directory: the SHA-256 of its
    metadata.json. ValueError naming the path when there is none."""
    from benchmark.data.files import file_sha256

    metadata = pathlib.Path(path) / "metadata.json"
    if not metadata.is_file():
        raise ValueError(f"data.artefact = {path!r}: expected a perturbation artefact "
                         "directory with metadata.json (python -m perturbations.generate or "
                         "perturbations.noise), found none")
    return json.dumps({"metadata_sha256": file_sha256(metadata)})


def content_bindings(config_text: str, bindings: dict[str, str]) -> dict[str, str]:
    """`bindings` with the data named by content: every `data.artefact` path replaced by
    `artefact_content`, and `DATA_FILE_KEY` added when `data.source` / `data.data_dir` /
    `data.name` (unscoped, literal values) make the run read an official file."""
    from benchmark.data import data_file
    from benchmark.data.files import cached_file_sha256

    out = dict(bindings)
    data = {}
    for key, value in binding_statements(config_text):
        if key.endswith("data.artefact") and isinstance(value, str):
            out[key] = artefact_content(value)
        if key in ("data.name", "data.source", "data.data_dir"):
            data[key.split(".")[1]] = value
    try:
        path = data_file(data.get("name", "dsprites"), data.get("source", "auto"),
                         data.get("data_dir"))
    except (TypeError, ValueError, FileNotFoundError):
        path = None                   # the run itself fails with the loader's message
    if path is not None:
        out[DATA_FILE_KEY] = json.dumps(cached_file_sha256(path))
    return out


def identity(config_text: str, contents: bool = True) -> dict:
    """{'fingerprint', 'bindings', 'suite_version'} of a gin config text; with `contents`
    (a run about to train), the data named by content (`content_bindings`); without (the
    text of a run written before fingerprint.json), as the text names it."""
    bindings = bindings_of(config_text)
    if contents:
        bindings = content_bindings(config_text, bindings)
    return {"fingerprint": fingerprint_of(bindings), "bindings": bindings,
            "suite_version": suite_version()}


def record(run_dir, ident: dict) -> pathlib.Path:
    """Writes `fingerprint.json` (atomically) into a run directory."""
    path = pathlib.Path(run_dir) / FILE_NAME
    write_json(path, ident)
    return path


def recorded(run_dir) -> dict | None:
    """The identity a run directory holds: its fingerprint.json; for a directory written
    before fingerprints, the `gin_config` of its results.json or its operative_config.gin;
    None when it holds no run. Raises ValueError naming a file that is unreadable."""
    run_dir = pathlib.Path(run_dir)
    path = run_dir / FILE_NAME
    try:
        if path.is_file():
            ident = json.loads(path.read_text())
            if not (isinstance(ident, dict) and isinstance(ident.get("fingerprint"), str)
                    and isinstance(ident.get("bindings"), dict)):
                raise ValueError("expected an object with 'fingerprint' and 'bindings'")
            return ident
        path = run_dir / "results.json"
        if path.is_file():
            text = json.loads(path.read_text()).get("gin_config")
            if not isinstance(text, str):
                raise ValueError("expected a 'gin_config' text")
            return identity(text, contents=False)
        path = run_dir / "operative_config.gin"
        if path.is_file():
            return identity(path.read_text(), contents=False)
    except (OSError, ValueError) as error:
        raise ValueError(f"{path}: cannot read the run's configuration ({error})") from None
    return None


def differences(held: dict[str, str], wanted: dict[str, str]) -> list[str]:
    """'binding: held -> wanted' for every binding that differs ('unset' where absent)."""
    return [f"{key}: {held.get(key, 'unset')} -> {wanted.get(key, 'unset')}"
            for key in sorted(set(held) | set(wanted)) if held.get(key) != wanted.get(key)]


def mismatch_message(run_dir, held: dict, wanted: dict, choices: str) -> str:
    diff = differences(held["bindings"], wanted["bindings"])
    return (f"{run_dir} holds a run of another configuration (fingerprint "
            f"{held['fingerprint'][:12]}, this one {wanted['fingerprint'][:12]}); differing "
            f"bindings (held -> this): {'; '.join(diff) or 'none'}."
            + (f" {choices}" if choices else ""))


def short(ident: dict) -> str:
    """8 hex digits of a fingerprint: the suffix of default run directory names."""
    return ident["fingerprint"][:8]
