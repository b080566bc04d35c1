"""The ``ConfigSnapshot`` a task runs on: the governed configuration with every prompt layer.

Tasks pin the snapshot current at their start for their whole life (PRD §4.8); the runtime
reloads it when the config version moved on (``teamclaw.runtime.config_cache``).
"""

from __future__ import annotations

from capabilities.models import Project
from capabilities.snapshot import governance_snapshot
from prompts.layers import layered_prompts
from teamclaw.runtime.config import ConfigSnapshot


def build_snapshot(project_slug: str | None = None) -> ConfigSnapshot:
    """The effective configuration for ``project_slug`` (None = global) at the current
    version, prompts included (PRD §4.5 global and project layers).

    Raises Project.DoesNotExist for an unknown slug.
    """
    project = Project.objects.get(slug=project_slug) if project_slug else None
    return governance_snapshot(project, prompts=layered_prompts(project))
