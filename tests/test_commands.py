"""Every command as a user calls it (`python -m ...` in a subprocess; issue 29 item 1, issue
31 item 5): --helpfull exits 0 and shows the command's own docstring and flags, an unknown
flag and a usage mistake are one line `error: ...` and exit 2. Each command's tiny real
invocation is tested beside its functions (named in TINY_RUN_TESTS)."""

import pytest

from tests.cli import ROOT, python_m
from tests.test_cli_imports import COMMANDS
from tests.test_readme import undefined_flags_in_docs

#: where each command's tiny real invocation runs as a subprocess
TINY_RUN_TESTS = {
    "benchmark.run": "tests/benchmark_core/test_run.py",
    "benchmark.study": "tests/benchmark_core/test_study.py",
    "benchmark.report": "tests/benchmark_core/test_report.py",
    "benchmark.audit": "tests/benchmark_core/test_audit.py",
    "benchmark.power": "tests/benchmark_core/test_stats.py",
    "benchmark.curves": "tests/benchmark_core/test_curves.py",
    "benchmark.speed": "tests/benchmark_core/test_speed_machine.py",
    "benchmark.cliff_sanity": "tests/benchmark_core/test_cliff_sanity.py",
    "benchmark.pipeline": "tests/benchmark_core/test_pipeline.py",
    "benchmark.strength_choice": "tests/benchmark_core/test_strength_choice.py",
    "benchmark.known_answers": "tests/benchmark_core/test_known_answers.py",
    "benchmark.readings.__main__": "tests/readings/test_cli.py",
    "benchmark.metrics.__main__": "tests/metrics/test_registry_cli.py",
    "benchmark.metrics.alignment": "tests/metrics/test_alignment.py",
    "benchmark.posterior_reach": "tests/metrics/test_posterior_reach.py",
    "benchmark.objective_cost": "tests/benchmark_core/test_objective_cost.py",
    "benchmark.data.__main__": "tests/data/test_export_and_cli.py",
    "perturbations.generate": "tests/perturbations/test_generate.py",
    "perturbations.noise": "tests/test_faults.py",
    "perturbations.inspect": "tests/perturbations/test_diagnostics.py",
    "perturbations.geometry": "tests/perturbations/test_geometry.py",
    "perturbations.readapt": "tests/perturbations/test_generate.py",
    "perturbations.naive_artefact": "tests/perturbations/test_generate.py",
    "perturbations.publish_references": "tests/perturbations/test_generate.py",
}


def _module(command: str) -> str:
    return command.removesuffix(".__main__")


def _call(command: str, *args):
    return python_m(_module(command), *args, timeout=300)


def test_every_command_has_a_tiny_run_test():
    assert set(TINY_RUN_TESTS) == set(COMMANDS)
    for command, path in TINY_RUN_TESTS.items():
        text = (ROOT / path).read_text(encoding="utf-8")
        assert f'"{_module(command)}"' in text or f"'{_module(command)}'" in text, \
            f"{path} runs no `python -m {_module(command)}`"


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_help_exits_0_and_an_unknown_flag_is_one_line(command):
    """--helpfull (the docstring and every flag) also checks the flags the docs use with
    this command (tests/test_readme.py), so that each command starts TF twice, not three
    times."""
    import importlib
    doc = importlib.import_module(command).__doc__ or ""
    shown = _call(command, "--helpfull")
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert doc.strip().splitlines()[0].strip() in shown.stdout
    assert not undefined_flags_in_docs(_module(command), shown.stdout)
    # typed by hand: no TF_CPP_MIN_LOG_LEVEL, and the error is the first line (issue 61)
    bad = python_m(_module(command), "--no_such_flag=1", timeout=300,
                   TF_CPP_MIN_LOG_LEVEL="")
    assert bad.returncode == 2, bad.stderr[-2000:]
    lines = bad.stderr.strip().splitlines()
    assert lines[0].startswith("error: ") and "no_such_flag" in lines[0], lines[:4]
    assert len(lines) == 1 and "Traceback" not in bad.stderr
