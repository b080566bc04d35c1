"""The in-process agent runtime: invoke, hook, routing, policy, health (DESIGN.md §4).

Plain asyncio, no ORM. It reads ``ConfigSnapshot``s (pinned per task, PRD §4.8), keeps
agent instances with priority mailboxes, enforces the invoke matrix, card state and
schemas (PRD §4.2-§4.4, §4.7), and emits every message, context, snapshot, alert and
confirmation as a ``RuntimeEvent`` for the recorder and the live sink.

Invoke checks, in order (each failure is an ``InvokeResult`` with one ``ErrorCode``):
capability exists -> target role owns it -> effective invoke matrix allows caller -> target
-> role, card and skill enabled -> INTERNAL only from inside its skill -> params match
``input_schema`` -> a healthy instance is routed (no deadlock cycle) -> the mailbox takes
it -> a response arrives within the timeout -> the result matches ``output_schema``.
A denied request never reaches a mailbox. ``timeout``, ``unavailable`` and executor crashes
are retried (``max_retries`` of the target role, 3 by default) with exponential backoff.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from teamclaw.runtime.articles import with_article
from teamclaw.runtime.clock import Clock, SystemClock
from teamclaw.runtime.config import CapabilityType, CardSpec, ConfigSnapshot
from teamclaw.runtime.context import (
    FINAL_STATUSES,
    ContextStatus,
    ExecutionContext,
    SnapshotType,
    TaskState,
    TaskStatus,
)
from teamclaw.runtime.errors import AgentError, AgentFailure, ErrorCode
from teamclaw.runtime.events import EventBus, EventKind, EventSink
from teamclaw.runtime.execution import ExecutionCall
from teamclaw.runtime.executors import ExecutorRegistry
from teamclaw.runtime.executors.offline import OfflineExecutor
from teamclaw.runtime.instance import AgentInstance, InstanceStatus
from teamclaw.runtime.invocation import (
    DEFAULT_TIMEOUT_S,
    EventSubscription,
    HookAck,
    HookEvent,
    InvokeRequest,
    InvokeResult,
    RoutingStrategy,
)
from teamclaw.runtime.mailbox import Mailbox
from teamclaw.runtime.messages import (
    AgentMessage,
    DeliveryStatus,
    MessageContext,
    MessageType,
    Party,
    Priority,
    new_id,
)
from teamclaw.runtime.routing import InstancePool
from teamclaw.runtime.schemas import SchemaValidators, schema_errors
from teamclaw.runtime.tools import BUILTIN_TOOLS, ToolHandler
from teamclaw.runtime.transport import InProcessTransport, Transport

log = logging.getLogger(__name__)

USER = Party(role="user")
"""The operator (UI, API, command line) as a message end."""


class TaskNotRunning(LookupError):
    """A ``task_id`` that names no running task (unknown, or already finished)."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"task {task_id} is not running")
        self.task_id = task_id


PromptRenderer = Callable[[ConfigSnapshot, str, TaskState, dict[str, Any]], str]
"""``(snapshot, role, task, extra_variables) -> system prompt text`` (the prompts app)."""


TIMED_OUT: Any = object()
"""Sentinel result a PendingCall future gets when its deadline passes."""


@dataclass(slots=True, eq=False)
class PendingCall:
    """A request waiting for its response.

    ``deadline`` (clock s) is pushed back by the time the callee spends ``waiting_user``
    for an operator, so a tool confirmation does not eat the invoke timeout.
    """

    correlation_id: str
    invoke_id: str
    future: asyncio.Future[Any]
    card: CardSpec
    params: dict[str, Any]
    task: TaskState
    caller: Party
    message: AgentMessage
    instance: AgentInstance
    deadline: float
    timeout_s: float
    paused_since: float | None = None
    timer: Any = None
    cancelled_for_timeout: bool = False


@dataclass(slots=True, eq=False)
class PendingConfirmation:
    """A tool use waiting for an operator (PRD §4.7 ⚠️)."""

    id: str
    context_id: str
    instance_id: str
    role: str
    task_id: str
    project_id: str | None
    tool: str
    args: dict[str, Any]
    created_at: float
    expires_at: float
    future: asyncio.Future[bool]
    status: str = "pending"
    decided_by: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "context_id": self.context_id,
            "instance_id": self.instance_id,
            "role": self.role,
            "task_id": self.task_id,
            "project_id": self.project_id,
            "tool": self.tool,
            "args": self.args,
            "status": self.status,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "decided_by": self.decided_by,
        }


def _summary(message: AgentMessage) -> dict[str, Any]:
    """A compact reference to a message, kept in a context's ``input_context.messages``."""
    payload = message.payload
    return {
        "id": message.id,
        "type": str(message.type),
        "from": message.sender.role,
        "to": message.recipient.role,
        "capability_id": payload.get("capability_id") or payload.get("event_type"),
        "timestamp": message.timestamp,
    }


