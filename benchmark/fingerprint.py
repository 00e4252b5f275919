"""Run identity: the fingerprint of a run's operative configuration.

A run directory is identified by its gin configuration as the runner parsed it
(`gin.config_str()`: every explicit binding of the gin files and command-line bindings,
includes flattened), canonicalised:
- parsed with gin's own parser (comments, layout, order, `1` vs `1.0`, tuple vs list and
  dict key order do not matter; references stay `@name` / `@name()`, macros `%NAME`);
- `import` lines dropped (they register code; the bindings say what is used);
- `data.artefact` named by its path below the last `results/` folder (`artefact_key`), so
  the published studies resume from a checkout anywhere;
- bindings that change neither what is trained nor what is measured dropped
  (`IGNORED`: how often to log or checkpoint; resume is exact whatever the period).
The fingerprint is the SHA-256 of the canonical bindings (JSON, sorted); the suite version
is recorded beside it (`fingerprint.json`) but not hashed, so a version bump does not orphan
finished runs. A directory written before fingerprints existed is identified from the
`gin_config` text of its results.json (or its operative_config.gin), so published studies
keep counting as finished when resumed with the same configuration.

`python -m benchmark.fingerprint` reads a JSON list of {name, gin_files, bindings} on stdin
and prints {name: {fingerprint, bindings} | {error}}: the fingerprints a study's runs will
have, parsed exactly as the runner parses them, in one process with the runner's
configurables registered (studies compare these with what each run directory holds).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import math
import pathlib
import sys

from gin import config_parser

from benchmark.atomic import write_json
from benchmark.errors import UserError

FILE_NAME = "fingerprint.json"
IGNORED = frozenset({"run.log_every", "run.checkpoint_every"})


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


def bindings_of(config_text: str) -> dict[str, str]:
    """{'scope/selector.param': canonical JSON value} of a gin config text; a macro
    definition is keyed by its name. Raises ValueError on text gin cannot parse."""
    bindings = {}
    for key, value in binding_statements(config_text):
        if key not in IGNORED:
            value = _canonical(value)
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


def identity(config_text: str) -> dict:
    """{'fingerprint', 'bindings', 'suite_version'} of a gin config text."""
    bindings = bindings_of(config_text)
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
            return identity(text)
        path = run_dir / "operative_config.gin"
        if path.is_file():
            return identity(path.read_text())
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


def spec_identities(specs: list[dict]) -> dict[str, dict]:
    """{name: identity | {'error': text}} of run specs ({name, gin_files, bindings}), each
    parsed as the runner parses it. Needs the runner's configurables: call it in a process
    of its own (`python -m benchmark.fingerprint`), as gin's state is global."""
    import gin

    from benchmark import config
    import benchmark.run  # noqa: F401  (registers run.*, models, data, metrics)
    out = {}
    for spec in specs:
        gin.clear_config()
        try:
            config.parse_config(spec["gin_files"], spec["bindings"])
            out[spec["name"]] = identity(gin.config_str())
        except Exception as error:  # noqa: BLE001  (reported per run, the run will fail)
            out[spec["name"]] = {"error": f"{type(error).__name__}: {error}"}
    gin.clear_config()
    return out


def main() -> None:
    specs = json.load(sys.stdin)
    identities = spec_identities(specs)
    print(json.dumps(identities))       # the last line of stdout: read by benchmark.study


if __name__ == "__main__":
    main()
