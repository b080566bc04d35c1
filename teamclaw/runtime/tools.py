"""Tools agents use through the runtime, under the tool permission matrix (PRD §4.7).

``ToolBox.use`` applies the matrix cell for (role, tool): ``allow`` runs the tool, ``deny``
fails with ``tool_denied``, ``confirm`` asks an operator first (the context goes
``waiting_user`` until the request is approved, rejected or times out).

File tools are confined to the project working directory and the role's ``file_scope``
inside it: no absolute paths outside it, no ``..``, no symlink that leads out (PRD §4.7
文件范围: 项目目录内).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from teamclaw.runtime.config import ToolSpec
from teamclaw.runtime.errors import AgentFailure, ErrorCode

MAX_FILE_BYTES = 2_000_000
"""Largest file a file tool reads or writes (bytes)."""

ToolHandler = Callable[[Path, dict[str, Any]], Awaitable[Any]]
"""A tool implementation: ``(scope_root, args) -> result``; raises AgentFailure on bad input."""


class ExternalTools(Protocol):
    """Runs the tools of external tool sources (``ToolSpec``, issue 16: ``mcp_tools.McpTools``)
    once the tool matrix let the call through (``ExecutionCall.use_tool``)."""

    async def run(self, spec: ToolSpec, args: dict[str, Any], timeout_s: float) -> Any:
        """The tool's result for ``args`` within ``timeout_s`` (s); raises AgentFailure
        (``tool_denied``, ``timeout``, ``executor_error``) when there is none."""


def confine(root: Path, relative: str) -> Path:
    """Resolve ``relative`` inside ``root`` or raise AgentFailure(tool_denied).

    Refuses absolute paths, any ``..`` component, NUL bytes, and paths whose real location
    (after following symlinks) is outside ``root``.
    """
    if not isinstance(relative, str) or not relative or "\x00" in relative:
        raise AgentFailure(ErrorCode.TOOL_DENIED, "a file path is required", {"path": relative}, retryable=False)
    candidate = Path(relative)
    if candidate.is_absolute():
        raise AgentFailure(
            ErrorCode.TOOL_DENIED,
            "absolute paths are outside the project directory",
            {"path": relative},
            retryable=False,
        )
    if ".." in candidate.parts:
        raise AgentFailure(ErrorCode.TOOL_DENIED, "'..' may not appear in a path", {"path": relative}, retryable=False)
    real_root = Path(os.path.realpath(root))
    target = Path(os.path.realpath(real_root / candidate))
    if target != real_root and real_root not in target.parents:
        raise AgentFailure(
            ErrorCode.TOOL_DENIED,
            "the path leads outside the project directory (symlink)",
            {"path": relative},
            retryable=False,
        )
    return target


def scope_root(root: Path, scope: str) -> Path:
    """The real folder of a role's ``file_scope`` inside the project directory ``root``,
    created folder by folder; raises AgentFailure(tool_denied) when the scope is absolute,
    has ``..``, or it or any folder on the way resolves (through a symlink) outside ``root``.

    Each folder is checked before the next is made, so a symlink on the way never gets a
    folder created outside the project.
    """
    real_root = Path(os.path.realpath(root))
    if scope in (".", ""):
        return real_root
    if "\x00" in scope or Path(scope).is_absolute() or ".." in Path(scope).parts:
        raise AgentFailure(
            ErrorCode.TOOL_DENIED,
            "the role's file scope is outside the project directory",
            {"file_scope": scope},
            retryable=False,
        )
    current = real_root
    for part in Path(scope).parts:
        step = current / part
        try:
            if not os.path.lexists(step):
                step.mkdir(exist_ok=True)  # another task may make it meanwhile; checked below
        except OSError as exc:
            raise _os_failure("create", scope, exc) from None
        current = Path(os.path.realpath(step))
        if current != real_root and real_root not in current.parents:
            raise AgentFailure(
                ErrorCode.TOOL_DENIED,
                "the role's file scope leads outside the project directory (symlink)",
                {"file_scope": scope},
                retryable=False,
            )
        if not current.is_dir():
            raise AgentFailure(
                ErrorCode.TOOL_DENIED,
                "the role's file scope is not a folder",
                {"file_scope": scope},
                retryable=False,
            )
    return current


async def file_read(root: Path, args: dict[str, Any]) -> dict[str, Any]:
    """Read a UTF-8 text file: ``{path}`` -> ``{path, content, bytes}``."""
    relative = args.get("path", "")
    target = confine(root, relative)
    if not target.is_file():
        raise AgentFailure(ErrorCode.EXECUTOR_ERROR, f"no file {relative!r}", {"path": relative}, retryable=False)
    try:
        size = target.stat().st_size
        if size > MAX_FILE_BYTES:
            raise AgentFailure(
                ErrorCode.EXECUTOR_ERROR,
                f"{relative!r} is {size} bytes; the limit is {MAX_FILE_BYTES}",
                {"path": relative},
                retryable=False,
            )
        content = target.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise _os_failure("read", relative, exc) from None
    return {"path": relative, "content": content, "bytes": size}


def _os_failure(verb: str, relative: str, exc: OSError) -> AgentFailure:
    """An OS error as a tool failure that names the project-relative path, never the server's."""
    return AgentFailure(
        ErrorCode.EXECUTOR_ERROR,
        f"cannot {verb} {relative!r}: {exc.strerror or type(exc).__name__}",
        {"path": relative},
        retryable=False,
    )


async def file_write(root: Path, args: dict[str, Any]) -> dict[str, Any]:
    """Write UTF-8 text: ``{path, content}`` -> ``{path, bytes}``; parents are created inside root."""
    relative = args.get("path", "")
    content = args.get("content", "")
    if not isinstance(content, str):
        raise AgentFailure(ErrorCode.EXECUTOR_ERROR, "content must be text", {}, retryable=False)
    data = content.encode("utf-8", errors="replace")
    if len(data) > MAX_FILE_BYTES:
        raise AgentFailure(
            ErrorCode.EXECUTOR_ERROR,
            f"content is {len(data)} bytes; the limit is {MAX_FILE_BYTES}",
            {"path": relative},
            retryable=False,
        )
    target = confine(root, relative)
    real_root = Path(os.path.realpath(root))
    try:
        if target == real_root or target.is_dir():
            raise AgentFailure(
                ErrorCode.EXECUTOR_ERROR, f"{relative!r} is a directory", {"path": relative}, retryable=False
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        parent = Path(os.path.realpath(target.parent))
        if parent != real_root and real_root not in parent.parents:
            raise AgentFailure(
                ErrorCode.TOOL_DENIED,
                "the path leads outside the project directory",
                {"path": relative},
                retryable=False,
            )
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(target, flags, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        raise _os_failure("write", relative, exc) from None
    return {"path": relative, "bytes": len(data)}


BUILTIN_TOOLS: dict[str, ToolHandler] = {"file_read": file_read, "file_write": file_write}
"""Tools with an implementation in every runtime; others are registered by the host."""
