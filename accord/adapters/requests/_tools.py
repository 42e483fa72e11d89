"""Tools as the client declared them -> tools as the model sees them (SPEC I6, I7, P10).

Every tool the model is offered becomes one flat :class:`ToolSpec`: functions as they
are, custom (freeform) tools as a function with one string parameter ``input`` whose
description carries the format, namespaced tools as ``namespace.tool``, client-executed
``tool_search`` as a function. ``web_search`` cannot be served: it is refused with a
message that says how to turn it off, unless the client asked for no external access or
the operator chose to drop it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from accord.errors import RequestError
from accord.pipeline.segments import ToolSpec

from ._conversation import ToolChoiceValue
from ._wire import (
    CustomTool,
    FunctionTool,
    GrammarFormat,
    NamespaceTool,
    Tool,
    ToolChoice,
    ToolChoiceAllowed,
    ToolChoiceCustom,
    ToolChoiceFunction,
    ToolSearchTool,
    WebSearchTool,
    tag_of,
)

WebSearchPolicy = Literal["refuse", "drop"]

WEB_SEARCH_REFUSAL = (
    "This server cannot search the web, and the request offers the '{kind}' tool with external web "
    'access. Remove the tool, or set "external_web_access": false on it. Codex CLI users: add '
    'web_search = "disabled" to ~/.codex/config.toml (or pass -c web_search="disabled"). The server '
    "operator can also start accord with --web-search=drop to ignore the tool."
)

TOOL_SEARCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to search the available tools for."},
        "limit": {"type": "number", "description": "Maximum number of tools to return."},
    },
    "required": ["query"],
}


def custom_tool_spec(tool: CustomTool, namespace: str | None = None) -> ToolSpec:
    """A freeform tool as a function of one string ``input`` (SPEC P10)."""
    description = tool.description or ""
    fmt = tool.format
    if isinstance(fmt, GrammarFormat):
        syntax = fmt.syntax
        definition = fmt.definition
        note = f"The input must match this {syntax} grammar:\n{definition}"
    else:
        note = "The input is free-form text."
    input_description = "The raw input of this freeform tool, passed verbatim (not JSON-encoded). " + note
    return ToolSpec(
        name=f"{namespace}.{tool.name}" if namespace else tool.name,
        kind="custom",
        parameters={
            "type": "object",
            "properties": {"input": {"type": "string", "description": input_description}},
            "required": ["input"],
            "additionalProperties": False,
        },
        description=description,
        namespace=namespace,
    )


def function_tool_spec(tool: FunctionTool, namespace: str | None = None) -> ToolSpec:
    return ToolSpec(
        name=f"{namespace}.{tool.name}" if namespace else tool.name,
        kind="function",
        parameters=tool.parameters,
        description=tool.description,
        namespace=namespace,
        strict=tool.strict,
    )


def flatten_tools(
    tools: Sequence[Tool], *, path: str, web_search: WebSearchPolicy
) -> list[tuple[ToolSpec, str]]:
    """Flatten one list of declared tools; each spec comes with the JSON path it came from."""
    flat: list[tuple[ToolSpec, str]] = []
    for i, tool in enumerate(tools):
        where = f"{path}[{i}]"
        if isinstance(tool, FunctionTool):
            flat.append((function_tool_spec(tool), where))
        elif isinstance(tool, CustomTool):
            flat.append((custom_tool_spec(tool), where))
        elif isinstance(tool, NamespaceTool):
            for j, member in enumerate(tool.tools):
                member_path = f"{where}.tools[{j}]"
                if isinstance(member, FunctionTool):
                    flat.append((function_tool_spec(member, tool.name), member_path))
                else:
                    flat.append((custom_tool_spec(member, tool.name), member_path))
        elif isinstance(tool, ToolSearchTool):
            if tool.execution == "server":
                raise RequestError(
                    'tool_search with server execution is not supported; use "execution": "client".',
                    param=f"{where}.execution",
                    code="unsupported_tool",
                )
            flat.append(
                (
                    ToolSpec(
                        name="tool_search",
                        kind="function",
                        parameters=tool.parameters or TOOL_SEARCH_PARAMETERS,
                        description=tool.description,
                    ),
                    where,
                )
            )
        elif isinstance(tool, WebSearchTool):
            if tool.external_web_access is False or web_search == "drop":
                continue
            raise RequestError(
                WEB_SEARCH_REFUSAL.format(kind=tag_of(tool)), param=f"{where}.type", code="unsupported_tool"
            )
    return flat


def unique_tools(flat: Sequence[tuple[ToolSpec, str]]) -> tuple[ToolSpec, ...]:
    """Two tools of one name would make every call to it ambiguous: refuse the second."""
    seen: dict[str, str] = {}
    specs: list[ToolSpec] = []
    for spec, where in flat:
        if spec.name in seen:
            if spec == next(s for s in specs if s.name == spec.name):
                continue  # the same declaration repeated (hoisted twice) is harmless
            raise RequestError(
                f"Tool name '{spec.name}' at {where} is already declared at {seen[spec.name]}.",
                param=f"{where}.name",
            )
        seen[spec.name] = where
        specs.append(spec)
    return tuple(specs)


def _find(tools: Sequence[ToolSpec], name: str) -> ToolSpec | None:
    exact = [t for t in tools if t.name == name]
    if exact:
        return exact[0]
    # A namespaced tool may be named without its namespace when that is unambiguous.
    bare = [t for t in tools if t.bare_name == name]
    return bare[0] if len(bare) == 1 else None


def resolve_tool_choice(
    choice: ToolChoice | None, tools: tuple[ToolSpec, ...]
) -> tuple[ToolChoiceValue, tuple[ToolSpec, ...]]:
    """The tool choice as the pipeline reads it, and the tools left on offer."""
    if choice is None:
        return "auto", tools
    if isinstance(choice, str):
        if choice == "required" and not tools:
            raise RequestError("tool_choice is 'required' but no tools are offered.", param="tool_choice")
        return choice, tools
    if isinstance(choice, ToolChoiceFunction | ToolChoiceCustom):
        found = _find(tools, choice.name)
        if found is None:
            raise RequestError(
                f"tool_choice names the {tag_of(choice)} tool '{choice.name}', which the request does not offer.",
                param="tool_choice.name",
            )
        return found.name, tools
    assert isinstance(choice, ToolChoiceAllowed)
    allowed: list[ToolSpec] = []
    for i, ref in enumerate(choice.tools):
        if ref.type not in ("function", "custom") or ref.name is None:
            raise RequestError(
                f"allowed_tools may only list function and custom tools by name (entry {i}).",
                param=f"tool_choice.tools[{i}]",
            )
        found = _find(tools, ref.name)
        if found is None:
            raise RequestError(
                f"allowed_tools names the tool '{ref.name}', which the request does not offer.",
                param=f"tool_choice.tools[{i}].name",
            )
        if found not in allowed:
            allowed.append(found)
    if choice.mode == "required" and not allowed:
        raise RequestError("allowed_tools with mode 'required' lists no tools.", param="tool_choice.tools")
    return choice.mode, tuple(allowed)
