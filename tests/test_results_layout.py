"""results/ is a record: data, reports and READMEs, never code. Every published study
directory has a README naming the commands that made it; every analysis those commands run
is package code with tests (benchmark/readings); results/README.md is an index."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
#: the index's length limit: one row per study, the narrative lives in each study's README
INDEX_MAX_LINES = 120


def _tracked_or_present(pattern: str) -> list[pathlib.Path]:
    return [p for p in RESULTS.rglob(pattern) if ".git" not in p.parts]


def test_no_code_under_results():
    code = [str(p.relative_to(ROOT)) for suffix in ("*.py", "*.sh", "*.ipynb")
            for p in _tracked_or_present(suffix)]
    assert not code, f"analysis code belongs in the package with tests: {code}"


def test_every_study_has_a_readme_with_a_command():
    missing = []
    for study in sorted(p for p in RESULTS.iterdir() if p.is_dir()):
        readme = study / "README.md"
        if not readme.exists():
            if (study / "study.json").exists() and not (study / "report").exists():
                continue                       # a study still running: no report yet
            missing.append(f"{study.name}: no README.md")
        elif not re.search(r"python -m [\w.]+", readme.read_text(encoding="utf-8")):
            missing.append(f"{study.name}: its README names no `python -m` command")
    assert not missing, "\n".join(missing)


def test_the_index_is_short_and_links_every_study():
    text = (RESULTS / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= INDEX_MAX_LINES
    studies = {p.name for p in RESULTS.iterdir()
               if p.is_dir() and (p / "README.md").exists()}
    linked = set(re.findall(r"\]\(([\w.-]+)/README\.md\)", text))
    assert studies <= linked, f"studies missing from the index: {sorted(studies - linked)}"
    assert linked <= studies, f"index rows without a study: {sorted(linked - studies)}"
