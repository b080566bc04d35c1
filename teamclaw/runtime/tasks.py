"""Tasks in flight and their execution contexts (PRD §4.6, §4.8).

``TaskBook.run(...)`` is the one way a task is opened and closed: an async context manager
that pins the config snapshot at the start, and on the way out ends the task with the
outcome its body gave (``finish``), as ``failed`` when the body raised, or leaves it open
when the body handed it to something else (``hand_off``: a hook's task ends once every
receiver has processed the event).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from teamclaw.runtime.clock import Clock
from teamclaw.runtime.config import ConfigSnapshot, Constraints
from teamclaw.runtime.config_cache import ConfigCache
from teamclaw.runtime.context import (
    FINAL_STATUSES,
    Artifact,
    ContextStatus,
    ExecutionContext,
    SnapshotType,
    TaskState,
    TaskStatus,
)
from teamclaw.runtime.emission import Emitter
from teamclaw.runtime.errors import AgentError, AgentFailure, ErrorCode
from teamclaw.runtime.events import ArtifactWritten, TaskFinished, TaskStarted
from teamclaw.runtime.instance import AgentInstance
from teamclaw.runtime.invocation import InvokeResult
from teamclaw.runtime.memory import BUDGET_DEFAULT, BUDGET_ROLE, DEFAULT_MEMORY_TOKENS, Memory
from teamclaw.runtime.messages import new_id
from teamclaw.runtime.overlay import ConfigOverlay
from teamclaw.runtime.progress import SNAPSHOT_START
from teamclaw.runtime.resume import ResumeJournal
from teamclaw.runtime.scopes import scope_of

INTERNAL_ERROR = AgentError(ErrorCode.EXECUTOR_ERROR, "internal error")
"""How a task ends when its run raised instead of returning an outcome."""


class TaskNotRunning(LookupError):
    """A ``task_id`` that names no running task (unknown, or already finished)."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"task {task_id} is not running")
        self.task_id = task_id


@dataclass(slots=True)
class TaskRun:
    """The body of a ``TaskBook.run`` block: its task, and how the block wants it to end."""

    task: TaskState
    status: TaskStatus = TaskStatus.COMPLETED
    error: AgentError | None = None
    handed_off: bool = False

    def finish(self, result: InvokeResult) -> InvokeResult:
        """End the task as ``result`` says (completed when it succeeded); returns ``result``."""
        self.status = TaskStatus.COMPLETED if result.success else TaskStatus.FAILED
        self.error = result.error
        return result

    def hand_off(self) -> None:
        """Leave the task open on exit: someone else ends it (``TaskBook.end``)."""
        self.handed_off = True


