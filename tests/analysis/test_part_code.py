"""The fingerprint of a shard's part digests the source of the code that makes the part
(``reuse.PART_CODE``, docs/analysis.md "Reusing shards"): every module of the analysis app that code
reaches must be in it, or a run could take a part made by other code. Found by reading the code: the
imports of each listed file from ``analysis``, and the ``analysis.metrics`` functions it calls."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from analysis import metrics
from analysis.services import reuse

ANALYSIS = Path(reuse.__file__).resolve().parents[1]


def _module_file(name: str) -> str | None:
    """The file of ``analysis.<...>`` relative to the app (None: outside it)."""
    if not name.startswith("analysis."):
        return None
    path = ANALYSIS.joinpath(*name.split(".")[1:])
    return str(path.with_suffix(".py").relative_to(ANALYSIS)) if path.with_suffix(".py").exists() else None


def _reached(relative: str) -> set[str]:
    """The app's files that ``relative`` imports from, metrics functions resolved to their own files."""
    tree = ast.parse((ANALYSIS / relative).read_text(encoding="utf-8"))
    package = ".".join(["analysis", *Path(relative).with_suffix("").parts[:-1]])
    found: set[str] = set()
    metric_aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                module = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [module]).strip(".")
            for alias in node.names:
                if module == "analysis" and alias.name == "metrics":
                    metric_aliases.add(alias.asname or alias.name)
                elif module == "analysis.metrics":
                    found.add(_source_of(alias.name))
                elif (file := _module_file(f"{module}.{alias.name}")) is not None:
                    found.add(file)
                elif (file := _module_file(module)) is not None:
                    found.add(file)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in metric_aliases:
            found.add(_source_of(node.attr))
    return found


def _source_of(name: str) -> str:
    return str(Path(inspect.getsourcefile(getattr(metrics, name))).resolve().relative_to(ANALYSIS))


def test_every_module_the_part_code_reaches_is_in_its_digest():
    seen, todo = set(), list(reuse.PART_CODE)
    while todo:
        relative = todo.pop()
        if relative in seen:
            continue
        seen.add(relative)
        todo.extend(_reached(relative))
    assert seen - set(reuse.PART_CODE) == set()


def test_the_sections_only_the_combining_step_computes_are_not_in_it():
    assert "services/sections/graders_queries.py" not in reuse.PART_CODE
    assert "services/sections/agreement.py" not in reuse.PART_CODE
