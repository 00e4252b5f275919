"""benchmark/core/atomic.py: the one way the suite writes files (temp name, then rename)."""

import ast
import json
import pathlib

import pytest

from benchmark.core.atomic import write_json

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("benchmark", "models", "perturbations", "examples")


def test_write_json_writes_sorted_indented_json_and_no_temporary(tmp_path):
    path = write_json(tmp_path / "sub" / "r.json", {"b": 1, "a": [1.5, None]})
    assert path == tmp_path / "sub" / "r.json"
    assert path.read_text() == json.dumps({"b": 1, "a": [1.5, None]}, indent=2,
                                          sort_keys=True)
    write_json(path, {"b": 1, "a": 2}, indent=1, sort_keys=False)
    assert path.read_text() == '{\n "b": 1,\n "a": 2\n}'
    assert sorted(p.name for p in path.parent.iterdir()) == ["r.json"]


def test_write_json_failure_keeps_the_previous_file(tmp_path):
    path = write_json(tmp_path / "r.json", {"kept": True})
    with pytest.raises(TypeError):
        write_json(path, {"bad": object()})
    assert json.loads(path.read_text()) == {"kept": True}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
    write_json(path, {"x": 1.0}, default=float)
    assert json.loads(path.read_text()) == {"x": 1.0}


def _calls(tree, module: str, names: set[str]):
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == module
                and node.func.attr in names):
            yield node


def test_every_json_file_is_written_through_write_json():
    """No module but benchmark/core/atomic.py dumps JSON into a file or renames one into place
    (json.dumps for hashing, printing or subprocess arguments is fine)."""
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "benchmark" / "core" / "atomic.py":
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            rel = path.relative_to(ROOT)
            offenders += [f"{rel}:{n.lineno} json.dump" for n in _calls(tree, "json", {"dump"})]
            offenders += [f"{rel}:{n.lineno} os.{n.func.attr}"
                          for n in _calls(tree, "os", {"replace", "rename"})]
            for node in ast.walk(tree):       # x.write_text(json.dumps(...)) / .write(...)
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in ("write_text", "write") and node.args
                        and any(True for _ in _calls(node.args[0], "json", {"dumps"}))):
                    offenders.append(f"{rel}:{node.lineno} writes json.dumps(...)")
    assert not offenders, f"write JSON with benchmark.core.atomic.write_json: {offenders}"
