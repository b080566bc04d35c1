"""Skills and workflows in the API's shape (seed 003 field names: ``skillId``, ``skillForm``...)."""

from __future__ import annotations

from typing import Any

from capabilities.lifecycle import allowed_operations, dependency_status
from capabilities.models import CapabilityCard, Skill
from capabilities.skill_index import capability_id_for
from capabilities.skill_models import SkillOperation, Workflow


def operation_document(operation: SkillOperation) -> dict[str, Any]:
    """One history entry: ``{operationId, operation, outcome, fromStatus, toStatus, ...}``."""
    return {
        "operationId": operation.id,
        "operation": operation.operation,
        "outcome": operation.outcome,
        "fromStatus": operation.from_status,
        "toStatus": operation.to_status,
        "transitions": operation.transitions,
        "phases": operation.phases,
        "role": operation.role,
        "config": operation.config,
        "warnings": operation.warnings,
        "error": operation.error,
        "actor": operation.actor.get_username() if operation.actor else None,
        "at": operation.created_at,
    }


def capability_rows(skill: Skill) -> list[dict[str, Any]]:
    """The skill's declared capabilities with their registry state: ``{name, type, address,
    canonicalAddress, description, capabilityId, registered, enabled, inputParameters,
    outputParameters}``, ENTRY first, then EXPOSED, then INTERNAL."""
    cards = {c.capability_id: c for c in CapabilityCard.objects.filter(skill=skill)}
    rows = []
    for capability in skill.document.get("skill", {}).get("capabilities") or []:
        capability_id = capability_id_for(skill.skill_id, capability["name"])
        card = cards.get(capability_id)
        canonical = f"cap://{skill.skill_id}/{capability['name']}"
        rows.append(
            {
                "name": capability["name"],
                "type": capability["type"],
                "address": capability.get("address") or canonical,
                "canonicalAddress": canonical,
                "description": capability.get("description", ""),
                "capabilityId": capability_id,
                "registered": card is not None,
                "enabled": bool(card and card.enabled),
                "executor": card.executor if card else None,
                "inputParameters": capability.get("inputParameters") or [],
                "outputParameters": capability.get("outputParameters") or [],
            }
        )
    order = {"ENTRY": 0, "EXPOSED": 1, "INTERNAL": 2}
    return sorted(rows, key=lambda r: order[r["type"]])


def skill_document(skill: Skill, *, full: bool = True) -> dict[str, Any]:
    """A skill: ``{skillId, name, version, skillForm, status, errorReason, role, description,
    allowedOperations, capabilities, dependencies (with status), implementations, llmConfig,
    alertRules, warnings, history}``; ``full=False`` leaves out the last four."""
    doc = skill.document.get("skill", {})
    body: dict[str, Any] = {
        "skillId": skill.skill_id,
        "name": skill.name,
        "version": skill.version,
        "skillForm": skill.skill_form,
        "status": skill.status,
        "errorReason": skill.error_reason or None,
        "role": skill.role or None,
        "description": (doc.get("spec") or {}).get("description", ""),
        "tags": (doc.get("spec") or {}).get("tags", []),
        "allowedOperations": allowed_operations(skill.status),
        "capabilities": capability_rows(skill),
        "dependencies": dependency_status(skill),
        "updatedAt": skill.updated_at,
    }
    if full:
        body["implementations"] = sorted(doc.get("implementations") or [], key=lambda i: -int(i.get("priority", 100)))
        body["llmConfig"] = doc.get("llmConfig")
        body["spec"] = doc.get("spec") or {}
        body["installConfig"] = skill.install_config
        body["alertRules"] = [
            {
                "id": rule.pk,
                "name": rule.name,
                "capability": rule.capability or None,
                "condition": rule.condition,
                "durationS": rule.duration_s,
                "severity": rule.severity,
                "actions": rule.actions,
                "enabled": rule.enabled,
            }
            for rule in skill.alert_rules.all()
        ]
        body["warnings"] = skill.warnings
        body["history"] = [operation_document(o) for o in skill.operations.select_related("actor")[:50]]
    return body


def workflow_document(workflow: Workflow, *, full: bool = True) -> dict[str, Any]:
    """A workflow: ``{id, name, description, version, steps, warnings, source, updatedAt}``."""
    body: dict[str, Any] = {
        "id": workflow.workflow_id,
        "name": workflow.name,
        "description": workflow.description,
        "version": workflow.version,
        "stepCount": len(workflow.definition.get("steps", [])),
        "updatedAt": workflow.updated_at,
    }
    if full:
        body["steps"] = workflow.definition.get("steps", [])
        body["warnings"] = workflow.warnings
        body["source"] = workflow.source
    return body
