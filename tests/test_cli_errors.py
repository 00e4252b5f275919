"""One command-line error policy (benchmark/core/errors.py): a UserError prints one line,
`error: ...`, on stderr and exits 2; anything else shows its traceback; every command's main
goes through the one wrapper."""

import ast
import importlib
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from benchmark.core import errors
from tests.test_cli_imports import COMMANDS, implementation

ROOT = pathlib.Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}

APP = textwrap.dedent("""
    import sys
    from absl import app
    from benchmark.core.errors import UserError, cli_main, user_errors

    @cli_main
    def main(argv):
        print("started")
        if sys.argv[1] == "user":
            raise UserError("--eps must be in (0, 1], found 2\\n  In call to configurable "
                            "'run' (<function run at 0x1>)")
        if sys.argv[1] == "converted":
            with user_errors(KeyError, prefix="invalid configuration: "):
                {}["stepz"]
        raise ZeroDivisionError("a bug")

    app.run(main)
""")


def _app(kind: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", APP, kind], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env=ENV)


def test_a_user_error_is_one_line_and_exit_2():
    result = _app("user")
    assert result.returncode == 2
    assert result.stderr == "error: --eps must be in (0, 1], found 2\n"   # no gin note
    assert result.stdout == "started\n"
    converted = _app("converted")
    assert converted.returncode == 2
    assert converted.stderr == "error: invalid configuration: 'stepz'\n"


def test_an_unexpected_error_shows_its_traceback():
    result = _app("bug")
    assert result.returncode == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert "ZeroDivisionError: a bug" in result.stderr
    assert "error: a bug" not in result.stderr


def test_the_wrapper_in_process(capsys):
    @errors.cli_main
    def main(argv):
        raise errors.UserError(f"bad {argv[1]}")

    with pytest.raises(SystemExit) as exit_:
        main(["prog", "flag"])
    assert exit_.value.code == errors.USER_ERROR_EXIT == 2
    assert capsys.readouterr().err == "error: bad flag\n"
    @errors.cli_main
    def interrupted(argv):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):      # commands keep their own Ctrl-C messages
        interrupted([])
    assert errors.cli_main(lambda argv: argv)(["x"]) == ["x"]


def _run_as_command(path: pathlib.Path) -> bool:
    """Whether a module runs a command: errors.run_command(main), or absl's app.run(main)
    (directly, or under `if __name__ == ...`)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "run_command":
            return True
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "run" and getattr(node.func.value, "id", "") == "app"):
            return True
    return False


def _calls_absl_run(path: pathlib.Path) -> bool:
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr == "run" and getattr(node.func.value, "id", "") == "app"
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def test_every_command_main_goes_through_the_wrapper():
    found = {".".join(p.relative_to(ROOT).with_suffix("").parts)
             for package in ("benchmark", "perturbations", "models", "examples")
             for p in (ROOT / package).rglob("*.py")
             if _run_as_command(p) and p != ROOT / "benchmark" / "core" / "errors.py"}
    assert set(COMMANDS) <= found, set(COMMANDS) - found
    bypassing = [name for name in found if _calls_absl_run(
        ROOT / pathlib.Path(*name.split(".")).with_suffix(".py"))]
    assert not bypassing, f"call errors.run_command(main), not app.run(main): {bypassing}"
    for name in sorted(found):
        module = implementation(importlib.import_module(name))
        assert errors.uses_cli_policy(module.main), f"{name}.main is not wrapped by cli_main"


def test_user_facing_exceptions_are_user_errors():
    from benchmark.core import lock
    from benchmark.data import files
    from benchmark.metrics import codes, settings
    from benchmark.runs import fingerprint, run
    from benchmark.studies import report_data
    from models import interface
    from perturbations import artefact, references
    for cls in (run.RunError, report_data.ReportError, fingerprint.ConfigMismatch,
                lock.DirectoryLocked, codes.MetricInputError, settings.SettingsMismatch,
                files.DataFileError, artefact.ArtefactError, references.ReferenceError,
                interface.ModelInterfaceError):
        assert issubclass(cls, errors.UserError), cls
    # and they stay what callers catch them as
    assert issubclass(run.RunError, ValueError) and issubclass(lock.DirectoryLocked,
                                                                RuntimeError)
    assert issubclass(interface.ModelInterfaceError, TypeError)


def test_a_real_command_stops_with_one_line():
    result = subprocess.run([sys.executable, "-m", "benchmark.power", "--drop=0.5", "--sd=-1"],
                            capture_output=True, text=True, timeout=120, cwd=ROOT, env=ENV)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and result.stderr.startswith("error: ")