class Runtime:
    """Runs agent instances and mediates every invoke, hook and tool use.

    ``config_source(project_id) -> ConfigSnapshot`` is called (in a worker thread) when a
    task starts and the cached snapshot is older than the newest config version; tests may
    pass a fixed ``snapshot`` instead. Durations are seconds.
    """

    def __init__(
        self,
        *,
        config_source: Callable[[str | None], ConfigSnapshot] | None = None,
        snapshot: ConfigSnapshot | None = None,
        clock: Clock | None = None,
        executors: ExecutorRegistry | None = None,
        sinks: list[EventSink] | None = None,
        mailbox_capacity: int = 1000,
        heartbeat_interval_s: float = 30,
        heartbeat_timeout_s: float = 90,
        confirmation_timeout_s: float = 600,
        task_timeout_s: float = 3600,
        backoff_base_s: float = 0.1,
        prompt_renderer: PromptRenderer | None = None,
        transport: Transport | None = None,
        default_project_dir: str | Path | None = None,
        tools: dict[str, ToolHandler] | None = None,
        auto_heartbeat: bool = True,
    ) -> None:
        if config_source is None and snapshot is None:
            raise ValueError("a Runtime needs a config_source or a snapshot")
        self.clock: Clock = clock or SystemClock()
        self.bus = EventBus()
        for sink in sinks or ():
            self.bus.add_sink(sink)
        self._changed_contexts: dict[str, ExecutionContext] = {}
        """Contexts changed since their last ``context`` event (see ``_emit_context``)."""
        self._context_flush_scheduled = False
        self._config_source = config_source
        self._snapshots: dict[str | None, ConfigSnapshot] = {}
        self.latest_version = 0
        if snapshot is not None:
            self._snapshots[snapshot.project_id] = snapshot
            self.latest_version = snapshot.version
        self.executors = executors or ExecutorRegistry({"offline": OfflineExecutor()})
        self.validators = SchemaValidators()
        self.transport: Transport = transport or InProcessTransport()
        self.tools: dict[str, ToolHandler] = {**BUILTIN_TOOLS, **(tools or {})}
        self.prompt_renderer = prompt_renderer
        self.default_project_dir = Path(default_project_dir) if default_project_dir else None
        self.mailbox_capacity = mailbox_capacity
        self.heartbeat_interval_s = heartbeat_interval_s
        self.heartbeat_timeout_s = heartbeat_timeout_s
        self.confirmation_timeout_s = confirmation_timeout_s
        self.task_timeout_s = task_timeout_s
        self.backoff_base_s = backoff_base_s
        self.auto_heartbeat = auto_heartbeat

        self.pool = InstancePool()
        self.tasks: dict[str, TaskState] = {}
        self.contexts: dict[str, ExecutionContext] = {}
        self.subscriptions: dict[str, EventSubscription] = {}
        self.confirmations: dict[str, PendingConfirmation] = {}
        self._pending: dict[str, PendingCall] = {}
        self._hook_waiters: dict[str, asyncio.Future[None]] = {}
        self._background: list[asyncio.Task[None]] = []
        self._detached: set[asyncio.Future[Any]] = set()
        self._snapshot_lock: asyncio.Lock | None = None

    @property
    def instances(self) -> dict[str, AgentInstance]:
        """Every instance by id (terminated ones included)."""
        return self.pool.by_id

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Start the heartbeat/health loop (PRD §4.2: beat every 30 s, stale after 90 s)."""
        if not self._background:
            self._background.append(asyncio.create_task(self._health_loop(), name="teamclaw-health"))

    async def stop(self) -> None:
        """Terminate every instance and stop background loops."""
        for task in self._background:
            task.cancel()
        for task in self._background:
            try:
                await task
            except asyncio.CancelledError:
                pass
        self._background.clear()
        for instance in list(self.pool):
            if instance.alive:
                self.terminate(instance.instance_id, reason="runtime stopped")
        workers = [i.worker for i in self.pool if i.worker is not None]
        if workers:
            await asyncio.gather(*workers, return_exceptions=True)
        self.flush_contexts()  # the last changes reach the sinks before the caller stops them

    async def _health_loop(self) -> None:
        while True:
            await self.clock.sleep(self.heartbeat_interval_s)
            try:
                if self.auto_heartbeat:
                    for instance in list(self.pool):
                        if instance.alive and instance.auto_heartbeat:
                            self.heartbeat(instance.instance_id)
                self.check_health()
                for instance in list(self.pool):
                    if instance.alive:
                        instance.mailbox.sweep_expired()
                self._expire_confirmations()
            except Exception:  # the loop must survive anything
                log.exception("health loop step failed")

    # ------------------------------------------------------------------ config
    def set_snapshot(self, snapshot: ConfigSnapshot) -> None:
        """Install a snapshot directly (tests, or a host that builds snapshots itself)."""
        self._snapshots[snapshot.project_id] = snapshot
        self.latest_version = max(self.latest_version, snapshot.version)

    async def snapshot_for(self, project_id: str | None) -> ConfigSnapshot:
        """The newest snapshot for ``project_id``, reloading it when the config moved on."""
        cached = self._snapshots.get(project_id)
        if cached is not None and (cached.version >= self.latest_version or self._config_source is None):
            return cached
        if self._config_source is None:
            fallback = self._snapshots.get(None)
            if fallback is None:
                raise LookupError(f"no configuration for project {project_id!r}")
            return fallback
        if self._snapshot_lock is None:
            self._snapshot_lock = asyncio.Lock()
        async with self._snapshot_lock:
            cached = self._snapshots.get(project_id)
            if cached is not None and cached.version >= self.latest_version:
                return cached
            snapshot = await asyncio.to_thread(self._config_source, project_id)
            self._snapshots[project_id] = snapshot
            self.latest_version = max(self.latest_version, snapshot.version)
            return snapshot

    def apply_config_change(self, event: dict[str, Any]) -> None:
        """Take a ``ConfigChangeEvent`` (PRD §4.8): later task starts load the new version;
        tasks in flight keep their pinned snapshot."""
        try:
            new_version = int(event.get("new_version") or 0)
        except (TypeError, ValueError):
            new_version = 0
        self.latest_version = max(self.latest_version, new_version)
        self._emit(EventKind.CONFIG_CHANGE, {"event": dict(event)})

    # ------------------------------------------------------------------ events
    def add_sink(self, sink: EventSink) -> None:
        self.bus.add_sink(sink)

    def _emit(self, kind: EventKind, data: dict[str, Any]) -> None:
        if self._changed_contexts:
            self.flush_contexts()  # keep emit order: a context change precedes what follows it
        self.bus.emit(kind, data, self.clock.now())

    def _emit_message(
        self, message: AgentMessage, status: DeliveryStatus, project_id: str | None, reason: str | None = None
    ) -> None:
        self._emit(
            EventKind.MESSAGE, {"message": message, "status": status, "reason": reason, "project_id": project_id}
        )

    def _emit_status(self, message: AgentMessage, status: DeliveryStatus, reason: str | None = None) -> None:
        task = self.tasks.get(message.context.task_id)
        self._emit(
            EventKind.MESSAGE_STATUS,
            {"message": message, "status": status, "reason": reason, "project_id": task.project_id if task else None},
        )

    def _emit_context(self, context: ExecutionContext, *, at_once: bool = False) -> None:
        """Note that ``context`` changed; its ``context`` event goes out before the next other
        event or at the end of the current loop step, whichever comes first (``at_once``: now,
        for a progress report that a sink should see as it happens).

        The context object itself travels and sinks read ``state()`` when they flush, so the
        changes that finish an invoke (tokens charged, ready) are one event, not two.
        """
        context.updated_at = self.clock.now()
        self._changed_contexts[context.id] = context
        if at_once:
            self.flush_contexts()
        elif not self._context_flush_scheduled:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # called outside the loop (sync callers): emit now
                self.flush_contexts()
                return
            self._context_flush_scheduled = True
            loop.call_soon(self._scheduled_context_flush)

    def _scheduled_context_flush(self) -> None:
        self._context_flush_scheduled = False
        self.flush_contexts()

    def flush_contexts(self) -> None:
        """Emit one ``context`` event per context changed since its last one (in change order)."""
        changed, self._changed_contexts = self._changed_contexts, {}
        now = self.clock.now()
        for context in changed.values():
            self.bus.emit(EventKind.CONTEXT, {"context": context}, now)

    def _emit_instance(self, instance: AgentInstance) -> None:
        self._emit(EventKind.INSTANCE, {"instance": instance.as_dict()})

    def alert(self, kind: str, severity: str, message: str, **details: Any) -> None:
        """Raise an alert event (queue drop, health change, budget stop...)."""
        self._emit(
            EventKind.ALERT,
            {
                "alert": {
                    "kind": kind,
                    "severity": severity,
                    "message": message,
                    "details": details,
                    "at": self.clock.now(),
                }
            },
        )

    def take_snapshot(
        self, context: ExecutionContext, snapshot_type: SnapshotType, trigger: str, label: str = ""
    ) -> dict[str, Any]:
        """Record the whole state of ``context`` (PRD §4.6) and return the snapshot data."""
        context.snapshot_count += 1
        snapshot = {
            "id": new_id(),
            "context_id": context.id,
            "task_id": context.task_id,
            "type": str(snapshot_type),
            "trigger": trigger,
            "label": label,
            "sequence": context.snapshot_count,
            "state": context.state(),
            "created_at": self.clock.now(),
        }
        self._emit(EventKind.SNAPSHOT, {"snapshot": snapshot})
        return snapshot

    # ------------------------------------------------------------------ tasks
    async def begin_task(
        self,
        task_id: str | None = None,
        *,
        project_id: str | None = None,
        description: str = "",
        entry_role: str = "main",
        token_budget: int | None = None,
        prompt_enhancement: str = "",
        kind: str = "task",
        extra: dict[str, Any] | None = None,
    ) -> TaskState:
        """Open a task: pin the current snapshot for its whole life (PRD §4.8) and set its
        token budget (tokens; the entry role's constraint unless given)."""
        snapshot = await self.snapshot_for(project_id)
        task_id = task_id or new_id()
        if task_id in self.tasks:
            raise ValueError(f"task {task_id} is already running")
        budget = token_budget or snapshot.constraints_for(entry_role).token_budget
        task = TaskState(
            task_id=task_id,
            project_id=project_id,
            description=description,
            snapshot=snapshot,
            token_budget=budget,
            started_at=self.clock.now(),
            entry_role=entry_role,
            prompt_enhancement=prompt_enhancement,
            ephemeral=kind != "task",
        )
        self.tasks[task_id] = task
        self._emit(
            EventKind.TASK,
            {
                "task_id": task_id,
                "status": str(TaskStatus.RUNNING),
                "project_id": project_id,
                "description": description,
                "config_version": snapshot.version,
                "kind": kind,
                "token_budget": budget,
                "started_at": task.started_at,
                **(extra or {}),
            },
        )
        return task

    def end_task(self, task_id: str, status: TaskStatus, error: AgentError | None = None) -> None:
        """Close a task: finish its contexts and record the outcome."""
        task = self.tasks.pop(task_id, None)
        if task is None:
            return
        task.status = status
        final = ContextStatus.COMPLETED if status == TaskStatus.COMPLETED else ContextStatus.FAILED
        for context in task.contexts.values():
            if context.status not in FINAL_STATUSES:
                context.status = final
                if final == ContextStatus.COMPLETED:
                    context.progress = 100
                self._emit_context(context)
            self.contexts.pop(context.id, None)
        self._emit(
            EventKind.TASK,
            {
                "task_id": task_id,
                "status": str(status),
                "project_id": task.project_id,
                "error": error.as_dict() if error else None,
                "tokens_used": task.tokens_used,
                "token_budget": task.token_budget,
                "finished_at": self.clock.now(),
            },
        )

    async def run_task(
        self,
        *,
        capability_id: str,
        params: dict[str, Any],
        task_id: str | None = None,
        project_id: str | None = None,
        description: str = "",
        entry_role: str = "main",
        prompt_enhancement: str = "",
        extra: dict[str, Any] | None = None,
    ) -> InvokeResult:
        """Run a whole task: the operator hands it to ``entry_role`` (PRD §4.1 main:
        任务接收) which may invoke others. Bounded by ``task_timeout_s``, never retried."""
        task = await self.begin_task(
            task_id,
            project_id=project_id,
            description=description,
            entry_role=entry_role,
            prompt_enhancement=prompt_enhancement,
            extra=extra,
        )
        result: InvokeResult | None = None
        try:
            result = await self._invoke(
                InvokeRequest(capability_id, params, target_role=entry_role, timeout=self.task_timeout_s),
                caller=USER,
                task=task,
                enforce_matrix=False,
                timeout_cap=self.task_timeout_s,
                retries=0,
            )
        finally:
            if result is None:
                self.end_task(task.task_id, TaskStatus.FAILED, AgentError(ErrorCode.EXECUTOR_ERROR, "internal error"))
        self.end_task(task.task_id, TaskStatus.COMPLETED if result.success else TaskStatus.FAILED, result.error)
        return result

    # ------------------------------------------------------------------ invoke
    async def invoke(
        self,
        request: InvokeRequest,
        *,
        from_role: str,
        project_id: str | None = None,
        task_id: str | None = None,
        description: str = "",
    ) -> InvokeResult:
        """Invoke a capability as ``from_role`` from outside any agent (API, tests, bench).

        With ``task_id`` the call joins that running task; otherwise it runs in a short task of
        its own. Returns an InvokeResult for every runtime failure; raises TaskNotRunning when
        ``task_id`` names no running task (a finished task is never reopened).
        """
        caller = Party(role=from_role)
        if task_id:
            return await self._invoke(request, caller=caller, task=self.running_task(task_id))
        task = await self.begin_task(
            project_id=project_id,
            entry_role=from_role,
            description=description or f"invoke {request.capability_id}",
            kind="invoke",
        )
        result: InvokeResult | None = None
        try:
            result = await self._invoke(request, caller=caller, task=task)
        finally:
            if result is None:  # an unexpected error: the task must not stay open
                self.end_task(task.task_id, TaskStatus.FAILED, AgentError(ErrorCode.EXECUTOR_ERROR, "internal error"))
        self.end_task(task.task_id, TaskStatus.COMPLETED if result.success else TaskStatus.FAILED, result.error)
        return result

    def running_task(self, task_id: str) -> TaskState:
        """The running task ``task_id``; raises TaskNotRunning otherwise."""
        task = self.tasks.get(task_id)
        if task is None:
            raise TaskNotRunning(task_id)
        return task

    async def _invoke(
        self,
        request: InvokeRequest,
        *,
        caller: Party,
        task: TaskState,
        caller_context: ExecutionContext | None = None,
        caller_instance: AgentInstance | None = None,
        caller_skill: str | None = None,
        enforce_matrix: bool = True,
        timeout_cap: float | None = None,
        retries: int | None = None,
    ) -> InvokeResult:
        started = time.perf_counter()
        invoke_id = new_id()
        attempt = 0
        while True:
            attempt += 1
            result, allowed_retries = await self._attempt(
                request,
                invoke_id,
                attempt,
                caller=caller,
                task=task,
                caller_context=caller_context,
                caller_instance=caller_instance,
                caller_skill=caller_skill,
                enforce_matrix=enforce_matrix,
                timeout_cap=timeout_cap,
            )
            limit = allowed_retries if retries is None else retries
            if result.success or result.error is None or not result.error.should_retry or attempt > limit:
                break
            await self.clock.sleep(self.backoff_base_s * (2 ** (attempt - 1)))
        result.latency_ms = (time.perf_counter() - started) * 1000
        result.attempts = attempt
        result.invoke_id = invoke_id
        result.task_id = task.task_id
        return result

    def _resolve_target(
        self,
        snapshot: ConfigSnapshot,
        card: CardSpec,
        request: InvokeRequest,
        caller: Party,
    ) -> tuple[str, AgentInstance | None]:
        if request.target_instance_id:
            instance = self.pool.get(request.target_instance_id)
            if instance is None or not instance.alive:
                state = "unknown" if instance is None else "terminated"
                raise AgentFailure(
                    ErrorCode.UNAVAILABLE,
                    f"instance {request.target_instance_id} is {state}",
                    {"target_instance_id": request.target_instance_id, "reason": f"instance_{state}"},
                    retryable=False,
                )
            if request.target_role and request.target_role != instance.role:
                raise AgentFailure(
                    ErrorCode.UNAVAILABLE,
                    f"instance {instance.instance_id} is {with_article(instance.role)}, "
                    f"not {with_article(request.target_role)}",
                    {"target_instance_id": instance.instance_id},
                    retryable=False,
                )
            return instance.role, instance
        if request.target_role:
            if request.target_role not in snapshot.roles:
                raise AgentFailure(
                    ErrorCode.CAPABILITY_NOT_FOUND,
                    f"there is no role {request.target_role!r}",
                    {"target_role": request.target_role},
                    retryable=False,
                )
            return request.target_role, None
        owners = [role for role in card.owner_roles if role in snapshot.roles]
        if not owners:
            raise AgentFailure(
                ErrorCode.CAPABILITY_NOT_FOUND,
                f"no role offers {card.capability_id}",
                {"capability_id": card.capability_id},
                retryable=False,
            )
        usable = [r for r in owners if snapshot.roles[r].enabled and snapshot.can_invoke(caller.role or "", r)]
        if not usable:
            return owners[0], None
        return min(usable, key=self.pool.load), None

    def _check_policy(
        self,
        snapshot: ConfigSnapshot,
        card: CardSpec,
        target_role: str,
        caller: Party,
        caller_skill: str | None,
        enforce_matrix: bool,
    ) -> None:
        if target_role not in card.owner_roles:
            raise AgentFailure(
                ErrorCode.CAPABILITY_NOT_FOUND,
                f"role {target_role} does not offer {card.capability_id}",
                {"capability_id": card.capability_id, "target_role": target_role},
                retryable=False,
            )
        # A skill calling one of its own INTERNAL capabilities is the skill's inner working,
        # not one role invoking another: the invoke matrix governs calls between roles.
        inside_skill = (
            card.capability_type == CapabilityType.INTERNAL
            and card.skill_id is not None
            and caller_skill == card.skill_id
        )
        if enforce_matrix and not inside_skill and not snapshot.can_invoke(caller.role or "", target_role):
            raise AgentFailure(
                ErrorCode.PERMISSION_DENIED,
                f"{caller.role} may not invoke {target_role} (invoke permission matrix, PRD §4.7)",
                {"from_role": caller.role, "target_role": target_role},
                retryable=False,
            )
        role = snapshot.roles[target_role]
        if not role.enabled:
            raise AgentFailure(
                ErrorCode.CAPABILITY_DISABLED,
                f"role {target_role} is disabled",
                {"target_role": target_role},
                retryable=False,
            )
        if not card.enabled:
            reason = f"skill {card.skill_id} is not active" if card.skill_id else "it is disabled"
            raise AgentFailure(
                ErrorCode.CAPABILITY_DISABLED,
                f"capability {card.capability_id} is unavailable: {reason}",
                {"capability_id": card.capability_id},
                retryable=False,
            )
        if card.capability_type == CapabilityType.INTERNAL and caller_skill != card.skill_id:
            raise AgentFailure(
                ErrorCode.PERMISSION_DENIED,
                f"{card.capability_id} is INTERNAL to skill {card.skill_id}",
                {"capability_id": card.capability_id, "skill_id": card.skill_id},
                retryable=False,
            )

    async def _attempt(
        self,
        request: InvokeRequest,
        invoke_id: str,
        attempt: int,
        *,
        caller: Party,
        task: TaskState,
        caller_context: ExecutionContext | None,
        caller_instance: AgentInstance | None,
        caller_skill: str | None,
        enforce_matrix: bool,
        timeout_cap: float | None,
    ) -> tuple[InvokeResult, int]:
        snapshot = task.snapshot
        correlation_id = f"{invoke_id}:{attempt}"
        target_role = request.target_role
        retries = 0
        instance: AgentInstance | None = None
        try:
            card, defaults = snapshot.resolve(request.capability_id)
            params = {**defaults, **request.params} if defaults else request.params
            target_role, instance = self._resolve_target(snapshot, card, request, caller)
            constraints = snapshot.constraints_for(target_role)
            retries = constraints.max_retries
            self._check_policy(snapshot, card, target_role, caller, caller_skill, enforce_matrix)
            input_validator, _ = self.validators.for_card(card)
            errors = schema_errors(input_validator, params)
            if errors:
                raise AgentFailure(
                    ErrorCode.INVALID_PARAMS,
                    f"params do not match the input schema of {card.capability_id}",
                    {"errors": errors},
                    retryable=False,
                )
            if instance is None:
                strategy = request.routing or RoutingStrategy.BY_ROLE
                instance = self._route(snapshot, target_role, strategy, caller_instance)
            elif self.pool.would_deadlock(caller_instance, instance):
                raise AgentFailure(
                    ErrorCode.UNAVAILABLE,
                    f"instance {instance.instance_id} is waiting on the caller (deadlock)",
                    {"reason": "deadlock"},
                    retryable=False,
                )
            if not instance.healthy:
                raise AgentFailure(
                    ErrorCode.UNAVAILABLE,
                    f"instance {instance.instance_id} missed its heartbeats",
                    {"target_instance_id": instance.instance_id, "reason": "heartbeat_lost"},
                )
        except AgentFailure as failure:
            self._record_refusal(
                request, invoke_id, correlation_id, attempt, caller, task, target_role, instance, failure.error
            )
            return InvokeResult(False, error=failure.error), retries

        timeout = min(request.timeout or DEFAULT_TIMEOUT_S, card.timeout_s, constraints.timeout_s)
        if timeout_cap is not None:
            timeout = min(request.timeout or timeout_cap, timeout_cap)
        now_ms = self.clock.now_ms()
        message = AgentMessage(
            type=MessageType.INVOKE_REQUEST,
            sender=caller,
            recipient=Party(role=target_role, instance_id=instance.instance_id),
            payload={"capability_id": card.capability_id, "params": params, "invoke_id": invoke_id, "attempt": attempt},
            context=MessageContext(
                task.task_id, caller_context.conversation_id if caller_context else task.task_id, correlation_id
            ),
            timestamp=now_ms,
            priority=request.priority,
            ttl=int(timeout * 1000),
        )
        loop = asyncio.get_running_loop()
        pending = PendingCall(
            correlation_id,
            invoke_id,
            loop.create_future(),
            card,
            params,
            task,
            caller,
            message,
            instance,
            self.clock.now() + timeout,
            timeout,
        )
        self._pending[correlation_id] = pending
        try:
            put = self.transport.deliver(instance, message)
            if not put.accepted:
                error = AgentError(
                    ErrorCode.QUEUE_FULL,
                    f"the mailbox of {instance.instance_id} is full",
                    {"target_instance_id": instance.instance_id, "capacity": instance.mailbox.capacity},
                    retryable=False,
                )
                self._emit_message(message, DeliveryStatus.DROPPED, task.project_id, str(ErrorCode.QUEUE_FULL))
                self.alert(
                    "queue_full",
                    "warning",
                    f"{instance.instance_id} refused {with_article(message.priority.label)} message",
                    instance_id=instance.instance_id,
                    message_id=message.id,
                )
                return InvokeResult(False, error=error), retries
            self._emit_message(message, DeliveryStatus.QUEUED, task.project_id)
            self._after_put(instance, put)
            if caller_context is not None:
                caller_context.add_message(_summary(message))
            if caller_instance is not None:
                caller_instance.waiting_on.add(instance.instance_id)
            pending.timer = self.clock.call_later(timeout, lambda: self._on_deadline(pending))
            try:
                outcome = await pending.future
            finally:
                pending.timer.cancel()
                if caller_instance is not None:
                    caller_instance.waiting_on.discard(instance.instance_id)
        finally:
            self._pending.pop(correlation_id, None)

        if outcome is TIMED_OUT:
            return self._time_out(pending), retries
        data, error, from_instance = outcome
        return InvokeResult(error is None, data=data, error=error, from_instance=from_instance), retries

    def _on_deadline(self, pending: PendingCall) -> None:
        """Timer callback: time the call out, unless its deadline moved (waiting_user)."""
        if pending.future.done() or pending.paused_since is not None:
            return  # resume_deadline() re-arms the timer
        remaining = pending.deadline - self.clock.now()
        if remaining > 0:
            pending.timer = self.clock.call_later(remaining, lambda: self._on_deadline(pending))
            return
        pending.future.set_result(TIMED_OUT)

    def pause_deadline(self, pending: PendingCall) -> None:
        """Stop the invoke timeout while the callee waits for an operator."""
        if pending.paused_since is None:
            pending.paused_since = self.clock.now()

    def resume_deadline(self, pending: PendingCall) -> None:
        """Restart the invoke timeout, pushed back by the time spent paused."""
        if pending.paused_since is None:
            return
        now = self.clock.now()
        pending.deadline += now - pending.paused_since
        pending.paused_since = None
        if pending.timer is not None:
            pending.timer.cancel()
        pending.timer = self.clock.call_later(pending.deadline - now, lambda: self._on_deadline(pending))

    def _time_out(self, pending: PendingCall) -> InvokeResult:
        message, instance = pending.message, pending.instance
        withdrawn = self.transport.withdraw(instance, message.id)
        if withdrawn is not None:
            self._emit_status(message, DeliveryStatus.EXPIRED, "the caller timed out before delivery")
        elif instance.executing is pending and instance.worker is not None:
            pending.cancelled_for_timeout = True
            instance.worker.cancel()
        error = AgentError(
            ErrorCode.TIMEOUT,
            f"no response from {instance.role} ({instance.instance_id}) within {pending.timeout_s:g} s",
            {"timeout_s": pending.timeout_s, "target_instance_id": instance.instance_id},
        )
        response = AgentMessage(
            type=MessageType.INVOKE_ERROR,
            sender=Party(role=instance.role, instance_id=instance.instance_id),
            recipient=pending.caller,
            payload={
                "capability_id": pending.card.capability_id,
                "error": error.as_dict(),
                "invoke_id": pending.invoke_id,
            },
            context=MessageContext(
                message.context.task_id, message.context.conversation_id, message.context.correlation_id
            ),
            timestamp=self.clock.now_ms(),
            priority=message.priority,
        )
        self._emit_message(response, DeliveryStatus.DELIVERED, pending.task.project_id)
        return InvokeResult(False, error=error, from_instance=instance.instance_id)

    def _record_refusal(
        self,
        request: InvokeRequest,
        invoke_id: str,
        correlation_id: str,
        attempt: int,
        caller: Party,
        task: TaskState,
        target_role: str | None,
        instance: AgentInstance | None,
        error: AgentError,
    ) -> None:
        message = AgentMessage(
            type=MessageType.INVOKE_REQUEST,
            sender=caller,
            recipient=Party(
                role=target_role, instance_id=instance.instance_id if instance else request.target_instance_id
            ),
            payload={
                "capability_id": request.capability_id,
                "params": request.params,
                "invoke_id": invoke_id,
                "attempt": attempt,
                "error": error.as_dict(),
            },
            context=MessageContext(task.task_id, task.task_id, correlation_id),
            timestamp=self.clock.now_ms(),
            priority=request.priority,
        )
        self._emit_message(message, DeliveryStatus.DENIED, task.project_id, str(error.code))

    def _after_put(self, instance: AgentInstance, put: Any) -> None:
        for message in put.expired:
            self._undeliverable(message, DeliveryStatus.EXPIRED, "ttl passed while queued")
        if put.evicted is not None:
            evicted = put.evicted
            self._undeliverable(evicted, DeliveryStatus.DROPPED, "evicted by a higher-priority message (mailbox full)")
            self.alert(
                "queue_drop",
                "warning",
                f"{instance.instance_id} dropped {with_article(evicted.priority.label)} {evicted.type} to make room",
                instance_id=instance.instance_id,
                message_id=evicted.id,
                reason="evicted",
            )

    def _undeliverable(self, message: AgentMessage, status: DeliveryStatus, reason: str) -> None:
        """A queued message left its mailbox without delivery: record it and release whoever
        waits on it (the invoke caller gets an error at once; a hook counts as processed)."""
        self._emit_status(message, status, reason)
        waiter = self._hook_waiters.pop(message.id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        pending = self._pending.get(message.context.correlation_id or "")
        if pending is None or pending.future.done() or pending.message is not message:
            return
        instance_id = message.recipient.instance_id
        if status == DeliveryStatus.EXPIRED:
            error = AgentError(
                ErrorCode.TIMEOUT,
                f"the request expired in the mailbox of {instance_id}",
                {"target_instance_id": instance_id, "reason": reason},
            )
        elif reason.startswith("evicted"):
            error = AgentError(
                ErrorCode.QUEUE_FULL,
                f"evicted from the full mailbox of {instance_id}",
                {"target_instance_id": instance_id},
                retryable=False,
            )
        else:
            error = AgentError(
                ErrorCode.UNAVAILABLE,
                f"{instance_id} could not take the request: {reason}",
                {"target_instance_id": instance_id, "reason": reason},
            )
        pending.future.set_result((None, error, instance_id))

    # ------------------------------------------------------------------ routing
    def _route(
        self, snapshot: ConfigSnapshot, role: str, strategy: RoutingStrategy, caller_instance: AgentInstance | None
    ) -> AgentInstance:
        """Pick the instance of ``role`` (routing.InstancePool.choose, PRD §4.4)."""
        limit = snapshot.constraints_for(role).max_concurrent_instances
        return self.pool.choose(role, strategy, limit, caller_instance, self.spawn)

    # ------------------------------------------------------------------ instances
    def spawn(self, role: str) -> AgentInstance:
        """Create an instance of ``role`` with its mailbox and worker; it beats at once."""
        instance_id = f"{role}-{uuid.uuid4().hex[:12]}"  # spawning is rare: random is fine
        now = self.clock.now()
        mailbox = Mailbox(
            self.mailbox_capacity,
            now_ms=self.clock.now_ms,
            on_expired=lambda m: self._undeliverable(m, DeliveryStatus.EXPIRED, "ttl passed while queued"),
        )
        instance = AgentInstance(instance_id, role, mailbox, created_at=now, last_heartbeat=now)
        self.pool.add(instance)
        instance.worker = asyncio.get_running_loop().create_task(self._worker(instance), name=instance_id)
        self._emit_instance(instance)
        return instance

    def terminate(self, instance_id: str, reason: str = "terminated by operator") -> AgentInstance:
        """Stop an instance: its queued messages are dropped (callers get ``unavailable``
        and may retry elsewhere), its contexts end as ``terminated``. KeyError if unknown."""
        instance = self.pool.by_id[instance_id]
        if not instance.alive:
            return instance
        instance.status = InstanceStatus.TERMINATED
        for message in instance.mailbox.drain():
            self._undeliverable(message, DeliveryStatus.DROPPED, f"instance terminated: {reason}")
        for task in self.tasks.values():
            context = task.contexts.get(instance_id)
            if context is not None and context.status not in FINAL_STATUSES:
                context.status = ContextStatus.TERMINATED
                self._emit_context(context)
        if instance.worker is not None:
            instance.worker.cancel()
        self.pool.retire(instance)
        self._emit_instance(instance)
        return instance

    def heartbeat(self, instance_id: str) -> None:
        """Record a heartbeat (PRD §4.2); an unhealthy instance becomes available again.

        Each heartbeat is emitted as an instance event, so what the recorder keeps (last
        heartbeat, queued, handled) is at most one interval (30 s) old."""
        instance = self.pool.get(instance_id)
        if instance is None or not instance.alive:
            return
        instance.last_heartbeat = self.clock.now()
        recovered = not instance.healthy
        instance.healthy = True
        self._emit_instance(instance)
        if recovered:
            self.alert(
                "health",
                "info",
                f"{instance_id} is back; its capabilities are available",
                instance_id=instance_id,
                role=instance.role,
                status="available",
            )

    def check_health(self) -> list[AgentInstance]:
        """Mark instances silent for more than ``heartbeat_timeout_s`` unhealthy; returns them."""
        now = self.clock.now()
        changed = []
        for instance in self.pool:
            if instance.alive and instance.healthy and now - instance.last_heartbeat > self.heartbeat_timeout_s:
                instance.healthy = False
                changed.append(instance)
                self._emit_instance(instance)
                self.alert(
                    "health",
                    "critical",
                    f"{instance.instance_id} missed heartbeats for {self.heartbeat_timeout_s:g} s; "
                    "its capabilities are unavailable",
                    instance_id=instance.instance_id,
                    role=instance.role,
                    status="unavailable",
                )
        return changed

    def capability_health(self, snapshot: ConfigSnapshot, capability_id: str) -> dict[str, Any]:
        """``{capability_id, status: available|unavailable, instances: [...]}`` (PRD §4.2).

        Available when an owner role has a healthy instance or may still spawn one;
        unavailable when every instance that could serve it missed its heartbeats.
        """
        card = snapshot.cards.get(capability_id)
        if card is None:
            raise KeyError(capability_id)
        instances = [i for role in card.owner_roles for i in self.pool.alive(role)]
        spawnable = any(
            len(self.pool.alive(role)) < snapshot.constraints_for(role).max_concurrent_instances
            for role in card.owner_roles
            if role in snapshot.roles
        )
        healthy = any(i.healthy for i in instances)
        available = card.enabled and (healthy or (not instances and spawnable))
        if instances and not healthy:
            available = False
        return {
            "capability_id": capability_id,
            "status": "available" if available else "unavailable",
            "enabled": card.enabled,
            "instances": [
                {"instance_id": i.instance_id, "role": i.role, "healthy": i.healthy, "last_heartbeat": i.last_heartbeat}
                for i in instances
            ],
        }

    # ------------------------------------------------------------------ worker
    async def _worker(self, instance: AgentInstance) -> None:
        while instance.alive:
            message = await instance.mailbox.get()
            instance.busy_with = message.id
            instance.status = InstanceStatus.BUSY
            self._emit_status(message, DeliveryStatus.DELIVERED)
            try:
                if message.type == MessageType.INVOKE_REQUEST:
                    await self._execute(instance, message)
                elif message.type == MessageType.HOOK_EVENT:
                    await self._handle_hook(instance, message)
                else:
                    self._note_received(instance, message)
            except asyncio.CancelledError:
                if not instance.alive:
                    raise
            except Exception:
                log.exception("instance %s failed on message %s", instance.instance_id, message.id)
            finally:
                instance.busy_with = None
                instance.processed += 1
                if instance.alive:
                    instance.status = InstanceStatus.IDLE

    @staticmethod
    def _absorb_cancel() -> None:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            current.uncancel()

    def context_for(self, instance: AgentInstance, task: TaskState) -> ExecutionContext:
        """The instance's context for ``task``, created (with a start snapshot) on first use."""
        context = task.contexts.get(instance.instance_id)
        if context is None:
            context = ExecutionContext(
                instance_id=instance.instance_id,
                role=instance.role,
                task_id=task.task_id,
                task_description=task.description,
                conversation_id=task.task_id,
                project_id=task.project_id,
                config_version=task.snapshot.version,
                created_at=self.clock.now(),
            )
            task.contexts[instance.instance_id] = context
            self.contexts[context.id] = context
            context.status = ContextStatus.READY
            self._emit_context(context)
            self.take_snapshot(context, SnapshotType.AUTO, "start")
        return context

    async def _execute(self, instance: AgentInstance, message: AgentMessage) -> None:
        pending = self._pending.get(message.context.correlation_id or "")
        if pending is None or pending.future.done():
            return  # the caller already gave up
        task, card = pending.task, pending.card
        context = self.context_for(instance, task)
        context.status = ContextStatus.EXECUTING
        context.current_step = card.capability_id
        context.add_message(_summary(message))
        self._emit_context(context, at_once=True)  # which capability it started is news of its own
        call = ExecutionCall(self, instance, context, task, card, pending.params, message, pending)
        data: Any = None
        error: AgentError | None = None
        # The executor runs inline in the worker (no task per call); a caller that times
        # out cancels the worker, which uncancels itself and reports the timeout.
        instance.executing = pending
        try:
            executor = self.executors.resolve(card, task.snapshot.roles.get(instance.role))
            data = await executor.execute(call)
            if pending.cancelled_for_timeout:
                self._absorb_cancel()
                error = AgentError(ErrorCode.TIMEOUT, "cancelled: the caller stopped waiting")
        except asyncio.CancelledError:
            if not instance.alive or not pending.cancelled_for_timeout:
                raise
            self._absorb_cancel()
            error = AgentError(ErrorCode.TIMEOUT, "cancelled: the caller stopped waiting")
        except AgentFailure as failure:
            error = failure.error
        except Exception as exc:
            log.warning("executor for %s raised %s", card.capability_id, exc, exc_info=True)
            error = AgentError(
                ErrorCode.EXECUTOR_ERROR,
                f"the executor raised {type(exc).__name__}: {exc}",
                {"exception": type(exc).__name__},
            )
        finally:
            instance.executing = None
        if error is None:
            if not isinstance(data, dict):
                error = AgentError(
                    ErrorCode.OUTPUT_INVALID,
                    "the executor returned something other than an object",
                    {"errors": [{"pointer": "", "message": f"got {type(data).__name__}", "keyword": "type"}]},
                    retryable=False,
                )
            else:
                _, output_validator = self.validators.for_card(card)
                errors = schema_errors(output_validator, data)
                if errors:
                    error = AgentError(
                        ErrorCode.OUTPUT_INVALID,
                        f"the result does not match the output schema of {card.capability_id}",
                        {"errors": errors},
                        retryable=False,
                    )
        self._finish(instance, context, pending, message, data, error, call)

    def _finish(
        self,
        instance: AgentInstance,
        context: ExecutionContext,
        pending: PendingCall,
        message: AgentMessage,
        data: Any,
        error: AgentError | None,
        call: ExecutionCall,
    ) -> None:
        response = AgentMessage(
            type=MessageType.INVOKE_ERROR if error else MessageType.INVOKE_RESPONSE,
            sender=Party(role=instance.role, instance_id=instance.instance_id),
            recipient=message.sender,
            payload=(
                {"capability_id": pending.card.capability_id, "error": error.as_dict(), "invoke_id": pending.invoke_id}
                if error
                else {"capability_id": pending.card.capability_id, "result": data, "invoke_id": pending.invoke_id}
            ),
            context=message.context,
            timestamp=self.clock.now_ms(),
            priority=message.priority,
        )
        context.add_message(_summary(response))
        if error is not None:
            context.errors.append(
                {**error.as_dict(), "capability_id": pending.card.capability_id, "at": self.clock.now()}
            )
            self.take_snapshot(context, SnapshotType.ERROR, "error", f"{pending.card.capability_id}: {error.code}")
        elif not call.progress_reported:
            context.progress = 100
        if context.status not in FINAL_STATUSES:
            context.status = ContextStatus.READY
        self._emit_context(context)
        if not pending.future.done():
            self._emit_message(response, DeliveryStatus.DELIVERED, pending.task.project_id)
            pending.future.set_result((data if error is None else None, error, instance.instance_id))

    def _note_received(self, instance: AgentInstance, message: AgentMessage) -> None:
        task = self.tasks.get(message.context.task_id)
        if task is not None:
            context = task.contexts.get(instance.instance_id)
            if context is not None:
                context.add_message(_summary(message))
                self._emit_context(context)

    # ------------------------------------------------------------------ hook
    def subscribe(self, subscription: EventSubscription) -> EventSubscription:
        """Add an EventSubscription (PRD §4.3); KeyError for an unknown subscriber."""
        if subscription.subscriber_instance_id not in self.pool.by_id:
            raise KeyError(subscription.subscriber_instance_id)
        self.subscriptions[subscription.id] = subscription
        return subscription

    def unsubscribe(self, subscription_id: str) -> None:
        self.subscriptions.pop(subscription_id, None)

    async def hook(
        self,
        event: HookEvent,
        *,
        from_role: str,
        project_id: str | None = None,
        task_id: str | None = None,
    ) -> list[HookAck]:
        """Fire a hook from outside any agent; see ``_hook``."""
        caller = Party(role=from_role)
        if task_id:
            return await self._hook(event, caller=caller, task=self.running_task(task_id))
        task = await self.begin_task(
            project_id=project_id, entry_role=from_role, description=f"hook {event.event_type}", kind="hook"
        )
        waiters: list[asyncio.Future[None]] = []
        try:
            acks = await self._hook(event, caller=caller, task=task, waiters=waiters)
        except AgentFailure as failure:
            self.end_task(task.task_id, TaskStatus.FAILED, failure.error)
            raise
        except BaseException:
            self.end_task(task.task_id, TaskStatus.FAILED, AgentError(ErrorCode.EXECUTOR_ERROR, "internal error"))
            raise
        self._background_task(self._end_when_done(task, waiters))
        return acks

    async def _end_when_done(self, task: TaskState, waiters: list[asyncio.Future[None]]) -> None:
        if waiters:
            await self.clock.wait_any([asyncio.ensure_future(asyncio.gather(*waiters))], self.task_timeout_s)
        self.end_task(task.task_id, TaskStatus.COMPLETED)

    def _background_task(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._detached.add(task)
        task.add_done_callback(self._detached.discard)

    async def _hook(
        self,
        event: HookEvent,
        *,
        caller: Party,
        task: TaskState,
        caller_context: ExecutionContext | None = None,
        caller_skill: str | None = None,
        waiters: list[asyncio.Future[None]] | None = None,
    ) -> list[HookAck]:
        """Deliver a ``hook_event`` (PRD §4.3/§4.4) and collect each receiver's ``hook_ack``.

        ``broadcast``: every live instance with a matching subscription. Otherwise one
        instance per named target role (routed by_role). A plain event is not governed by the
        invoke matrix (DESIGN.md §4); a hook that names a ``capability_id`` asks the receiver
        to run it, so it is an invoke in all but name: the receiver must own the capability,
        the matrix must allow caller -> receiver and INTERNAL capabilities stay inside their
        skill, else that receiver acks ``rejected`` (the event never reaches its mailbox). A
        receiver acks ``received`` when the event is queued, or ``rejected`` with the reason
        when its mailbox refuses it.
        """
        snapshot = task.snapshot
        targets: list[AgentInstance] = []
        if event.broadcast:
            wanted = {
                s.subscriber_instance_id
                for s in self.subscriptions.values()
                if s.matches(event.event_type, caller.role, task.task_id)
            }
            targets = [i for i in self.pool if i.instance_id in wanted and i.alive]
        else:
            for role in event.target_roles or ():
                if role not in snapshot.roles:
                    raise AgentFailure(
                        ErrorCode.CAPABILITY_NOT_FOUND,
                        f"there is no role {role!r}",
                        {"target_role": role},
                        retryable=False,
                    )
                if not snapshot.roles[role].enabled:
                    raise AgentFailure(
                        ErrorCode.CAPABILITY_DISABLED,
                        f"role {role} is disabled",
                        {"target_role": role},
                        retryable=False,
                    )
                targets.append(self._route(snapshot, role, RoutingStrategy.BY_ROLE, None))
        acks: list[HookAck] = []
        for instance in targets:
            refusal = self._hook_refusal(snapshot, event, caller, instance, caller_skill)
            if refusal is not None:
                refused = AgentMessage(
                    type=MessageType.HOOK_EVENT,
                    sender=caller,
                    recipient=Party(role=instance.role, instance_id=instance.instance_id),
                    payload={
                        "event_type": event.event_type,
                        "capability_id": event.capability_id,
                        "error": refusal.as_dict(),
                    },
                    context=MessageContext(task.task_id, task.task_id, new_id()),
                    timestamp=self.clock.now_ms(),
                )
                self._emit_message(refused, DeliveryStatus.DENIED, task.project_id, str(refusal.code))
                acks.append(HookAck(instance.instance_id, instance.role, "rejected", str(refusal.code)))
                continue
            message = AgentMessage(
                type=MessageType.HOOK_EVENT,
                sender=caller,
                recipient=Party(role=instance.role, instance_id=instance.instance_id),
                payload={
                    "event_type": event.event_type,
                    "payload": event.payload,
                    "capability_id": event.capability_id,
                    "broadcast": event.broadcast,
                    **({"caller_skill": caller_skill} if caller_skill else {}),
                },
                context=MessageContext(task.task_id, task.task_id, new_id()),
                timestamp=self.clock.now_ms(),
                priority=Priority.NORMAL,
                ttl=int(self.task_timeout_s * 1000),
            )
            put = self.transport.deliver(instance, message)
            if not put.accepted:
                self._emit_message(message, DeliveryStatus.DROPPED, task.project_id, str(ErrorCode.QUEUE_FULL))
                self.alert(
                    "queue_full",
                    "warning",
                    f"{instance.instance_id} refused a hook",
                    instance_id=instance.instance_id,
                    message_id=message.id,
                )
                acks.append(HookAck(instance.instance_id, instance.role, "rejected", str(ErrorCode.QUEUE_FULL)))
                continue
            self._emit_message(message, DeliveryStatus.QUEUED, task.project_id)
            if waiters is not None:
                waiter = asyncio.get_running_loop().create_future()
                self._hook_waiters[message.id] = waiter
                waiters.append(waiter)
            self._after_put(instance, put)
            ack = AgentMessage(
                type=MessageType.HOOK_ACK,
                sender=Party(role=instance.role, instance_id=instance.instance_id),
                recipient=caller,
                payload={"status": "received", "event_type": event.event_type},
                context=message.context,
                timestamp=self.clock.now_ms(),
                priority=Priority.NORMAL,
            )
            self._emit_message(ack, DeliveryStatus.DELIVERED, task.project_id)
            if caller_context is not None:
                caller_context.add_message(_summary(message))
            acks.append(HookAck(instance.instance_id, instance.role, "received"))
        return acks

    def _hook_refusal(
        self,
        snapshot: ConfigSnapshot,
        event: HookEvent,
        caller: Party,
        instance: AgentInstance,
        caller_skill: str | None,
    ) -> AgentError | None:
        """Why ``instance`` may not run the capability a hook names (None when it may)."""
        if not event.capability_id:
            return None
        try:
            card, _ = snapshot.resolve(event.capability_id)
            self._check_policy(snapshot, card, instance.role, caller, caller_skill, enforce_matrix=True)
        except AgentFailure as failure:
            return failure.error
        return None

    async def _handle_hook(self, instance: AgentInstance, message: AgentMessage) -> None:
        task = self.tasks.get(message.context.task_id)
        status: dict[str, Any] = {"status": "processed", "event_type": message.payload.get("event_type")}
        if task is not None:
            context = self.context_for(instance, task)
            context.add_message(_summary(message))
            capability_id = message.payload.get("capability_id")
            if capability_id:
                status = await self._run_hook_capability(instance, context, task, capability_id, message)
            self._emit_context(context)
        reply = AgentMessage(
            type=MessageType.STATUS_UPDATE,
            sender=Party(role=instance.role, instance_id=instance.instance_id),
            recipient=message.sender,
            payload=status,
            context=message.context,
            timestamp=self.clock.now_ms(),
            priority=Priority.NORMAL,
        )
        self.send(reply, project_id=task.project_id if task else None)
        waiter = self._hook_waiters.pop(message.id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _run_hook_capability(
        self,
        instance: AgentInstance,
        context: ExecutionContext,
        task: TaskState,
        capability_id: str,
        message: AgentMessage,
    ) -> dict[str, Any]:
        event_type = message.payload.get("event_type")
        try:
            card, defaults = task.snapshot.resolve(capability_id)
            caller_skill = message.payload.get("caller_skill")
            self._check_policy(task.snapshot, card, instance.role, message.sender, caller_skill, enforce_matrix=True)
            params = {**defaults, **(message.payload.get("payload") or {})}
            input_validator, output_validator = self.validators.for_card(card)
            errors = schema_errors(input_validator, params)
            if errors:
                raise AgentFailure(
                    ErrorCode.INVALID_PARAMS,
                    "hook payload does not match the input schema",
                    {"errors": errors},
                    retryable=False,
                )
            executor = self.executors.resolve(card, task.snapshot.roles.get(instance.role))
            call = ExecutionCall(self, instance, context, task, card, params, message, None)
            context.status = ContextStatus.EXECUTING
            timeout = min(card.timeout_s, task.snapshot.constraints_for(instance.role).timeout_s)
            run = asyncio.ensure_future(executor.execute(call))
            await self.clock.wait_any([run], timeout)
            if not run.done():
                run.cancel()
                raise AgentFailure(
                    ErrorCode.TIMEOUT,
                    f"{capability_id} did not finish within {timeout:g} s",
                    {"timeout_s": timeout},
                    retryable=False,
                )
            data = run.result()
            errors = schema_errors(output_validator, data) if isinstance(data, dict) else [{"pointer": ""}]
            if errors:
                raise AgentFailure(
                    ErrorCode.OUTPUT_INVALID,
                    "hook result does not match the output schema",
                    {"errors": errors},
                    retryable=False,
                )
            context.status = ContextStatus.READY
            return {"status": "completed", "event_type": event_type, "capability_id": capability_id, "result": data}
        except AgentFailure as failure:
            context.status = ContextStatus.READY
            context.errors.append({**failure.error.as_dict(), "capability_id": capability_id})
            return {
                "status": "failed",
                "event_type": event_type,
                "capability_id": capability_id,
                "error": failure.error.as_dict(),
            }
        except Exception as exc:
            context.status = ContextStatus.READY
            return {
                "status": "failed",
                "event_type": event_type,
                "capability_id": capability_id,
                "error": {"code": "executor_error", "message": f"{type(exc).__name__}: {exc}", "details": {}},
            }

    def send(self, message: AgentMessage, *, project_id: str | None = None) -> None:
        """Send a one-way message (status_update, progress_report, artifact_share, ...).

        To a live instance it goes through that instance's mailbox; to the operator or a
        gone instance it is recorded as delivered.
        """
        target = self.pool.get(message.recipient.instance_id or "")
        if target is None or not target.alive:
            self._emit_message(message, DeliveryStatus.DELIVERED, project_id)
            return
        put = self.transport.deliver(target, message)
        if not put.accepted:
            self._emit_message(message, DeliveryStatus.DROPPED, project_id, str(ErrorCode.QUEUE_FULL))
            self.alert(
                "queue_full",
                "warning",
                f"{target.instance_id} refused {with_article(message.type)}",
                instance_id=target.instance_id,
                message_id=message.id,
            )
            return
        self._emit_message(message, DeliveryStatus.QUEUED, project_id)
        self._after_put(target, put)

    # ------------------------------------------------------------------ operators
    async def request_confirmation(self, call: ExecutionCall, tool: str, args: dict[str, Any]) -> bool:
        """Ask an operator to approve ``tool`` (PRD §4.7 ⚠️); the context is ``waiting_user``
        until a decision or ``confirmation_timeout_s``. Returns True only when approved."""
        now = self.clock.now()
        confirmation = PendingConfirmation(
            id=new_id(),
            context_id=call.context.id,
            instance_id=call.instance.instance_id,
            role=call.role,
            task_id=call.task.task_id,
            project_id=call.task.project_id,
            tool=tool,
            args=args,
            created_at=now,
            expires_at=now + self.confirmation_timeout_s,
            future=asyncio.get_running_loop().create_future(),
        )
        self.confirmations[confirmation.id] = confirmation
        previous = call.context.status
        call.context.status = ContextStatus.WAITING_USER
        call.context.pending_questions.append(f"Approve {tool} for {call.role}? ({confirmation.id})")
        if call.pending is not None:
            self.pause_deadline(call.pending)
        self._emit(EventKind.CONFIRMATION, {"confirmation": confirmation.as_dict()})
        self._emit_context(call.context)
        try:
            await self.clock.wait_any([confirmation.future], self.confirmation_timeout_s)
            if not confirmation.future.done():
                confirmation.status = "expired"
                self._emit(EventKind.CONFIRMATION, {"confirmation": confirmation.as_dict()})
                return False
            return confirmation.future.result()
        finally:
            self.confirmations.pop(confirmation.id, None)
            if call.pending is not None:
                self.resume_deadline(call.pending)
            call.context.pending_questions = [q for q in call.context.pending_questions if confirmation.id not in q]
            if call.context.status == ContextStatus.WAITING_USER:
                call.context.status = previous
            self._emit_context(call.context)

    def resolve_confirmation(self, confirmation_id: str, approve: bool, decided_by: str) -> dict[str, Any]:
        """Approve or reject a pending tool confirmation. KeyError when it is not waiting."""
        confirmation = self.confirmations.get(confirmation_id)
        if confirmation is None or confirmation.future.done():
            raise KeyError(confirmation_id)
        confirmation.status = "approved" if approve else "rejected"
        confirmation.decided_by = decided_by
        confirmation.future.set_result(approve)
        self._emit(EventKind.CONFIRMATION, {"confirmation": confirmation.as_dict()})
        return confirmation.as_dict()

    def _expire_confirmations(self) -> None:
        now = self.clock.now()
        for confirmation in list(self.confirmations.values()):
            if now > confirmation.expires_at and not confirmation.future.done():
                confirmation.future.set_result(False)
                confirmation.status = "expired"
                self._emit(EventKind.CONFIRMATION, {"confirmation": confirmation.as_dict()})

    def add_user_instruction(self, context_id: str, text: str, *, author: str = "operator") -> dict[str, Any]:
        """Give a running context an operator instruction (PRD §4.6): stored in
        ``input_context.user_instructions``, sent as a ``context_sync`` message and
        snapshotted (trigger ``user_instruction``). KeyError when the context is not live."""
        context = self.contexts[context_id]
        context.user_instructions.append(text)
        message = AgentMessage(
            type=MessageType.CONTEXT_SYNC,
            sender=Party(role="user"),
            recipient=Party(role=context.role, instance_id=context.instance_id),
            payload={"user_instruction": text, "author": author},
            context=MessageContext(context.task_id, context.conversation_id, None),
            timestamp=self.clock.now_ms(),
            priority=Priority.HIGH,
        )
        context.add_message(_summary(message))
        self._emit_message(message, DeliveryStatus.DELIVERED, context.project_id)
        self._emit_context(context)
        return self.take_snapshot(context, SnapshotType.AUTO, "user_instruction", text[:200])

    def manual_snapshot(self, context_id: str, label: str) -> dict[str, Any]:
        """A ``manual`` snapshot of a live context. KeyError when it is not live."""
        return self.take_snapshot(self.contexts[context_id], SnapshotType.MANUAL, "manual", label)
