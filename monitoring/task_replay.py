"""A task's replay: every agent's steps on one timeline (issue 30, PRD §4.6, US-08).

Where ``monitoring.replay`` steps through one context, this interleaves all the contexts of
a task: each context's snapshots (one per call the agent took and answered, per tool use,
model call and operator wait, and those of PRD §4.6: start, around invokes, instructions,
errors, the end) and every message of the task (each once), in the order the runtime emitted
them (``replay._ordered``). Each step names:

- ``context``: the agent it is about (a snapshot's context; a message's sender, or its
  receiver when the operator sent it), and ``state``: that context's state at the step, from
  its latest snapshot at or before the step;
- ``round``: the round the step belongs to (``review``, ``evaluate``, ``respond`` for the
  experts, seed 002 §6.2-§6.4): an invoke's input names it, its answer and the callee's
  snapshots during the call inherit it;
- ``kind`` and ``label``: what happened, from ``data/replay_steps.yaml`` for a snapshot;
- ``trace_node``: the node of the task's trace (``monitoring.trace``) that holds it;
- ``fork_step``: the completed steps a fork from here takes from the record (the count of
  answered invokes so far, as ``runs.resume.recorded_steps`` counts them).

Reads only the database (works for tasks recorded before a restart).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from django.utils.translation import gettext

from monitoring.live_items import from_epoch
from monitoring.models import ExecutionContext, Message, Snapshot, Task, full_state
from monitoring.replay import MAX_TIMELINE, MESSAGE_FIELDS, _ordered
from teamclaw.labels import label
from teamclaw.runtime.invocation import call_round

STEPS_FILE = Path(__file__).with_name("data") / "replay_steps.yaml"
PLACE = re.compile(r"\{(\w+)\}")
CALL_ENDS = ("answer", "error", "end")
"""Snapshot kinds after which a context is no longer inside the call whose round it had."""


@dataclass(frozen=True, slots=True)
class StepRule:
    """One row of ``data/replay_steps.yaml``: ``regex`` matches a trigger whole."""

    pattern: str
    kind: str
    label: str
    regex: re.Pattern[str]


@cache
def step_rules() -> tuple[StepRule, ...]:
    """The rows of ``data/replay_steps.yaml`` in file order (see its header)."""
    rows = yaml.safe_load(STEPS_FILE.read_text(encoding="utf-8"))["steps"]
    rules = []
    for row in rows:
        parts = PLACE.split(row["pattern"])  # text, name, text, name, ..., text
        regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" for i, p in enumerate(parts))
        rules.append(StepRule(row["pattern"], row["kind"], row["label"], re.compile(f"^{regex}$", re.DOTALL)))
    return tuple(rules)


def snapshot_step(trigger: str) -> tuple[str, str]:
    """``(kind, label)`` of a snapshot's ``trigger`` in the active language; ``("snapshot",
    trigger)`` when no row of ``data/replay_steps.yaml`` matches it. Never raises."""
    for rule in step_rules():
        match = rule.regex.match(trigger)
        if match is not None:
            try:
                values = {k: label(v, "status") if k == "status" else v for k, v in match.groupdict().items()}
                return rule.kind, gettext(rule.label) % values
            except (KeyError, ValueError, TypeError):  # a catalog entry with other placeholders
                return rule.kind, trigger
    return "snapshot", trigger


@dataclass(slots=True)
class TaskStep:
    """One step of the task's timeline; ``ref`` is its Snapshot or Message row (no payload
    or state loaded)."""

    index: int
    kind: str
    at: datetime
    ref: Any
    context: ExecutionContext | None
    step_kind: str
    label: str
    round: str
    trace_node: str
    fork_step: int

    @property
    def id(self) -> str:
        return str(self.ref.id)


@dataclass(slots=True)
class TaskTimeline:
    """The ordered steps of a task; ``truncated`` when more than MAX_TIMELINE exist."""

    task: Task
    steps: list[TaskStep] = field(default_factory=list)
    contexts: dict[str, ExecutionContext] = field(default_factory=dict)
    truncated: bool = False

    def __len__(self) -> int:
        return len(self.steps)

    def snapshot_before(self, index: int) -> Snapshot | None:
        """The latest snapshot at or before step ``index`` of the context that step is about."""
        context = self.steps[index].context
        if context is None:
            return None
        for entry in reversed(self.steps[: index + 1]):
            if entry.kind == "snapshot" and entry.ref.context_id == context.id:
                return entry.ref
        return None


def _completes_step(message: Message, requests: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether ``message`` (an answer) is a completed step a fork can take from the record:
    an ``invoke_response`` with an object result to a delivered request of an agent whose
    input is an object (``runs.resume.recorded_steps``)."""
    if message.type != "invoke_response":
        return False
    request = requests.get(message.correlation_id)
    result = (message.payload or {}).get("result")
    if request is None or not isinstance(result, dict) or not request["from_role"]:
        return False
    return request["status"] != "denied" and isinstance((request["payload"] or {}).get("params"), dict)


