"""Every third-party module the package imports is declared in setup.py (a fresh install
must not depend on what happens to be installed), and tests import only declared extras."""

import ast
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: import name -> distribution name, where they differ
DISTRIBUTION = {"sklearn": "scikit-learn", "absl": "absl-py", "gin": "gin-config",
                "tensorflow_probability": "tensorflow-probability", "yaml": "pyyaml"}
OWN = {"benchmark", "models", "perturbations", "examples", "tests"}


def _imports(folders) -> set[str]:
    names = set()
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names.add(node.module.split(".")[0])
    return {n for n in names if n not in OWN and n not in sys.stdlib_module_names}


def _requirements() -> dict[str, set[str]]:
    """{'install': names, extra: names} from the setup() call in setup.py."""
    call = next(n for n in ast.walk(ast.parse((ROOT / "setup.py").read_text(encoding="utf-8")))
                if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "setup")
    keywords = {k.arg: ast.literal_eval(k.value) for k in call.keywords
                if k.arg in ("install_requires", "extras_require")}

    def names(requirements):
        return {re.split(r"[<>=\[ ;]", r)[0].lower() for r in requirements}
    return {"install": names(keywords["install_requires"]),
            **{extra: names(reqs) for extra, reqs in keywords["extras_require"].items()}}


def test_package_imports_are_install_requires():
    declared = _requirements()["install"]
    used = {DISTRIBUTION.get(n, n).lower() for n in _imports(["benchmark", "models",
                                                               "perturbations", "examples"])}
    used -= {"ray"}                                  # optional extra, imported lazily
    assert used <= declared, f"imported but not in install_requires: {used - declared}"


def test_test_imports_are_declared():
    requirements = _requirements()
    declared = requirements["install"] | requirements["test"]
    used = {DISTRIBUTION.get(n, n).lower() for n in _imports(["tests"])}
    assert used <= declared, f"tests import undeclared packages: {used - declared}"
