"""Schema-driven typing of argument values written as raw text (SPEC P5).

GLM, Qwen3-Coder and DSML write each argument as ``key`` + raw text: strings unquoted,
everything else as JSON (or whatever the model thought was JSON). Only the tool's JSON
schema says which is which, so:

- a key declared as a string keeps its text verbatim: ``"007"`` and ``"true"`` stay strings;
- a key declared with any other type is decoded as JSON, then as JSON whose quotes were
  escaped (``{\\"a\\": 1}``), then as a Python literal (``{'a': True}``); if none works the
  raw text is kept as a string, so a bad value never costs the whole call;
- a key the schema does not declare (or declares without any type) is decoded only when it
  is strict JSON, else kept as a string;
- a decoded value that is not strict JSON (NaN, ``1e309`` which decodes to infinity, a set)
  keeps its text;
- when a key allows a string *and* other types (``["string", "null"]``, ``anyOf``), a decoded
  value counts only when it has one of the other types; otherwise the text is the string.

Types are collected through local ``$ref`` (``#/$defs/..``, ``#/definitions/..``),
``anyOf``/``oneOf`` (union), ``allOf`` (intersection), ``enum``/``const`` (the types of their
values) and type arrays.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from accord.pipeline.segments import ToolSpec

#: A set of JSON type names, or ``None`` when the schema does not constrain the type.
Types = frozenset[str] | None

_MAX_DEPTH = 32
_FAILED = object()
_IN_PROGRESS = object()
#: ``json.dumps(obj, ensure_ascii=False)`` builds an encoder per call; one shared encoder
#: gives the same text without that cost on every tool call.
_ENCODER = json.JSONEncoder(ensure_ascii=False)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    return "object"


def _resolve_ref(ref: str, root: Mapping[str, Any]) -> Any:
    """A local JSON pointer (``#/$defs/Name``); ``None`` for anything else."""
    if not ref.startswith("#"):
        return None
    node: Any = root
    for raw in ref[1:].split("/")[1:] if ref != "#" else []:
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def schema_types(schema: Any, root: Mapping[str, Any]) -> Types:
    """The JSON types ``schema`` admits; ``None`` when it admits anything (or cannot be read)."""
    return _Walk(root).types(schema, 0)


class _Walk:
    """One typing pass over a schema, memoised per node (issue: exponential schema typing).

    ``allOf``/``anyOf`` through ``$ref`` can name the same subschema from many branches; a
    1.4 KB schema of such diamonds is millions of paths but only dozens of nodes. Each node
    (by identity: schemas are trees of dicts and lists, shared only through ``$ref``) is typed
    once, so a pass costs O(schema size). A node reached again while it is being typed (a
    ``$ref`` cycle) admits anything, as running into the depth cap did.
    """

    __slots__ = ("_done", "_props", "_root")

    def __init__(self, root: Mapping[str, Any]) -> None:
        self._root = root
        self._done: dict[int, Types | object] = {}
        self._props: dict[int, dict[str, Any] | object] = {}

    def types(self, schema: Any, depth: int) -> Types:
        if depth > _MAX_DEPTH or not isinstance(schema, Mapping):
            return None
        key = id(schema)
        if key in self._done:
            seen = self._done[key]
            return None if seen is _IN_PROGRESS else seen  # type: ignore[return-value]
        self._done[key] = _IN_PROGRESS
        found = self._types(schema, depth)
        self._done[key] = found
        return found

    def _types(self, schema: Mapping[str, Any], depth: int) -> Types:
        if isinstance(schema.get("$ref"), str):
            return self.types(_resolve_ref(schema["$ref"], self._root), depth + 1)
        declared = schema.get("type")
        if isinstance(declared, str):
            return frozenset({declared})
        if isinstance(declared, list) and declared and all(isinstance(t, str) for t in declared):
            return frozenset(declared)
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return frozenset(_json_type(v) for v in schema["enum"])
        if "const" in schema:
            return frozenset({_json_type(schema["const"])})
        for union in ("anyOf", "oneOf"):
            branches = schema.get(union)
            if isinstance(branches, list) and branches:
                found: set[str] = set()
                for branch in branches:
                    types = self.types(branch, depth + 1)
                    if types is None:
                        return None
                    found |= types
                return frozenset(found)
        branches = schema.get("allOf")
        if isinstance(branches, list) and branches:
            known = [t for b in branches if (t := self.types(b, depth + 1)) is not None]
            if not known:
                return None
            common = frozenset.intersection(*known)
            return common or None
        if isinstance(schema.get("properties"), Mapping):
            return frozenset({"object"})
        if "items" in schema or "prefixItems" in schema:
            return frozenset({"array"})
        return None

    def properties(self, schema: Any, depth: int = 0) -> dict[str, Any]:
        """The declared properties of an arguments schema, through ``$ref`` and ``allOf``."""
        if depth > _MAX_DEPTH or not isinstance(schema, Mapping):
            return {}
        key = id(schema)
        if key in self._props:
            seen = self._props[key]
            return {} if seen is _IN_PROGRESS else seen  # type: ignore[return-value]
        self._props[key] = _IN_PROGRESS
        found: dict[str, Any] = {}
        if isinstance(schema.get("$ref"), str):
            found = self.properties(_resolve_ref(schema["$ref"], self._root), depth + 1)
        else:
            props = schema.get("properties")
            if isinstance(props, Mapping):
                found.update(props)
            for branch in schema.get("allOf") or ():
                for name, value in self.properties(branch, depth + 1).items():
                    found.setdefault(name, value)
        self._props[key] = found
        return found


class ArgumentTyper:
    """Types the values of one tool's arguments; built once per tool, reused for every call."""

    def __init__(self, tool: ToolSpec) -> None:
        root: Mapping[str, Any] = tool.parameters or {}
        self._types: dict[str, Types] = {}
        walk = _Walk(root)
        for key, schema in walk.properties(root).items():
            self._types[str(key)] = walk.types(schema, 0)
        if tool.kind == "custom" and not self._types:
            # Custom tools are offered with one string parameter, ``input`` (SPEC P10).
            self._types["input"] = frozenset({"string"})

    def declared(self, key: str) -> bool:
        return key in self._types

    def value(self, key: str, raw: str, *, marked_string: bool = False) -> Any:
        """The typed value of ``raw`` for ``key``; ``marked_string``: the model said it is a string."""
        if key not in self._types:
            return raw if marked_string else _strict_json_or_text(raw)
        types = self._types[key]
        if types is None:
            return raw if marked_string else _strict_json_or_text(raw)
        if "string" in types:
            if len(types) == 1 or marked_string:
                return raw
            decoded = _decode(raw)
            if decoded is not _FAILED and _json_type(decoded) in _widen(types - {"string"}):
                return decoded
            return raw
        decoded = _decode(raw)
        return raw if decoded is _FAILED else decoded

    def arguments(self, pairs: Iterable[tuple[str, str]], raw_strings: Collection[str] = ()) -> str:
        """The arguments object as JSON text; a repeated key keeps its first value."""
        obj: dict[str, Any] = {}
        for key, raw in pairs:
            if key not in obj:
                obj[key] = self.value(key, raw, marked_string=key in raw_strings)
        return _ENCODER.encode(obj)


def _widen(types: Collection[str]) -> frozenset[str]:
    # An integer is a number in JSON schema; "number" therefore admits decoded integers.
    return frozenset(types) | ({"integer"} if "number" in types else frozenset())


def _strict_json_or_text(raw: str) -> Any:
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return value if _is_strict_json(value) else raw


def _decode(raw: str) -> Any:
    """JSON, then JSON with escaped quotes, then a Python literal; ``_FAILED`` if none is strict JSON."""
    try:
        value = json.loads(raw)
    except ValueError:
        pass
    else:
        return value if _is_strict_json(value) else _FAILED
    if '\\"' in raw:
        try:
            value = json.loads(raw.replace('\\"', '"'))
        except ValueError:
            pass
        else:
            return value if _is_strict_json(value) else _FAILED
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _FAILED
    return _to_json(value) if _is_strict_json(value) else _FAILED


def _is_strict_json(value: object, depth: int = 0) -> bool:
    if depth > 512:
        return False
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(_is_strict_json(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_strict_json(v, depth + 1) for k, v in value.items())
    return False


def _to_json(value: Any) -> Any:
    """Tuples from a Python literal become lists, so the value compares equal to its JSON."""
    if isinstance(value, tuple | list):
        return [_to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_json(v) for k, v in value.items()}
    return value


def arguments_json(pairs: list[tuple[str, str]], tool: ToolSpec, raw_strings: Collection[str] = ()) -> str:
    """The JSON object text of ``pairs`` typed by ``tool``'s schema; ``"{}"`` for no pairs."""
    return ArgumentTyper(tool).arguments(pairs, raw_strings)


__all__ = ["ArgumentTyper", "Types", "arguments_json", "schema_types"]
