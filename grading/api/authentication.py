"""Token authentication that remembers valid tokens for a few seconds (docs/api.md, Auth).

Looking a token up cost a query (and compiling it) on every scripted request, a tenth of an event's
price. Each web process now keeps the tokens it has found valid, with their users, for
TOKEN_CACHE_SECONDS (default 5). A token deleted, or a user saved (deactivated, password changed) or
deleted, is forgotten at once by the process that made the change; the other processes keep
accepting it until their entry expires, which bounds how long a revoked token still works. A
change that bypasses model signals (QuerySet.update, raw SQL) is bounded the same way. Unknown or
refused keys are never remembered, so guessing keys costs a query each, as before.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

from grading.services.sql_rows import cache_related, stored_instance

MAX_ENTRIES = 10_000  # tokens remembered per process; past it, the longest remembered are forgotten first


@dataclass(frozen=True)
class _Entry:
    expires: float
    db: str
    user_id: int
    user_values: dict[str, Any]  # by attribute name, every concrete field
    token_values: dict[str, Any]


class TokenMemory:
    """Valid tokens by key, each with a fresh copy of its user per request (no shared instance)."""

    def __init__(self) -> None:
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, now: float) -> tuple[Any, Token] | None:
        entry = self._entries.get(key)
        if entry is None or entry.expires <= now:
            return None
        user = stored_instance(get_user_model(), entry.db, entry.user_values)
        token = stored_instance(Token, entry.db, entry.token_values)
        cache_related(token, "user", user)
        return user, token

    def put(self, key: str, user: Any, token: Token, expires: float) -> None:
        entry = _Entry(
            expires=expires,
            db=token._state.db or "default",
            user_id=user.pk,
            user_values={a: getattr(user, a) for a in _attnames(type(user))},
            token_values={a: getattr(token, a) for a in _attnames(Token)},
        )
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > MAX_ENTRIES:
                self._entries.popitem(last=False)

    def forget_key(self, key: str) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def forget_user(self, user_id: Any) -> None:
        with self._lock:
            for key in [k for k, e in self._entries.items() if e.user_id == user_id]:
                del self._entries[key]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


memory = TokenMemory()


def _attnames(model: Any) -> list[str]:
    return [f.attname for f in model._meta.concrete_fields]


class CachedTokenAuthentication(TokenAuthentication):
    """DRF's TokenAuthentication (`Authorization: Token <key>`), remembering valid tokens briefly."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Token]:
        seconds = settings.TOKEN_CACHE_SECONDS
        now = time.monotonic()
        found = memory.get(key, now) if seconds else None
        if found is not None:
            return found
        user, token = super().authenticate_credentials(key)  # refuses unknown keys and inactive users
        if seconds:
            memory.put(key, user, token, now + seconds)
        return user, token


def token_forget(sender: Any, instance: Token, **kwargs: Any) -> None:
    """A token was saved or deleted (post_save / post_delete of Token)."""
    memory.forget_key(instance.pk)


def user_forget(sender: Any, instance: Any, **kwargs: Any) -> None:
    """A user was saved (deactivated, new password, …) or deleted (post_save / post_delete of the user model)."""
    memory.forget_user(instance.pk)
