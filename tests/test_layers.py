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


# Within analysis, each layer imports only the layers below it (docs/design.md §3): the pure builders
# of `analysis.reports` sit under the services, the report's sections under the report that runs them,
# and the presentation of a stored result over neither's internals.
LAYER_MAY_NOT_IMPORT = {
    "analysis.reports": ("analysis.services", "analysis.selectors", "analysis.management", "analysis.presentation"),
    "analysis.services.sections": (
        "analysis.services.report",
        "analysis.services.execute",
        "analysis.services.runs",
        "analysis.presentation",
        "analysis.management",
        "analysis.views",
    ),
    "analysis.presentation": ("analysis.services", "analysis.management", "analysis.views"),
    "analysis.services": ("analysis.presentation", "analysis.management", "analysis.views", "analysis.api"),
}


def test_each_analysis_layer_imports_only_the_layers_below_it():
    modules = _modules()
    checked = 0
    for layer, forbidden in LAYER_MAY_NOT_IMPORT.items():
        members = [name for name in modules if name == layer or name.startswith(layer + ".")]
        assert members, layer
        for name in members:
            checked += 1
            bad = [t for t in _imports(modules[name]) if t.startswith(forbidden)]
            assert bad == [], (name, bad)
    assert checked > 25


def test_the_report_sections_are_one_package_of_one_module_each():
    sections = ROOT / "analysis" / "services" / "sections"
    found = {p.stem for p in sections.glob("*.py")} - {"__init__"}
    assert found == {
        "agreement",
        "behaviour",
        "graders_queries",
        "model",
        "ordering",
        "systems",
        "instrument",
        "accounting",
        "hidden_units",
    }


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


def _imports_inside_functions(path: Path, module: str) -> Iterator[tuple[str, str]]:
    """(function, imported module) for every import of a project module made inside a function."""
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.Import):
                targets = [alias.name for alias in sub.names]
            elif isinstance(sub, ast.ImportFrom):
                base = sub.module or ""
                targets = [f"{package}.{base}" if sub.level else base]  # a relative import is the project's
            else:
                continue
            yield from ((node.name, t) for t in targets if t.split(".")[0] in PACKAGES)


# Imports inside functions that are there on purpose: an app's ready() wires signals once the app
# registry is complete, and grading.hooks reaches analysis only when called (docs/design.md §3).
LAZY_BY_DESIGN = {
    ("analysis.apps", "ready"),
    ("grading.apps", "ready"),
    ("grading.hooks", "judgments_changed"),
    ("grading.hooks", "runs_headline"),
}


def test_no_module_imports_a_project_module_inside_a_function():
    """A lazy import hides a dependency from whoever reads the module's head, and is how layering is
    dodged: every project import is at the top, but for the few made lazy by design."""
    lazy = {
        (name, function) for name, path in _modules().items() for function, _ in _imports_inside_functions(path, name)
    }
    assert ("grading.hooks", "judgments_changed") in lazy  # the check sees a lazy import
    assert lazy - LAZY_BY_DESIGN == set()


# The modules that answer requests (and the downloads' row streams): they read through selectors.
VIEW_MODULES = [
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "grading" / "views").rglob("*.py")),
    "grading/api/views.py",
    "analysis/views.py",
    "analysis/api.py",
    "analysis/api_systems.py",
    "analysis/downloads.py",
    "analysis/streams.py",
    "analysis/unit_page.py",
]


def test_views_read_through_selectors_not_the_orm():
    assert len(VIEW_MODULES) > 10
    for relative in VIEW_MODULES:
        source = (ROOT / relative).read_text(encoding="utf-8").replace(".objects.none()", "")
        assert ".objects" not in source and "get_object_or_404" not in source, relative
