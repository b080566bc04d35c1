"""A task's trace: every call its agents made, as a tree (issue 30; docs/architecture.md §4).

Built from the record only (no second record): the task's execution contexts (one node per
agent instance, PRD §4.6), the messages between them (PRD §4.3: an ``invoke_request`` and its
``invoke_response`` or ``invoke_error``, matched by ``correlation_id``; hook events), the
model calls and tool uses each context recorded in ``input_context.messages``, and the
operator's waits (``ToolConfirmation``: a tool confirmation or an answer the workflow asked
for).

Shape (``task_trace``)::

    {"task_id", "status", "nodes": [agent node, ...]}
    node = {"id", "kind", "role", "capability_id", "round", "started_at" (ISO 8601 UTC),
            "latency_ms" (int or null while running / not recorded), "tokens" (int or null),
            "status", "prompt_versions" ({template_type: version} or {}), "input", "output",
            "children": [node, ...],
            "links": {"context_id"?, "received"? (invoke node ids), "callee_context_id"?, "artifacts"?}}

``kind`` is ``agent`` (a context), ``invoke``, ``hook``, ``model_call``, ``tool_use`` or
``operator_wait``. An agent node's children are its calls in the order they started; an
invoke node links the callee's agent node (``links.callee_context_id``), whose own calls are
under it there. ``round`` is the mode a call ran in (``review``, ``evaluate``, ``respond`` for
the experts, seed 002) when its input names one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from monitoring.models import Artifact, ExecutionContext, Message, Task, ToolConfirmation
from teamclaw.runtime.invocation import call_round

REQUEST = "invoke_request"
ANSWERS = ("invoke_response", "invoke_error")
HOOKS = ("hook_event",)


def _iso_ms(timestamp_ms: Any) -> str | None:
    if not isinstance(timestamp_ms, int | float):
        return None
    return datetime.fromtimestamp(timestamp_ms / 1000, tz=UTC).isoformat()


def _node(kind: str, node_id: str, role: str, **fields: Any) -> dict[str, Any]:
    node: dict[str, Any] = {
        "id": node_id,
        "kind": kind,
        "role": role,
        "capability_id": "",
        "round": None,
        "started_at": None,
        "latency_ms": None,
        "tokens": None,
        "status": "",
        "prompt_versions": {},
        "input": None,
        "output": None,
        "children": [],
        "links": {},
    }
    node.update(fields)
    return node


def _round(params: Any) -> str | None:
    """The mode a call ran in, when its input names one (``mode``, ``round`` or ``phase``)."""
    return call_round(params) or None


def _artifacts_named(value: Any, names: set[str]) -> list[str]:
    """The task's artifact names that ``value`` (a call's output) mentions, sorted."""
    if not names or value is None:
        return []
    text = str(value)
    return sorted(name for name in names if name in text)


class TraceBuilder:
    """Reads one task's record once and turns it into the trace tree (module docstring)."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.contexts = list(ExecutionContext.objects.filter(task=task).order_by("created_at", "id"))
        messages = list(Message.objects.filter(task_id=task.id).order_by("seq"))
        self.answers = {m.correlation_id: m for m in messages if m.type in ANSWERS and m.correlation_id}
        self.sent = [m for m in messages if m.type == REQUEST or m.type in HOOKS]
        self.waits = list(ToolConfirmation.objects.filter(task_id=task.id).order_by("created_at", "id"))
        self.artifacts = set(Artifact.objects.filter(task_id=task.id).values_list("name", flat=True))
        self.callee_of = self._callees()

    def _callees(self) -> dict[str, str]:
        """Request message id -> the context that received it (its messages list it)."""
        out: dict[str, str] = {}
        for context in self.contexts:
            for ref in (context.input_context or {}).get("messages", []):
                if isinstance(ref, dict) and ref.get("type") == REQUEST and ref.get("to") == context.role:
                    out.setdefault(str(ref.get("id")), context.id)
        return out

    def build(self) -> dict[str, Any]:
        """``{"task_id", "status", "nodes"}`` (module docstring); each agent node's
        ``links.received`` lists the ids of the invoke nodes it answered."""
        nodes = [self.agent(c) for c in self.contexts]
        received: dict[str, list[str]] = {}
        for node in nodes:
            for call in node["children"]:
                if callee := call["links"].get("callee_context_id"):
                    received.setdefault(callee, []).append(call["id"])
        for node in nodes:
            node["links"]["received"] = received.get(node["id"], [])
        return {"task_id": self.task.id, "status": self.task.status, "nodes": nodes}

    def agent(self, context: ExecutionContext) -> dict[str, Any]:
        """The node of one agent instance's context, with its calls."""
        created = context.created_at
        finished = context.status in ("completed", "failed", "terminated")
        latency = int((context.updated_at - created).total_seconds() * 1000) if finished else None
        calls = [*self.invokes(context), *self.recorded(context), *self.operator_waits(context)]
        calls.sort(key=lambda node: node["started_at"] or "")
        return _node(
            "agent",
            context.id,
            context.role,
            started_at=created.isoformat(),
            latency_ms=latency,
            tokens=context.total_tokens,
            status=context.status,
            prompt_versions=dict((context.input_context or {}).get("prompt_versions") or {}),
            input={"task_description": context.task_description, "instance_id": context.instance_id},
            output=context.output_state,
            children=calls,
            links={"context_id": context.id},
        )

    def invokes(self, context: ExecutionContext) -> Iterable[dict[str, Any]]:
        """The invokes and hooks this context's instance sent for the task."""
        for message in self.sent:
            if message.from_instance != context.instance_id or message.from_role != context.role:
                continue
            yield self.invoke(message) if message.type == REQUEST else self.hook(message)

    def invoke(self, message: Message) -> dict[str, Any]:
        payload = message.payload or {}
        answer = self.answers.get(message.correlation_id)
        output = None
        status = "pending" if message.status in ("queued", "delivered") else message.status
        latency = None
        if answer is not None:
            answered = answer.payload or {}
            output = answered.get("result", answered.get("error"))
            status = "ok" if answer.type == "invoke_response" else "error"
            latency = max(0, answer.timestamp_ms - message.timestamp_ms)
        links: dict[str, Any] = {"callee_context_id": self.callee_of.get(message.id)}
        if named := _artifacts_named(output, self.artifacts):
            links["artifacts"] = named
        return _node(
            "invoke",
            message.id,
            message.to_role,
            capability_id=payload.get("capability_id", message.capability_id),
            round=_round(payload.get("params")),
            started_at=_iso_ms(message.timestamp_ms),
            latency_ms=latency,
            status=status,
            input=payload.get("params"),
            output=output,
            links=links,
        )

    def hook(self, message: Message) -> dict[str, Any]:
        payload = message.payload or {}
        return _node(
            "hook",
            message.id,
            message.to_role or "*",
            capability_id=str(payload.get("event_type", "")),
            started_at=_iso_ms(message.timestamp_ms),
            status=message.status,
            input=payload.get("data", payload),
        )

    def recorded(self, context: ExecutionContext) -> Iterable[dict[str, Any]]:
        """The model calls and tool uses the context recorded, in order."""
        for index, ref in enumerate((context.input_context or {}).get("messages", [])):
            if not isinstance(ref, dict):
                continue
            if ref.get("type") == "model_call":
                yield self.model_call(context, index, ref)
            elif ref.get("type") == "tool":
                yield self.tool_use(context, index, ref)

    @staticmethod
    def model_call(context: ExecutionContext, index: int, ref: dict[str, Any]) -> dict[str, Any]:
        tokens = sum(v for v in (ref.get("input_tokens"), ref.get("output_tokens")) if isinstance(v, int))
        return _node(
            "model_call",
            f"{context.id}:{index}",
            context.role,
            capability_id=str(ref.get("capability_id", "")),
            round=str(ref["round"]) if ref.get("round") is not None else None,
            started_at=_iso_ms(ref.get("timestamp")),
            tokens=tokens,
            status=str(ref.get("finish_reason") or ""),
            input={k: ref.get(k) for k in ("model", "endpoint", "round")},
            output={k: ref.get(k) for k in ("finish_reason", "tool_calls", "answer_format", "estimated")},
        )

    @staticmethod
    def tool_use(context: ExecutionContext, index: int, ref: dict[str, Any]) -> dict[str, Any]:
        output = ref.get("result", ref.get("error"))
        return _node(
            "tool_use",
            f"{context.id}:{index}",
            context.role,
            capability_id=str(ref.get("tool", "")),
            started_at=_iso_ms(ref.get("timestamp")),
            latency_ms=ref.get("duration_ms") if isinstance(ref.get("duration_ms"), int) else None,
            status=str(ref.get("outcome", "")),
            input={"mode": ref.get("mode"), "args": ref.get("args")},
            output=output,
        )

    def operator_waits(self, context: ExecutionContext) -> Iterable[dict[str, Any]]:
        """What this context waited for the operator on: tool confirmations and answers."""
        for wait in self.waits:
            if wait.context_id != context.id:
                continue
            latency = int((wait.decided_at - wait.created_at).total_seconds() * 1000) if wait.decided_at else None
            yield _node(
                "operator_wait",
                wait.id,
                wait.role,
                capability_id=wait.tool,
                started_at=wait.created_at.isoformat(),
                latency_ms=latency,
                status=wait.status,
                input={"kind": wait.kind, "args": wait.args},
                output={"answer": wait.answer, "decided_by": wait.decided_by},
            )


