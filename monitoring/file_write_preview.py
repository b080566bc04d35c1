"""What a ``file_write`` waiting for confirmation would do (PRD §4.7 ⚠️ 需确认), shown on its
card: the content as text, and a unified diff (``difflib``) against the file as it is now
when the file exists, so an operator approves a change they can read instead of a
JSON-escaped string.

The file is found the way the tool will write it (``teamclaw.runtime.tools.file_write``):
the path is relative to the role's ``file_scope`` inside the project's folder
(``capabilities.snapshot.project_directory``). Only reading happens here: nothing is created,
and a path the tool would refuse (absolute, ``..``, leading outside the folder through a
symlink) is shown as such, never read.
"""

from __future__ import annotations

import difflib
import itertools
import os
from pathlib import Path
from typing import Any

from django.utils.translation import gettext

from capabilities.models import AgentRole, Project
from capabilities.snapshot import effective_constraints, project_directory

MAX_PREVIEW_CHARS = 200_000
"""Longest content (characters) shown or compared; longer content is cut, and the card says so."""
MAX_DIFF_LINES = 2_000
"""Diff lines shown at most."""


def _scoped_root(role: str, project_id: str | None) -> Path:
    project = Project.objects.filter(slug=project_id).first() if project_id else None
    root = project_directory(project)
    owner = AgentRole.objects.filter(role=role).prefetch_related("constraints").first()
    scope = effective_constraints(owner, project).file_scope if owner else "."
    return root if scope in ("", ".") else root / scope


def _target(root: Path, relative: str) -> tuple[Path | None, str]:
    """The real path ``relative`` names inside ``root``, or None and why it would be refused."""
    candidate = Path(relative)
    if not relative or "\x00" in relative or candidate.is_absolute() or ".." in candidate.parts:
        return None, gettext("the tool would refuse this path (it must stay inside the project folder)")
    real_root = Path(os.path.realpath(root))
    target = Path(os.path.realpath(real_root / candidate))
    if target != real_root and real_root not in target.parents:
        return None, gettext("the tool would refuse this path (it leads outside the project folder)")
    return target, ""


def _classed(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "same"


def file_write_preview(role: str, project_id: str | None, args: dict[str, Any]) -> dict[str, Any]:
    """The card's view of a ``file_write {path, content}`` by ``role`` in ``project_id``:
    ``{path, content (text, cut at MAX_PREVIEW_CHARS), cut (bool), exists (bool), diff
    [{text, kind: file|hunk|add|del|same}] (empty when the file does not exist or is
    unchanged), unchanged (bool), note (why there is no diff, or "")}``."""
    path = str(args.get("path") or "")
    raw = args.get("content")
    content = raw if isinstance(raw, str) else ""
    shown = content[:MAX_PREVIEW_CHARS]
    preview: dict[str, Any] = {
        "path": path,
        "content": shown,
        "cut": len(content) > MAX_PREVIEW_CHARS,
        "exists": False,
        "diff": [],
        "unchanged": False,
        "note": "" if isinstance(raw, str) else gettext("the content is not text; the tool will refuse it"),
    }
    target, refused = _target(_scoped_root(role, project_id), path)
    if target is None:
        preview["note"] = refused
        return preview
    if not target.is_file():
        if target.exists():
            preview["note"] = gettext("the path is a folder; the tool will refuse it")
        return preview
    preview["exists"] = True
    try:
        current = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        preview["note"] = gettext("the current file is not readable UTF-8 text, so no diff is shown")
        return preview
    if current == content:
        preview["unchanged"] = True
        return preview
    lines = difflib.unified_diff(
        current[:MAX_PREVIEW_CHARS].splitlines(),
        shown.splitlines(),
        fromfile=f"{path} (now)",
        tofile=f"{path} (after the write)",
        lineterm="",
    )
    preview["diff"] = [{"text": line, "kind": _classed(line)} for line in itertools.islice(lines, MAX_DIFF_LINES)]
    return preview
