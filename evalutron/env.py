"""Typed readers for environment variables.

Each reader fails loudly, naming the variable, when a value cannot be understood: a typo in a
deployment should stop the start, not silently fall back to a default.
"""

from __future__ import annotations

import os
import re

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(
        f"Environment variable {name}={raw!r} is not a boolean; use one of true/false, 1/0, yes/no, on/off."
    )


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"Environment variable {name}={raw!r} is not an integer.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"Environment variable {name}={raw!r} must be at least {minimum}.")
    return value


_RATE = re.compile(r"^[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)$")


def env_rate(name: str, default: str) -> str:
    """A request rate in Django REST framework's format: a positive count per second, minute, hour or day."""
    raw = os.environ.get(name, default).strip()
    if not _RATE.match(raw):
        raise ImproperlyConfigured(
            f"Environment variable {name}={raw!r} is not a rate; write requests per period, e.g. 120/min, "
            "3000/hour (periods: s, min, hour, day)."
        )
    return raw


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = os.environ.get(name, default)
    if raw not in choices:
        raise ImproperlyConfigured(f"Environment variable {name}={raw!r} is not one of: {', '.join(choices)}.")
    return raw


def load_env_file(path: str) -> None:
    """Read KEY=value lines from `path` into the environment, never overriding what is set."""
    if not path:
        return
    from dotenv import load_dotenv

    load_dotenv(path, override=False)