def task_trace(task: Task) -> dict[str, Any]:
    """The trace tree of ``task`` (module docstring)."""
    return TraceBuilder(task).build()


def find_node(nodes: Iterable[dict[str, Any]], node_id: str) -> dict[str, Any] | None:
    """The node ``node_id`` anywhere in ``nodes`` (depth first), or None."""
    for node in nodes:
        if node["id"] == node_id:
            return node
        found = find_node(node["children"], node_id)
        if found is not None:
            return found
    return None


def artifact_findings(content: str, document: str) -> list[dict[str, Any]]:
    """The findings an expert's JSON artifact holds (``{"issues": [{id, rule, category,
    severity, location: {line}, quote, problem, suggestion}]}``), each with ``source_line``:
    the text of the reviewed ``document`` at the finding's line (None when the line is not in
    it). Anything else (not JSON, no ``issues`` list) gives ``[]``."""
    try:
        body = json.loads(content)
    except ValueError:
        return []
    issues = body.get("issues") if isinstance(body, dict) else None
    if not isinstance(issues, list):
        return []
    lines = document.splitlines()
    out = []
    for issue in issues:
        if not isinstance(issue, dict):
            continue
        location = issue.get("location")
        line = location.get("line") if isinstance(location, dict) else None
        text = lines[line - 1] if isinstance(line, int) and 0 < line <= len(lines) else None
        out.append({**issue, "line": line if isinstance(line, int) else None, "source_line": text})
    return out
