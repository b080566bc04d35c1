"""Current state of what the live pages show, read from the database (PRD §4.6, US-04/05).

Used three ways with the same templates: the first render of ``/live/`` and of a task's
page, and the ``state`` frame a socket sends on connect and on resync ("on connect the
server sends the current state, so a reconnect misses nothing"). A state frame replaces the
inside of each live container with the page's own partial for it.
"""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string

from capabilities.models import ConfigChange
from monitoring import dom_ids, live_items
from monitoring.access import can_operate_task, sees_every_task, visible_contexts, visible_tasks
from monitoring.call_graph import call_graph
from monitoring.live_filters import LiveFilters
from monitoring.message_log import message_page
from monitoring.models import Alert, Message, Task, ToolConfirmation
from monitoring.outcome import outcome_panel, task_outcome, task_phase
from monitoring.run_result import workflow_run_result

ACTIVE_CARDS = 48
RECENT_CARDS = 12
TASK_CARDS = 200
CONFIRMATIONS = 50
ALERTS = 20
CONFIG_CHANGES = 10
RUNNING_TASKS = 20

FINAL = tuple(live_items.FINAL_CONTEXT_STATUSES)


def context_cards(user: Any, filters: LiveFilters) -> list[dict[str, Any]]:
    """Cards for the contexts at work now (and the latest finished ones, so the page is never
    empty after a run); every context of the task when filtered by task."""
    queryset = visible_contexts(user)
    if filters.role:
        queryset = queryset.filter(role=filters.role)
    if filters.project:
        queryset = queryset.filter(project_id=filters.project)
    if filters.task:
        rows = list(queryset.filter(task_id=filters.task).order_by("created_at")[:TASK_CARDS])
        return [live_items.context_item_from_row(r) for r in rows]
    active = list(queryset.exclude(status__in=FINAL).order_by("-updated_at")[:ACTIVE_CARDS])
    active.sort(key=lambda r: r.created_at)
    recent = []
    if len(active) < RECENT_CARDS:
        recent = list(queryset.filter(status__in=FINAL).order_by("-updated_at")[: RECENT_CARDS - len(active)])
    return [live_items.context_item_from_row(r) for r in active + recent]