class TaskBook:
    """The running tasks (``tasks``) and the live contexts of their agents (``contexts``)."""

    def __init__(
        self, emitter: Emitter, clock: Clock, config: ConfigCache, memory_budget_tokens: int = DEFAULT_MEMORY_TOKENS
    ) -> None:
        self.emitter = emitter
        self.clock = clock
        self.config = config
        self.memory_budget_tokens = memory_budget_tokens
        """Estimated tokens of history each new context's memory replays (seed 003 MemoryContext)."""
        self.tasks: dict[str, TaskState] = {}
        self.contexts: dict[str, ExecutionContext] = {}
        self.per_project: frozenset[str] = frozenset()
        """The project slugs whose tasks share their instances (``*``: every project;
        ``teamclaw.runtime.scopes``); every other task counts its own."""
        self.on_end: Callable[[str], object] | None = None
        """Called with an ended task's scope (``InstanceWorkers.end_scope``)."""

    def running(self, task_id: str) -> TaskState:
        """The running task ``task_id``; raises TaskNotRunning otherwise."""
        task = self.tasks.get(task_id)
        if task is None:
            raise TaskNotRunning(task_id)
        return task

    def project_of(self, task_id: str) -> str | None:
        """The project of running task ``task_id`` (None when global or not running)."""
        task = self.tasks.get(task_id)
        return task.project_id if task else None

    async def begin(
        self,
        task_id: str | None = None,
        *,
        project_id: str | None = None,
        description: str = "",
        entry_role: str = "main",
        token_budget: int | None = None,
        prompt_enhancement: str = "",
        kind: str = "task",
        journal: ResumeJournal | None = None,
        overlay: ConfigOverlay | None = None,
        snapshot: ConfigSnapshot | None = None,
    ) -> TaskState:
        """Open a task: pin the current snapshot for its whole life (PRD §4.8) and set its
        token budget (tokens; the entry role's constraint unless given). ``kind`` is
        ``task``, or ``invoke`` / ``hook`` for the short task around an outside call.
        ``journal`` resumes a task an earlier attempt started (``teamclaw.runtime.resume``).
        ``overlay`` changes the pinned snapshot for this task alone (a fork's overrides,
        ``teamclaw.runtime.overlay``). ``snapshot`` pins that configuration instead of the
        current one (a resumed task keeps the version it started on).

        Raises ValueError when ``task_id`` is already running; LookupError (no config).
        """
        if snapshot is None:
            snapshot = await self.config.snapshot_for(project_id)
        if overlay:
            snapshot = overlay.apply(snapshot)
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
            journal=journal,
            scope=scope_of(task_id, project_id, kind, self.per_project),
        )
        if journal is not None:  # a resumed attempt counts on from its predecessors' tokens
            task.tokens_used = journal.tokens_used
            task.tokens_estimated = journal.tokens_estimated
        for recorded in journal.artifacts if journal else ():
            task.artifacts[recorded.name] = Artifact(
                recorded.name,
                recorded.content,
                recorded.content_type,
                recorded.role,
                recorded.context_id,
                recorded.created_at,
            )
        self.tasks[task_id] = task
        self.emitter.emit(
            TaskStarted,
            task_id=task_id,
            project_id=project_id,
            description=description,
            config_version=snapshot.version,
            task_kind=kind,
            token_budget=budget,
            started_at=task.started_at,
        )
        if journal is not None and journal.fork_of is not None:
            for artifact in task.artifacts.values():  # a fork starts with its source's artifacts
                self.emitter.emit(
                    ArtifactWritten,
                    task_id=task_id,
                    project_id=project_id,
                    name=artifact.name,
                    content=artifact.content,
                    content_type=artifact.content_type,
                    context_id=None,
                    role=artifact.role,
                    instance_id="",
                )
        return task

    def end(self, task_id: str, status: TaskStatus, error: AgentError | None = None) -> None:
        """Close a task: finish its contexts and record the outcome (no-op when not running)."""
        task = self.tasks.pop(task_id, None)
        if task is None:
            return
        task.status = status
        final = {
            TaskStatus.COMPLETED: ContextStatus.COMPLETED,
            TaskStatus.TERMINATED: ContextStatus.TERMINATED,
        }.get(status, ContextStatus.FAILED)
        for context in task.contexts.values():
            if context.status not in FINAL_STATUSES:
                context.status = final
                if final == ContextStatus.COMPLETED:
                    context.progress = 100
                self.emitter.final_snapshot(context)
                self.emitter.context_changed(context)
            self.contexts.pop(context.id, None)
        self.emitter.emit(
            TaskFinished,
            task_id=task_id,
            status=str(status),
            project_id=task.project_id,
            error=error.as_dict() if error else None,
            tokens_used=task.tokens_used,
            token_budget=task.token_budget,
            finished_at=self.clock.now(),
            tokens_estimated=task.tokens_estimated,
            description=task.description,
        )
        if self.on_end is not None:
            self.on_end(task.scope)

    @asynccontextmanager
    async def run(
        self,
        task_id: str | None = None,
        *,
        project_id: str | None = None,
        description: str = "",
        entry_role: str = "main",
        prompt_enhancement: str = "",
        kind: str = "task",
        journal: ResumeJournal | None = None,
        overlay: ConfigOverlay | None = None,
        snapshot: ConfigSnapshot | None = None,
    ) -> AsyncIterator[TaskRun]:
        """Open a task for the block (``begin``) and end it on the way out (module docstring):
        an ``AgentFailure`` escaping the block ends it with that error, anything else with
        ``executor_error`` "internal error", so a task never stays open by accident."""
        task = await self.begin(
            task_id,
            project_id=project_id,
            description=description,
            entry_role=entry_role,
            prompt_enhancement=prompt_enhancement,
            kind=kind,
            journal=journal,
            overlay=overlay,
            snapshot=snapshot,
        )
        run = TaskRun(task)
        try:
            yield run
        except AgentFailure as failure:
            self.end(task.task_id, TaskStatus.FAILED, failure.error)
            raise
        except BaseException:
            self.end(task.task_id, TaskStatus.FAILED, INTERNAL_ERROR)
            raise
        if not run.handed_off:
            self.end(task.task_id, run.status, run.error)

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
                memory=self.memory_for(task.snapshot.constraints_for(instance.role)),
            )
            task.contexts[instance.instance_id] = context
            self.contexts[context.id] = context
            context.status = ContextStatus.READY
            self.emitter.context_changed(context)
            self.emitter.snapshot(context, SnapshotType.AUTO, SNAPSHOT_START)
        return context

    def memory_for(self, constraints: Constraints) -> Memory:
        """A new context's empty memory: its budget is the role's ``memory_tokens`` constraint
        when set (PRD §4.7, seed 003 MemoryContext), else ``memory_budget_tokens``; the memory
        records which (``budget_source``)."""
        if constraints.memory_tokens is not None:
            return Memory(budget_tokens=constraints.memory_tokens, budget_source=BUDGET_ROLE)
        return Memory(budget_tokens=self.memory_budget_tokens, budget_source=BUDGET_DEFAULT)

    def contexts_of(self, instance_id: str) -> list[ExecutionContext]:
        """The contexts ``instance_id`` has in running tasks."""
        return [task.contexts[instance_id] for task in self.tasks.values() if instance_id in task.contexts]
