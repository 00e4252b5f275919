"""python -m benchmark.identities < specs.json

Reads a JSON list of {name, gin_files, bindings} on stdin and prints {name: {fingerprint,
bindings} | {error}}: the fingerprints a study's runs will have, parsed exactly as the
runner parses them, in one process with the runner's configurables registered (a study
compares these with what each run directory holds: benchmark/studies/study.py).
"""

from __future__ import annotations

import json
import sys

import gin

import benchmark.runs.run  # noqa: F401  (registers run.*, models, data, metrics)
from benchmark.core import config
from benchmark.runs.fingerprint import identity


def spec_identities(specs: list[dict]) -> dict[str, dict]:
    """{name: identity | {'error': text}} of run specs ({name, gin_files, bindings}), each
    parsed as the runner parses it. Call it in a process of its own, as gin's state is
    global."""
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
    print(json.dumps(spec_identities(specs)))   # the last line of stdout: read by the study