def context_groups(cards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The live page's agent cards grouped by task, in the order their first card comes:
    ``[{task_id, title, cards}]`` with the task's title (its id when it has none), so the
    cards of several tasks never pile up together (issue 17). Each card gets ``task_title``."""
    titles = dict(Task.objects.filter(pk__in={c["task_id"] for c in cards}).values_list("id", "title"))
    groups: dict[str, dict[str, Any]] = {}
    for card in cards:
        title = titles.get(card["task_id"]) or card["task_id"]
        card["task_title"] = title
        groups.setdefault(card["task_id"], {"task_id": card["task_id"], "title": title, "cards": []})["cards"].append(
            card
        )
    return list(groups.values())


def pending_confirmations(user: Any, filters: LiveFilters) -> list[dict[str, Any]]:
    """Tool confirmations waiting for an operator (PRD §4.7 ⚠️), newest first."""
    queryset = ToolConfirmation.objects.filter(status="pending")
    if not sees_every_task(user):
        queryset = queryset.filter(task_id__in=visible_tasks(user).values("id"))
    if filters.task:
        queryset = queryset.filter(task_id=filters.task)
    if filters.role:
        queryset = queryset.filter(role=filters.role)
    if filters.project:
        queryset = queryset.filter(project_id=filters.project)
    return [live_items.confirmation_item(c) for c in queryset.order_by("-created_at")[:CONFIRMATIONS]]


def recent_alerts(user: Any) -> list[dict[str, Any]]:
    """The latest alerts ``user`` may see (alerts about no task: staff only)."""
    rows = list(Alert.objects.order_by("-created_at", "-id")[: ALERTS * (1 if sees_every_task(user) else 5)])
    if not sees_every_task(user):
        mine = set(
            visible_tasks(user)
            .filter(pk__in={(r.details or {}).get("task_id") for r in rows} - {None})
            .values_list("id", flat=True)
        )
        rows = [r for r in rows if (r.details or {}).get("task_id") in mine]
    return [live_items.alert_item(r, f"db{r.pk}") for r in rows[:ALERTS]]


def recent_config_changes() -> list[dict[str, Any]]:
    """The latest ConfigChangeEvents (PRD §4.8); config is visible to every logged-in user."""
    rows = ConfigChange.objects.select_related("project").order_by("-new_version", "-id")[:CONFIG_CHANGES]
    return [live_items.config_change_item(r.event(), r.created_at) for r in rows]


def running_tasks(user: Any, filters: LiveFilters) -> list[dict[str, Any]]:
    """Running tasks (or the filtered task whatever its status)."""
    queryset = visible_tasks(user)
    if filters.task:
        queryset = queryset.filter(pk=filters.task)
    else:
        queryset = queryset.filter(kind="task", status="running")
        if filters.project:
            queryset = queryset.filter(project_id=filters.project)
    return [live_items.task_item(t) for t in queryset.order_by("-created_at")[:RUNNING_TASKS]]


def live_page_context(user: Any, filters: LiveFilters) -> dict[str, Any]:
    """Template context of ``monitoring/live.html`` (and of its partials)."""
    return {
        "filters": filters,
        "tasks": running_tasks(user, filters),
        "context_groups": context_groups(context_cards(user, filters)),
        "page": message_page(user, filters),
        "confirmations": pending_confirmations(user, filters),
        "alerts": recent_alerts(user),
        "config_changes": recent_config_changes(),
        "graph": call_graph(user, filters),
    }


LIVE_FILLS = (
    (dom_ids.container_id("task"), "tasks"),
    (dom_ids.container_id("context"), "cards"),
    (dom_ids.container_id("confirmation"), "confirmations"),
    (dom_ids.container_id("alert"), "alerts"),
    (dom_ids.container_id("config_change"), "config_changes"),
    (dom_ids.container_id("graph"), "graph"),
    (dom_ids.container_id("message"), "log_rows"),
)


def live_fills(user: Any, filters: LiveFilters) -> list[dict[str, str]]:
    """The ``fills`` of a ``/ws/live/`` state frame: container id -> the page's partial HTML."""
    context = live_page_context(user, filters)
    return [
        {"into": into, "html": render_to_string(f"monitoring/live.html#{name}", context)} for into, name in LIVE_FILLS
    ]


def task_page_context(user: Any, task: Task) -> dict[str, Any]:
    """Template context of a task's page (status, cards, confirmations, artifacts, its messages)."""
    filters = LiveFilters(task=task.id)
    outcome = task_outcome(task)
    return {
        **outcome_panel(outcome, task, can_operate=can_operate_task(user, task)),
        "task": task,
        "task_item": live_items.task_item(task),
        "can_cancel": task.status in ("queued", "running") and can_operate_task(user, task),
        "can_fork": task.status not in ("queued", "running") and bool(task.run_spec),
        "forked_from": (task.run_spec or {}).get("fork"),
        "steps": Message.objects.filter(task_id=task.id, type="invoke_response").count(),
        "contexts": context_cards(user, filters),
        "confirmations": pending_confirmations(user, filters),
        "artifacts": [live_items.artifact_item(a) for a in task.artifacts.order_by("created_at", "id")],
        "outcome": outcome,
        "run_result": workflow_run_result(task),
        "phase": task_phase(task) if task.workflow == "requirement_review" else "",
        "page": message_page(user, filters),
        "filters": filters,
    }


TASK_FILLS = (
    (dom_ids.container_id("task_header"), "header"),
    (dom_ids.container_id("outcome"), "outcome"),
    (dom_ids.container_id("context"), "cards"),
    (dom_ids.container_id("confirmation"), "confirmations"),
    (dom_ids.container_id("artifact"), "artifacts"),
    (dom_ids.container_id("message"), "log_rows"),
)


def task_fills(user: Any, task: Task) -> list[dict[str, str]]:
    """The ``fills`` of a ``/ws/tasks/<id>/`` state frame."""
    context = task_page_context(user, task)
    return [
        {"into": into, "html": render_to_string(f"monitoring/task_detail.html#{name}", context)}
        for into, name in TASK_FILLS
    ]
