"""Saving and deleting workflows (seed 003 ``orchestration``): the action functions.

A save validates the YAML against the current registry (``workflow_spec.read_workflow``),
stores it, bumps the config version and publishes after commit (PRD §4.8), in one
transaction.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from capabilities.config import record_change
from capabilities.skill_models import Workflow
from capabilities.snapshot import governance_snapshot
from capabilities.workflow_spec import read_workflow
from teamclaw.errors import DomainError


class WorkflowConflict(DomainError):
    """Saving would overwrite (``exists``, 409) or update a workflow that is not there
    (``missing``, 404), or the YAML's id differs from the one being replaced (``id_mismatch``,
    409); the field at fault is ``orchestration.id``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(
            message,
            errors={"orchestration.id": [message]},
            code=code,
            status=404 if code == "missing" else 409,
            extra={"errorCode": code},
        )


def save_workflow(raw: bytes | str, *, actor: Any = None, replace: str | None = None) -> Workflow:
    """Create a workflow from YAML, or replace workflow ``replace`` (its id must match).

    Raises WorkflowError (every problem with its path) or WorkflowConflict."""
    spec = read_workflow(raw, governance_snapshot(None))
    text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
    warnings = [{"path": w.path, "line": w.line, "message": w.message} for w in spec.warnings]
    with transaction.atomic():
        existing = Workflow.objects.select_for_update().filter(workflow_id=spec.workflow_id).first()
        if replace is None and existing is not None:
            raise WorkflowConflict("exists", f"workflow {spec.workflow_id!r} exists; PUT /workflows/{spec.workflow_id}")
        if replace is not None:
            if spec.workflow_id != replace:
                raise WorkflowConflict(
                    "id_mismatch", f"the YAML defines {spec.workflow_id!r}, not {replace!r}: ids cannot change"
                )
            if existing is None:
                raise WorkflowConflict("missing", f"there is no workflow {replace!r}")
        workflow = existing or Workflow(workflow_id=spec.workflow_id, created_by=_user(actor))
        old_version = workflow.version if existing else 0
        workflow.name = spec.name
        workflow.description = spec.description
        workflow.source = text
        workflow.definition = spec.definition
        workflow.warnings = warnings
        workflow.version = old_version + 1
        workflow.save()
        record_change(
            "capability",
            changed_fields=["workflow"],
            changes={"workflow": {"old": old_version or None, "new": workflow.version}, "id": spec.workflow_id},
            note=f"workflow {spec.workflow_id} saved (v{workflow.version})",
            actor=actor,
        )
    return workflow


def delete_workflow(workflow: Workflow, *, actor: Any = None) -> None:
    """Delete ``workflow`` (its past runs stay as tasks)."""
    with transaction.atomic():
        workflow_id = workflow.workflow_id
        workflow.delete()
        record_change(
            "capability",
            changed_fields=["workflow"],
            changes={"workflow": {"old": workflow_id, "new": None}},
            note=f"workflow {workflow_id} deleted",
            actor=actor,
        )


def _user(actor: Any) -> Any:
    return actor if getattr(actor, "is_authenticated", False) else None
