"""Project on/off switches for roles and cards (PRD §4.1 项目级角色配置覆盖, US-06).

A switch row exists only while the project's value differs from the global one: asking for
the global value (or ``None``, "inherit") removes it, so the override layer holds exactly
what a project changed and a page can highlight it with "reset to global".
"""

from __future__ import annotations

from typing import Any

from capabilities.models import Project


def set_enabled_override(
    model: Any, project: Project, field: str, obj: Any, global_value: bool, wanted: bool | None
) -> dict[str, Any] | None:
    """Set ``project``'s ``enabled`` override (a ``ProjectRoleOverride`` or
    ``ProjectCapabilityOverride``) of ``obj`` (``field`` names its foreign key).

    Returns ``{old, new}`` in override terms (``None`` = inherits), or None when unchanged.
    """
    row = model.objects.filter(project=project, **{field: obj}).first()
    old = row.enabled if row else None
    new = None if wanted is None or wanted == global_value else wanted
    if old == new:
        return None
    if new is None:
        row.delete()
    else:
        model.objects.update_or_create(project=project, **{field: obj}, defaults={"enabled": new})
    return {"old": old, "new": new}
