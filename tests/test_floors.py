"""The suite's floors (docs/architecture.md): every module of benchmark/, models/ and
perturbations/ has a floor, by the folder it is in, and imports only modules of its own
floor or lower ones: arrows point down (or sideways, within a floor). Commands are thin
entry modules on top of everything: every `__main__.py`, and the modules kept at the old
command paths (`python -m benchmark.run`, ...), which may import any floor and which
nothing imports. Imports at the top of a file and inside functions both count (the AST
walker of tests/test_import_cycles.py); a module in no folder of FLOORS fails, so a new
module must be placed."""

import ast

from tests.test_import_cycles import _imported, _modules

#: floor of each folder (package prefix); the longest matching prefix decides
FLOORS = {
    "benchmark.core": 0,           # errors, atomic, config, locks, machine, processes
    "benchmark.data": 1,
    "benchmark.metrics": 1,
    "benchmark.statistics": 1,     # stats, power, hypotheses
    "models": 1,
    "benchmark.runs": 2,           # train, run, fingerprint, results, worker, ...
    "perturbations": 3,
    "benchmark.studies": 4,        # study, report, audit, battery, pipeline, speed, ...
    "benchmark.readings": 4,
}
#: modules that are exactly one name, not a folder: the suite's package, whose __init__
#: only makes TensorFlow's start quiet (benchmark.core.quiet_start)
MODULE_FLOORS = {"benchmark": 0}
#: the thin entry modules kept at the command paths of README.md, docs/ and tests (and
#: of the subprocesses the suite starts: benchmark.run, .worker, .identities)
ENTRY_MODULES = frozenset(f"benchmark.{name}" for name in (
    "run", "speed", "study", "audit", "report", "power", "cliff_sanity", "curves",
    "pipeline", "strength_choice", "known_answers", "aligned_baseline", "posterior_reach",
    "objective_cost", "worker",
    "identities"))
#: above every floor
TOP = max(FLOORS.values()) + 1


def is_entry(name: str) -> bool:
    return name in ENTRY_MODULES or name.endswith(".__main__")


def floor_of(name: str) -> int | None:
    """The floor of module `name`; TOP for an entry module, None when it has none."""
    if is_entry(name):
        return TOP
    if name in MODULE_FLOORS:
        return MODULE_FLOORS[name]
    prefixes = [p for p in FLOORS if name == p or name.startswith(f"{p}.")]
    return FLOORS[max(prefixes, key=len)] if prefixes else None


def upward_imports(graph: dict[str, set]) -> list[str]:
    """'importer (floor) -> imported (floor)' for every arrow of `graph` ({module: the
    modules it imports}) that points up, from a module that is not an entry; and
    'importer: no floor' for every module without one."""
    found = []
    for name in sorted(graph):
        floor = floor_of(name)
        if floor is None:
            found.append(f"{name}: no floor (place it in a folder of FLOORS)")
            continue
        if is_entry(name):
            continue
        for target in sorted(graph[name]):
            target_floor = floor_of(target)
            if target_floor is None or target_floor > floor:
                found.append(f"{name} ({floor}) -> {target} ({target_floor})")
    return found


def _graph() -> dict[str, set]:
    modules = _modules()
    known = set(modules)
    return {name: _imported(path, name, known) for name, path in modules.items()}


def test_the_checker_reports_an_upward_arrow_and_a_module_without_a_floor():
    graph = {"benchmark.core.errors": set(),
             "benchmark.runs.run": {"benchmark.core.errors", "benchmark.statistics.stats",
                                    "perturbations.artefact"},       # 2 -> 3: up
             "benchmark.statistics.stats": set(),
             "perturbations.artefact": {"benchmark.runs.train"},      # 3 -> 2: down
             "benchmark.runs.train": {"benchmark.runs.run"},          # sideways
             "benchmark.run": {"perturbations.artefact"},             # an entry
             "benchmark.loose": set(),                                # no floor
             "benchmark.studies.report": {"benchmark.run"}}           # into an entry
    assert upward_imports(graph) == [
        "benchmark.loose: no floor (place it in a folder of FLOORS)",
        "benchmark.runs.run (2) -> perturbations.artefact (3)",
        f"benchmark.studies.report (4) -> benchmark.run ({TOP})"]
    assert upward_imports({"models.vae": {"benchmark.core.errors", "benchmark"}}) == []


def test_every_module_has_a_floor_and_imports_point_down():
    graph = _graph()
    assert {"benchmark.core.errors", "benchmark.runs.run", "perturbations.artefact",
            "benchmark.studies.report", "models.registry", "benchmark.run"} <= set(graph)
    assert upward_imports(graph) == []


def test_entry_modules_are_thin():
    """An entry module defines nothing (no function, no class): it runs its command's
    implementation, which is where the code lives (and what tests import and patch)."""
    modules = _modules()
    assert ENTRY_MODULES <= set(modules)
    for name in sorted(ENTRY_MODULES):
        tree = ast.parse(modules[name].read_text(encoding="utf-8"))
        defined = [n.name for n in ast.walk(tree)
                   if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        assert not defined, f"{name} defines {defined}: move them to its implementation"
