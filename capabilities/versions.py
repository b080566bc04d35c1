"""Versions of config documents and optimistic concurrency (issue 5; PRD §4.8 配置版本号).

A *config document* is what an operator edits in one go: the invoke matrix, the tool matrix,
one role's constraints, one role, one capability card or one project, each globally
(``project=None``) or for a project. Its ``version`` is the config version (the global
counter ``record_change`` bumps) of the last change that touched it; 0 = never changed.
A project's view is global values plus its overrides, so the version a project view shows
is ``max(global layer, project layer)``: a change to either makes a loaded copy stale.

Every save follows one protocol, inside ``transaction.atomic()``:

1. ``lock_config()`` takes the config row lock, so saves serialise (compare-and-swap);
2. ``expect_version(name, project, version)`` raises ``StaleVersion`` (HTTP 409) listing
   the changes saved since ``version``;
3. the change is applied, then ``commit_change(...)`` audits it through
   ``capabilities.config.record_change`` (one config version per save, event after commit)
   and stamps the touched documents with the new version.

Change keys (``ConfigChange.changed_fields`` and ``changes``) are dotted paths naming the
document: ``invoke_matrix.<caller>.<callee>``, ``tool_matrix.<role>.<tool>``,
``constraints.<role>.<field>``, ``roles.<role>.<field>``, ``capabilities.<id>.<field>``,
``projects.<slug>.<field>``, ``prompts.<role>.<template_type>``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import Q

from capabilities.config import record_change
from capabilities.errors import StaleVersion
from capabilities.models import ConfigChange, ConfigDocument, ConfigState, Project

CHANGES_SHOWN = 50
"""Most audit rows a 409 lists (the newest)."""


def lock_config() -> ConfigState:
    """Take the config row lock for the rest of the caller's transaction.

    Saves read what they compare against (document versions, current values) after this,
    so two saves cannot interleave: on SQLite ``BEGIN IMMEDIATE`` already serialises
    writers; on PostgreSQL this ``SELECT ... FOR UPDATE`` does. Raises RuntimeError outside
    ``transaction.atomic()``.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("lock_config must be called inside transaction.atomic()")
    state = ConfigState.objects.select_for_update().order_by("id").first()
    if state is None:
        ConfigState.objects.create(version=0)
        state = ConfigState.objects.select_for_update().order_by("id").first()
    assert state is not None
    return state


def change_prefix(name: str, project: Project | None = None) -> str:
    """The change-key prefix of document ``name`` (``constraints:coderA`` -> ``constraints.coderA.``)."""
    if name == "project":
        return f"projects.{project.slug if project else ''}."
    kind, _, key = name.partition(":")
    plural = {"role": "roles", "capability": "capabilities"}.get(kind, kind)
    return f"{plural}.{key}." if key else f"{plural}."


def document_label(name: str, project: Project | None) -> str:
    """A human name for messages: ``the invoke matrix of project shop``."""
    kind, _, key = name.partition(":")
    label = {
        "invoke_matrix": "the invoke matrix",
        "tool_matrix": "the tool matrix",
        "constraints": f"the constraints of {key}",
        "role": f"role {key}",
        "capability": f"capability {key}",
        "project": "the project",
    }.get(kind, name)
    return f"{label} of project {project.slug}" if project is not None and kind != "project" else label


def document_version(name: str, project: Project | None = None) -> int:
    """The version of document ``name`` as ``project`` sees it (max of both layers)."""
    return document_versions([name], project)[name]


def document_versions(names: Iterable[str], project: Project | None = None) -> dict[str, int]:
    """``name -> version`` for several documents at once (missing rows are 0)."""
    names = list(names)
    scope = Q(project__isnull=True) | Q(project=project) if project is not None else Q(project__isnull=True)
    out = dict.fromkeys(names, 0)
    for row_name, version in ConfigDocument.objects.filter(scope, name__in=names).values_list("name", "version"):
        out[row_name] = max(out[row_name], version)
    return out


def changes_since(name: str, project: Project | None, version: int) -> list[dict[str, Any]]:
    """Audit rows after ``version`` that touched document ``name`` for ``project``'s view,
    restricted to its keys: ``[{version, config_type, actor, at, note, changes}]``, oldest first."""
    prefix = change_prefix(name, project)
    scope = Q(project__isnull=True) | Q(project=project) if project is not None else Q(project__isnull=True)
    rows = (
        ConfigChange.objects.filter(scope, new_version__gt=version)
        .select_related("actor", "project")
        .order_by("-new_version")[: CHANGES_SHOWN * 4]
    )
    out = []
    for row in rows:
        touched = {key: value for key, value in (row.changes or {}).items() if key.startswith(prefix)}
        if not touched:
            continue
        out.append(
            {
                "version": row.new_version,
                "config_type": row.config_type,
                "project": row.project.slug if row.project_id and row.project else None,
                "actor": row.actor.get_username() if row.actor else None,
                "at": row.created_at.isoformat(),
                "note": row.note,
                "changes": touched,
            }
        )
        if len(out) >= CHANGES_SHOWN:
            break
    out.reverse()
    return out


def expect_version(name: str, project: Project | None, version: int | None) -> int:
    """Check the operator's ``version`` against the document's; returns the current one.

    Call after ``lock_config()``. Raises StaleVersion (with the changes since ``version``)
    when they differ.
    """
    current = document_version(name, project)
    if version != current:
        since = version if version is not None and version < current else 0
        raise StaleVersion(document_label(name, project), version or 0, current, changes_since(name, project, since))
    return current


def touch(names: Iterable[str], project: Project | None, version: int) -> None:
    """Stamp documents ``names`` of ``project``'s layer with config ``version``."""
    for name in set(names):
        ConfigDocument.objects.update_or_create(name=name, project=project, defaults={"version": version})


def commit_change(
    config_type: str,
    *,
    documents: Iterable[str],
    changes: dict[str, dict[str, Any]],
    project: Project | None = None,
    role: str = "",
    note: str = "",
    actor: Any = None,
) -> ConfigChange | None:
    """Audit ``changes`` (``{key: {old, new}}``) as one config version and stamp ``documents``.

    Returns the ConfigChange, or None when ``changes`` is empty (nothing saved, no version
    bump, no event). Must run inside the save's ``transaction.atomic()``.
    """
    if not changes:
        return None
    change = record_change(
        config_type,
        changed_fields=list(changes),
        changes=changes,
        role=role,
        project=project,
        note=note,
        actor=actor,
    )
    touch(documents, project, change.new_version)
    return change


def single_role(keys: Iterable[str]) -> str:
    """The role a set of change keys is about, when they all name one (``''`` otherwise)."""
    roles = {key.split(".")[1] for key in keys if key.count(".") >= 2}
    return roles.pop() if len(roles) == 1 else ""


def documents_for(keys: Iterable[str]) -> set[str]:
    """The documents a set of change keys touches (``constraints.coderA.timeout_s`` ->
    ``constraints:coderA``); prompt keys name no document here."""
    docs: set[str] = set()
    for key in keys:
        head, _, rest = key.partition(".")
        name = rest.split(".", 1)[0]
        if head in {"invoke_matrix", "tool_matrix"}:
            docs.add(head)
        elif head == "constraints":
            docs.add(f"constraints:{name}")
        elif head == "roles":
            docs.add(f"role:{name}")
        elif head == "capabilities":
            docs.add(f"capability:{name}")
        elif head == "projects":
            docs.add("project")
    return docs
