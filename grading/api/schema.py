"""Completing the OpenAPI schema so that it says what the server does: every operation documents
the refusals it can give, each with the one error body (the ErrorOut component: `code`, `detail`,
and for invalid input `field` and `value`), 429 with its Retry-After header; ids carry the bounds
the server checks; and a JSON body is documented as JSON only (the form encodings the parsers also
read cannot say null or a nested object, so a schema offering them would promise what no form can
send). tests/fuzz/test_api_schema.py holds the server to all of it."""

from __future__ import annotations

from typing import Any

from grading.api.serializers import MAX_BATCH

MAX_ID = 2**63 - 1

ERROR_REF = {"$ref": "#/components/schemas/ErrorOut"}
COMMON_ERRORS = {
    "400": "Invalid input (the body or a parameter): `field` and `value` name what was wrong; nothing was stored.",
    "401": "No credentials, or a bad or expired token (see the WWW-Authenticate header).",
    "403": "Not allowed for your role in this campaign.",
    "404": "No such object, or one you may not know exists.",
    "411": "The body was sent chunked (Transfer-Encoding) without a Content-Length; send its length.",
    "413": "The request body is larger than this endpoint takes (`value`: its size in bytes).",
    "429": "Too many requests; retry after the seconds in the Retry-After header (`retry_after` in the body).",
}
UNSUPPORTED_MEDIA = "The body is of a type this endpoint does not take (`value`: the type sent)."
RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before the next request.",
        "required": True,
        "schema": {"type": "integer", "minimum": 0},
    }
}
NO_NUL = "^[^\\x00]*$"
JSON_VALUE = {
    "description": "Any JSON value the database keeps: no NUL characters in text or keys.",
    "anyOf": [
        {"type": "null"},
        {"type": "boolean"},
        {"type": "number"},
        {"type": "string", "pattern": NO_NUL},
        {"type": "array", "items": {"$ref": "#/components/schemas/JSONValue"}},
        {
            "type": "object",
            "propertyNames": {"pattern": NO_NUL},
            "additionalProperties": {"$ref": "#/components/schemas/JSONValue"},
        },
    ],
}
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
ID_QUERY_PARAMETERS = {"campaign"}


def _error(text: str) -> dict[str, Any]:
    return {"description": text, "content": {"application/json": {"schema": ERROR_REF}}}


def _bound_ids(operation: dict[str, Any]) -> None:
    """Ids in the path, and the `campaign` query parameter, are whole numbers from 1 to 2^63-1:
    the server refuses anything else (400 for a parameter, 404 for a path)."""
    for parameter in operation.get("parameters", []):
        schema = parameter.get("schema", {})
        is_id = parameter.get("in") == "path" or parameter.get("name") in ID_QUERY_PARAMETERS
        if is_id and schema.get("type") == "integer":
            schema.setdefault("minimum", 1)
            schema.setdefault("maximum", MAX_ID)


def _json_only(operation: dict[str, Any]) -> None:
    content = operation.get("requestBody", {}).get("content", {})
    if content and next(iter(content)) == "application/json":
        for kind in FORM_TYPES:
            content.pop(kind, None)


def _event_batches(result: dict[str, Any]) -> None:
    """POST /api/events/ takes one event or a list of 1 to MAX_BATCH; its 200 is a batch's result,
    or the original result of one event sent again."""
    operation = result.get("paths", {}).get("/api/events/", {}).get("post")
    if not operation:
        return
    body = operation["requestBody"]["content"]["application/json"]
    one = body["schema"]
    body["schema"] = {"oneOf": [one, {"type": "array", "items": one, "minItems": 1, "maxItems": MAX_BATCH}]}
    answer = operation["responses"]["200"]["content"]["application/json"]
    answer["schema"] = {"oneOf": [answer["schema"], {"$ref": "#/components/schemas/EventResult"}]}


ANY_OR_NULL = [{}, {"type": "null"}]


def _any_value_once(node: Any) -> None:
    """OpenAPI 3.1 states a nullable field as ``oneOf: [its schema, {"type": "null"}]``; for a field
    of any JSON value (``{}``) null matches both, which ``oneOf`` forbids, so such a field is left
    as any value (null is one)."""
    if isinstance(node, dict):
        if node.get("oneOf") == ANY_OR_NULL:
            del node["oneOf"]
        for child in node.values():
            _any_value_once(child)
    elif isinstance(node, list):
        for child in node:
            _any_value_once(child)


def add_common_errors(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: adds the refusals an operation lacks, the bounds of ids,
    keeps JSON bodies JSON, and leaves a nullable field of any value as any value."""
    result.setdefault("components", {}).setdefault("schemas", {})["JSONValue"] = JSON_VALUE
    _any_value_once(result)
    _event_batches(result)
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            _bound_ids(operation)
            _json_only(operation)
            responses = operation["responses"]
            for code, text in COMMON_ERRORS.items():
                responses.setdefault(code, _error(text))
            if "requestBody" in operation:
                responses.setdefault("415", _error(UNSUPPORTED_MEDIA))
            responses["429"]["headers"] = RETRY_AFTER
    return result
