"""``Runtime``: the in-process agent runtime, a facade over its parts (docs/architecture.md).

Plain asyncio, no ORM. It reads ``ConfigSnapshot``s (pinned per task, PRD §4.8), keeps agent
instances with priority mailboxes, enforces the invoke matrix, card state and schemas (PRD
§4.2-§4.4, §4.7), and emits every message, context, snapshot, alert and confirmation as a
typed event for the recorder and the live sink. It implements both Protocols of
``teamclaw.runtime.contract``: ``AgentRuntime`` for the product, ``AgentPort`` for executing
agents. The work is done by:

- ``config_cache.ConfigCache``: the snapshot per project, reloaded when the config moved on;
- ``emission.Emitter``: building and emitting events, context changes coalesced per step;
- ``tasks.TaskBook``: running tasks and their contexts; one context manager opens and closes a task;
- ``pending.PendingCalls``: invoke attempts waiting for a response, and their deadlines;
- ``delivery.Delivery``: into mailboxes, and accounting for every message not delivered;
- ``worker.InstanceWorkers``: spawning, routing to, running and terminating instances;
- ``invoking.Invoker`` and ``hooks.Hooks``: both sides of invoke and of hook;
- ``confirmations.Confirmations``: tool uses waiting for an operator;
- ``health.Heartbeats``: heartbeats, capability health and the housekeeping loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Coroutine, Mapping
from pathlib import Path
from typing import Any

from teamclaw.runtime.clock import Clock, SystemClock
from teamclaw.runtime.config import ConfigSnapshot
from teamclaw.runtime.config_cache import ConfigCache, ConfigSource
from teamclaw.runtime.confirmations import Confirmations, PendingConfirmation
from teamclaw.runtime.context import ExecutionContext, SnapshotType, TaskState, TaskStatus, message_reference
from teamclaw.runtime.contract import PromptRenderer
from teamclaw.runtime.delivery import Delivery
from teamclaw.runtime.emission import Emitter
from teamclaw.runtime.errors import AgentError, ErrorCode
from teamclaw.runtime.events import ConfigApplied, ContextSnapshot, EventBus, EventSink, RuntimeEvent
from teamclaw.runtime.execution import ExecutionCall
from teamclaw.runtime.executors import ExecutorRegistry
from teamclaw.runtime.executors.offline import OfflineExecutor
from teamclaw.runtime.health import Heartbeats
from teamclaw.runtime.hooks import Hooks
from teamclaw.runtime.instance import AgentInstance
from teamclaw.runtime.invocation import (
    EventSubscription,
    HookAck,
    HookEvent,
    InvokeRequest,
    InvokeResult,
    OperatorAnswer,
)
from teamclaw.runtime.invoking import Invoker
from teamclaw.runtime.knowledge import KnowledgeRetriever
from teamclaw.runtime.memory import DEFAULT_MEMORY_TOKENS
from teamclaw.runtime.messages import AgentMessage, DeliveryStatus, MessageContext, MessageType, Party, Priority
from teamclaw.runtime.overlay import ConfigOverlay
from teamclaw.runtime.pending import PendingCalls
from teamclaw.runtime.resume import ResumeJournal
from teamclaw.runtime.routing import InstancePool
from teamclaw.runtime.schemas import SchemaValidators
from teamclaw.runtime.slots import InstanceSlots
from teamclaw.runtime.tasks import TaskBook, TaskNotRunning
from teamclaw.runtime.tools import BUILTIN_TOOLS, ExternalTools, ToolHandler
from teamclaw.runtime.transport import InProcessTransport, Transport
from teamclaw.runtime.worker import InstanceWorkers

__all__ = ["USER", "PromptRenderer", "Runtime", "TaskNotRunning"]

USER = Party(role="user")
"""The operator (UI, API, command line) as a message end."""


class Runtime:
    """Runs agent instances and mediates every invoke, hook and tool use.

    ``config_source(project_id) -> ConfigSnapshot`` is called (in a worker thread) when a
    task starts and the cached snapshot is older than the newest config version; tests may
    pass a fixed ``snapshot`` instead (ValueError without either). Durations are seconds;
    ``mailbox_capacity`` is messages per instance (PRD §4.3). ``external_tools`` runs the
    tools of external tool sources the snapshot lists (``ToolSpec``: MCP servers, issue 16).
    ``memory_budget_tokens`` is the estimated tokens of history each context's memory replays
    (seed 003 MemoryContext, ``TEAMCLAW_MEMORY_TOKENS``, 4,000 by default).
    ``instance_slots`` is where an instance's slot is taken before it is spawned (PRD §4.7
    4 instances per role; ``teamclaw.runtime.slots``): ``LocalSlots`` (this runtime's own
    count) by default, a shared store to hold the limit across runtime workers. A task counts
    its own instances (``teamclaw.runtime.scopes``, issue 28), on the runtime running it; the
    tasks of the projects in ``instance_limit_per_project`` (slugs, ``*`` for every project)
    share theirs per project, and the calls from outside any task theirs, in ``instance_slots``.
    """

    def __init__(
        self,
        *,
        config_source: ConfigSource | None = None,
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
        knowledge_retriever: KnowledgeRetriever | None = None,
        transport: Transport | None = None,
        default_project_dir: str | Path | None = None,
        tools: dict[str, ToolHandler] | None = None,
        external_tools: ExternalTools | None = None,
        auto_heartbeat: bool = True,
        memory_budget_tokens: int = DEFAULT_MEMORY_TOKENS,
        instance_slots: InstanceSlots | None = None,
        instance_limit_per_project: Collection[str] = (),
    ) -> None:
        self.config = ConfigCache(config_source, snapshot)
        self._clock: Clock = clock or SystemClock()
        self.bus = EventBus()
        for sink in sinks or ():
            self.bus.add_sink(sink)
        self._executors = executors or ExecutorRegistry({"offline": OfflineExecutor()})
        self._validators = SchemaValidators()
        self._tools: dict[str, ToolHandler] = {**BUILTIN_TOOLS, **(tools or {})}
        self._external_tools = external_tools
        self._prompt_renderer = prompt_renderer
        self._knowledge_retriever = knowledge_retriever
        self._default_project_dir = Path(default_project_dir) if default_project_dir else None
        self.task_timeout_s = task_timeout_s
        self.pool = InstancePool()
        self.emitter = Emitter(self.bus, self._clock, lambda task_id: self.book.project_of(task_id))
        self.book = TaskBook(self.emitter, self._clock, self.config, memory_budget_tokens)
        self.book.per_project = frozenset(instance_limit_per_project)
        self.pending = PendingCalls(self._clock)
        self.delivery = Delivery(transport or InProcessTransport(), self.emitter, self.pending, self.pool)
        self.workers = InstanceWorkers(
            pool=self.pool,
            emitter=self.emitter,
            delivery=self.delivery,
            clock=self._clock,
            mailbox_capacity=mailbox_capacity,
            contexts_of=self.book.contexts_of,
            slots=instance_slots,
        )
        shared: dict[str, Any] = {
            "port": self,
            "clock": self._clock,
            "emitter": self.emitter,
            "delivery": self.delivery,
            "workers": self.workers,
            "book": self.book,
            "executors": self._executors,
            "validators": self._validators,
        }
        self.invoker = Invoker(pending=self.pending, backoff_base_s=backoff_base_s, **shared)
        self.hooks = Hooks(task_timeout_s=task_timeout_s, **shared)
        self.workers.handlers = {
            MessageType.INVOKE_REQUEST: self.invoker.serve,
            MessageType.HOOK_EVENT: self.hooks.serve,
        }
        self.workers.other = self._note_received
        self.book.on_end = self.workers.end_scope
        self._confirmations = Confirmations(self._clock, self.emitter, self.pending, confirmation_timeout_s)
        self._confirmations.on_held = self.workers.reroute_held
        self._confirmations.on_released = self._reclaim_slots
        self.heartbeats = Heartbeats(
            pool=self.pool,
            emitter=self.emitter,
            clock=self._clock,
            interval_s=heartbeat_interval_s,
            timeout_s=heartbeat_timeout_s,
            auto_heartbeat=auto_heartbeat,
            housekeeping=self._housekeeping,
        )
        self._background: list[asyncio.Task[None]] = []
        self._detached: set[asyncio.Future[Any]] = set()

    # ------------------------------------------------------------------ state, read-only views
    @property
    def instances(self) -> dict[str, AgentInstance]:
        """Every instance by id (terminated ones included)."""
        return self.pool.by_id

    @property
    def tasks(self) -> dict[str, TaskState]:
        """The running tasks by id."""
        return self.book.tasks

    @property
    def contexts(self) -> dict[str, ExecutionContext]:
        """The live contexts (of running tasks) by id."""
        return self.book.contexts

    @property
    def confirmations(self) -> Mapping[str, PendingConfirmation]:
        """The tool confirmations waiting for an operator, by id."""
        return self._confirmations.waiting

    @property
    def subscriptions(self) -> Mapping[str, EventSubscription]:
        """The hook subscriptions, by id."""
        return self.hooks.subscriptions

    @property
    def latest_version(self) -> int:
        """The newest config version this runtime has heard of."""
        return self.config.latest_version

    @property
    def heartbeat_interval_s(self) -> float:
        """Seconds between heartbeats (PRD §4.2: 30)."""
        return self.heartbeats.interval_s

    @property
    def heartbeat_timeout_s(self) -> float:
        """Seconds without a heartbeat before an instance is unavailable (PRD §4.2: 90)."""
        return self.heartbeats.timeout_s

    # ------------------------------------------------------------------ AgentPort
    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def validators(self) -> SchemaValidators:
        return self._validators

    @property
    def executors(self) -> ExecutorRegistry:
        return self._executors

    @property
    def tools(self) -> dict[str, ToolHandler]:
        return self._tools

    @property
    def external_tools(self) -> ExternalTools | None:
        return self._external_tools

    @property
    def prompt_renderer(self) -> PromptRenderer | None:
        return self._prompt_renderer

    @property
    def knowledge_retriever(self) -> KnowledgeRetriever | None:
        return self._knowledge_retriever

    @property
    def default_project_dir(self) -> Path | None:
        return self._default_project_dir

    async def invoke_as(self, call: ExecutionCall, request: InvokeRequest) -> InvokeResult:
        """Invoke as the agent running ``call``: the matrix applies to its role."""
        return await self.invoker.invoke(
            request,
            caller=Party(role=call.role, instance_id=call.instance.instance_id),
            task=call.task,
            caller_context=call.context,
            caller_instance=call.instance,
            caller_skill=call.card.skill_id,
        )

    async def hook_as(self, call: ExecutionCall, event: HookEvent) -> list[HookAck]:
        """Fire a hook as the agent running ``call``."""
        return await self.hooks.fire(
            event,
            caller=Party(role=call.role, instance_id=call.instance.instance_id),
            task=call.task,
            caller_context=call.context,
            caller_skill=call.card.skill_id,
        )

    async def request_confirmation(self, call: ExecutionCall, tool: str, args: dict[str, Any]) -> bool:
        """Ask an operator to approve ``tool`` (PRD §4.7 ⚠️); True only when approved."""
        return await self._confirmations.request(call, tool, args)

    async def ask_operator(
        self, call: ExecutionCall, what: str, request: dict[str, Any], timeout_s: float, question: str
    ) -> OperatorAnswer | None:
        """Wait for an operator's answer to ``request`` (``Confirmations.ask``); None when
        none came."""
        return await self._confirmations.ask(call, what, request, timeout_s, question)

    def context_changed(self, context: ExecutionContext, *, at_once: bool = False) -> None:
        """Note a change of ``context`` (see ``Emitter.context_changed``)."""
        self.emitter.context_changed(context, at_once=at_once)

    def snapshot(
        self, context: ExecutionContext, snapshot_type: SnapshotType, trigger: str, label: str = ""
    ) -> ContextSnapshot:
        """Record the whole state of ``context`` (PRD §4.6)."""
        return self.emitter.snapshot(context, snapshot_type, trigger, label)

    def emit(self, event_type: type[RuntimeEvent], /, **fields: Any) -> None:
        """Emit an event of ``event_type`` stamped now."""
        self.emitter.emit(event_type, **fields)

    def alert(self, kind: str, severity: str, message: str, **details: Any) -> None:
        """Raise an alert event (queue drop, health change, budget stop, failover...)."""
        self.emitter.alert(kind, severity, message, **details)

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Start the heartbeat/health loop (PRD §4.2: beat every 30 s, stale after 90 s)."""
        if not self._background:
            self._background.append(asyncio.create_task(self.heartbeats.loop(), name="teamclaw-health"))

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
        self.workers.cancel_background()
        for instance in list(self.pool):
            if instance.alive:
                self.workers.terminate(instance.instance_id, reason="runtime stopped")
        workers = [i.worker for i in self.pool if i.worker is not None]
        if workers:
            await asyncio.gather(*workers, return_exceptions=True)
        self.emitter.flush_contexts()  # the last changes reach the sinks before the caller stops them

    def _housekeeping(self) -> None:
        for instance in list(self.pool):
            if instance.alive:
                instance.mailbox.sweep_expired()
        self._confirmations.expire_overdue()

    def add_sink(self, sink: EventSink) -> None:
        """Send every later event to ``sink``."""
        self.bus.add_sink(sink)

    # ------------------------------------------------------------------ config
    def set_snapshot(self, snapshot: ConfigSnapshot) -> None:
        """Install a snapshot directly (tests, or a host that builds snapshots itself)."""
        self.config.install(snapshot)

    async def snapshot_for(self, project_id: str | None) -> ConfigSnapshot:
        """The newest snapshot for ``project_id``, reloading it when the config moved on."""
        return await self.config.snapshot_for(project_id)

    def apply_config_change(self, change: Mapping[str, Any]) -> None:
        """Take a ``ConfigChangeEvent`` (PRD §4.8): later task starts load the new version;
        tasks in flight keep their pinned snapshot."""
        self.config.note_version(change)
        self.emitter.emit(ConfigApplied, change=dict(change))

    # ------------------------------------------------------------------ tasks
    async def begin_task(self, task_id: str | None = None, **options: Any) -> TaskState:
        """Open a task without a body (see ``TaskBook.begin``); close it with ``end_task``."""
        return await self.book.begin(task_id, **options)

    def end_task(self, task_id: str, status: TaskStatus, error: AgentError | None = None) -> None:
        """Close a task opened with ``begin_task`` (see ``TaskBook.end``)."""
        self.book.end(task_id, status, error)

    def running_task(self, task_id: str) -> TaskState:
        """The running task ``task_id``; raises TaskNotRunning otherwise."""
        return self.book.running(task_id)

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
        journal: ResumeJournal | None = None,
        overlay: ConfigOverlay | None = None,
        snapshot: ConfigSnapshot | None = None,
    ) -> InvokeResult:
        """Run a whole task: the operator hands it to ``entry_role`` (PRD §4.1 main:
        任务接收) which may invoke others. Bounded by ``task_timeout_s``, never retried.
        With ``journal`` it resumes an earlier attempt: recorded steps are answered from the
        record (``teamclaw.runtime.resume``). ``overlay`` changes the task's pinned config for
        it alone (a fork's overrides, ``teamclaw.runtime.overlay``); ``snapshot`` pins that
        configuration instead of the current one (a resumed task's, PRD §4.8)."""
        async with self.book.run(
            task_id,
            project_id=project_id,
            description=description,
            entry_role=entry_role,
            prompt_enhancement=prompt_enhancement,
            journal=journal,
            overlay=overlay,
            snapshot=snapshot,
        ) as run:
            request = InvokeRequest(capability_id, params, target_role=entry_role, timeout=self.task_timeout_s)
            result = await self.invoker.invoke(
                request, caller=USER, task=run.task, enforce_matrix=False, timeout_cap=self.task_timeout_s, retries=0
            )
            return run.finish(result)

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
            return await self.invoker.invoke(request, caller=caller, task=self.book.running(task_id))
        async with self.book.run(
            project_id=project_id,
            entry_role=from_role,
            description=description or f"invoke {request.capability_id}",
            kind="invoke",
        ) as run:
            return run.finish(await self.invoker.invoke(request, caller=caller, task=run.task))

    async def hook(
        self,
        event: HookEvent,
        *,
        from_role: str,
        project_id: str | None = None,
        task_id: str | None = None,
    ) -> list[HookAck]:
        """Fire a hook from outside any agent (see ``Hooks.fire``). Without ``task_id`` it runs
        in a short task of its own that ends once every receiver processed the event (at most
        ``task_timeout_s``). Raises TaskNotRunning, AgentFailure (an unknown target role)."""
        caller = Party(role=from_role)
        if task_id:
            return await self.hooks.fire(event, caller=caller, task=self.book.running(task_id))
        async with self.book.run(
            project_id=project_id, entry_role=from_role, description=f"hook {event.event_type}", kind="hook"
        ) as run:
            waiters: list[asyncio.Future[None]] = []
            acks = await self.hooks.fire(event, caller=caller, task=run.task, waiters=waiters)
            run.hand_off()
            self._detach(self._end_when_processed(run.task, waiters))
            return acks

    async def _end_when_processed(self, task: TaskState, waiters: list[asyncio.Future[None]]) -> None:
        if waiters:
            await self.clock.wait_any([asyncio.ensure_future(asyncio.gather(*waiters))], self.task_timeout_s)
        self.book.end(task.task_id, TaskStatus.COMPLETED)

    def _detach(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._detached.add(task)
        task.add_done_callback(self._detached.discard)

    def cancel_task(self, task_id: str, reason: str = "cancelled by the operator") -> bool:
        """End running task ``task_id`` as ``terminated`` (PRD §4.6) with the error ``cancelled``: every invoke waiting
        in it returns that error at once, later invokes in it are refused with it, and its
        waiting tool confirmations expire. False when the task is not running."""
        task = self.book.tasks.get(task_id)
        if task is None:
            return False
        task.cancelled = AgentError(ErrorCode.CANCELLED, reason, {"task_id": task_id}, retryable=False)
        for pending in self.pending.of_task(task_id):
            pending.answer((None, task.cancelled, None))
        self._confirmations.expire_task(task_id)
        self.book.end(task_id, TaskStatus.TERMINATED, task.cancelled)
        return True

    # ------------------------------------------------------------------ instances and health
    @property
    def slots(self) -> InstanceSlots:
        """Where this runtime takes its instances' slots (``teamclaw.runtime.slots``)."""
        return self.workers.slots

    def spawn(self, role: str) -> AgentInstance:
        """Create an instance of ``role`` with its mailbox and worker; it beats at once. It
        holds no instance slot (outside the role's limit); ``spawn_in_slot`` takes one."""
        return self.workers.spawn(role)

    async def spawn_in_slot(self, role: str, limit: int) -> AgentInstance | None:
        """Spawn an instance of ``role`` in one of its ``limit`` slots; None when every slot
        is held (``InstanceWorkers.spawn_in_slot``)."""
        return await self.workers.spawn_in_slot(role, limit)

    def settle_slots(self, lost: list[str], wanted: list[str]) -> list[str]:
        """Terminate the instances whose slot was lost, retire idle ones whose slot another
        runtime wants or whose slot is past their role's limit now
        (``InstanceWorkers.settle_slots``); returns the ids terminated."""
        return self.workers.settle_slots(lost, wanted, self.role_limits())

    def _reclaim_slots(self) -> None:
        """An instance stopped waiting for its operator: those that gave their slot up while
        held take one back (``InstanceWorkers.reclaim_slots``)."""
        if not self.workers.slots.shared:
            return
        snapshots = self._current_snapshots()
        self_invoking = {role for snapshot in snapshots for role in snapshot.roles if snapshot.can_invoke(role, role)}
        self.workers.reclaim_slots(self.role_limits(), self_invoking)

    def _current_snapshots(self) -> list[ConfigSnapshot]:
        """The snapshots loaded here at the config's latest version (all loaded ones when none is)."""
        cached = list(self.config.cached.values())
        return [s for s in cached if s.version >= self.config.latest_version] or cached

    def role_limits(self) -> dict[str, int]:
        """Each role's ``max_concurrent_instances`` in the current snapshots loaded here
        (PRD §4.7): the largest when projects differ, so no project's tasks lose an instance
        they may have. Snapshots older than the config's latest version are left out (they
        hold limits since changed); with none current, every loaded one counts."""
        limits: dict[str, int] = {}
        for snapshot in self._current_snapshots():
            for role in snapshot.roles:
                limit = snapshot.constraints_for(role).max_concurrent_instances
                limits[role] = max(limits.get(role, 0), limit)
        return limits

    def terminate(self, instance_id: str, reason: str = "terminated by operator") -> AgentInstance:
        """Stop an instance (see ``InstanceWorkers.terminate``). KeyError if unknown."""
        return self.workers.terminate(instance_id, reason)

    def heartbeat(self, instance_id: str) -> None:
        """Record a heartbeat of ``instance_id`` (PRD §4.2)."""
        self.heartbeats.heartbeat(instance_id)

    def check_health(self) -> list[AgentInstance]:
        """Mark instances past the heartbeat timeout unhealthy; returns them."""
        return self.heartbeats.check()

    def capability_health(self, snapshot: ConfigSnapshot, capability_id: str) -> dict[str, Any]:
        """``{capability_id, status, enabled, instances}`` (PRD §4.2). KeyError if unknown."""
        return self.heartbeats.capability_health(snapshot, capability_id)

    # ------------------------------------------------------------------ messages
    def subscribe(self, subscription: EventSubscription) -> EventSubscription:
        """Add an EventSubscription (PRD §4.3); KeyError for an unknown subscriber."""
        return self.hooks.subscribe(subscription)

    def unsubscribe(self, subscription_id: str) -> None:
        """Remove a subscription."""
        self.hooks.unsubscribe(subscription_id)

    def send(self, message: AgentMessage, *, project_id: str | None = None) -> None:
        """Send a one-way message (status_update, progress_report, ...; see ``Delivery.send``)."""
        self.delivery.send(message, project_id=project_id)

    def _note_received(self, instance: AgentInstance, message: AgentMessage) -> None:
        task = self.book.tasks.get(message.context.task_id)
        context = task.contexts.get(instance.instance_id) if task else None
        if context is not None:
            context.add_message(message_reference(message))
            self.emitter.context_changed(context)

    # ------------------------------------------------------------------ operators
    def resolve_confirmation(
        self, confirmation_id: str, approve: bool, decided_by: str, answer: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Approve or reject a pending confirmation, or answer a pending ``input`` with
        ``answer``. KeyError when it is not waiting."""
        return self._confirmations.resolve(confirmation_id, approve, decided_by, answer)

    def add_user_instruction(self, context_id: str, text: str, *, author: str = "operator") -> dict[str, Any]:
        """Give a running context an operator instruction (PRD §4.6): stored in
        ``input_context.user_instructions``, sent as a ``context_sync`` message and
        snapshotted (trigger ``user_instruction``). KeyError when the context is not live."""
        context = self.book.contexts[context_id]
        context.user_instructions.append(text)
        message = AgentMessage(
            type=MessageType.CONTEXT_SYNC,
            sender=USER,
            recipient=Party(role=context.role, instance_id=context.instance_id),
            payload={"user_instruction": text, "author": author},
            context=MessageContext(context.task_id, context.conversation_id, None),
            timestamp=self.clock.now_ms(),
            priority=Priority.HIGH,
        )
        context.add_message(message_reference(message))
        self.emitter.message(message, DeliveryStatus.DELIVERED, context.project_id)
        self.emitter.context_changed(context)
        return self.emitter.snapshot(context, SnapshotType.AUTO, "user_instruction", text[:200]).as_dict()

    def manual_snapshot(self, context_id: str, label: str) -> dict[str, Any]:
        """A ``manual`` snapshot of a live context. KeyError when it is not live."""
        return self.emitter.snapshot(self.book.contexts[context_id], SnapshotType.MANUAL, "manual", label).as_dict()
