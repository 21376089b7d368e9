"""Text and JSON values a database or a UTF-8 file cannot hold, found before they reach either.

JSON allows what storage refuses: lone UTF-16 surrogates ("\\ud800"), NUL characters (PostgreSQL
text), NaN and Infinity (PostgreSQL jsonb). Each finder answers the first such place as
(path, value shown safely), so that an error can name the field and the value.
"""

from __future__ import annotations

import math
from typing import Any


def has_surrogate(text: str) -> bool:
    """Whether `text` holds a lone UTF-16 surrogate ("\\ud800" in JSON): valid JSON, but no
    database or UTF-8 file can store it."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def shown(text: str) -> str:
    """A string that may hold NULs or lone surrogates, as it can be shown in an error."""
    return text.replace("\x00", "\\u0000").encode("utf-8", "backslashreplace").decode("utf-8")[:40]


def _bad_text(text: str) -> bool:
    return "\x00" in text or has_surrogate(text)


def json_problem(value: Any, path: str, depth: int = 0) -> tuple[str, Any] | None:
    """The first place in a JSON value that a database would refuse, as (path, value), or None:
    NaN/Infinity (PostgreSQL's jsonb has no such numbers), NUL characters and lone surrogates."""
    if depth > 32:
        return path, "(nested too deeply)"
    if isinstance(value, float) and not math.isfinite(value):
        return path, str(value)
    if isinstance(value, str) and _bad_text(value):
        return path, shown(value)
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and _bad_text(key):
                return path, shown(key)
            found = json_problem(item, f"{path}.{key}", depth + 1)
            if found:
                return found
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = json_problem(item, f"{path}[{i}]", depth + 1)
            if found:
                return found
    return None


def surrogate_problem(value: Any, path: str = "", depth: int = 0) -> tuple[str, str] | None:
    """The first string (or key) in a request body holding a lone surrogate, as (path, shown), or None."""
    if isinstance(value, str):
        return (path or "body", shown(value)) if has_surrogate(value) else None
    if depth > 32:
        return None  # the parsers and serializers refuse deeper bodies
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(key, str) and has_surrogate(key):
            return (f"{path}.{shown(key)}" if path else shown(key)), shown(key)
        name = f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else str(key)
        found = surrogate_problem(item, name, depth + 1)
        if found:
            return found
    return None
