"""The browser tests' waits, checked on their source.

Playwright's ``wait_for_function`` given an expression evaluates the text with ``eval()`` at every
poll. The app's pages refuse ``eval()`` (their policy is ``script-src 'self'``), so such a wait works
only while its first check, which Playwright makes with the policy lifted, happens to succeed. A
function is evaluated once and then called, and works under the policy however long the wait.
"""

from __future__ import annotations

import ast
from pathlib import Path

BROWSER_TESTS = Path(__file__).resolve().parent / "browser"


def _waits_on_an_expression(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "wait_for_function" or not node.args:
            continue
        first = node.args[0]
        text = first.value if isinstance(first, ast.Constant) else None
        if isinstance(first, ast.JoinedStr) and first.values and isinstance(first.values[0], ast.Constant):
            text = first.values[0].value
        if not isinstance(text, str) or not text.lstrip().startswith(("() =>", "(arg) =>", "function")):
            found.append(f"{path.name}:{node.lineno}")
    return found


def test_every_browser_wait_polls_a_function_not_an_expression():
    files = sorted(BROWSER_TESTS.glob("*.py"))
    assert files
    assert [where for path in files for where in _waits_on_an_expression(path)] == []


def test_the_check_finds_a_wait_on_an_expression(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "page.wait_for_function(\"document.title === 'x'\")\n"
        'page.wait_for_function(f"{x} > 0")\n'
        "page.wait_for_function(\"() => document.title === 'x'\")\n"
    )
    assert _waits_on_an_expression(sample) == ["sample.py:1", "sample.py:2"]
