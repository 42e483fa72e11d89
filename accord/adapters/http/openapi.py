"""``/openapi.json``, generated from the request and wire models (SPEC H1)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import msgspec

import accord
from accord.adapters.http.completions import CompletionRequest
from accord.adapters.http.openapi_protocols import PROTOCOL_TYPES, protocol_paths
from accord.adapters.http.operations import ERROR_STATUSES, event_stream
from accord.adapters.http.operations import operations as described_operations
from accord.adapters.requests import ResponsesRequest
from accord.events.items import OutputItem, Usage
from accord.events.wire import AnyWireEvent

_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")


def _path_template(pattern: str) -> str:
    """``/v1/responses/(?P<id>[^/]+)`` -> ``/v1/responses/{id}``."""
    return _GROUP.sub(lambda m: "{" + m.group(1) + "}", pattern).replace("\\", "")


def openapi_document(routes: Iterable[tuple[str, str, str]] = ()) -> dict[str, Any]:
    """The document: the responses route in full, every other route (``(method, regex, name)``) listed."""
    (request, event, item, usage, completion, *protocols), components = msgspec.json.schema_components(
        [ResponsesRequest, AnyWireEvent, OutputItem, Usage, CompletionRequest, *PROTOCOL_TYPES],
        ref_template="#/components/schemas/{name}",
    )
    error = {
        "type": "object",
        "properties": {
            "error": {
                "type": "object",
                "properties": {
                    "message": {"type": "string"},
                    "type": {"type": "string"},
                    "param": {"type": ["string", "null"]},
                    "code": {"type": ["string", "null"]},
                },
                "required": ["message", "type", "param", "code"],
            }
        },
    }
    response = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "object": {"const": "response"},
            "created_at": {"type": "integer"},
            "status": {"type": "string"},
            "model": {"type": "string"},
            "output": {"type": "array", "items": item},
            "usage": {"anyOf": [usage, {"type": "null"}]},
        },
        "required": ["id", "object", "created_at", "status", "model", "output"],
    }
    components["Error"] = error
    components["Response"] = response
    errors: dict[str, Any] = {
        str(code): {
            "description": text,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
        for code, text in ERROR_STATUSES
    }
    known = described_operations(request, completion)
    document: dict[str, Any] = {
        # 3.2: the first version that describes an event stream's items (``itemSchema``).
        "openapi": "3.2.0",
        "info": {"title": "accord", "version": accord.__version__},
        "paths": {
            "/v1/responses": {
                "post": {
                    "operationId": "createResponse",
                    "requestBody": {"required": True, "content": {"application/json": {"schema": request}}},
                    "responses": {
                        "200": {
                            "description": "The response (JSON), or its events (SSE) when stream is true",
                            "content": {
                                "application/json": {"schema": {"$ref": "#/components/schemas/Response"}},
                                "text/event-stream": event_stream(event),
                            },
                        },
                        **errors,
                    },
                }
            },
        },
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        # Bearer when the server has --api-key; without one every route is open.
        "security": [{"bearer": []}, {}],
    }
    paths = document["paths"]
    paths.update(protocol_paths(components, protocols))
    for method, pattern, name in routes:
        path = _path_template(pattern)
        operations = paths.setdefault(path, {})
        if method.lower() in operations:
            continue
        parameters = [
            {"name": group, "in": "path", "required": True, "schema": {"type": "string"}}
            for group in _GROUP.findall(pattern)
        ]
        described = known.get((method.lower(), path), {})
        operation: dict[str, Any] = {"operationId": name, **described}
        parameters += described.get("parameters", [])
        if parameters:
            operation["parameters"] = parameters
        operation["responses"] = {
            **described.get("responses", {"200": {"description": "OK"}}),
            **errors,
        }
        operations[method.lower()] = operation
    return document
