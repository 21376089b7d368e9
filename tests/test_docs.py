"""Docs that are true: every `docs/design.md §N` cited in code or docs names a section that exists, and
every module the README's architecture section names is there."""

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


def _architecture() -> str:
    """The README's architecture section, up to the next section of the same level."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Architecture")
    return text[start : text.index("\n## ", start + 1)]


def _defines(path: Path, name: str) -> bool:
    return bool(re.search(rf"^(def|class) {name}\b|^{name}\s*[:=]", path.read_text(encoding="utf-8"), re.MULTILINE))


def _module_path(dotted: str) -> tuple[Path | None, list[str]]:
    """The file of the longest importable prefix of a dotted name, and the names after it."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:end])
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                return path, parts[end:]
    return None, parts


def test_every_module_the_readme_architecture_names_exists():
    section = re.sub(r"```.*?```", "", _architecture(), flags=re.DOTALL)  # the diagram
    quoted = re.findall(r"`([^`]+)`", section)
    paths = [q for q in quoted if "/" in q and not q.startswith("/") and re.fullmatch(r"[\w./-]+", q)]
    dotted = [q for q in quoted if re.fullmatch(r"(analysis|grading|evalutron)(\.\w+)+", q)]
    assert len(paths) >= 20 and len(dotted) >= 10
    assert [p for p in paths if not (ROOT / p).exists()] == []
    unresolved = []
    for name in dotted:
        path, rest = _module_path(name)
        if path is None or len(rest) > 1 or (rest and not _defines(path, rest[0])):
            unresolved.append(name)
    assert unresolved == []
    # `path.py` (`name`): the function or class named beside a file is defined in it.
    named = re.findall(r"`([\w/]+\.py)`\s+\(`(\w+)`\)", section)
    assert len(named) >= 3
    assert [(p, n) for p, n in named if not _defines(ROOT / p, n)] == []
