"""The layers of docs/design.md §3, checked on the source: who may import whom, and no import circles.

Every import counts, also one inside a function: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("analysis", "grading", "evalutron")
METRICS_MAY_IMPORT = {"numpy", "scipy", "pandas", "analysis"}  # analysis: only analysis.metrics (checked)


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            found[name] = path
    return found


def _imports(path: Path) -> Iterator[str]:
    """Every absolute module name ``path`` imports (``from a.b import c`` gives a.b and a.b.c)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: {t for t in _imports(path) if t in modules and t != name} for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_grading_imports_analysis_only_through_the_one_hook():
    """grading.hooks is the one module that reaches analysis: to schedule a run after judgments, and to
    read the latest run's headline for the organizer's home page."""
    modules = _modules()
    grading = [name for name in modules if name.startswith("grading")]
    assert len(grading) > 20
    reaching = {
        (name, target) for name in grading for target in _imports(modules[name]) if target.split(".")[0] == "analysis"
    }
    assert reaching == {
        ("grading.hooks", "analysis.scheduling"),
        ("grading.hooks", "analysis.scheduling.schedule_auto_run"),
        ("grading.hooks", "analysis.headlines"),
        ("grading.hooks", "analysis.headlines.runs_headline"),
    }


def test_metrics_import_nothing_but_numpy_scipy_pandas_and_the_standard_library():
    modules = _modules()
    metrics = [name for name in modules if name.startswith("analysis.metrics")]
    assert len(metrics) > 10
    for name in metrics:
        for target in _imports(modules[name]):
            top = target.split(".")[0]
            assert top in sys.stdlib_module_names or top in METRICS_MAY_IMPORT, (name, target)
            assert top != "analysis" or target.startswith("analysis.metrics"), (name, target)


def test_no_analysis_module_is_part_of_an_import_circle():
    graph = _graph()
    assert "analysis.services.dispatch" in graph["analysis.services.runs"]
    circles = [c for c in _cycles(graph) if any(m.startswith("analysis") for m in c)]
    assert circles == []


def test_only_runs_hands_work_to_dispatch():
    graph = _graph()
    callers = {name for name, targets in graph.items() if "analysis.services.dispatch" in targets}
    assert callers == {"analysis.services.runs"}


def test_the_unit_page_reads_through_selectors_only():
    source = (ROOT / "analysis" / "unit_page.py").read_text(encoding="utf-8")
    assert "unit_detail" in source
    assert ".objects" not in source and "get_object_or_404" not in source
    assert not any(
        t.startswith(("grading.models", "analysis.models")) for t in _imports(ROOT / "analysis" / "unit_page.py")
    )


def test_the_token_view_writes_through_the_token_service():
    source = (ROOT / "grading" / "api" / "views.py").read_text(encoding="utf-8")
    assert "token_get_or_create(user=user)" in source and "Token.objects" not in source
