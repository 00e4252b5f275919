"""No import cycles between the suite's modules (issue 30 item 8, DESIGN.md "arrows point
down only"): every `import` of a suite module, at the top of a file or inside a function,
is an edge; a package's `__init__` counts as imported by each of its submodules' importers.
A cycle means two layers each need the other; the higher one must pass in or register
what the lower one needs."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("benchmark", "models", "perturbations")


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}


def _imported(path: pathlib.Path, name: str, known: set) -> set:
    """Suite modules `path` imports (and the packages above each, whose __init__ runs)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            parts = target.split(".")
            for i in range(1, len(parts) + 1):           # a.b.c runs a, a.b and a.b.c
                candidate = ".".join(parts[:i])
                if candidate in known and candidate != name:
                    found.add(candidate)
    return found


def _cycles(graph: dict[str, set]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_the_checker_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_between_the_suites_modules():
    modules = _modules()
    known = set(modules)
    graph = {}
    for name, path in modules.items():
        edges = _imported(path, name, known)
        # a submodule's import runs its package's __init__: the package is imported too,
        # but a package importing its own submodules is no cycle of layers
        graph[name] = {e for e in edges if not name.startswith(f"{e}.")}
    assert _cycles(graph) == []
