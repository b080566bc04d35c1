"""Execution contexts and task state held by the runtime (PRD §4.6).

An ``ExecutionContext`` exists per (agent instance, task): the instance's view of the task
with status, progress (0-100), input context, output state and resource usage. Its
``state()`` is what a snapshot stores, so a replay can show exactly what the agent had.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from teamclaw.runtime.config import ConfigSnapshot
from teamclaw.runtime.errors import AgentError
from teamclaw.runtime.memory import Memory
from teamclaw.runtime.messages import AgentMessage, new_id
from teamclaw.runtime.resume import ResumeJournal

MAX_CONTEXT_MESSAGES = 500
"""Context message references kept per context (older ones are summarised away)."""


def message_reference(message: AgentMessage) -> dict[str, Any]:
    """A compact reference to a message, kept in a context's ``input_context.messages``:
    ``{id, type, from, to, capability_id, timestamp}`` (the capability, or a hook's event type)."""
    payload = message.payload
    return {
        "id": message.id,
        "type": str(message.type),
        "from": message.sender.role,
        "to": message.recipient.role,
        "capability_id": payload.get("capability_id") or payload.get("event_type"),
        "timestamp": message.timestamp,
    }


class ContextStatus(StrEnum):
    """``AgentStatus`` of PRD §4.6."""

    INITIALIZING = "initializing"
    READY = "ready"
    EXECUTING = "executing"
    WAITING_RESPONSE = "waiting_response"
    WAITING_USER = "waiting_user"
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"
    TERMINATED = "terminated"


FINAL_STATUSES = frozenset({ContextStatus.COMPLETED, ContextStatus.FAILED, ContextStatus.TERMINATED})


class SnapshotType(StrEnum):
    """Snapshot kinds of PRD §4.6: auto (start, invoke boundaries, user instruction), error, manual."""

    AUTO = "auto"
    ERROR = "error"
    MANUAL = "manual"


@dataclass(slots=True)
class ExecutionContext:
    """``AgentExecutionContext`` of PRD §4.6 (snapshots are stored by the recorder)."""

    instance_id: str
    role: str
    task_id: str
    task_description: str
    conversation_id: str
    project_id: str | None
    config_version: int
    created_at: float
    id: str = field(default_factory=new_id)
    status: ContextStatus = ContextStatus.INITIALIZING
    progress: int = 0
    current_step: str = ""
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    user_instructions: list[str] = field(default_factory=list)
    generated_artifacts: list[dict[str, Any]] = field(default_factory=list)
    pending_questions: list[str] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    api_calls: int = 0
    tokens_estimated: bool = False
    snapshot_count: int = 0
    updated_at: float = 0.0
    memory: Memory = field(default_factory=Memory)
    """What the agent remembers of this conversation (seed 003 MemoryContext)."""
    knowledge: list[dict[str, Any]] = field(default_factory=list)
    """What each model-backed call retrieved (seed 003 KnowledgeContext):
    ``[{capability_id, query, chunks: [{source, heading, chunk, score}]}]``."""
    prompt_versions: dict[str, dict[str, str | None]] = field(default_factory=dict)
    """The prompt template versions this context rendered (PRD §4.5):
    ``{template_type: {"global": version, "project": version or None}}``; empty while it has
    rendered none (an offline call renders none)."""
    messages_stream: str = field(default_factory=new_id)
    """Names this object's run of message references: the recorder stores each reference once
    per stream and position, and a snapshot the range it held (``monitoring.models.Snapshot``)."""
    messages_total: int = 0
    """References appended to ``messages`` since this object was made (and the ones it was
    made with): the position after the last one in ``messages_stream``."""

    def __post_init__(self) -> None:
        self.messages_total = max(self.messages_total, len(self.messages))

    def add_message(self, summary: dict[str, Any]) -> None:
        """Append a message reference, keeping at most MAX_CONTEXT_MESSAGES."""
        self.messages.append(summary)
        self.messages_total += 1
        if len(self.messages) > MAX_CONTEXT_MESSAGES:
            del self.messages[: len(self.messages) - MAX_CONTEXT_MESSAGES]

    @property
    def resource_usage(self) -> dict[str, Any]:
        """``{total_tokens, input_tokens, output_tokens, api_calls, estimated}`` (tokens)."""
        return {
            "total_tokens": self.input_tokens + self.output_tokens,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "api_calls": self.api_calls,
            "estimated": self.tokens_estimated,
        }

    def state(self) -> dict[str, Any]:
        """The whole context as JSON-ready data (what a snapshot holds)."""
        return {
            "id": self.id,
            "instance_id": self.instance_id,
            "role": self.role,
            "task_id": self.task_id,
            "task_description": self.task_description,
            "conversation_id": self.conversation_id,
            "project_id": self.project_id,
            "config_version": self.config_version,
            "status": str(self.status),
            "progress": self.progress,
            "current_step": self.current_step,
            "input_context": {
                "artifacts": list(self.artifacts),
                "messages": list(self.messages),
                "user_instructions": list(self.user_instructions),
                "prompt_versions": {name: dict(layers) for name, layers in self.prompt_versions.items()},
            },
            "output_state": {
                "generated_artifacts": list(self.generated_artifacts),
                "pending_questions": list(self.pending_questions),
                "errors": list(self.errors),
            },
            "resource_usage": self.resource_usage,
            "memory": self.memory.state(),
            "knowledge": [{**entry, "chunks": [dict(c) for c in entry["chunks"]]} for entry in self.knowledge],
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


@dataclass(slots=True)
class Artifact:
    """A named output of a task (``review_dev.json``, ``requirement_final.md``...)."""

    name: str
    content: str
    content_type: str
    role: str
    context_id: str | None
    created_at: float


class TaskStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    TERMINATED = "terminated"
    """Cancelled by an operator (PRD §4.6 terminated)."""


@dataclass(slots=True)
class TaskState:
    """A task in flight: its pinned config snapshot (PRD §4.8), token budget and artifacts.

    ``token_budget`` and ``tokens_used`` are tokens; the budget is the entry role's
    ``token_budget`` constraint (PRD §4.7, 50,000 by default) unless given explicitly.
    """

    TOKEN_PROGRESS_S: ClassVar[float] = 1.0
    """At most one ``TaskProgress`` event a second per task (s)."""

    task_id: str
    project_id: str | None
    description: str
    snapshot: ConfigSnapshot
    token_budget: int
    started_at: float
    entry_role: str = "main"
    prompt_enhancement: str = ""
    tokens_used: int = 0
    tokens_estimated: bool = False
    """True once any of ``tokens_used`` is an estimate (the offline brain, a server without usage)."""
    status: TaskStatus = TaskStatus.RUNNING
    artifacts: dict[str, Artifact] = field(default_factory=dict)
    contexts: dict[str, ExecutionContext] = field(default_factory=dict)
    """instance_id -> that instance's context for this task."""
    ephemeral: bool = False
    """True for the implicit task around a standalone invoke (no task record is kept open)."""
    cancelled: AgentError | None = None
    """Set when the task was cancelled: every later invoke in it is refused with this error."""
    journal: ResumeJournal | None = None
    """For a resumed task: what its earlier attempt completed (``teamclaw.runtime.resume``)."""
    tokens_reported_at: float = float("-inf")
    """Clock seconds of the last ``TaskProgress`` event (``execution.report_tokens``)."""
    tokens_report_pending: bool = False
    """True while a ``TaskProgress`` waits for the end of its second."""
    scope: str = ""
    """Where its calls count against each role's ``max_concurrent_instances`` (PRD §4.7) and
    which instances they are routed to (``teamclaw.runtime.scopes``): ``task:<id>`` by default."""
    think_time_s: float = 0.0
    """Demo pacing (s): the offline executor waits this long before each call it runs, so a
    person watching the live page sees the team at work (0: no wait; set by main)."""
