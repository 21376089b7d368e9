"""Completing the OpenAPI schema: every operation documents the refusals any endpoint may give, so
that a client (and the schema fuzzing in CI) knows every status it can meet."""

from __future__ import annotations

from typing import Any

ERROR_BODY = {
    "type": "object",
    "description": "What was wrong: `detail`, and for invalid input `field` and `value`.",
    "additionalProperties": True,
}
COMMON_ERRORS = {
    "400": "Invalid input (the body or a parameter); nothing was stored.",
    "401": "No credentials, or a bad or expired token (see the WWW-Authenticate header).",
    "403": "Not allowed for your role in this campaign.",
    "404": "No such object, or one you may not know exists.",
    "413": "The request body is larger than this endpoint takes.",
    "429": "Too many requests; retry after the seconds in the Retry-After header.",
}


def add_common_errors(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: adds the common error responses an operation lacks."""
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            for code, text in COMMON_ERRORS.items():
                responses.setdefault(
                    code, {"description": text, "content": {"application/json": {"schema": ERROR_BODY}}}
                )
    return result
