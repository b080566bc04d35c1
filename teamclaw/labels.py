"""The words a page shows for an identifier (a status, a priority, a tool mode, a review's
decision...), in the page's language (issue 32 "Every word in the page's language").

The identifiers stay what they are everywhere else (the API, the artifacts, CSS classes,
``data-*`` attributes); only the text a reader sees is translated, through Django's catalog
with one ``pgettext`` context per vocabulary, since the same English word may read
differently in two of them ("open" a point vs. an "open" alert). The template filter is
``{% load labels %}{{ value|label:"status" }}`` (``capabilities.templatetags.labels``).

Each vocabulary lists every value its identifier takes (the runtime's enums, the models'
choices, the review's rows); a value not listed is shown as it is, so a new identifier is
never hidden, only left untranslated until it is added here and to the catalog
(tests/web/test_translations.py walks every page in Chinese and finds it)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import Any, cast

from django.utils.functional import Promise, lazy
from django.utils.translation import get_language, gettext, pgettext_lazy

VOCABULARIES: dict[str, dict[str, Promise]] = {
    # Agent contexts (PRD §4.6 AgentStatus), tasks, workflow runs, instances, contexts' calls.
    "status": {
        "initializing": pgettext_lazy("status", "initializing"),
        "ready": pgettext_lazy("status", "ready"),
        "executing": pgettext_lazy("status", "executing"),
        "waiting_response": pgettext_lazy("status", "waiting for a reply"),
        "waiting_user": pgettext_lazy("status", "waiting for you"),
        "paused": pgettext_lazy("status", "paused"),
        "queued": pgettext_lazy("status", "queued"),
        "running": pgettext_lazy("status", "running"),
        "completed": pgettext_lazy("status", "completed"),
        "failed": pgettext_lazy("status", "failed"),
        "terminated": pgettext_lazy("status", "terminated"),
        "cancelled": pgettext_lazy("status", "cancelled"),
        "idle": pgettext_lazy("status", "idle"),
        "busy": pgettext_lazy("status", "busy"),
        "unavailable": pgettext_lazy("status", "unavailable"),
        "alive": pgettext_lazy("status", "alive"),
        "silent": pgettext_lazy("status", "silent"),
        "ok": pgettext_lazy("status", "ok"),
        "error": pgettext_lazy("status", "error"),
        "timeout": pgettext_lazy("status", "timed out"),
        # Operator confirmations and answers (monitoring.ToolConfirmation.STATUSES).
        "pending": pgettext_lazy("status", "pending"),
        "approved": pgettext_lazy("status", "approved"),
        "rejected": pgettext_lazy("status", "rejected"),
        "expired": pgettext_lazy("status", "expired"),
        "answered": pgettext_lazy("status", "answered"),
        # Messages (teamclaw.runtime.messages.DeliveryStatus) and calls.
        "sent": pgettext_lazy("status", "sent"),
        "delivered": pgettext_lazy("status", "delivered"),
        "dropped": pgettext_lazy("status", "dropped"),
        "denied": pgettext_lazy("status", "denied"),
        "success": pgettext_lazy("status", "succeeded"),
        # A tool use's outcome (the trace).
        "used": pgettext_lazy("status", "used"),
        "confirmed": pgettext_lazy("status", "confirmed"),
    },
    # Mailbox priorities (teamclaw.runtime.messages.Priority).
    "priority": {
        "low": pgettext_lazy("priority", "low"),
        "normal": pgettext_lazy("priority", "normal"),
        "high": pgettext_lazy("priority", "high"),
        "urgent": pgettext_lazy("priority", "urgent"),
    },
    # The tool permission matrix's cells (PRD §4.7).
    "tool mode": {
        "allow": pgettext_lazy("tool mode", "allow"),
        "confirm": pgettext_lazy("tool mode", "confirm"),
        "deny": pgettext_lazy("tool mode", "deny"),
    },
    # Snapshot kinds (PRD §4.6) and alerts' and findings' severities.
    "snapshot": {
        "auto": pgettext_lazy("snapshot", "automatic"),
        "error": pgettext_lazy("snapshot", "error"),
        "manual": pgettext_lazy("snapshot", "manual"),
    },
    "severity": {
        "critical": pgettext_lazy("severity", "critical"),
        "major": pgettext_lazy("severity", "major"),
        "minor": pgettext_lazy("severity", "minor"),
        "warning": pgettext_lazy("severity", "warning"),
        "info": pgettext_lazy("severity", "info"),
    },
    # A point of the review the operator decides (seed 002 §6.5) and what became of it.
    "decision": {
        "change": pgettext_lazy("decision", "change"),
        "open_point": pgettext_lazy("decision", "open point"),
        "adopted": pgettext_lazy("decision", "adopted"),
        "rejected": pgettext_lazy("decision", "rejected"),
        "deferred": pgettext_lazy("decision", "deferred"),
        "accept": pgettext_lazy("decision", "accept"),
        "reject": pgettext_lazy("decision", "reject"),
        "contested": pgettext_lazy("decision", "contested"),
    },
    # The merge rule behind a decision (teamclaw.workflows.consolidation.decide).
    "merge rule": {
        "rule_1_optimise": pgettext_lazy("merge rule", "It refines the requirement and the experts agree."),
        "rule_2_cautious": pgettext_lazy(
            "merge rule", "It changes the user's wording, which is adopted only if every expert agrees."
        ),
        "rule_3_forbidden": pgettext_lazy(
            "merge rule", "It would drop or weaken what the user explicitly asked for; the original requirement wins."
        ),
        "owner_decision": pgettext_lazy("merge rule", "Only the requirement owner can answer this."),
        "arbitration_compliance": pgettext_lazy("merge rule", "Contested; compliance comes first in arbitration."),
        "arbitration_feasibility": pgettext_lazy(
            "merge rule", "Contested; technical feasibility comes next in arbitration."
        ),
        "arbitration_user": pgettext_lazy("merge rule", "Contested and not settled by arbitration; the user decides."),
    },
    # The debate's rounds (seed 002 §6.2-6.4) and an expert's stance in them.
    "round": {
        "review": pgettext_lazy("round", "review"),
        "evaluate": pgettext_lazy("round", "evaluation"),
        "respond": pgettext_lazy("round", "response"),
    },
    "stance": {
        "raised": pgettext_lazy("stance", "raised it"),
        "agree": pgettext_lazy("stance", "agrees"),
        "challenge": pgettext_lazy("stance", "challenges"),
        "supplement": pgettext_lazy("stance", "adds to it"),
        "accept": pgettext_lazy("stance", "accepts"),
        "defend": pgettext_lazy("stance", "defends"),
        "revise": pgettext_lazy("stance", "revises"),
        "withdraw": pgettext_lazy("stance", "withdraws"),
    },
    # The interview's wording (seed 002 principle 1): who a round's questions are written for.
    "wording": {
        "business": pgettext_lazy("wording", "questions in business terms"),
        "technical": pgettext_lazy("wording", "questions in technical terms"),
    },
    # The built-in workflows (teamclaw.workflows.WORKFLOWS); a saved workflow shows its id.
    "workflow": {
        "requirement_review": pgettext_lazy("workflow", "requirement review"),
        "generic": pgettext_lazy("workflow", "general task"),
    },
    # What a staged matrix change would have done to a recorded call (monitoring.whatif).
    "what-if effect": {
        "denied": pgettext_lazy("what-if effect", "would now be denied"),
        "allowed": pgettext_lazy("what-if effect", "newly allowed"),
        "confirm": pgettext_lazy("what-if effect", "would now wait for confirmation"),
    },
    # Message types (PRD §4.4 MessageType).
    "message type": {
        "invoke_request": pgettext_lazy("message type", "call"),
        "invoke_response": pgettext_lazy("message type", "answer"),
        "invoke_error": pgettext_lazy("message type", "call failed"),
        "hook_event": pgettext_lazy("message type", "event"),
        "hook_ack": pgettext_lazy("message type", "event received"),
        "status_update": pgettext_lazy("message type", "status update"),
        "progress_report": pgettext_lazy("message type", "progress report"),
        "question_broadcast": pgettext_lazy("message type", "question to all"),
        "artifact_share": pgettext_lazy("message type", "artifact shared"),
        "context_sync": pgettext_lazy("message type", "context sync"),
    },
    # Whether an audited change was applied, refused, or applied to one task alone.
    "change outcome": {
        "applied": pgettext_lazy("change outcome", "applied"),
        "refused": pgettext_lazy("change outcome", "refused"),
        "override": pgettext_lazy("change outcome", "one task only"),
    },
    # The audit page's outcome filter: "applied only"... ("one task only" + "only" read
    # "one task only only" when the filter was built from the outcome's own label).
    "change outcome filter": {
        "applied": pgettext_lazy("change outcome filter", "applied only"),
        "refused": pgettext_lazy("change outcome filter", "refused only"),
        "override": pgettext_lazy("change outcome filter", "one-task overrides only"),
    },
    # A replay step's kind (monitoring/data/replay_steps.yaml; monitoring.task_replay).
    "step kind": {
        "start": pgettext_lazy("step kind", "start"),
        "end": pgettext_lazy("step kind", "end"),
        "call": pgettext_lazy("step kind", "call taken"),
        "answer": pgettext_lazy("step kind", "answer"),
        "tool_use": pgettext_lazy("step kind", "tool use"),
        "model_call": pgettext_lazy("step kind", "model call"),
        "operator_wait": pgettext_lazy("step kind", "operator wait"),
        "instruction": pgettext_lazy("step kind", "instruction"),
        "invoke": pgettext_lazy("step kind", "invoke"),
        "error": pgettext_lazy("step kind", "error"),
        "knowledge": pgettext_lazy("step kind", "knowledge"),
        "manual": pgettext_lazy("step kind", "manual snapshot"),
        "message": pgettext_lazy("step kind", "message"),
        "snapshot": pgettext_lazy("step kind", "snapshot"),
    },
    # What a task's call is: an invoke (a request answered) or a hook (an event).
    "call": {
        "invoke": pgettext_lazy("call", "invoke"),
        "hook": pgettext_lazy("call", "hook"),
        "tool_use": pgettext_lazy("call", "tool use"),
        "model_call": pgettext_lazy("call", "model call"),
        "operator_wait": pgettext_lazy("call", "operator wait"),
    },
    # Capability categories (PRD §4.2, teamclaw.runtime.config.CATEGORIES).
    "category": {
        "analysis": pgettext_lazy("category", "analysis"),
        "design": pgettext_lazy("category", "design"),
        "generation": pgettext_lazy("category", "generation"),
        "execution": pgettext_lazy("category", "execution"),
        "review": pgettext_lazy("category", "review"),
        "communication": pgettext_lazy("category", "communication"),
        "coordination": pgettext_lazy("category", "coordination"),
    },
    # What a review finding is about (teamclaw.workflows.model_review.CATEGORIES).
    "finding": {
        "performance": pgettext_lazy("finding", "performance"),
        "reliability": pgettext_lazy("finding", "reliability"),
        "scalability": pgettext_lazy("finding", "scalability"),
        "integration": pgettext_lazy("finding", "integration"),
        "units": pgettext_lazy("finding", "units"),
        "scope": pgettext_lazy("finding", "scope"),
        "acceptance": pgettext_lazy("finding", "acceptance criteria"),
        "users": pgettext_lazy("finding", "users"),
        "goals": pgettext_lazy("finding", "goals"),
        "ambiguity": pgettext_lazy("finding", "ambiguity"),
        "ai": pgettext_lazy("finding", "AI"),
        "data": pgettext_lazy("finding", "data"),
        "evaluation": pgettext_lazy("finding", "evaluation"),
        "compliance": pgettext_lazy("finding", "compliance"),
        "privacy": pgettext_lazy("finding", "privacy"),
        "terminology": pgettext_lazy("finding", "terminology"),
        "time": pgettext_lazy("finding", "time"),
        # the requirement-quality engine's categories (docs/review-rules.md)
        "vague_term": pgettext_lazy("finding", "vague term"),
        "missing_unit": pgettext_lazy("finding", "missing unit"),
        "undefined_term": pgettext_lazy("finding", "undefined term"),
        "escape_clause": pgettext_lazy("finding", "escape clause"),
        "absolute": pgettext_lazy("finding", "absolute"),
        "compound": pgettext_lazy("finding", "compound"),
        "passive_no_actor": pgettext_lazy("finding", "no actor"),
        "untestable": pgettext_lazy("finding", "untestable"),
        "missing_error_handling": pgettext_lazy("finding", "missing error handling"),
        "limit_without_overflow": pgettext_lazy("finding", "limit without overflow rule"),
        "time_boundary": pgettext_lazy("finding", "time boundary"),
        "role_permission_gap": pgettext_lazy("finding", "permission gap"),
        "personal_data": pgettext_lazy("finding", "personal data"),
        "notification_consent": pgettext_lazy("finding", "notification consent"),
        "contradiction": pgettext_lazy("finding", "contradiction"),
        "integration_failure": pgettext_lazy("finding", "integration failure"),
        "ai_without_evaluation": pgettext_lazy("finding", "AI without evaluation"),
        "domain_rule_gap": pgettext_lazy("finding", "domain rule gap"),
    },
    # The six prompt template types (PRD §2.5) and the layers a template comes from (§4.5).
    "template type": {
        "system_prompt": pgettext_lazy("template type", "system prompt"),
        "persona": pgettext_lazy("template type", "persona"),
        "context_template": pgettext_lazy("template type", "context template"),
        "output_format": pgettext_lazy("template type", "output format"),
        "tool_instruction": pgettext_lazy("template type", "tool instruction"),
        "guardrails": pgettext_lazy("template type", "guardrails"),
    },
    "layer": {
        "global": pgettext_lazy("layer", "global"),
        "project": pgettext_lazy("layer", "project"),
        "task": pgettext_lazy("layer", "task"),
        "builtin": pgettext_lazy("layer", "built-in default"),
    },
    "version bump": {
        "patch": pgettext_lazy("version bump", "patch"),
        "minor": pgettext_lazy("version bump", "minor"),
        "major": pgettext_lazy("version bump", "major"),
        "prerelease": pgettext_lazy("version bump", "prerelease"),
    },
    # A text's language (prompt templates, documents).
    "language": {
        "en": pgettext_lazy("language", "English"),
        "zh": pgettext_lazy("language", "Chinese"),
        "zh-hans": pgettext_lazy("language", "Chinese"),
    },
    # The PRD §4.7 tools (the tool matrix's columns).
    "tool": {
        "file_read": pgettext_lazy("tool", "read files"),
        "file_write": pgettext_lazy("tool", "write files"),
        "code_execution": pgettext_lazy("tool", "run code"),
        "database": pgettext_lazy("tool", "database"),
        "deployment": pgettext_lazy("tool", "deployment"),
        "network": pgettext_lazy("tool", "network"),
    },
    # What answers a capability (capabilities.executors) and what runs agents (runs.workers).
    "executor": {
        "offline": pgettext_lazy("executor", "offline"),
        "openai": pgettext_lazy("executor", "model"),
        "http": pgettext_lazy("executor", "HTTP plugin"),
        "mcp": pgettext_lazy("executor", "MCP tool"),
        "skill": pgettext_lazy("executor", "skill"),
    },
    "worker": {
        "embedded": pgettext_lazy("worker", "in the server"),
        "worker": pgettext_lazy("worker", "worker process"),
        "terminal": pgettext_lazy("worker", "terminal run"),
        "alive": pgettext_lazy("worker", "alive"),
        "silent": pgettext_lazy("worker", "silent"),
        "stopped": pgettext_lazy("worker", "stopped"),
    },
    # A skill's lifecycle state (seed 003 SkillLifecycleState, capabilities.skill_models.SkillStatus).
    "skill state": {
        "DISCOVERED": pgettext_lazy("skill state", "discovered"),
        "INSTALLING": pgettext_lazy("skill state", "installing"),
        "INSTALLED": pgettext_lazy("skill state", "installed"),
        "ACTIVATING": pgettext_lazy("skill state", "activating"),
        "ACTIVATED": pgettext_lazy("skill state", "activated"),
        "DEACTIVATING": pgettext_lazy("skill state", "deactivating"),
        "DEACTIVATED": pgettext_lazy("skill state", "deactivated"),
        "UNINSTALLING": pgettext_lazy("skill state", "uninstalling"),
        "UNINSTALLED": pgettext_lazy("skill state", "uninstalled"),
        "ERROR": pgettext_lazy("skill state", "error"),
    },
    # What an operator does to a skill (seed 003 lifecycle, capabilities.lifecycle.OPERATIONS).
    "skill action": {
        "discover": pgettext_lazy("skill action", "Discover"),
        "install": pgettext_lazy("skill action", "Install"),
        "activate": pgettext_lazy("skill action", "Activate"),
        "deactivate": pgettext_lazy("skill action", "Deactivate"),
        "uninstall": pgettext_lazy("skill action", "Uninstall"),
    },
    # The dependency graph's edges.
    "edge": {
        "provides": pgettext_lazy("edge", "provides"),
        "owns": pgettext_lazy("edge", "owns"),
        "may_invoke": pgettext_lazy("edge", "may invoke"),
        "depends_on": pgettext_lazy("edge", "depends on"),
    },
    # Notes the system writes on its own changes (an operator's note is shown as written).
    "note": {
        "built-in TeamClaw team loaded": pgettext_lazy("note", "built-in TeamClaw team loaded"),
        "built-in default": pgettext_lazy("note", "built-in default"),
    },
    # What a configuration change touched (capabilities.ConfigChange.config_type) and the
    # parts of the configuration a change lists.
    "config": {
        "prompt": pgettext_lazy("config", "prompt"),
        "permission": pgettext_lazy("config", "invoke permission"),
        "tool_binding": pgettext_lazy("config", "tool permission"),
        "constraint": pgettext_lazy("config", "constraints"),
        "role": pgettext_lazy("config", "role"),
        "capability": pgettext_lazy("config", "capability"),
        "skill": pgettext_lazy("config", "skill"),
        "import": pgettext_lazy("config", "import"),
        "builtin": pgettext_lazy("config", "built-in team"),
        "project": pgettext_lazy("config", "project"),
        "fork": pgettext_lazy("config", "fork"),
        # The parts of the configuration a change lists (``changed_fields``).
        "cards": pgettext_lazy("config", "capability cards"),
        "constraints": pgettext_lazy("config", "constraints"),
        "invoke_cells": pgettext_lazy("config", "invoke permissions"),
        "prompts": pgettext_lazy("config", "prompts"),
        "roles": pgettext_lazy("config", "roles"),
        "tool_cells": pgettext_lazy("config", "tool permissions"),
        # Fields a change names (``roles.dba.enabled``, a skill's ``document``...).
        "enabled": pgettext_lazy("config", "enabled"),
        "description": pgettext_lazy("config", "description"),
        "responsibilities": pgettext_lazy("config", "responsibilities"),
        "emoji": pgettext_lazy("config", "emoji"),
        "status": pgettext_lazy("config", "status"),
        "version": pgettext_lazy("config", "version"),
        "document": pgettext_lazy("config", "document"),
        "executor": pgettext_lazy("config", "executor"),
        "model": pgettext_lazy("config", "model"),
        "endpoint": pgettext_lazy("config", "endpoint"),
        "content": pgettext_lazy("config", "content"),
        "language": pgettext_lazy("config", "language"),
        "variables": pgettext_lazy("config", "variables"),
        "created": pgettext_lazy("config", "created"),
        "deleted": pgettext_lazy("config", "deleted"),
        "active": pgettext_lazy("config", "active version"),
        "members": pgettext_lazy("config", "members"),
    },
}
"""``vocabulary -> identifier -> label``; the vocabulary's name is the catalog context."""

