"""The tools of the tool permission matrix: the six of PRD §4.7 plus those of external tool
sources (issue 16: the MCP servers operators register, ``interop.mcp_sources``).

The apps above ``capabilities`` add tools through a *catalogue*: a function
``(project) -> [ToolSpec]`` registered with ``add_catalogue`` (the ``interop`` app does in its
``AppConfig.ready``), so the matrix, its editor, its API and the runtime's snapshot all see
the same columns without ``capabilities`` importing the app that owns them. A project sees
the global sources' tools and its own; the global layer sees the global sources' only.

A tool no cell names is ``deny`` for every role (``ConfigSnapshot.tool_mode``), so a newly
discovered tool starts at deny everywhere until an operator changes its cells through the
matrix's governed save (PRD §4.7, §4.8).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from capabilities.models import Project
from teamclaw.runtime.config import TOOLS, ToolSpec

ToolCatalogue = Callable[[Project | None], list[ToolSpec]]
"""``project -> tools`` an app offers in that scope (None = the global layer)."""

_catalogues: list[ToolCatalogue] = []

SourceHeaders = Callable[[str], Awaitable[Mapping[str, str]]]
"""``source name -> request headers`` (an external tool source's stored credentials)."""

_source_headers: list[SourceHeaders] = []


def set_source_headers(lookup: SourceHeaders) -> None:
    """Register where the runtime reads a tool source's credentials (the ``interop`` app's
    ``mcp_sources.source_headers``, from its ``AppConfig.ready``)."""
    _source_headers[:] = [lookup]


async def source_headers(source: str) -> Mapping[str, str]:
    """The request headers stored for ``source`` (``{}`` when no app registered a lookup)."""
    return await _source_headers[0](source) if _source_headers else {}


def add_catalogue(catalogue: ToolCatalogue) -> None:
    """Register ``catalogue`` (idempotent)."""
    if catalogue not in _catalogues:
        _catalogues.append(catalogue)


def remove_catalogue(catalogue: ToolCatalogue) -> None:
    """Unregister ``catalogue`` (no error when it was not registered)."""
    if catalogue in _catalogues:
        _catalogues.remove(catalogue)


def external_tools(project: Project | None) -> list[ToolSpec]:
    """Every registered catalogue's tools for ``project``'s view, sorted by name (the first
    catalogue naming a tool wins; a name of the six PRD tools is never replaced)."""
    found: dict[str, ToolSpec] = {}
    for catalogue in list(_catalogues):
        for spec in catalogue(project):
            if spec.name not in TOOLS:
                found.setdefault(spec.name, spec)
    return [found[name] for name in sorted(found)]


def matrix_tools(project: Project | None) -> list[str]:
    """The tool matrix's columns for ``project``'s view: the six PRD §4.7 tools in table
    order, then the external tools by name."""
    return [*TOOLS, *(spec.name for spec in external_tools(project))]
