"""Python executors from installed packages: the ``teamclaw.executors`` entry-point group
(docs/architecture.md §8). This is the only way Python code becomes an executor: nothing is ever
imported from a dotted path that a request or a stored config supplies.

A package declares, in its ``pyproject.toml``::

    [project.entry-points."teamclaw.executors"]
    translator = "my_package.executors:TranslatorExecutor"

The entry point's name is the executor kind a card (``executor``) or a role names. It may
load as an executor class (instantiated without arguments), an executor instance (an object
with ``async execute(call)``), or a plain ``async def (call) -> dict`` function.
"""

from __future__ import annotations

import inspect
import logging
import re
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any

from teamclaw.runtime.executors import BUILTIN_KINDS, ExecutorRegistry

if TYPE_CHECKING:
    from teamclaw.runtime.execution import ExecutionCall

log = logging.getLogger(__name__)

GROUP = "teamclaw.executors"
KIND_NAME = re.compile(r"^[a-z][a-z0-9_-]{1,39}$")


class FunctionExecutor:
    """Wraps an ``async def (call) -> dict`` entry point as an executor of ``kind``."""

    def __init__(self, kind: str, function: Any) -> None:
        self.kind = kind
        self.function = function

    async def execute(self, call: ExecutionCall) -> dict[str, Any]:
        return await self.function(call)


def _executor(entry: EntryPoint) -> Any:
    loaded = entry.load()
    if inspect.isclass(loaded):
        loaded = loaded()
    if inspect.iscoroutinefunction(loaded):
        return FunctionExecutor(entry.name, loaded)
    execute = getattr(loaded, "execute", None)
    if execute is None or not inspect.iscoroutinefunction(execute):
        raise TypeError("it is neither an executor (async execute(call)) nor an async function")
    if getattr(loaded, "kind", entry.name) != entry.name:
        loaded.kind = entry.name
    return loaded


def install_entry_point_executors(registry: ExecutorRegistry, group: str = GROUP) -> list[str]:
    """Register every executor of the entry-point ``group`` in ``registry``; returns the kinds
    installed. A plugin that fails to load, or takes a built-in or malformed name, is skipped,
    logged and listed in ``registry.problems`` (shown on the dashboard)."""
    installed = []
    for entry in sorted(entry_points(group=group), key=lambda e: e.name):
        where = f"{entry.name} = {entry.value}"
        if entry.name in BUILTIN_KINDS or not KIND_NAME.match(entry.name):
            problem = f"executor plugin {where}: the name must be 2-40 lowercase letters, digits, '_' or '-' "
            problem += f"and not one of {', '.join(BUILTIN_KINDS)}"
        elif registry.get(entry.name) is not None:
            problem = f"executor plugin {where}: another plugin already uses this name"
        else:
            try:
                registry.register(entry.name, _executor(entry))
            except Exception as exc:
                problem = f"executor plugin {where} failed to load: {type(exc).__name__}: {exc}"
            else:
                installed.append(entry.name)
                continue
        log.warning("%s", problem)
        registry.problems.append(problem)
    return installed


def entry_point_kinds(group: str = GROUP) -> list[str]:
    """Names of the installed executor plugins (without loading them)."""
    return sorted(e.name for e in entry_points(group=group) if e.name not in BUILTIN_KINDS and KIND_NAME.match(e.name))
