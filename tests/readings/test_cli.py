"""`python -m benchmark.readings`: the dispatcher names its readings and refuses others in
one line; each reading's own test file runs it on a small study it writes."""

from benchmark.readings.__main__ import READINGS
from tests.cli import ROOT, python_m


def test_every_named_reading_is_a_module_with_main_and_a_test_file():
    import importlib
    for name, module in READINGS.items():
        assert callable(importlib.import_module(module).main), module
        assert (ROOT / "tests" / "readings" / f"test_{name}.py").exists(), name


def test_an_unknown_reading_is_one_line_naming_the_readings():
    shown = python_m("benchmark.readings", "no_such_reading", timeout=120)
    assert shown.returncode == 2, shown.stderr
    lines = shown.stderr.strip().splitlines()
    assert len(lines) == 1 and "'no_such_reading'" in lines[0] and "games" in lines[0]
