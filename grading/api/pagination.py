"""Paging for every list endpoint: `limit` and `offset` are checked, never passed on unbounded."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

from grading.errors import InvalidValue

MAX_OFFSET = 2**31 - 1


def _bounded(request: Request, name: str, *, default: int, minimum: int, maximum: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw) if len(raw) <= 12 else None
    except ValueError:
        value = None
    if value is None or not minimum <= value <= maximum:
        raise InvalidValue(
            f"{name} must be a whole number from {minimum} to {maximum}, got {raw[:40]!r}.", field=name, value=raw[:40]
        )
    return value


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    """`?limit=` from 1 to API_MAX_PAGE_SIZE (default: the page size), `?offset=` from 0; anything
    else (text, 10^20, negative numbers) is a 400 naming the parameter and the value."""

    @property
    def max_limit(self) -> int:  # type: ignore[override]
        return settings.API_MAX_PAGE_SIZE

    def get_limit(self, request: Request) -> int:
        default = min(self.default_limit or self.max_limit, self.max_limit)
        return _bounded(request, self.limit_query_param, default=default, minimum=1, maximum=self.max_limit)

    def get_offset(self, request: Request) -> int:
        return _bounded(request, self.offset_query_param, default=0, minimum=0, maximum=MAX_OFFSET)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        params = super().get_schema_operation_parameters(view)
        for param in params:
            if param["name"] == self.limit_query_param:
                param["schema"] = {"type": "integer", "minimum": 1, "maximum": self.max_limit}
            elif param["name"] == self.offset_query_param:
                param["schema"] = {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET}
        return params
