"""The documentation's commands run as written: every `python -m MODULE ... --flag` that the
README or a docs/ page shows names a module that exists and flags that module defines (its
--helpfull), and every gin file it names exists. Catches documentation that drifts from the
code (e.g. a flag that was removed). The README stays a front door (issue 30 item 6)."""

import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

from tests.test_cli_imports import COMMANDS as CLI_COMMANDS

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "results" / "README.md"]
README = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)


def _commands() -> list[str]:
    """Every `python -m ...` command in the README's shell blocks and inline code."""
    found = []
    for block in re.findall(r"```(?:bash|sh|shell)\n(.*?)```", README, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            if line.startswith("python -m "):
                found.append(line)
    found += re.findall(r"`(python -m [^`]+)`", README)
    return found


def _arguments(command: str) -> tuple[str, list[str]]:
    words = shlex.split(re.sub(r"\[([^\]]*)\]", r"\1", command))   # [--opt] -> --opt
    return words[2], words[3:]


COMMANDS = _commands()
MODULES = sorted({_arguments(c)[0] for c in COMMANDS})


def test_the_readme_shows_commands():
    assert len(COMMANDS) >= 10 and "benchmark.run" in MODULES and "benchmark.audit" in MODULES


def defined_flags(helpfull: str) -> set[str]:
    """The flag names a command's --helpfull output lists."""
    return set(re.findall(r"^\s+--(?:\[no\])?([A-Za-z_][\w-]*)", helpfull, re.M))


def undefined_flags_in_docs(module: str, helpfull: str) -> list[str]:
    """One message per documented `python -m module ...` command that uses a flag the
    module's --helpfull output does not list (empty: the docs agree with the code)."""
    defined = defined_flags(helpfull)
    assert defined, f"{module} --helpfull listed no flags"
    wrong = []
    for command in COMMANDS:
        name, args = _arguments(command)
        used = {a[2:].split("=")[0] for a in args if a.startswith("--")}
        if name == module and not used <= defined:
            wrong.append(f"README: `{command}` uses {sorted(used - defined)}, which {module} "
                         f"does not define")
    return wrong


#: documented modules that are not among the commands tests/test_commands.py calls with
#: --helpfull (which also checks these flags, one subprocess per command)
NOT_COMMANDS = sorted(set(MODULES) - {c.removesuffix(".__main__") for c in CLI_COMMANDS})


@pytest.mark.slow
@pytest.mark.parametrize("module", NOT_COMMANDS)
def test_every_flag_in_the_readme_is_defined(module):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run([sys.executable, "-m", module, "--helpfull"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-1000:]
    assert not undefined_flags_in_docs(module, result.stdout)


def test_every_gin_file_in_the_readme_exists():
    names = set(re.findall(r"--gin_file=(\S+?\.gin)", README))
    names |= set(re.findall(r"include '([^']+\.gin)'", README))
    assert names
    missing = [n for n in sorted(names) if not pathlib.Path(n).name.startswith("my_")
               and not (ROOT / n).exists() and not (ROOT / "gin_configs" / n).exists()]
    assert not missing, f"README names gin files that do not exist: {missing}"


def test_the_readme_is_a_front_door_that_links_every_docs_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"(docs/{page.name})" in readme, f"README does not link docs/{page.name}"
    for section in ("## Two commands", "### 1. Train", "### 2. Generate", "### 3. Audit"):
        assert section in readme
