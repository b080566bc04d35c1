"""The runs of each prompt version (issue 30, point 5; PRD §4.5): which tasks and contexts
rendered it.

Each execution context records the exact versions of its role's prompts it rendered, per
template type and layer (``input_context.prompt_versions``:
``{template_type: {"global": version, "project": version or None}}``, written by the runtime
when the prompt is rendered). A version's runs are the contexts of the template's role whose
record names that version in the template's layer (``global`` for the global template, else
``project``, in that project), among those the user may see (``monitoring.access``). Nothing
is derived: a context that never rendered the prompt (the offline executor) lists under no
version.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from monitoring.access import visible_contexts

LIMIT = 10
"""Most runs listed per version, newest first (``count`` gives them all)."""


def version_runs(
    role: str, template_type: str, project: Any, versions: Iterable[str], *, user: Any
) -> dict[str, dict[str, Any]]:
    """``{version: {"count", "runs": [{context_id, task_id, title, status, created_at}]}}``
    for each of ``versions`` of ``role``'s ``template_type`` in ``project``'s layer (None:
    the global one), over the contexts ``user`` may see; newest first, at most LIMIT."""
    layer = "project" if project is not None else "global"
    contexts = visible_contexts(user).filter(role=role)
    if project is not None:
        contexts = contexts.filter(project=project)
    out: dict[str, dict[str, Any]] = {}
    for version in versions:
        matching = contexts.filter(**{f"input_context__prompt_versions__{template_type}__{layer}": version})
        rows = matching.select_related("task").order_by("-created_at")[:LIMIT]
        out[version] = {
            "count": matching.count(),
            "runs": [
                {
                    "context_id": c.id,
                    "task_id": c.task_id,
                    "title": c.task.title or c.task_id,
                    "status": c.status,
                    "created_at": c.created_at,
                }
                for c in rows
            ],
        }
    return out
