"""Docs that are true: every `docs/design.md §N` cited in code or docs names a section that exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITATION = re.compile(r"docs/design\.md §(\d+(?:\.\d+)?)")
HEADING = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", re.MULTILINE)
SOURCES = ("analysis", "grading", "evalutron", "tests", "docs", "static", "templates")


def _cited() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    paths = [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    paths += [p for d in SOURCES for p in (ROOT / d).rglob("*") if p.suffix in {".py", ".md", ".html", ".js"}]
    for path in paths:
        if path.is_file():
            for number in CITATION.findall(path.read_text(encoding="utf-8")):
                found.setdefault(number, []).append(str(path.relative_to(ROOT)))
    return found


def test_every_cited_section_of_the_design_document_exists():
    sections = set(HEADING.findall((ROOT / "docs" / "design.md").read_text(encoding="utf-8")))
    assert {"1", "2", "3", "4", "5", "5.1", "5.7", "6"} <= sections
    cited = _cited()
    assert len(cited) >= 5
    missing = {number: where for number, where in cited.items() if number not in sections}
    assert missing == {}


def test_nothing_cites_a_design_file_the_repository_does_not_have():
    stray = [
        str(p.relative_to(ROOT))
        for d in SOURCES
        for p in (ROOT / d).rglob("*.py")
        if "DESIGN" + ".md" in p.read_text(encoding="utf-8")
    ]
    assert stray == []