class _Builder:
    """Reads a task's record once and lays out its steps (module docstring)."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.contexts = {c.id: c for c in ExecutionContext.objects.filter(task=task).order_by("created_at", "id")}
        self.by_instance = {c.instance_id: c for c in self.contexts.values()}
        self.requests = {
            row["correlation_id"]: row
            for row in Message.objects.filter(task_id=task.id, type="invoke_request").values(
                "id", "correlation_id", "from_role", "status", "payload"
            )
            if row["correlation_id"]
        }
        self.rounds: dict[str, str] = {}  # context id -> the round of the call it is in
        self.completed = 0

    def keyed(self) -> tuple[list[tuple[Any, str, datetime, Any]], bool]:
        snapshots = list(
            Snapshot.objects.filter(context__task=self.task).defer("stored_state").order_by("created_at", "sequence")
        )
        messages = list(
            Message.objects.filter(task_id=self.task.id)
            .only(*MESSAGE_FIELDS, "correlation_id", "payload")
            .order_by("seq")[: MAX_TIMELINE + 1]
        )
        keyed: list[tuple[Any, str, datetime, Any]] = []
        for snap in snapshots:
            keyed.append(((snap.created_at.timestamp(), 1, snap.sequence), "snapshot", snap.created_at, snap))
        for message in messages[:MAX_TIMELINE]:
            at = from_epoch(message.timestamp_ms / 1000)
            assert at is not None
            keyed.append(((message.timestamp_ms / 1000, 0, message.seq), "message", at, message))
        return _ordered(keyed), len(messages) > MAX_TIMELINE

    def snapshot(self, index: int, at: datetime, snap: Snapshot) -> TaskStep:
        context = self.contexts.get(snap.context_id)
        kind, label = snapshot_step(snap.trigger)
        if kind == "call":
            self.rounds[snap.context_id] = snap.label
        round_ = self.rounds.get(snap.context_id, "")
        if kind in CALL_ENDS:
            self.rounds.pop(snap.context_id, None)
        return TaskStep(index, "snapshot", at, snap, context, kind, label, round_, snap.context_id, self.completed)

    def message(self, index: int, at: datetime, message: Message) -> TaskStep:
        sender = self.by_instance.get(message.from_instance)
        context = sender or self.by_instance.get(message.to_instance)
        request = self.requests.get(message.correlation_id) if message.correlation_id else None
        payload = message.payload or {}
        if message.type == "invoke_request":
            round_ = call_round(payload.get("params"))
            node = message.id
        else:
            round_ = call_round((request["payload"] or {}).get("params")) if request else ""
            node = request["id"] if request and message.type in ("invoke_response", "invoke_error") else ""
        if not node and message.type == "hook_event":
            node = message.id
        if not node and context is not None:
            node = context.id
        if _completes_step(message, self.requests):
            self.completed += 1
        label = f"{message.type} {message.capability_id}".strip()
        return TaskStep(index, "message", at, message, context, message.type, label, round_, node, self.completed)

    def build(self) -> TaskTimeline:
        keyed, cut = self.keyed()
        steps = []
        for index, (_, kind, at, ref) in enumerate(keyed[:MAX_TIMELINE]):
            steps.append(self.snapshot(index, at, ref) if kind == "snapshot" else self.message(index, at, ref))
        return TaskTimeline(self.task, steps, self.contexts, cut or len(keyed) > MAX_TIMELINE)


def build_task_timeline(task: Task) -> TaskTimeline:
    """The steps of ``task`` in the order they happened (module docstring)."""
    return _Builder(task).build()


def task_step(timeline: TaskTimeline, index: int) -> dict[str, Any]:
    """What the page shows at step ``index`` (0-based): ``{step, snapshot, state, payload,
    index, number, count, previous, next, last}``; ``state`` is the state of the step's
    context at the step (None before its first snapshot), ``payload`` a message's payload."""
    count = len(timeline)
    if not count:
        return {"step": None, "snapshot": None, "state": None, "payload": None, "index": 0, "number": 0, "count": 0}
    step = timeline.steps[index]
    snapshot = timeline.snapshot_before(index)
    state = None
    if snapshot:
        state = full_state(Snapshot.objects.values_list("stored_state", flat=True).get(pk=snapshot.pk))
    payload = step.ref.payload if step.kind == "message" else None
    return {
        "step": step,
        "snapshot": snapshot,
        "state": state,
        "payload": payload,
        "index": index,
        "number": index + 1,
        "count": count,
        "previous": index - 1 if index > 0 else None,
        "next": index + 1 if index + 1 < count else None,
        "last": count - 1,
    }
