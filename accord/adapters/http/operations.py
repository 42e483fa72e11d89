"""The OpenAPI description of every route other than ``POST /v1/responses``: bodies, queries, answers.

Kept beside :mod:`.openapi` so that a schema-driven client or fuzzer sees what each route
takes and gives; a route missing here is still listed, with a bare 200.
"""

from __future__ import annotations

from typing import Any

_STRING = {"type": "string"}
_INT = {"type": "integer"}


def event_stream(payload: dict[str, Any], *, sentinel: str | None = None) -> dict[str, Any]:
    """An SSE media type as OpenAPI 3.2 describes one: each item is an event whose ``data`` is JSON
    of ``payload`` (or, where the protocol ends with one, the literal ``sentinel``, Chat's ``[DONE]``).

    Without ``itemSchema``, tools read a ``schema`` as the shape of the SSE event itself (its
    ``event`` and ``data`` fields), which the JSON payload never matches.
    """
    data: dict[str, Any] = {
        "type": "string",
        "contentMediaType": "application/json",
        "contentSchema": payload,
    }
    if sentinel is not None:
        data = {"anyOf": [{"const": sentinel}, data]}
    item = {
        "type": "object",
        "properties": {"event": {"type": "string"}, "data": data, "id": {"type": "string"}},
        "required": ["data"],
    }
    return {"itemSchema": item}


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required or list(properties)}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


_RESPONSE = {"$ref": "#/components/schemas/Response"}
_STREAM = {"type": "string", "enum": ["true", "false"]}
_MODEL = _object({"id": _STRING, "object": {"const": "model"}, "created": _INT, "owned_by": _STRING})
_ITEMS_PAGE = _object(
    {
        "object": {"const": "list"},
        "data": {"type": "array", "items": {"type": "object"}},
        "first_id": {"type": ["string", "null"]},
        "last_id": {"type": ["string", "null"]},
        "has_more": {"type": "boolean"},
    },
    ["object", "data", "has_more"],
)


def operations(
    request: dict[str, Any], completion_request: dict[str, Any]
) -> dict[tuple[str, str], dict[str, Any]]:
    """``(method, path template) -> the operation's request body, parameters and 200 answer``."""
    body = {"required": True, "content": {"application/json": {"schema": request}}}
    return {
        ("get", "/v1/models"): {
            "responses": {
                "200": _json(
                    _object({"object": {"const": "list"}, "data": {"type": "array", "items": _MODEL}})
                )
            }
        },
        ("get", "/health"): {
            "security": [],
            "responses": {"200": _json(_object({"status": {"enum": ["ok", "draining"]}}))},
        },
        ("get", "/version"): {"security": [], "responses": {"200": _json(_object({"version": _STRING}))}},
        ("get", "/metrics"): {
            "responses": {
                "200": {"description": "Prometheus text", "content": {"text/plain": {"schema": _STRING}}}
            }
        },
        ("get", "/openapi.json"): {"responses": {"200": _json({"type": "object"})}},
        ("post", "/v1/completions"): {
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": completion_request}},
            },
            "responses": {
                "200": {
                    "description": "The completion (JSON), or its chunks (SSE) when stream is true",
                    "content": {
                        "application/json": {"schema": {"type": "object"}},
                        "text/event-stream": event_stream({"type": "object"}, sentinel="[DONE]"),
                    },
                }
            },
        },
        ("post", "/v1/responses/input_tokens"): {
            "requestBody": body,
            "responses": {
                "200": _json(_object({"object": {"const": "response.input_tokens"}, "input_tokens": _INT}))
            },
        },
        ("post", "/v1/responses/compact"): {
            "requestBody": body,
            "responses": {"200": _json({"type": "object"})},
        },
        ("get", "/v1/responses/{id}"): {
            "parameters": [
                _query("stream", _STREAM, "replay the stored events as SSE"),
                _query(
                    "starting_after", {"type": "integer", "minimum": -1}, "replay after this sequence number"
                ),
            ],
            "responses": {
                "200": {
                    "description": "The stored response, or its events (SSE) with stream=true",
                    "content": {
                        "application/json": {"schema": _RESPONSE},
                        "text/event-stream": event_stream({"type": "object"}),
                    },
                }
            },
        },
        ("delete", "/v1/responses/{id}"): {
            "responses": {
                "200": _json(
                    _object({"id": _STRING, "object": {"const": "response"}, "deleted": {"const": True}})
                )
            }
        },
        ("get", "/v1/responses/{id}/input_items"): {
            "parameters": [
                _query("after", _STRING, "an item id: the page starts after it"),
                _query("limit", {"type": "integer", "minimum": 1, "maximum": 100}, "items per page"),
                _query("order", {"enum": ["asc", "desc"]}, "oldest or newest first"),
            ],
            "responses": {"200": _json(_ITEMS_PAGE)},
        },
        ("post", "/v1/responses/{id}/cancel"): {"responses": {"200": _json(_RESPONSE)}},
    }


#: Answers any operation may give (besides 200), as the edge maps errors (docs/spec.md I11).
ERROR_STATUSES = (
    (400, "invalid request"),
    (401, "missing or wrong API key"),
    (403, "Host or Origin not allowed"),
    (404, "not found"),
    (405, "method not allowed"),
    (408, "the body did not arrive in time"),
    (413, "body too large or too costly"),
    (415, "body not sent as application/json"),
    (429, "at capacity; retry after Retry-After"),
    (501, "not available on this server"),
    (502, "the upstream engine failed"),
    (503, "shutting down"),
)
