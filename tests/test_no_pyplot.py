"""Library code draws on `matplotlib.figure.Figure`: no pyplot (global figure state) and no
`matplotlib.use` (which would switch the backend of whoever imports the suite)."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_no_pyplot_or_backend_switch_in_the_package():
    offenders = []
    for package in ("benchmark", "models", "perturbations", "examples"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [f"{node.module}.{a.name}" for a in node.names]
                         if isinstance(node, ast.ImportFrom) and node.module else [])
                if any(n.startswith("matplotlib.pyplot") or n == "matplotlib.pylab"
                       for n in names):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} imports pyplot")
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == "use"
                        and getattr(node.func.value, "id", "") == "matplotlib"):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} matplotlib.use")
    assert not offenders, offenders