VOCABULARIES["step kind"].update(VOCABULARIES["message type"])  # a replay step that is a message


def label(value: object, vocabulary: str) -> str:
    """The label of ``value`` in ``vocabulary``, in the active language; ``value`` as a
    string when the vocabulary does not list it ('' for None). Raises KeyError for an
    unknown vocabulary (a template's typo fails its page's test)."""
    words = VOCABULARIES[vocabulary]
    if value is None:
        return ""
    text = str(value)
    return str(words[text]) if text in words else text


def list_separator() -> str:
    """What joins the items of a list in the active language: ", " in English, the
    enumeration comma "、" in Chinese (a Latin comma between Chinese words reads as a typo).
    Not a catalog entry: a lone "," is a text node of many pages, which the translation
    tests would then take for English left on a Chinese page."""
    return "、" if (get_language() or "").startswith("zh") else ", "


def _chinese() -> bool:
    return (get_language() or "").startswith("zh")


def colon() -> str:
    """What follows a label before its value in the active language: ": " in English, the
    full-width "：" in Chinese (issue 32: ASCII punctuation in Chinese text). Not a catalog
    entry, for the reason ``list_separator`` gives."""
    return "：" if _chinese() else ": "


def brackets() -> tuple[str, str]:
    """The opening and closing bracket of the active language: ``("(", ")")`` in English,
    the full-width ``("（", "）")`` in Chinese (around text with markup in it)."""
    return ("（", "）") if _chinese() else ("(", ")")


