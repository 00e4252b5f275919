"""The package's comments and docstrings cite papers, equations and docs a reader of the
repository has: never a project issue number ("issue 14") nor a file outside the repository
(REFERENCE.md, DESIGN.md; a study's results/<study>/DESIGN.md is in the repository)."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("benchmark", "perturbations", "models", "examples")
# \s+: an "issue" at the end of a line whose number starts the next one counts too
FORBIDDEN = re.compile(r"\b[Ii]ssue\s+\d+|REFERENCE\.md|(?<!/)DESIGN\.md|(?<!results/)\b[\w.]+/DESIGN\.md")


def offenders_in(text: str) -> list[tuple[int, str]]:
    """(line, match) of every forbidden reference in `text`."""
    return [(text.count("\n", 0, match.start()) + 1, match.group())
            for match in FORBIDDEN.finditer(text)]


def test_the_pattern():
    assert offenders_in("x = 1  # (issue 14 item 1)\n") == [(1, "issue 14")]
    assert offenders_in('"""Before\nIssue\n    28."""') == [(2, "Issue\n    28")]
    assert offenders_in("# REFERENCE.md, Methods\n# ../shared/DESIGN.md") == [
        (1, "REFERENCE.md"), (2, "shared/DESIGN.md")]
    assert offenders_in("see DESIGN.md") == [(1, "DESIGN.md")]
    assert offenders_in("# results/manipulation_cpu/DESIGN.md; tissue 3; issues") == []
    assert offenders_in("# results/objective_check_ellipse/DESIGN.md") == []
    assert offenders_in("# shared/DESIGN.md") == [(1, "shared/DESIGN.md")]


def test_no_issue_numbers_or_outside_files_in_the_package():
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for line, found in offenders_in(path.read_text(encoding="utf-8")):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {found!r}")
    assert not offenders, "\n".join(offenders)
