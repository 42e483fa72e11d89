"""The tools a request offers, as a parser reads them: names resolved once, argument typers built once.

Every format resolves a call's name through :meth:`ToolBox.resolve`, so the repair rules of SPEC P6
(:func:`~accord.pipeline.tools.names.resolve_tool_name`) run once per distinct name a model writes in a
response, and each later call of that name is one dictionary lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from accord.pipeline.segments import ToolSpec
from accord.pipeline.tools._schema import ArgumentTyper
from accord.pipeline.tools.names import resolve_tool_name

#: A "name" longer than this that is not declared is prose or a runaway body: it is never scanned with
#: the repair rules.
_MAX_NAME = 512
#: Repaired (or refused) names remembered per response, past the declared ones (a model writing endless
#: distinct names gets no more memory).
_NAME_CACHE = 256


class ToolBox:
    """The offered tools: name repair and one argument typer per tool, built on first use."""

    def __init__(self, tools: Sequence[ToolSpec]) -> None:
        self.tools = tuple(tools)
        self._typers: dict[str, ArgumentTyper] = {}
        # A declared name resolves as it stands, whatever its length (the last of a repeated name, as
        # resolve_tool_name answers).
        self._names: dict[str, ToolSpec | None] = {tool.name: tool for tool in self.tools}
        self._limit = len(self._names) + _NAME_CACHE

    def resolve(self, raw_name: str, clean: Callable[[str], str] | None = None) -> ToolSpec | None:
        """The declared tool ``raw_name`` names (after ``clean``), remembered per raw name.

        ``clean`` is for what is not a declared name as it stands; one ``ToolBox`` serves one caller's
        ``clean``, since the answers are remembered by raw name."""
        try:
            return self._names[raw_name]
        except KeyError:
            pass
        if len(raw_name) > _MAX_NAME:
            return None
        name = clean(raw_name) if clean is not None else raw_name
        tool = resolve_tool_name(name, self.tools)
        if len(self._names) < self._limit:
            self._names[raw_name] = tool
        return tool

    def typer(self, tool: ToolSpec) -> ArgumentTyper:
        typer = self._typers.get(tool.name)
        if typer is None:
            typer = self._typers[tool.name] = ArgumentTyper(tool)
        return typer