def bracketed(text: object) -> str:
    """``text`` in brackets of the active language: ``(text)`` in English, the full-width
    ``（text）`` in Chinese."""
    return f"（{text}）" if _chinese() else f"({text})"


def labels(values: Iterable[object] | str | None, vocabulary: str) -> str:
    """``label`` of every value of ``values``, joined by ``list_separator`` (a string or
    None: ``label``)."""
    if values is None or isinstance(values, str):
        return label(values, vocabulary)
    return list_separator().join(label(v, vocabulary) for v in values)


@cache
def _pattern(template: str) -> re.Pattern[str]:
    """A pattern matching the texts made from ``template`` (its ``%(name)s`` as groups)."""
    parts = re.split(r"%\((\w+)\)s", template)
    return re.compile("^" + "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" for i, p in enumerate(parts)) + "$")


def reword(text: str, templates: Iterable[str]) -> tuple[str, dict[str, str]] | None:
    """``(template, values)`` of the first of ``templates`` (English ``%(name)s`` formats,
    marked for the catalog) that ``text`` was made from, or None: so a page can word in its
    language a text the system recorded in English."""
    for template in templates:
        if match := _pattern(template).match(text):
            return template, match.groupdict()
    return None


def reworded(text: str, templates: Iterable[str]) -> str:
    """``text`` in the active language when it was made from one of ``templates``
    (``reword``), else ``text`` as it is. Never raises."""
    found = reword(text, templates)
    if found is None:
        return text
    template, values = found
    try:
        return gettext(template) % values
    except (KeyError, ValueError, TypeError):  # a catalog entry with other placeholders
        return text


label_lazy = lazy(label, str)
"""``label`` read when its text is used (in the language active then): for a refusal's
values (``teamclaw.errors.worded``), raised before the reader's language is known."""


def _worded(message: str | Promise, params: dict[str, Any]) -> str:
    return str(message) % params if params else str(message)


_worded_lazily = lazy(_worded, str)


def worded(message: str | Promise, **params: Any) -> str:
    """``message`` (a ``gettext_lazy`` text with ``%(name)s`` places) filled with ``params``,
    lazily: translated when it is read, in the language active then, not when it is raised
    (a refusal raised in a worker or under another language still reads in the reader's;
    ``teamclaw.errors.DomainError.message``)."""
    return cast(str, _worded_lazily(message, params))
