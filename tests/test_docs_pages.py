"""Each docs page explains one part of the suite and stays readable: at most ~250 lines
(studies' findings live in results/<study>/README.md, not in the docs)."""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
MAX_LINES = 250


def test_every_docs_page_is_at_most_250_lines():
    long = {p.name: n for p in sorted((ROOT / "docs").glob("*.md"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"docs pages over {MAX_LINES} lines: {long}"


def test_every_docs_page_is_linked_from_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    unlinked = [p.name for p in sorted((ROOT / "docs").glob("*.md"))
                if f"(docs/{p.name})" not in readme]
    assert not unlinked, f"docs pages the README does not link: {unlinked}"
